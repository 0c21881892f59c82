#include "nccl/net_ib.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/sim_env.h"
#include "nccl/debug.h"

namespace ncclsim::nccl {

std::string IbDevice() {
  const char* v = EnvRaw("NCCLSIM_IB_HCA");
  return v != nullptr ? v : "";
}

ncclResult_t IbRegistrations::Register(size_t bytes) {
  void* addr = nullptr;
  if (posix_memalign(&addr, 4096, bytes) != 0) {
    WARN("Failed to malloc %zu bytes", bytes);
    return ncclSystemError;
  }
  if (mlock(addr, bytes) != 0) {
    const int err = errno;
    free(addr);
    WARN("Call to ibv_reg_mr failed with error %s", strerror(err));
    return ncclSystemError;
  }
  regions_.push_back({addr, bytes});
  return ncclSuccess;
}

void IbRegistrations::Release() {
  for (const Region& r : regions_) {
    munlock(r.addr, r.bytes);
    free(r.addr);
  }
  regions_.clear();
}

}  // namespace ncclsim::nccl

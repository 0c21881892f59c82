#include "nccl/net_ib.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "ibverbs/verbs.h"
#include "nccl/debug.h"

namespace ncclsim::nccl {
namespace {

constexpr char kVersion[] = "IBVERBS_1.1";

struct Verbs {
  bool loaded = false;
  decltype(&ibv_get_device_list) get_device_list = nullptr;
  decltype(&ibv_free_device_list) free_device_list = nullptr;
  decltype(&ibv_get_device_name) get_device_name = nullptr;
  decltype(&ibv_open_device) open_device = nullptr;
  decltype(&ibv_close_device) close_device = nullptr;
  decltype(&ibv_alloc_pd) alloc_pd = nullptr;
  decltype(&ibv_dealloc_pd) dealloc_pd = nullptr;
  decltype(&ibv_reg_mr) reg_mr = nullptr;
  decltype(&ibv_dereg_mr) dereg_mr = nullptr;
  struct ibv_device* device = nullptr;  // the first HCA
};

template <typename Fn>
bool Load(void* handle, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlvsym(handle, name, kVersion));
  if (*out == nullptr) WARN("dlvsym failed on %s - %s version %s", name, dlerror(), kVersion);
  return *out != nullptr;
}

Verbs& TheVerbs() {
  static Verbs v;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libibverbs.so", RTLD_NOW);
    if (h == nullptr) h = dlopen("libibverbs.so.1", RTLD_NOW);
    if (h == nullptr) {
      INFO(kInit, "Failed to open libibverbs.so[.1]");
      return;
    }
    v.loaded = Load(h, "ibv_get_device_list", &v.get_device_list) &&
               Load(h, "ibv_free_device_list", &v.free_device_list) &&
               Load(h, "ibv_get_device_name", &v.get_device_name) &&
               Load(h, "ibv_open_device", &v.open_device) &&
               Load(h, "ibv_close_device", &v.close_device) &&
               Load(h, "ibv_alloc_pd", &v.alloc_pd) && Load(h, "ibv_dealloc_pd", &v.dealloc_pd) &&
               Load(h, "ibv_reg_mr", &v.reg_mr) && Load(h, "ibv_dereg_mr", &v.dereg_mr);
    if (!v.loaded) return;
    int n = 0;
    struct ibv_device** list = v.get_device_list(&n);
    if (list == nullptr || n == 0) {
      INFO(kInit | kNet, "NET/IB : No device found.");
      return;
    }
    v.device = list[0];  // kept for the life of the process, as NCCL keeps its devices
  });
  return v;
}

}  // namespace

std::string IbDevice() {
  Verbs& v = TheVerbs();
  return v.device != nullptr ? v.get_device_name(v.device) : "";
}

ncclResult_t IbRegistrations::Register(size_t bytes) {
  Verbs& v = TheVerbs();
  if (v.device == nullptr) return ncclInternalError;
  if (context_ == nullptr) {
    context_ = v.open_device(v.device);
    if (context_ == nullptr) {
      WARN("Call to ibv_open_device failed with error %s", strerror(errno));
      return ncclSystemError;
    }
    pd_ = v.alloc_pd(static_cast<struct ibv_context*>(context_));
    if (pd_ == nullptr) {
      WARN("Call to ibv_alloc_pd failed with error %s", strerror(errno));
      return ncclSystemError;
    }
  }
  void* addr = nullptr;
  if (posix_memalign(&addr, 4096, bytes) != 0) {
    WARN("Failed to malloc %zu bytes", bytes);
    return ncclSystemError;
  }
  struct ibv_mr* mr = v.reg_mr(static_cast<struct ibv_pd*>(pd_), addr, bytes,
                               0x7 /* local write, remote read/write */);
  if (mr == nullptr) {
    WARN("Call to ibv_reg_mr failed with error %s", strerror(errno));
    free(addr);
    return ncclSystemError;
  }
  regions_.push_back({addr, mr});
  return ncclSuccess;
}

void IbRegistrations::Release() {
  Verbs& v = TheVerbs();
  for (const Region& r : regions_) {
    v.dereg_mr(static_cast<struct ibv_mr*>(r.mr));
    free(r.addr);
  }
  regions_.clear();
  if (pd_ != nullptr) v.dealloc_pd(static_cast<struct ibv_pd*>(pd_));
  if (context_ != nullptr) v.close_device(static_cast<struct ibv_context*>(context_));
  pd_ = context_ = nullptr;
}

}  // namespace ncclsim::nccl

#include "nccl/cudawrap.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "common/sim_env.h"

namespace ncclsim::nccl {
namespace {

// The driver's name for an entry point, without the version suffix cuda.h's
// macros add to the identifier.
void BaseName(const char* in, char* out, size_t n) {
  std::snprintf(out, n, "%s", in);
  char* v = std::strstr(out, "_v");
  if (v != nullptr && v[2] >= '0' && v[2] <= '9') *v = '\0';
}

CudaDriverTable* Load() {
  auto* t = new CudaDriverTable();
  char base[128];
  bool ok = true;
  // As NCCL 2.28 does with a CUDA 12.5+ runtime: by version, the version
  // NCCL was built against.
#define SIM_CU_FN(name)                                                                          \
  if (ok) {                                                                                      \
    BaseName(#name, base, sizeof(base));                                                         \
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSuccess;                        \
    void* fn = nullptr;                                                                          \
    cudaError_t err =                                                                            \
        cudaGetDriverEntryPointByVersion(base, &fn, CUDART_VERSION, cudaEnableDefault, &status); \
    if (err != cudaSuccess || status != cudaDriverEntryPointSuccess || fn == nullptr) {          \
      WARN("Retrieving %s version %d failed with %d status %d", base, CUDART_VERSION,            \
           static_cast<int>(err), static_cast<int>(status));                                     \
      ok = false;                                                                                \
    } else {                                                                                     \
      t->name = reinterpret_cast<decltype(t->name)>(fn);                                         \
    }                                                                                            \
  }
#include "nccl/cudawrap_functions.inc"
#undef SIM_CU_FN
  if (!ok) {
    delete t;
    return nullptr;
  }
  return t;
}

}  // namespace

const CudaDriverTable* CudaDriver() {
  static CudaDriverTable* table = Load();
  return table;
}

bool CuMemEnabled() { return EnvInt("NCCL_CUMEM_ENABLE", 1, 0, 1) == 1; }

}  // namespace ncclsim::nccl

// The driver functions the simulated NCCL calls directly, found as NCCL
// finds them (src/misc/cudawrap.cc): through the CUDA runtime's
// cudaGetDriverEntryPointByVersion, never by linking libcuda. Real NCCL links
// the runtime statically; the simulated one uses libcudart.so.13, so a
// preloaded ncclwatch sees these lookups and the calls made through them.
//
// Thread-safety: CudaDriver() initialises once (std::call_once) and is then
// read-only.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_CUDAWRAP_H_
#define NCCLWATCH_TESTS_SIM_NCCL_CUDAWRAP_H_

#include <cuda.h>
#include <nccl.h>

#include "nccl/debug.h"

namespace ncclsim::nccl {

struct CudaDriverTable {
#define SIM_CU_FN(name) decltype(&::name) name = nullptr;
#include "nccl/cudawrap_functions.inc"
#undef SIM_CU_FN
};

// The table, or nullptr after a WARN naming the entry point that could not
// be found.
const CudaDriverTable* CudaDriver();

// Whether NCCL shares its buffers through cuMem (NCCL_CUMEM_ENABLE, on by
// default where the driver supports virtual memory management) rather than
// legacy CUDA IPC.
bool CuMemEnabled();

}  // namespace ncclsim::nccl

// NCCL's CUCHECK: a failed driver call is a WARN with the CUresult and the
// driver's text, and ncclUnhandledCudaError.
#define CUCHECK(fn, ...)                                                            \
  do {                                                                              \
    const ::ncclsim::nccl::CudaDriverTable* sim_cu = ::ncclsim::nccl::CudaDriver(); \
    if (sim_cu == nullptr) return ncclUnhandledCudaError;                           \
    CUresult sim_err = sim_cu->fn(__VA_ARGS__);                                     \
    if (sim_err != CUDA_SUCCESS) {                                                  \
      const char* sim_str = "unknown error";                                        \
      (void)sim_cu->cuGetErrorString(sim_err, &sim_str);                            \
      WARN("Cuda failure %d '%s'", static_cast<int>(sim_err), sim_str);             \
      return ncclUnhandledCudaError;                                                \
    }                                                                               \
  } while (0)

#endif  // NCCLWATCH_TESTS_SIM_NCCL_CUDAWRAP_H_

// How the simulated CUDA runtime reaches the driver: as the real libcudart
// does, by dlopen("libcuda.so.1") and cuGetProcAddress, never by linking it.
// So a process without a driver gets cudaErrorInsufficientDriver, exactly as
// on this project's GPU-less build machines with the real runtime, and a
// driver older than the runtime (NCCLSIM_DRIVER_VERSION) is refused the same
// way.
//
// Thread-safety: Driver() initialises once (std::call_once) and is then
// read-only.

#ifndef NCCLWATCH_TESTS_SIM_RUNTIME_DRIVER_BINDING_H_
#define NCCLWATCH_TESTS_SIM_RUNTIME_DRIVER_BINDING_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace ncclsim::runtime {

// One pointer per driver entry point the runtime uses; each is named as in
// cuda.h and typed from the real declaration.
struct DriverTable {
#define SIM_DRIVER_FN(name) decltype(&::name) name = nullptr;
#include "runtime/driver_functions.inc"
#undef SIM_DRIVER_FN
};

// The driver, or nullptr with *error set to why it cannot be used
// (cudaErrorInsufficientDriver, cudaErrorNoDevice, ...). The answer is the
// same for the life of the process.
const DriverTable* Driver(cudaError_t* error);

// The version libcuda.so.1 reports, even when it is too old to be used; 0
// when there is no driver at all (what cudaDriverGetVersion then returns).
int InstalledDriverVersion();

}  // namespace ncclsim::runtime

#endif  // NCCLWATCH_TESTS_SIM_RUNTIME_DRIVER_BINDING_H_

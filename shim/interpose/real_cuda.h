// Read-only CUDA queries the shim makes for init forensics: the driver and
// runtime versions, and the calling thread's device and its PCI bus id.
//
// Found in the libraries the process already loaded (libcuda.so.1,
// libcudart.so.*), never by loading one: a process without a driver stays
// without one. The functions used change no CUDA state (the driver API has
// no sticky "last error"; cudaRuntimeGetVersion reads a constant), so the
// program sees nothing of them. Not on the hot path: they run when a
// communicator is created.

#ifndef NCCLWATCH_SHIM_INTERPOSE_REAL_CUDA_H_
#define NCCLWATCH_SHIM_INTERPOSE_REAL_CUDA_H_

#include <stddef.h>

namespace ncclwatch::shim {

// Looks the functions up in the loaded libraries (again, when one that was
// missing may have been loaded since).
void ResolveRealCuda();

int CudaDriverVersion();   // cuDriverGetVersion, 0 unknown
int CudaRuntimeVersion();  // cudaRuntimeGetVersion, 0 unknown

// The current context's device and its PCI bus id ("0000:18:00.0"); false
// when no context is current or no driver is loaded.
bool CurrentCudaDevice(int* device, char* bus_id, size_t bus_id_len);

// The current context's device only (cuCtxGetDevice), for the CUDA
// wrappers' failure path; false when no context is current or no driver is
// known yet.
bool CurrentCudaOrdinal(int* device);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_INTERPOSE_REAL_CUDA_H_

// The CUDA functions that share memory between processes and devices, seen
// however a program reaches them (interpose/cuda_hooks.cc).
//
// Real NCCL links the CUDA runtime statically and gets every driver function
// it uses through cudaGetDriverEntryPoint, that is through the driver's
// cuGetProcAddress, which its runtime found with dlsym on libcuda.so.1. The
// shim hands back wrappers at each of those doors: its own exported
// cuGetProcAddress[_v2] and cudaGetDriverEntryPoint[ByVersion] (for callers
// that link them), the pointers those return, and, through the dlsym hook
// (interpose/dl_hooks.cc), WrapDriverSymbol below.
//
// Wrapped: legacy IPC (cuIpc{Get,Open,Close}MemHandle, cuIpc{Get,Open}-
// EventHandle), VMM (cuMemCreate, cuMemExportToShareableHandle,
// cuMemImportFromShareableHandle, cuMemMap, cuMemSetAccess, cuMemRelease,
// cuMemAddressReserve), multicast (cuMulticastCreate, ...AddDevice,
// ...BindMem), peer access (cuCtxEnablePeerAccess, cuDeviceCanAccessPeer),
// and cuGetProcAddress itself (so a driver table built through it is
// wrapped too). Each wrapper forwards to exactly the function the caller
// would have got, returns its result unchanged and leaves errno as it was,
// then records the call (core/cuda_records.h).

#ifndef NCCLWATCH_SHIM_INTERPOSE_CUDA_HOOKS_H_
#define NCCLWATCH_SHIM_INTERPOSE_CUDA_HOOKS_H_

namespace ncclwatch::shim {

// For the dlsym/dlvsym hook: `real` is what a lookup of `name` resolved in
// libcuda.so.1 (the exported symbol name: "cuGetProcAddress_v2",
// "cuIpcOpenMemHandle", "cuMemCreate", ...). Returns the shim's wrapper of
// that function, or `real` itself when the shim does not watch `name`, when
// `real` is NULL or already a wrapper, when tracing is off, or when two
// other definitions of the same name were wrapped before (several drivers in
// one process). Allocates nothing, takes no lock, makes no system call.
void* WrapDriverSymbol(const char* name, void* real);

// Resolves the runtime functions the shim exports (dlsym(RTLD_NEXT)), from
// the shim's constructor; a runtime loaded later is resolved at its first call.
void ResolveRealCudaRuntime();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_INTERPOSE_CUDA_HOOKS_H_

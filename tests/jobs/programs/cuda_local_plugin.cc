// A plugin linked with the CUDA runtime, which cuda_local_main loads in a
// local scope (dlopen without RTLD_GLOBAL), as Python loads an extension:
// its call to cudaIpcOpenMemHandle binds to the preloaded shim's, whose next
// definition RTLD_NEXT cannot see.

#include <cuda_runtime_api.h>

#include <cstring>

extern "C" __attribute__((visibility("default"))) int PluginIpcOpen() {
  if (cudaSetDevice(0) != cudaSuccess) return -1;
  cudaIpcMemHandle_t none;
  std::memset(&none, 0, sizeof(none));
  void* p = nullptr;
  return static_cast<int>(cudaIpcOpenMemHandle(&p, none, cudaIpcMemLazyEnablePeerAccess));
}

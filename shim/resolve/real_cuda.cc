#include "real_cuda.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "loaded_module.h"

namespace ncclwatch::shim {
namespace {

// The signatures of cuda.h and cuda_runtime_api.h, without their types:
// CUresult and cudaError_t are ints, CUdevice is an int.
using VersionFn = int (*)(int*);
using CtxGetDeviceFn = int (*)(int*);
using DeviceGetPciBusIdFn = int (*)(char*, int, int);

VersionFn g_driver_version = nullptr;
VersionFn g_runtime_version = nullptr;
CtxGetDeviceFn g_ctx_get_device = nullptr;
DeviceGetPciBusIdFn g_device_pci_bus_id = nullptr;

struct Found {
  char driver[512];
  char runtime[512];
};

int FindLibraries(dl_phdr_info* info, size_t, void* data) {
  auto* found = static_cast<Found*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || path[0] == '\0') return 0;
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char* into = nullptr;
  if (strncmp(base, "libcuda.so", 10) == 0) into = found->driver;
  if (strncmp(base, "libcudart.so", 12) == 0) into = found->runtime;
  if (into != nullptr && into[0] == '\0' && strlen(path) < sizeof(found->driver))
    strcpy(into, path);
  return 0;
}

void* Symbol(const char* library, const char* name) {
  if (library[0] == '\0') return nullptr;
  void* h = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) return nullptr;
  void* p = dlsym(h, name);
  dlclose(h);  // drops the reference RTLD_NOLOAD took; the library stays loaded
  return p;
}

template <typename Fn>
void Resolve(const char* library, const char* name, Fn* into) {
  *into = reinterpret_cast<Fn>(Symbol(library, name));
}

// The loader's generation when a look found the driver or the runtime
// missing (UINT64_MAX: none did).
uint64_t g_missing_since = UINT64_MAX;

}  // namespace

CudaDriverCalls g_cuda = {};

void ResolveRealCuda() {
  if (g_driver_version != nullptr && g_runtime_version != nullptr) return;
  // Looked for again only once the loader has loaded something since the
  // last look that found one missing (the runtime loads the driver at the
  // first CUDA call, which may come after the first NCCL call).
  const uint64_t generation = LoaderGeneration();
  if (generation == __atomic_load_n(&g_missing_since, __ATOMIC_ACQUIRE)) return;
  Found found{};
  dl_iterate_phdr(FindLibraries, &found);
  if (g_driver_version == nullptr && found.driver[0] != '\0') {
    // The exported names: cuda.h maps some of these to _v2 versions.
    CudaDriverCalls c = {};
    Resolve(found.driver, "cuEventCreate", &c.event_create);
    Resolve(found.driver, "cuEventRecord", &c.event_record);
    Resolve(found.driver, "cuEventQuery", &c.event_query);
    Resolve(found.driver, "cuEventDestroy_v2", &c.event_destroy);
    Resolve(found.driver, "cuStreamIsCapturing", &c.stream_is_capturing);
    Resolve(found.driver, "cuCtxGetCurrent", &c.ctx_get_current);
    Resolve(found.driver, "cuCtxSetCurrent", &c.ctx_set_current);
    Resolve(found.driver, "cuCtxPushCurrent_v2", &c.ctx_push_current);
    Resolve(found.driver, "cuCtxPopCurrent_v2", &c.ctx_pop_current);
    Resolve(found.driver, "cuCtxGetDevice", &c.ctx_get_device);
    Resolve(found.driver, "cuDevicePrimaryCtxRetain", &c.primary_ctx_retain);
    Resolve(found.driver, "cuGetErrorName", &c.get_error_name);
    Resolve(found.driver, "cuGetErrorString", &c.get_error_string);
    Resolve(found.driver, "cuStreamCreate", &c.stream_create);
    Resolve(found.driver, "cuEventSynchronize", &c.event_synchronize);
    // cuda.h 12.8 on maps cuEventElapsedTime to _v2; older drivers have only the first.
    Resolve(found.driver, "cuEventElapsedTime_v2", &c.event_elapsed);
    if (c.event_elapsed == nullptr) Resolve(found.driver, "cuEventElapsedTime", &c.event_elapsed);
    g_cuda = c;
    g_ctx_get_device = reinterpret_cast<CtxGetDeviceFn>(Symbol(found.driver, "cuCtxGetDevice"));
    g_device_pci_bus_id =
        reinterpret_cast<DeviceGetPciBusIdFn>(Symbol(found.driver, "cuDeviceGetPCIBusId"));
    g_driver_version = reinterpret_cast<VersionFn>(Symbol(found.driver, "cuDriverGetVersion"));
  }
  if (g_runtime_version == nullptr) {
    g_runtime_version = reinterpret_cast<VersionFn>(Symbol(found.runtime, "cudaRuntimeGetVersion"));
  }
  const bool missing = g_driver_version == nullptr || g_runtime_version == nullptr;
  __atomic_store_n(&g_missing_since, missing ? generation : UINT64_MAX, __ATOMIC_RELEASE);
}

int CudaDriverVersion() {
  int v = 0;
  return (g_driver_version != nullptr && g_driver_version(&v) == 0) ? v : 0;
}

int CudaRuntimeVersion() {
  int v = 0;
  return (g_runtime_version != nullptr && g_runtime_version(&v) == 0) ? v : 0;
}

bool CurrentCudaDevice(int* device, char* bus_id, size_t bus_id_len) {
  if (g_ctx_get_device == nullptr || g_ctx_get_device(device) != 0) return false;
  bus_id[0] = '\0';
  if (g_device_pci_bus_id != nullptr &&
      g_device_pci_bus_id(bus_id, static_cast<int>(bus_id_len), *device) != 0) {
    bus_id[0] = '\0';
  }
  return true;
}

bool CurrentCudaOrdinal(int* device) {
  auto fn = __atomic_load_n(&g_ctx_get_device, __ATOMIC_ACQUIRE);
  return fn != nullptr && fn(device) == 0;
}

}  // namespace ncclwatch::shim

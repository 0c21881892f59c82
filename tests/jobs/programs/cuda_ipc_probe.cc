// cuda_ipc_probe: a program that shares GPU memory the ways frameworks do,
// without NCCL, for the shim to record:
//   - the runtime's cudaIpcOpenMemHandle, called directly, on a handle no
//     process exported (it fails);
//   - cuMemCreate, cuMemExportToShareableHandle and
//     cuMemImportFromShareableHandle obtained with
//     cudaGetDriverEntryPointByVersion: a POSIX-fd round trip that works,
//     then an import of a descriptor that is not open (it fails);
//   - cuGetProcAddress (looked up with dlsym, as a framework's loader does)
//     handing out cuDeviceCanAccessPeer and cuIpcOpenMemHandle;
//   - cuIpcCloseMemHandle looked up with dlsym on libcuda.so.1's handle, as
//     a statically linked runtime (real NCCL's) finds the driver (it fails).
// Prints "ok <step>" or "FAIL <step>" and exits 1 on an unexpected result.
//
// Written only against the public CUDA runtime and driver headers.

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

int g_failures = 0;

void Expect(bool ok, const char* step, int result) {
  std::printf("%s %s (result %d)\n", ok ? "ok" : "FAIL", step, result);
  if (!ok) ++g_failures;
}

template <typename Fn>
Fn EntryPoint(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status);
  Expect(e == cudaSuccess && status == cudaDriverEntryPointSuccess && fn != nullptr, name, e);
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

int main() {
  if (cudaSetDevice(0) != cudaSuccess) {
    std::printf("FAIL cudaSetDevice\n");
    return 1;
  }
  // 1. A legacy IPC handle nobody exported.
  cudaIpcMemHandle_t bogus;
  std::memset(&bogus, 0, sizeof(bogus));
  void* p = nullptr;
  errno = EDOM;  // left from earlier: the call does not touch it, and it must stay
  cudaError_t e = cudaIpcOpenMemHandle(&p, bogus, cudaIpcMemLazyEnablePeerAccess);
  std::printf("errno after cudaIpcOpenMemHandle: %d\n", errno);
  Expect(e != cudaSuccess, "cudaIpcOpenMemHandle refuses a handle nobody exported", e);
  (void)cudaGetLastError();

  // 2. cuMem through cudaGetDriverEntryPointByVersion.
  auto create = EntryPoint<decltype(&cuMemCreate)>("cuMemCreate");
  auto export_fd =
      EntryPoint<decltype(&cuMemExportToShareableHandle)>("cuMemExportToShareableHandle");
  auto import_fd =
      EntryPoint<decltype(&cuMemImportFromShareableHandle)>("cuMemImportFromShareableHandle");
  auto release = EntryPoint<decltype(&cuMemRelease)>("cuMemRelease");
  if (create == nullptr || export_fd == nullptr || import_fd == nullptr || release == nullptr)
    return 1;
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle h = 0;
  CUresult r = create(&h, 2u << 20, &prop, 0);
  Expect(r == CUDA_SUCCESS, "cuMemCreate", r);
  int fd = -1;
  r = export_fd(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  Expect(r == CUDA_SUCCESS && fd >= 0, "cuMemExportToShareableHandle", r);
  CUmemGenericAllocationHandle imported = 0;
  r = import_fd(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  Expect(r == CUDA_SUCCESS, "cuMemImportFromShareableHandle of an exported descriptor", r);
  if (r == CUDA_SUCCESS) release(imported);
  r = import_fd(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(-1)),
                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  Expect(r != CUDA_SUCCESS, "cuMemImportFromShareableHandle refuses a descriptor not open", r);
  release(h);

  // 3. cuGetProcAddress as a loader finds it.
  using GetProc = decltype(&cuGetProcAddress);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));
  Expect(get_proc != nullptr, "cuGetProcAddress_v2 found", 0);
  if (get_proc == nullptr) return 1;
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  r = get_proc("cuDeviceCanAccessPeer", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  Expect(r == CUDA_SUCCESS && fn != nullptr, "cuGetProcAddress(cuDeviceCanAccessPeer)", r);
  if (fn != nullptr) {
    int can = -1;
    r = reinterpret_cast<decltype(&cuDeviceCanAccessPeer)>(fn)(&can, 0, 1);
    Expect(r == CUDA_SUCCESS && can == 1, "cuDeviceCanAccessPeer(0, 1)", r);
  }
  fn = nullptr;
  r = get_proc("cuIpcOpenMemHandle", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  Expect(r == CUDA_SUCCESS && fn != nullptr, "cuGetProcAddress(cuIpcOpenMemHandle)", r);
  if (fn != nullptr) {
    CUipcMemHandle none;
    std::memset(&none, 0, sizeof(none));
    CUdeviceptr dptr = 0;
    r = reinterpret_cast<decltype(&cuIpcOpenMemHandle)>(fn)(&dptr, none,
                                                            CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    Expect(r != CUDA_SUCCESS, "cuIpcOpenMemHandle refuses a handle nobody exported", r);
  }

  // 4. dlsym on the driver's own handle, as a statically linked runtime (real
  // NCCL's) finds the driver.
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  Expect(libcuda != nullptr, "libcuda.so.1 loaded", 0);
  if (libcuda != nullptr) {
    auto close_ipc =
        reinterpret_cast<decltype(&cuIpcCloseMemHandle)>(dlsym(libcuda, "cuIpcCloseMemHandle"));
    Expect(close_ipc != nullptr, "dlsym(libcuda, cuIpcCloseMemHandle)", 0);
    if (close_ipc != nullptr) {
      r = close_ipc(0);
      Expect(r != CUDA_SUCCESS, "cuIpcCloseMemHandle refuses a pointer never opened", r);
    }
    dlclose(libcuda);
  }
  return g_failures == 0 ? 0 : 1;
}

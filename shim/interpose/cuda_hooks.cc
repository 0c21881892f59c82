// The CUDA memory-sharing functions as the shim sees them (cuda_hooks.h):
// the exported runtime functions (cudaIpc*, cudaDeviceEnablePeerAccess,
// cudaDeviceCanAccessPeer, cudaGetDriverEntryPoint[ByVersion]) and driver
// lookups (cuGetProcAddress[_v2]), each forwarding to the next definition
// (dlsym(RTLD_NEXT)), and the driver wrappers those lookups hand out.
//
// A driver wrapper is a function with the exact signature cuda.h declares,
// one per (function, definition, door): the definition is the first or the
// second distinct pointer the driver gave for that name (a third is handed
// back unwrapped), the door how it was found (cuGetProcAddress,
// cudaGetDriverEntryPoint, dlsym), which the record names. Each calls the
// real function with its arguments untouched, keeps the errno it left, and
// records the call (core/cuda_records.h) with a summary of its arguments.
//
// HOT PATH (every wrapped call): no allocation, no lock, no system call,
// async-signal-safe, errno as the real function left it, once the real
// function is known. A call that failed also asks the driver for the
// calling thread's device (cuCtxGetDevice), when the driver is known. The lookups
// (cuGetProcAddress, cudaGetDriverEntryPoint, WrapDriverSymbol) compare names and swap a pointer
// atomically: no allocation, no lock, no system call either. The exported runtime functions resolve
// the next definition with dlsym(RTLD_NEXT) in the shim's constructor, or at their first call when
// the runtime was loaded later (that first call takes the loader's lock, once).
//
// The next definition is the one dlsym(RTLD_NEXT) finds, or, for a runtime
// or driver loaded in a local scope (a Python extension's), the one in that
// library, found with dl_iterate_phdr and dlopen(RTLD_NOLOAD).
//
// The shim exports cudaIpc*, the peer-access and entry-point functions and
// cuGetProcAddress[_v2] by their unversioned names; a program linked with
// the runtime or the driver binds to them before the real ones (glibc lets
// an unversioned definition satisfy a versioned reference). A program that
// probes for these names with dlsym(RTLD_DEFAULT) in a process without a
// CUDA runtime or driver finds the shim's, which answer as a runtime or
// driver that is not initialised (error 3) would.

#include "interpose/cuda_hooks.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "core/cuda_records.h"
#include "core/tracer.h"
#include "ncclwatch/trace_fields.h"
#include "resolve/real_cuda.h"

using namespace ncclwatch::shim;  // NOLINT: this file is the shim's CUDA memory-sharing surface
namespace f = ncclwatch::fields;
namespace via = ncclwatch::fields::cuda_call;

#define CALLER __builtin_return_address(0)

namespace {

// ------------------------------------------------------------------ driver

// The driver functions wrapped. The order is the wrappers' tables' order.
enum DriverFn : int {
  kIpcGetMem,
  kIpcOpenMem,
  kIpcCloseMem,
  kIpcGetEvent,
  kIpcOpenEvent,
  kMemCreate,
  kMemExport,
  kMemImport,
  kMemMap,
  kMemSetAccess,
  kMemRelease,
  kMemAddressReserve,
  kMulticastCreate,
  kMulticastAddDevice,
  kMulticastBindMem,
  kCtxEnablePeer,
  kDeviceCanAccessPeer,
  kGetProcAddressV2,  // cuGetProcAddress_v2: (symbol, pfn, cudaVersion, flags, status)
  kGetProcAddressV1,  // cuGetProcAddress before CUDA 12: (symbol, pfn, cudaVersion, flags)
  kDriverFns
};

// cuda.h declares the pre-12.0 cuGetProcAddress only for the driver's own
// build (__CUDA_API_VERSION_INTERNAL); this is its signature there.
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

constexpr int kDefinitions = 2;  // distinct real pointers wrapped per function
constexpr int kDoors = 3;        // cuGetProcAddress, cudaGetDriverEntryPoint, dlsym
constexpr int kSlots = kDefinitions * kDoors;

void* g_real[kDriverFns][kDefinitions];

// Slot s of a wrapper: definition s / kDoors, door s % kDoors.
constexpr uint32_t DoorOf(int slot) {
  return slot % kDoors == 0   ? via::kGetProcAddress
         : slot % kDoors == 1 ? via::kDriverEntryPoint
                              : via::kDlsym;
}

template <typename Fn>
inline Fn Real(int fn, int slot) {
  return reinterpret_cast<Fn>(__atomic_load_n(&g_real[fn][slot / kDoors], __ATOMIC_ACQUIRE));
}

// The record of a call that returned `result`, before its arguments.
inline CudaCallEvent Event(uint32_t function, int result, uint32_t door, const void* caller,
                           int err) {
  CudaCallEvent e;
  e.function = function;
  e.result = result;
  e.via = door;
  e.caller = caller;
  e.err = result != 0 ? err : 0;
  return e;
}

// What the real function did to errno: cleared before the call, so that a
// value left from an earlier failure is not taken for the call's; put back
// when the call left it untouched, so the program sees what it would have.
struct ErrnoProbe {
  int before;
  int visible = 0;  // errno as the program must see it after the call
  ErrnoProbe() : before(errno) { errno = 0; }
  int Set() {  // the errno the call set, 0 if none
    const int now = errno;
    visible = now != 0 ? now : before;
    errno = visible;
    return now;
  }
};

// Records `e` if the process is traced, and gives errno back.
inline void Note(const CudaCallEvent& e, int err) {
  if (Tracing()) RecordCudaCall(e);
  errno = err;
}

uint64_t U(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// The calling thread's device, on the failure path only: cuCtxGetDevice,
// a query that changes no CUDA state.
int CurrentDevice() {
  int device = -1;
  return CurrentCudaOrdinal(&device) ? device : -1;
}

void* WrapProc(const char* symbol, void* real, int cuda_version, int door);

template <int S>
CUresult IpcGetMem(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuIpcGetMemHandle)>(kIpcGetMem, S)(pHandle, dptr);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuIpcGetMemHandle, r, DoorOf(S), CALLER, err);
  e.ptr = dptr;
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult IpcOpenMem(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuIpcOpenMemHandle)>(kIpcOpenMem, S)(pdptr, handle, Flags);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuIpcOpenMemHandle, r, DoorOf(S), CALLER, err);
  e.flags = Flags;
  if (r == CUDA_SUCCESS && pdptr != nullptr) e.ptr = *pdptr;
  if (r != CUDA_SUCCESS) e.device = CurrentDevice();
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult IpcCloseMem(CUdeviceptr dptr) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuIpcCloseMemHandle)>(kIpcCloseMem, S)(dptr);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuIpcCloseMemHandle, r, DoorOf(S), CALLER, err);
  e.ptr = dptr;
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult IpcGetEvent(CUipcEventHandle* pHandle, CUevent event) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuIpcGetEventHandle)>(kIpcGetEvent, S)(pHandle, event);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuIpcGetEventHandle, r, DoorOf(S), CALLER, err);
  e.handle = U(event);
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult IpcOpenEvent(CUevent* phEvent, CUipcEventHandle handle) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuIpcOpenEventHandle)>(kIpcOpenEvent, S)(phEvent, handle);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuIpcOpenEventHandle, r, DoorOf(S), CALLER, err);
  if (r == CUDA_SUCCESS && phEvent != nullptr) e.handle = U(*phEvent);
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                   const CUmemAllocationProp* prop, unsigned long long flags) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMemCreate)>(kMemCreate, S)(handle, size, prop, flags);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMemCreate, r, DoorOf(S), CALLER, err);
  e.size = size;
  e.flags = flags;
  if (prop != nullptr) {
    e.device = prop->location.id;
    e.handle_type = static_cast<uint32_t>(prop->requestedHandleTypes);
  }
  if (r == CUDA_SUCCESS && handle != nullptr) e.handle = *handle;
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MemExport(void* shareableHandle, CUmemGenericAllocationHandle handle,
                   CUmemAllocationHandleType handleType, unsigned long long flags) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMemExportToShareableHandle)>(kMemExport, S)(
      shareableHandle, handle, handleType, flags);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMemExportToShareableHandle, r, DoorOf(S), CALLER, err);
  e.handle = handle;
  e.handle_type = static_cast<uint32_t>(handleType);
  e.flags = flags;
  if (r == CUDA_SUCCESS && shareableHandle != nullptr &&
      handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    e.fd = *static_cast<const int*>(shareableHandle);
    e.has_fd = true;
  }
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MemImport(CUmemGenericAllocationHandle* handle, void* osHandle,
                   CUmemAllocationHandleType shHandleType) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMemImportFromShareableHandle)>(kMemImport, S)(
      handle, osHandle, shHandleType);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMemImportFromShareableHandle, r, DoorOf(S), CALLER, err);
  e.handle_type = static_cast<uint32_t>(shHandleType);
  // A POSIX handle is the descriptor itself, cast to a pointer.
  if (shHandleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    e.fd = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
    e.has_fd = true;
  }
  if (r == CUDA_SUCCESS && handle != nullptr) e.handle = *handle;
  if (r != CUDA_SUCCESS) e.device = CurrentDevice();
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                unsigned long long flags) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMemMap)>(kMemMap, S)(ptr, size, offset, handle, flags);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMemMap, r, DoorOf(S), CALLER, err);
  e.ptr = ptr;
  e.size = size;
  e.handle = handle;
  e.flags = flags;
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMemSetAccess)>(kMemSetAccess, S)(ptr, size, desc, count);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMemSetAccess, r, DoorOf(S), CALLER, err);
  e.ptr = ptr;
  e.size = size;
  e.num_devices = static_cast<uint32_t>(count);
  if (desc != nullptr && count > 0) {
    e.device = desc[0].location.id;
    e.access_flags = static_cast<uint32_t>(desc[0].flags);
  }
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MemRelease(CUmemGenericAllocationHandle handle) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMemRelease)>(kMemRelease, S)(handle);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMemRelease, r, DoorOf(S), CALLER, err);
  e.handle = handle;
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                           unsigned long long flags) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMemAddressReserve)>(kMemAddressReserve, S)(
      ptr, size, alignment, addr, flags);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMemAddressReserve, r, DoorOf(S), CALLER, err);
  e.size = size;
  e.flags = flags;
  e.ptr = r == CUDA_SUCCESS && ptr != nullptr ? *ptr : addr;
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MulticastCreate(CUmemGenericAllocationHandle* mcHandle,
                         const CUmulticastObjectProp* prop) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMulticastCreate)>(kMulticastCreate, S)(mcHandle, prop);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMulticastCreate, r, DoorOf(S), CALLER, err);
  if (prop != nullptr) {
    e.size = prop->size;
    e.num_devices = prop->numDevices;
    e.handle_type = static_cast<uint32_t>(prop->handleTypes);
    e.flags = prop->flags;
  }
  if (r == CUDA_SUCCESS && mcHandle != nullptr) e.handle = *mcHandle;
  if (r != CUDA_SUCCESS) e.device = CurrentDevice();
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMulticastAddDevice)>(kMulticastAddDevice, S)(mcHandle, dev);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMulticastAddDevice, r, DoorOf(S), CALLER, err);
  e.handle = mcHandle;
  e.device = dev;
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult MulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                          CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                          unsigned long long flags) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuMulticastBindMem)>(kMulticastBindMem, S)(
      mcHandle, mcOffset, memHandle, memOffset, size, flags);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuMulticastBindMem, r, DoorOf(S), CALLER, err);
  e.handle = mcHandle;
  e.size = size;
  e.flags = flags;
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult CtxEnablePeer(CUcontext peerContext, unsigned int Flags) {
  ErrnoProbe probe;
  const CUresult r = Real<decltype(&cuCtxEnablePeerAccess)>(kCtxEnablePeer, S)(peerContext, Flags);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuCtxEnablePeerAccess, r, DoorOf(S), CALLER, err);
  e.handle = U(peerContext);
  e.flags = Flags;
  if (r != CUDA_SUCCESS) e.device = CurrentDevice();
  Note(e, probe.visible);
  return r;
}

template <int S>
CUresult DeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  ErrnoProbe probe;
  const CUresult r =
      Real<decltype(&cuDeviceCanAccessPeer)>(kDeviceCanAccessPeer, S)(canAccessPeer, dev, peerDev);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCuDeviceCanAccessPeer, r, DoorOf(S), CALLER, err);
  e.device = dev;
  e.peer = peerDev;
  if (r == CUDA_SUCCESS && canAccessPeer != nullptr) e.can_access = *canAccessPeer;
  Note(e, probe.visible);
  return r;
}

// cuGetProcAddress found through a door: what it finds is wrapped, and
// counts as found through cuGetProcAddress.
template <int S>
CUresult GetProcV2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                   CUdriverProcAddressQueryResult* symbolStatus) {
  const CUresult r = Real<decltype(&cuGetProcAddress)>(kGetProcAddressV2, S)(
      symbol, pfn, cudaVersion, flags, symbolStatus);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr)
    *pfn = WrapProc(symbol, *pfn, cudaVersion, 0);
  return r;
}

template <int S>
CUresult GetProcV1(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  const CUresult r = Real<GetProcAddressV1>(kGetProcAddressV1, S)(symbol, pfn, cudaVersion, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr)
    *pfn = WrapProc(symbol, *pfn, cudaVersion, 0);
  return r;
}

#define NCCLWATCH_SLOTS(W)                                              \
  {                                                                     \
    reinterpret_cast<void*>(&W<0>), reinterpret_cast<void*>(&W<1>),     \
        reinterpret_cast<void*>(&W<2>), reinterpret_cast<void*>(&W<3>), \
        reinterpret_cast<void*>(&W<4>), reinterpret_cast<void*>(&W<5>)  \
  }

void* const kWrappers[kDriverFns][kSlots] = {NCCLWATCH_SLOTS(IpcGetMem),
                                             NCCLWATCH_SLOTS(IpcOpenMem),
                                             NCCLWATCH_SLOTS(IpcCloseMem),
                                             NCCLWATCH_SLOTS(IpcGetEvent),
                                             NCCLWATCH_SLOTS(IpcOpenEvent),
                                             NCCLWATCH_SLOTS(MemCreate),
                                             NCCLWATCH_SLOTS(MemExport),
                                             NCCLWATCH_SLOTS(MemImport),
                                             NCCLWATCH_SLOTS(MemMap),
                                             NCCLWATCH_SLOTS(MemSetAccess),
                                             NCCLWATCH_SLOTS(MemRelease),
                                             NCCLWATCH_SLOTS(MemAddressReserve),
                                             NCCLWATCH_SLOTS(MulticastCreate),
                                             NCCLWATCH_SLOTS(MulticastAddDevice),
                                             NCCLWATCH_SLOTS(MulticastBindMem),
                                             NCCLWATCH_SLOTS(CtxEnablePeer),
                                             NCCLWATCH_SLOTS(DeviceCanAccessPeer),
                                             NCCLWATCH_SLOTS(GetProcV2),
                                             NCCLWATCH_SLOTS(GetProcV1)};
#undef NCCLWATCH_SLOTS
static_assert(kSlots == 6, "NCCLWATCH_SLOTS lists one wrapper per slot");

// Names as the driver exports them (dlsym) and as cuGetProcAddress takes
// them (the base name, the version chosen by cudaVersion).
struct DriverName {
  const char* name;
  DriverFn fn;
};
const DriverName kDriverNames[] = {
    {"cuIpcGetMemHandle", kIpcGetMem},
    {"cuIpcOpenMemHandle", kIpcOpenMem},
    {"cuIpcOpenMemHandle_v2", kIpcOpenMem},
    {"cuIpcCloseMemHandle", kIpcCloseMem},
    {"cuIpcGetEventHandle", kIpcGetEvent},
    {"cuIpcOpenEventHandle", kIpcOpenEvent},
    {"cuMemCreate", kMemCreate},
    {"cuMemExportToShareableHandle", kMemExport},
    {"cuMemImportFromShareableHandle", kMemImport},
    {"cuMemMap", kMemMap},
    {"cuMemSetAccess", kMemSetAccess},
    {"cuMemRelease", kMemRelease},
    {"cuMemAddressReserve", kMemAddressReserve},
    {"cuMulticastCreate", kMulticastCreate},
    {"cuMulticastAddDevice", kMulticastAddDevice},
    {"cuMulticastBindMem", kMulticastBindMem},
    {"cuCtxEnablePeerAccess", kCtxEnablePeer},
    {"cuDeviceCanAccessPeer", kDeviceCanAccessPeer},
    {"cuGetProcAddress_v2", kGetProcAddressV2},
    {"cuGetProcAddress", kGetProcAddressV1},
};

bool TracingOff() { return __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) == kOff; }

// Whether `p` is one of the wrappers; then *fn and *slot say which.
bool IsWrapper(void* p, int* fn, int* slot) {
  for (int i = 0; i < kDriverFns; ++i)
    for (int s = 0; s < kSlots; ++s)
      if (kWrappers[i][s] == p) {
        *fn = i;
        *slot = s;
        return true;
      }
  return false;
}

// The wrapper of driver function `fn` at `real` for `door` (0-2), or `real`.
// A wrapper handed out by an inner lookup (a runtime whose driver table came
// through the shim's cuGetProcAddress) is handed on as the same definition's
// wrapper for the outer door, the one the caller used.
void* Wrap(DriverFn fn, void* real, int door) {
  int wrapped_fn = 0, slot = 0;
  if (real != nullptr && IsWrapper(real, &wrapped_fn, &slot))
    return kWrappers[wrapped_fn][slot / kDoors * kDoors + door];
  if (real == nullptr || TracingOff()) return real;
  for (int d = 0; d < kDefinitions; ++d) {
    void* expected = nullptr;
    if (__atomic_compare_exchange_n(&g_real[fn][d], &expected, real, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE) ||
        expected == real) {
      return kWrappers[fn][d * kDoors + door];
    }
  }
  return real;  // a third definition of one name: not watched
}

// A name looked up by base name (cuGetProcAddress, cudaGetDriverEntryPoint):
// "cuGetProcAddress" is the 5-argument form from CUDA 12.0 on.
void* WrapProc(const char* symbol, void* real, int cuda_version, int door) {
  if (symbol == nullptr) return real;
  if (strcmp(symbol, "cuGetProcAddress") == 0)
    return Wrap(cuda_version >= 12000 ? kGetProcAddressV2 : kGetProcAddressV1, real, door);
  for (const DriverName& n : kDriverNames)
    if (strcmp(n.name, symbol) == 0) return Wrap(n.fn, real, door);
  return real;
}

// ------------------------------------------------------------------ runtime

__thread int t_resolving __attribute__((tls_model("initial-exec")));

struct LoadedLibrary {
  const char* prefix;  // "libcudart.so"
  char path[512];
};

int FindLoaded(dl_phdr_info* info, size_t, void* data) {
  auto* want = static_cast<LoadedLibrary*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || path[0] == '\0') return 0;
  const char* base = strrchr(path, '/');
  base = base != nullptr ? base + 1 : path;
  if (strncmp(base, want->prefix, strlen(want->prefix)) != 0 || strlen(path) >= sizeof(want->path))
    return 0;
  strcpy(want->path, path);
  return 1;
}

// `name` in the runtime (cuda*) or driver (cu*) the process loaded in a
// local scope (dlopen without RTLD_GLOBAL, as Python extensions load theirs),
// which RTLD_NEXT does not search; found without loading anything.
void* FindInLocalScope(const char* name) {
  LoadedLibrary lib{strncmp(name, "cuda", 4) == 0 ? "libcudart.so" : "libcuda.so", {0}};
  dl_iterate_phdr(FindLoaded, &lib);
  if (lib.path[0] == '\0') return nullptr;
  void* h = dlopen(lib.path, RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) return nullptr;
  void* p = dlsym(h, name);
  dlclose(h);  // drops the reference RTLD_NOLOAD took; the library stays loaded
  return p;
}

template <typename Fn>
Fn Next(Fn* slot, const char* name) {
  Fn fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (__builtin_expect(fn != nullptr, 1) || t_resolving) return fn;
  t_resolving = 1;
  const int saved = errno;
  fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  if (fn == nullptr) fn = reinterpret_cast<Fn>(FindInLocalScope(name));
  errno = saved;
  t_resolving = 0;
  if (fn != nullptr) __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  return fn;
}

struct NextRuntime {
  decltype(&::cudaIpcGetMemHandle) ipc_get_mem;
  decltype(&::cudaIpcOpenMemHandle) ipc_open_mem;
  decltype(&::cudaIpcCloseMemHandle) ipc_close_mem;
  decltype(&::cudaIpcGetEventHandle) ipc_get_event;
  decltype(&::cudaIpcOpenEventHandle) ipc_open_event;
  decltype(&::cudaDeviceEnablePeerAccess) enable_peer;
  decltype(&::cudaDeviceCanAccessPeer) can_access_peer;
  cudaError_t (*entry_point)(const char*, void**, unsigned long long,
                             cudaDriverEntryPointQueryResult*);
  decltype(&::cudaGetDriverEntryPointByVersion) entry_point_by_version;
  decltype(&::cuGetProcAddress) get_proc_v2;
  GetProcAddressV1 get_proc_v1;
};
NextRuntime g_next;

constexpr cudaError_t kNoRuntime = cudaErrorInitializationError;  // 3

}  // namespace

namespace ncclwatch::shim {

void* WrapDriverSymbol(const char* name, void* real) {
  if (name == nullptr) return real;
  for (const DriverName& n : kDriverNames)
    if (strcmp(n.name, name) == 0) return Wrap(n.fn, real, 2);
  return real;
}

void ResolveRealCudaRuntime() {
  Next(&g_next.ipc_get_mem, "cudaIpcGetMemHandle");
  Next(&g_next.ipc_open_mem, "cudaIpcOpenMemHandle");
  Next(&g_next.ipc_close_mem, "cudaIpcCloseMemHandle");
  Next(&g_next.ipc_get_event, "cudaIpcGetEventHandle");
  Next(&g_next.ipc_open_event, "cudaIpcOpenEventHandle");
  Next(&g_next.enable_peer, "cudaDeviceEnablePeerAccess");
  Next(&g_next.can_access_peer, "cudaDeviceCanAccessPeer");
  Next(&g_next.entry_point, "cudaGetDriverEntryPoint");
  Next(&g_next.entry_point_by_version, "cudaGetDriverEntryPointByVersion");
  Next(&g_next.get_proc_v2, "cuGetProcAddress_v2");
  Next(&g_next.get_proc_v1, "cuGetProcAddress");
}

}  // namespace ncclwatch::shim

namespace {
__attribute__((constructor)) void ResolveAtStart() { ResolveRealCudaRuntime(); }
}  // namespace

#define NCCLWATCH_EXPORT extern "C" __attribute__((visibility("default")))

NCCLWATCH_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  auto real = Next(&g_next.ipc_get_mem, "cudaIpcGetMemHandle");
  if (real == nullptr) return kNoRuntime;
  ErrnoProbe probe;
  const cudaError_t r = real(handle, devPtr);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCudaIpcGetMemHandle, r, via::kRuntimeExport, CALLER, err);
  e.ptr = U(devPtr);
  Note(e, probe.visible);
  return r;
}

NCCLWATCH_EXPORT cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle,
                                                  unsigned int flags) {
  auto real = Next(&g_next.ipc_open_mem, "cudaIpcOpenMemHandle");
  if (real == nullptr) return kNoRuntime;
  ErrnoProbe probe;
  const cudaError_t r = real(devPtr, handle, flags);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCudaIpcOpenMemHandle, r, via::kRuntimeExport, CALLER, err);
  e.flags = flags;
  if (r == cudaSuccess && devPtr != nullptr) e.ptr = U(*devPtr);
  if (r != cudaSuccess) e.device = CurrentDevice();
  Note(e, probe.visible);
  return r;
}

NCCLWATCH_EXPORT cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  auto real = Next(&g_next.ipc_close_mem, "cudaIpcCloseMemHandle");
  if (real == nullptr) return kNoRuntime;
  ErrnoProbe probe;
  const cudaError_t r = real(devPtr);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCudaIpcCloseMemHandle, r, via::kRuntimeExport, CALLER, err);
  e.ptr = U(devPtr);
  Note(e, probe.visible);
  return r;
}

NCCLWATCH_EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle,
                                                   cudaEvent_t event) {
  auto real = Next(&g_next.ipc_get_event, "cudaIpcGetEventHandle");
  if (real == nullptr) return kNoRuntime;
  ErrnoProbe probe;
  const cudaError_t r = real(handle, event);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCudaIpcGetEventHandle, r, via::kRuntimeExport, CALLER, err);
  e.handle = U(event);
  Note(e, probe.visible);
  return r;
}

NCCLWATCH_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event,
                                                    cudaIpcEventHandle_t handle) {
  auto real = Next(&g_next.ipc_open_event, "cudaIpcOpenEventHandle");
  if (real == nullptr) return kNoRuntime;
  ErrnoProbe probe;
  const cudaError_t r = real(event, handle);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCudaIpcOpenEventHandle, r, via::kRuntimeExport, CALLER, err);
  if (r == cudaSuccess && event != nullptr) e.handle = U(*event);
  Note(e, probe.visible);
  return r;
}

NCCLWATCH_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  auto real = Next(&g_next.enable_peer, "cudaDeviceEnablePeerAccess");
  if (real == nullptr) return kNoRuntime;
  ErrnoProbe probe;
  const cudaError_t r = real(peerDevice, flags);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCudaDeviceEnablePeerAccess, r, via::kRuntimeExport, CALLER, err);
  e.peer = peerDevice;
  e.flags = flags;
  if (r != cudaSuccess) e.device = CurrentDevice();
  Note(e, probe.visible);
  return r;
}

NCCLWATCH_EXPORT cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device,
                                                     int peerDevice) {
  auto real = Next(&g_next.can_access_peer, "cudaDeviceCanAccessPeer");
  if (real == nullptr) return kNoRuntime;
  ErrnoProbe probe;
  const cudaError_t r = real(canAccessPeer, device, peerDevice);
  const int err = probe.Set();
  CudaCallEvent e = Event(f::kCudaDeviceCanAccessPeer, r, via::kRuntimeExport, CALLER, err);
  e.device = device;
  e.peer = peerDevice;
  if (r == cudaSuccess && canAccessPeer != nullptr) e.can_access = *canAccessPeer;
  Note(e, probe.visible);
  return r;
}

// The legacy entry point uses the runtime's own CUDA version: 12.0 or newer
// for every runtime that has it and cuGetProcAddress_v2.
NCCLWATCH_EXPORT cudaError_t
cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                        cudaDriverEntryPointQueryResult* driverStatus) {
  auto real = Next(&g_next.entry_point, "cudaGetDriverEntryPoint");
  if (real == nullptr) return kNoRuntime;
  const cudaError_t r = real(symbol, funcPtr, flags, driverStatus);
  if (r == cudaSuccess && funcPtr != nullptr && *funcPtr != nullptr) {
    const int saved = errno;
    *funcPtr = WrapProc(symbol, *funcPtr, 12000, 1);
    errno = saved;
  }
  return r;
}

NCCLWATCH_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    cudaDriverEntryPointQueryResult* driverStatus) {
  auto real = Next(&g_next.entry_point_by_version, "cudaGetDriverEntryPointByVersion");
  if (real == nullptr) return kNoRuntime;
  const cudaError_t r = real(symbol, funcPtr, cudaVersion, flags, driverStatus);
  if (r == cudaSuccess && funcPtr != nullptr && *funcPtr != nullptr) {
    const int saved = errno;
    *funcPtr = WrapProc(symbol, *funcPtr, static_cast<int>(cudaVersion), 1);
    errno = saved;
  }
  return r;
}

NCCLWATCH_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult* symbolStatus) {
  auto real = Next(&g_next.get_proc_v2, "cuGetProcAddress_v2");
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr) {
    const int saved = errno;
    *pfn = WrapProc(symbol, *pfn, cudaVersion, 0);
    errno = saved;
  }
  return r;
}

// The pre-12.0 form, exported by drivers for old callers.
#undef cuGetProcAddress
NCCLWATCH_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                           cuuint64_t flags) {
  auto real = Next(&g_next.get_proc_v1, "cuGetProcAddress");
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(symbol, pfn, cudaVersion, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr) {
    const int saved = errno;
    *pfn = WrapProc(symbol, *pfn, cudaVersion, 0);
    errno = saved;
  }
  return r;
}

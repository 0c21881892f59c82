// The CUDA driver API entry points of the simulator's libcuda.so.1.
//
// Each function has the signature cuda.h declares (cuda.h maps many names to
// their versioned symbols, e.g. cuMemAlloc to cuMemAlloc_v2, so defining them
// here under their plain names exports what real programs link against).
// Work that would run on the GPU is queued on the simulated stream.

#include <cuda.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "common/cuda_errors.h"
#include "common/sim_env.h"
#include "driver/driver_state.h"
#include "driver/vmm.h"

using namespace ncclsim::driver;  // NOLINT: this file is the API surface of that namespace

namespace {

std::atomic<bool> g_initialized{false};

#define SIM_REQUIRE_INIT()                                                                 \
  do {                                                                                     \
    if (!g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)

// Pinned or registered host memory, for pointer attributes and frees.
struct HostRanges {
  std::mutex mu;
  std::map<uintptr_t, size_t> pinned;      // cuMemAllocHost / cuMemHostAlloc
  std::map<uintptr_t, size_t> registered;  // cuMemHostRegister
};
HostRanges& Host() {
  static auto* h = new HostRanges();
  return *h;
}

bool InRanges(const std::map<uintptr_t, size_t>& m, uintptr_t p, uintptr_t* base, size_t* size) {
  auto it = m.upper_bound(p);
  if (it == m.begin()) return false;
  --it;
  if (p >= it->first + it->second) return false;
  *base = it->first;
  *size = it->second;
  return true;
}

CUresult CheckDevice(CUdevice dev, Device** out = nullptr) {
  Device* d = DeviceAt(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (out) *out = d;
  return CUDA_SUCCESS;
}

CUresult StickyError(int device) {
  Device* d = DeviceAt(device);
  return d ? static_cast<CUresult>(d->sticky_error.load()) : CUDA_SUCCESS;
}

// Resolves the stream and refuses new work on a faulted device.
CUresult StreamForWork(CUstream handle, CUstream_st** s) {
  CUresult rc = ResolveStream(handle, s);
  if (rc != CUDA_SUCCESS) return rc;
  return StickyError((*s)->device);
}

// NCCLSIM_SLOW_GPU=D:N:MS: one GPU of the host runs its work slowly, as a
// throttled or failing part does. From device D's N-th copy or memset on a
// stream (0-based, all its streams, the program's and NCCL's), each takes MS
// longer on the stream: the call returns at once, as ever; what the stream
// holds after it (an NCCL operation) starts later. D is the host's GPU index
// (before CUDA_VISIBLE_DEVICES).
struct SlowGpu {
  bool armed = false;
  int physical = -1;
  int64_t from = 0;
  int64_t ms = 0;
};

const SlowGpu& SlowGpuKnob() {
  static const SlowGpu knob = [] {
    SlowGpu k;
    const char* v = ncclsim::EnvRaw("NCCLSIM_SLOW_GPU");
    if (v == nullptr || *v == '\0') return k;
    int device = -1;
    long long from = -1, ms = -1;
    char tail = 0;
    if (std::sscanf(v, "%d:%lld:%lld%c", &device, &from, &ms, &tail) != 3 || device < 0 ||
        from < 0 || ms < 0 || ms > 60000) {
      std::fprintf(stderr,
                   "ncclsim: NCCLSIM_SLOW_GPU='%s' is not DEVICE:FROM:MS (MS up to 60000); no "
                   "GPU slowed\n",
                   v);
      return k;
    }
    k.armed = true;
    k.physical = device;
    k.from = from;
    k.ms = ms;
    return k;
  }();
  return knob;
}

// The extra time device work enqueued on `s` now takes (NCCLSIM_SLOW_GPU).
int64_t SlowWorkMs(const CUstream_st* s) {
  const SlowGpu& k = SlowGpuKnob();
  if (!k.armed) return 0;
  const Device* d = DeviceAt(s->device);
  if (d == nullptr || d->physical != k.physical) return 0;
  static std::atomic<int64_t> work{0};
  return work.fetch_add(1) >= k.from ? k.ms : 0;
}

// Sleeps `ms` on the stream's worker: the device is busy that much longer.
void BusyFor(int64_t ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

CUresult CopyAsync(void* dst, const void* src, size_t n, CUstream stream) {
  SIM_REQUIRE_INIT();
  if (n == 0) return CUDA_SUCCESS;
  if (dst == nullptr || src == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  CUresult rc = StreamForWork(stream, &s);
  if (rc != CUDA_SUCCESS) return rc;
  const int64_t slow = SlowWorkMs(s);
  Enqueue(s, [dst, src, n, slow] {
    BusyFor(slow);
    std::memmove(dst, src, n);
  });
  return CUDA_SUCCESS;
}

// A synchronous copy is ordered after the legacy default stream's work.
CUresult CopySync(void* dst, const void* src, size_t n) {
  CUresult rc = CopyAsync(dst, src, n, nullptr);
  if (rc != CUDA_SUCCESS || n == 0) return rc;
  CUstream_st* s = nullptr;
  rc = ResolveStream(nullptr, &s);
  return rc == CUDA_SUCCESS ? SynchronizeStream(s) : rc;
}

template <typename T>
CUresult FillAsync(CUdeviceptr dst, T value, size_t n, CUstream stream) {
  SIM_REQUIRE_INIT();
  if (n == 0) return CUDA_SUCCESS;
  if (dst == 0) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  CUresult rc = StreamForWork(stream, &s);
  if (rc != CUDA_SUCCESS) return rc;
  T* p = reinterpret_cast<T*>(dst);
  const int64_t slow = SlowWorkMs(s);
  Enqueue(s, [p, value, n, slow] {
    BusyFor(slow);
    for (size_t i = 0; i < n; ++i) p[i] = value;
  });
  return CUDA_SUCCESS;
}

template <typename T>
CUresult FillSync(CUdeviceptr dst, T value, size_t n) {
  CUresult rc = FillAsync(dst, value, n, nullptr);
  if (rc != CUDA_SUCCESS || n == 0) return rc;
  CUstream_st* s = nullptr;
  rc = ResolveStream(nullptr, &s);
  return rc == CUDA_SUCCESS ? SynchronizeStream(s) : rc;
}

void* PtrOf(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

}  // namespace

extern "C" {

// ----------------------------------------------------------------- init

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (VisibleDevices().empty()) return CUDA_ERROR_NO_DEVICE;
  g_initialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = DriverVersion();
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ncclsim::CudaErrorInfo* e = ncclsim::FindCudaError(error);
  if (e == nullptr || e->driver_name == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = e->text;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ncclsim::CudaErrorInfo* e = ncclsim::FindCudaError(error);
  if (e == nullptr || e->driver_name == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = e->driver_name;
  return CUDA_SUCCESS;
}

// ----------------------------------------------------------------- devices

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  SIM_REQUIRE_INIT();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (DeviceAt(ordinal) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  SIM_REQUIRE_INIT();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(VisibleDevices().size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  SIM_REQUIRE_INIT();
  Device* d = nullptr;
  if (CUresult rc = CheckDevice(dev, &d)) return rc;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(len), "%s", d->name.c_str());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  SIM_REQUIRE_INIT();
  Device* d = nullptr;
  if (CUresult rc = CheckDevice(dev, &d)) return rc;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *uuid = d->uuid;
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  SIM_REQUIRE_INIT();
  Device* d = nullptr;
  if (CUresult rc = CheckDevice(dev, &d)) return rc;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = d->total_memory;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  SIM_REQUIRE_INIT();
  Device* d = nullptr;
  if (CUresult rc = CheckDevice(dev, &d)) return rc;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int v = 0;
  switch (attrib) {  // an H100 SXM, where a program is likely to ask
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      v = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      v = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      v = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      v = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      v = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      v = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      v = 49152;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      v = 1980000;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      v = 2619000;
      break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      v = 5120;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      v = 50 << 20;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      v = d->pci_bus;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      v = d->pci_device;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      v = d->pci_domain;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
      v = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      v = 2;
      break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
      v = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
      v = MulticastSupported() ? 1 : 0;
      break;
    default:
      v = 0;
      break;
  }
  *pi = v;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  SIM_REQUIRE_INIT();
  Device* d = nullptr;
  if (CUresult rc = CheckDevice(dev, &d)) return rc;
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(pciBusId, static_cast<size_t>(len), "%s", PciBusIdString(*d).c_str());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  SIM_REQUIRE_INIT();
  if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned domain = 0, bus = 0, device = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x", &domain, &bus, &device) != 3) {
    domain = 0;
    if (std::sscanf(pciBusId, "%x:%x", &bus, &device) != 2) return CUDA_ERROR_INVALID_VALUE;
  }
  for (Device* d : VisibleDevices()) {
    if (static_cast<unsigned>(d->pci_domain) == domain &&
        static_cast<unsigned>(d->pci_bus) == bus &&
        static_cast<unsigned>(d->pci_device) == device) {
      *dev = d->ordinal;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  SIM_REQUIRE_INIT();
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = CheckDevice(dev)) return rc;
  if (CUresult rc = CheckDevice(peerDev)) return rc;
  *canAccessPeer = dev != peerDev && PeerAccessReported() ? 1 : 0;
  return CUDA_SUCCESS;
}

// ----------------------------------------------------------------- contexts

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  SIM_REQUIRE_INIT();
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = CheckDevice(dev)) return rc;
  CUctx_st* ctx = PrimaryContext(dev);
  ctx->retain_count.fetch_add(1);
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  SIM_REQUIRE_INIT();
  if (CUresult rc = CheckDevice(dev)) return rc;
  CUctx_st* ctx = PrimaryContext(dev);
  if (ctx->retain_count.load() <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  ctx->retain_count.fetch_sub(1);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  SIM_REQUIRE_INIT();
  if (CUresult rc = CheckDevice(dev)) return rc;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = PrimaryContext(dev);
  *flags = ctx->flags;
  *active = ctx->retain_count.load() > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  SIM_REQUIRE_INIT();
  if (CUresult rc = CheckDevice(dev)) return rc;
  PrimaryContext(dev)->flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  SIM_REQUIRE_INIT();
  if (CUresult rc = CheckDevice(dev)) return rc;
  (void)SynchronizeDevice(dev);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  SIM_REQUIRE_INIT();
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = CurrentContext();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  SIM_REQUIRE_INIT();
  CurrentContext() = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxSetCurrent(ctx); }

CUresult cuCtxPopCurrent(CUcontext* pctx) {
  SIM_REQUIRE_INIT();
  if (pctx) *pctx = CurrentContext();
  CurrentContext() = nullptr;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  SIM_REQUIRE_INIT();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int d = 0;
  if (CUresult rc = CurrentDevice(&d)) return rc;
  *device = d;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int* flags) {
  SIM_REQUIRE_INIT();
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CurrentContext() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *flags = CurrentContext()->flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  SIM_REQUIRE_INIT();
  int d = 0;
  if (CUresult rc = CurrentDevice(&d)) return rc;
  return SynchronizeDevice(d);
}

CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  SIM_REQUIRE_INIT();
  if (leastPriority) *leastPriority = 0;
  if (greatestPriority) *greatestPriority = -5;
  return CUDA_SUCCESS;
}

// ----------------------------------------------------------------- memory

CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  SIM_REQUIRE_INIT();
  int d = 0;
  if (CUresult rc = CurrentDevice(&d)) return rc;
  if (CUresult rc = StickyError(d)) return rc;
  return AllocDevice(d, bytesize, false, dptr);
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  SIM_REQUIRE_INIT();
  (void)flags;
  int d = 0;
  if (CUresult rc = CurrentDevice(&d)) return rc;
  return AllocDevice(d, bytesize, true, dptr);
}

CUresult cuMemFree(CUdeviceptr dptr) {
  SIM_REQUIRE_INIT();
  return FreeDevice(dptr);
}

CUresult cuMemGetInfo(size_t* free_bytes, size_t* total) {
  SIM_REQUIRE_INIT();
  int d = 0;
  if (CUresult rc = CurrentDevice(&d)) return rc;
  if (free_bytes == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t used = 0;
  DeviceMemoryUsage(d, &used);
  *total = DeviceAt(d)->total_memory;
  *free_bytes = *total - used;
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  SIM_REQUIRE_INIT();
  PointerInfo info;
  if (!LookupPointer(static_cast<uintptr_t>(dptr), &info)) return CUDA_ERROR_NOT_FOUND;
  if (pbase) *pbase = static_cast<CUdeviceptr>(info.base);
  if (psize) *psize = info.size;
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  SIM_REQUIRE_INIT();
  (void)Flags;
  if (pp == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytesize) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(Host().mu);
  Host().pinned[reinterpret_cast<uintptr_t>(p)] = bytesize;
  *pp = p;
  return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void** pp, size_t bytesize) { return cuMemHostAlloc(pp, bytesize, 0); }

CUresult cuMemFreeHost(void* p) {
  SIM_REQUIRE_INIT();
  std::lock_guard<std::mutex> lock(Host().mu);
  auto it = Host().pinned.find(reinterpret_cast<uintptr_t>(p));
  if (it == Host().pinned.end()) return CUDA_ERROR_INVALID_VALUE;
  Host().pinned.erase(it);
  std::free(p);
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  SIM_REQUIRE_INIT();
  (void)Flags;
  if (p == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(Host().mu);
  auto& reg = Host().registered;
  if (!reg.emplace(reinterpret_cast<uintptr_t>(p), bytesize).second) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void* p) {
  SIM_REQUIRE_INIT();
  std::lock_guard<std::mutex> lock(Host().mu);
  if (Host().registered.erase(reinterpret_cast<uintptr_t>(p)) == 0) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  SIM_REQUIRE_INIT();
  if (pdptr == nullptr || p == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));  // unified addressing
  return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return CopySync(PtrOf(dst), PtrOf(src), ByteCount);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  return CopyAsync(PtrOf(dst), PtrOf(src), ByteCount, hStream);
}
CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return CopySync(PtrOf(dstDevice), srcHost, ByteCount);
}
CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return CopySync(dstHost, PtrOf(srcDevice), ByteCount);
}
CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return CopySync(PtrOf(dstDevice), PtrOf(srcDevice), ByteCount);
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                           CUstream hStream) {
  return CopyAsync(PtrOf(dstDevice), srcHost, ByteCount, hStream);
}
CUresult cuMemcpyDtoHAsync(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                           CUstream hStream) {
  return CopyAsync(dstHost, PtrOf(srcDevice), ByteCount, hStream);
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                           CUstream hStream) {
  return CopyAsync(PtrOf(dstDevice), PtrOf(srcDevice), ByteCount, hStream);
}
CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext, CUdeviceptr srcDevice, CUcontext,
                      size_t ByteCount) {
  return CopySync(PtrOf(dstDevice), PtrOf(srcDevice), ByteCount);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext, CUdeviceptr srcDevice, CUcontext,
                           size_t ByteCount, CUstream hStream) {
  return CopyAsync(PtrOf(dstDevice), PtrOf(srcDevice), ByteCount, hStream);
}

CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return FillSync(dstDevice, uc, N);
}
CUresult cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return FillSync(dstDevice, ui, N);
}
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return FillAsync(dstDevice, uc, N, hStream);
}
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return FillAsync(dstDevice, ui, N, hStream);
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  SIM_REQUIRE_INIT();
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t p = static_cast<uintptr_t>(ptr);
  PointerInfo info;
  uintptr_t hbase = 0;
  size_t hsize = 0;
  bool host = false;
  if (!LookupPointer(p, &info)) {
    std::lock_guard<std::mutex> lock(Host().mu);
    host = InRanges(Host().pinned, p, &hbase, &hsize) ||
           InRanges(Host().registered, p, &hbase, &hsize);
    if (!host) return CUDA_ERROR_INVALID_VALUE;
  }
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<void**>(data) = reinterpret_cast<void*>(p);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = host ? nullptr : PrimaryContext(info.device);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = host ? -1 : info.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned*>(data) = 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = host ? hbase : info.base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = host ? hsize : info.size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = host ? hbase : info.alloc_id;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                void** data, CUdeviceptr ptr) {
  SIM_REQUIRE_INIT();
  if (attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < numAttributes; ++i) {
    CUresult rc = cuPointerGetAttribute(data[i], attributes[i], ptr);
    if (rc == CUDA_ERROR_INVALID_VALUE && attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
      *static_cast<unsigned*>(data[i]) = 0;  // unregistered host memory: "no type"
    } else if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_INVALID_VALUE) {
      return rc;
    }
  }
  return CUDA_SUCCESS;
}

// ----------------------------------------------------------------- streams

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  SIM_REQUIRE_INIT();
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int d = 0;
  if (CUresult rc = CurrentDevice(&d)) return rc;
  *phStream = CreateStream(d, flags, priority);
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return cuStreamCreateWithPriority(phStream, Flags, 0);
}

CUresult cuStreamDestroy(CUstream hStream) {
  SIM_REQUIRE_INIT();
  if (hStream == nullptr || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  DestroyStream(hStream);
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) {
  SIM_REQUIRE_INIT();
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  return SynchronizeStream(s);
}

CUresult cuStreamQuery(CUstream hStream) {
  SIM_REQUIRE_INIT();
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  if (CUresult rc = StickyError(s->device)) return rc;
  return StreamIdle(s) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  SIM_REQUIRE_INIT();
  (void)Flags;
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  StreamWaitOnEvent(s, hEvent);
  return CUDA_SUCCESS;
}

// The simulator never captures graphs: every stream reports "not capturing".
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  SIM_REQUIRE_INIT();
  if (captureStatus == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  SIM_REQUIRE_INIT();
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = s->flags;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetPriority(CUstream hStream, int* priority) {
  SIM_REQUIRE_INIT();
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *priority = s->priority;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetId(CUstream hStream, unsigned long long* streamId) {
  SIM_REQUIRE_INIT();
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  if (streamId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *streamId = s->id;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  SIM_REQUIRE_INIT();
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = PrimaryContext(s->device);
  return CUDA_SUCCESS;
}

CUresult cuStreamGetDevice(CUstream hStream, CUdevice* device) {
  SIM_REQUIRE_INIT();
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = s->device;
  return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  SIM_REQUIRE_INIT();
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult rc = StreamForWork(hStream, &s)) return rc;
  Enqueue(s, [fn, userData] { fn(userData); });
  return CUDA_SUCCESS;
}

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void* userData,
                             unsigned int flags) {
  SIM_REQUIRE_INIT();
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult rc = StreamForWork(hStream, &s)) return rc;
  Enqueue(
      s, [callback, userData, hStream, s] { callback(hStream, StickyError(s->device), userData); });
  return CUDA_SUCCESS;
}

// ----------------------------------------------------------------- events

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  SIM_REQUIRE_INIT();
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  CUevent_st* e = CreateEvent(Flags, &rc);
  if (e == nullptr) return rc;
  *phEvent = e;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) {
  SIM_REQUIRE_INIT();
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  DestroyEvent(hEvent);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  SIM_REQUIRE_INIT();
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* s = nullptr;
  if (CUresult rc = ResolveStream(hStream, &s)) return rc;
  if (CUresult rc = StickyError(s->device)) return rc;
  hEvent->device.store(s->device);
  RecordEvent(hEvent, s);
  return CUDA_SUCCESS;
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  (void)flags;
  return cuEventRecord(hEvent, hStream);
}

CUresult cuEventQuery(CUevent hEvent) {
  SIM_REQUIRE_INIT();
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  // After a fault the device's sticky error is what every query returns.
  const int device = hEvent->device.load();
  if (device >= 0) {
    if (CUresult rc = StickyError(device)) return rc;
  }
  return EventDone(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
  SIM_REQUIRE_INIT();
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  WaitEvent(hEvent);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  SIM_REQUIRE_INIT();
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (hStart == nullptr || hEnd == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (hStart->counters->recorded.load() == 0 || hEnd->counters->recorded.load() == 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (!EventDone(hStart) || !EventDone(hEnd)) return CUDA_ERROR_NOT_READY;
  const double ns = static_cast<double>(hEnd->counters->completed_at_ns.load()) -
                    static_cast<double>(hStart->counters->completed_at_ns.load());
  *pMilliseconds = static_cast<float>(ns / 1e6);
  return CUDA_SUCCESS;
}

// ----------------------------------------------------------------- IPC

CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  SIM_REQUIRE_INIT();
  return IpcExportMemory(dptr, pHandle);
}

CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  SIM_REQUIRE_INIT();
  if (Flags & ~static_cast<unsigned>(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = IpcImportRefusal()) return rc;
  return IpcImportMemory(handle, pdptr);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  SIM_REQUIRE_INIT();
  return IpcCloseMemory(dptr);
}

CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  SIM_REQUIRE_INIT();
  return IpcExportEvent(event, pHandle);
}

CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  SIM_REQUIRE_INIT();
  return IpcImportEvent(handle, phEvent);
}

// ----------------------------------------------------------------- simulator

CUresult ncclsimInjectDeviceFault(int ordinal, CUresult error) {
  Device* d = DeviceAt(ordinal);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  int expected = CUDA_SUCCESS;
  d->sticky_error.compare_exchange_strong(expected, static_cast<int>(error));
  return CUDA_SUCCESS;
}

int ncclsimPhysicalDevice(int ordinal) {
  const Device* d = DeviceAt(ordinal);
  return d == nullptr ? -1 : d->physical;
}

}  // extern "C"

// The CUDA runtime API of the simulator's libcudart.so.13.
//
// Every function keeps the signature cuda_runtime_api.h declares and is a
// thin translation onto the driver (runtime and driver share error numbers
// since CUDA 10, and their stream, event and IPC handle types are the same
// objects). As in the real runtime: the first call that needs a device binds
// the driver and makes device 0's primary context current; a failing call
// sets the thread's last error, except cudaErrorNotReady, which is a status.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "common/cuda_errors.h"
#include "runtime/driver_binding.h"

using ncclsim::runtime::Driver;
using ncclsim::runtime::DriverTable;

namespace {

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

cudaError_t Ret(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) t_last_error = e;
  return e;
}
cudaError_t Ret(CUresult r) { return Ret(static_cast<cudaError_t>(r)); }

// The driver with a current context (device 0's primary one unless the
// thread chose another), or why not.
const DriverTable* Ready(cudaError_t* err) {
  const DriverTable* d = Driver(err);
  if (d == nullptr) return nullptr;
  CUcontext ctx = nullptr;
  d->cuCtxGetCurrent(&ctx);
  if (ctx == nullptr) {
    CUresult rc = d->cuDevicePrimaryCtxRetain(&ctx, 0);
    if (rc == CUDA_SUCCESS) rc = d->cuCtxSetCurrent(ctx);
    if (rc != CUDA_SUCCESS) {
      *err = static_cast<cudaError_t>(rc);
      return nullptr;
    }
  }
  return d;
}

#define SIM_READY(d)                        \
  cudaError_t ready_err = cudaSuccess;      \
  const DriverTable* d = Ready(&ready_err); \
  if (d == nullptr) return Ret(ready_err)

CUdeviceptr Dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

struct Callback {
  cudaStreamCallback_t fn;
  cudaStream_t stream;
  void* user;
};

void RunCallback(void* arg) {
  auto* cb = static_cast<Callback*>(arg);
  cb->fn(cb->stream, cudaSuccess, cb->user);
  delete cb;
}

struct DeferredFree {
  const DriverTable* d;
  CUdeviceptr ptr;
};

void RunDeferredFree(void* arg) {
  auto* f = static_cast<DeferredFree*>(arg);
  f->d->cuMemFree(f->ptr);
  delete f;
}

int CurrentOrdinal(const DriverTable* d) {
  CUdevice dev = 0;
  return d->cuCtxGetDevice(&dev) == CUDA_SUCCESS ? dev : 0;
}

}  // namespace

extern "C" {

// ----------------------------------------------------------------- errors and versions

const char* cudaGetErrorString(cudaError_t error) {
  const ncclsim::CudaErrorInfo* e = ncclsim::FindCudaError(error);
  return e ? e->text : "unrecognized error code";
}

const char* cudaGetErrorName(cudaError_t error) {
  const ncclsim::CudaErrorInfo* e = ncclsim::FindCudaError(error);
  return e ? e->runtime_name : "unrecognized error code";
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return Ret(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return Ret(cudaErrorInvalidValue);
  *driverVersion = ncclsim::runtime::InstalledDriverVersion();
  return cudaSuccess;
}

// ----------------------------------------------------------------- devices

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  return Ret(d->cuDeviceGetCount(count));
}

cudaError_t cudaSetDevice(int device) {
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  CUcontext ctx = nullptr;
  CUresult rc = d->cuDevicePrimaryCtxRetain(&ctx, device);
  if (rc != CUDA_SUCCESS) return Ret(rc);
  return Ret(d->cuCtxSetCurrent(ctx));
}

cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags) {
  (void)flags;
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  CUcontext ctx = nullptr;
  CUresult rc = d->cuDevicePrimaryCtxRetain(&ctx, device);
  if (rc == CUDA_SUCCESS) rc = d->cuDevicePrimaryCtxSetFlags(device, deviceFlags);
  return Ret(rc);
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  CUcontext ctx = nullptr;
  d->cuCtxGetCurrent(&ctx);
  *device = ctx ? CurrentOrdinal(d) : 0;
  return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  SIM_READY(d);
  return Ret(d->cuDevicePrimaryCtxSetFlags(CurrentOrdinal(d), flags));
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  int active = 0;
  return Ret(d->cuDevicePrimaryCtxGetState(CurrentOrdinal(d), flags, &active));
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  // cudaDeviceAttr and CUdevice_attribute share their numbering.
  return Ret(d->cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  std::memset(prop, 0, sizeof(*prop));
  CUresult rc = d->cuDeviceGetName(prop->name, sizeof(prop->name), device);
  if (rc != CUDA_SUCCESS) return Ret(rc);
  CUuuid uuid;
  d->cuDeviceGetUuid(&uuid, device);
  std::memcpy(&prop->uuid, &uuid, sizeof(uuid));
  d->cuDeviceTotalMem(&prop->totalGlobalMem, device);
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    d->cuDeviceGetAttribute(&v, a, device);
    return v;
  };
  prop->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  prop->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  prop->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  prop->warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  prop->maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  prop->maxThreadsPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  prop->sharedMemPerBlock =
      static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  prop->memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  prop->l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  prop->pciBusID = attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  prop->pciDeviceID = attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  prop->pciDomainID = attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  prop->unifiedAddressing = attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  prop->canMapHostMemory = attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  prop->managedMemory = attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  prop->concurrentManagedAccess = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  prop->concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  prop->ECCEnabled = attr(CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
  prop->asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->streamPrioritiesSupported = 1;
  prop->ipcEventSupported = 1;
  prop->memoryPoolsSupported = 1;
  prop->hostRegisterSupported = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  return Ret(d->cuDeviceGetPCIBusId(pciBusId, len, device));
}

cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* pciBusId) {
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  return Ret(d->cuDeviceGetByPCIBusId(device, pciBusId));
}

cudaError_t cudaDeviceSynchronize(void) {
  SIM_READY(d);
  return Ret(d->cuCtxSynchronize());
}

cudaError_t cudaDeviceReset(void) {
  SIM_READY(d);
  return Ret(d->cuDevicePrimaryCtxReset(CurrentOrdinal(d)));
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  SIM_READY(d);
  return Ret(d->cuCtxGetStreamPriorityRange(leastPriority, greatestPriority));
}

cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  return Ret(d->cuDeviceCanAccessPeer(canAccessPeer, device, peerDevice));
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  if (flags != 0) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  int count = 0;
  d->cuDeviceGetCount(&count);
  if (peerDevice < 0 || peerDevice >= count) return Ret(cudaErrorInvalidDevice);
  const int self = CurrentOrdinal(d);
  if (peerDevice == self) return Ret(cudaErrorInvalidDevice);
  // As the real runtime: through the peer's primary context.
  CUcontext peer = nullptr;
  CUresult rc = d->cuDevicePrimaryCtxRetain(&peer, peerDevice);
  if (rc == CUDA_SUCCESS) rc = d->cuCtxEnablePeerAccess(peer, 0);
  return Ret(rc);
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  SIM_READY(d);
  CUcontext peer = nullptr;
  CUresult rc = d->cuDevicePrimaryCtxRetain(&peer, peerDevice);
  if (rc == CUDA_SUCCESS) rc = d->cuCtxDisablePeerAccess(peer);
  return Ret(rc);
}

// ----------------------------------------------------------------- memory

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  CUresult rc = d->cuMemAlloc(&p, size);
  if (rc != CUDA_SUCCESS) return Ret(rc);
  *devPtr = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
  return cudaSuccess;
}

cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (devPtr == nullptr || size == 0) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  CUdeviceptr p = 0;
  CUresult rc = d->cuMemAllocManaged(&p, size, flags);
  if (rc != CUDA_SUCCESS) return Ret(rc);
  *devPtr = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
  return cudaSuccess;
}

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  (void)hStream;  // allocated at once: a stream-ordered allocation is ready no later
  return cudaMalloc(devPtr, size);
}

cudaError_t cudaFree(void* devPtr) {
  SIM_READY(d);
  if (devPtr == nullptr) return cudaSuccess;
  CUresult rc = d->cuMemFree(Dptr(devPtr));
  return Ret(rc == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue : static_cast<cudaError_t>(rc));
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  SIM_READY(d);
  if (devPtr == nullptr) return cudaSuccess;
  auto* f = new DeferredFree{d, Dptr(devPtr)};
  CUresult rc = d->cuLaunchHostFunc(hStream, RunDeferredFree, f);
  if (rc != CUDA_SUCCESS) delete f;
  return Ret(rc);
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  SIM_READY(d);
  return Ret(d->cuMemGetInfo(free_bytes, total));
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  SIM_READY(d);
  return Ret(d->cuMemHostAlloc(pHost, size, flags));
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, 0); }

cudaError_t cudaFreeHost(void* ptr) {
  SIM_READY(d);
  return Ret(d->cuMemFreeHost(ptr));
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  SIM_READY(d);
  return Ret(d->cuMemHostRegister(ptr, size, flags));
}

cudaError_t cudaHostUnregister(void* ptr) {
  SIM_READY(d);
  return Ret(d->cuMemHostUnregister(ptr));
}

cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (pDevice == nullptr) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  CUdeviceptr p = 0;
  CUresult rc = d->cuMemHostGetDevicePointer(&p, pHost, flags);
  if (rc == CUDA_SUCCESS) *pDevice = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
  return Ret(rc);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  (void)kind;  // one address space: every kind is a copy
  SIM_READY(d);
  return Ret(d->cuMemcpy(Dptr(dst), Dptr(src), count));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  (void)kind;
  SIM_READY(d);
  return Ret(d->cuMemcpyAsync(Dptr(dst), Dptr(src), count, stream));
}

cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  (void)dstDevice;
  (void)srcDevice;
  SIM_READY(d);
  return Ret(d->cuMemcpy(Dptr(dst), Dptr(src), count));
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                size_t count, cudaStream_t stream) {
  (void)dstDevice;
  (void)srcDevice;
  SIM_READY(d);
  return Ret(d->cuMemcpyAsync(Dptr(dst), Dptr(src), count, stream));
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  SIM_READY(d);
  return Ret(d->cuMemsetD8(Dptr(devPtr), static_cast<unsigned char>(value), count));
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  SIM_READY(d);
  return Ret(d->cuMemsetD8Async(Dptr(devPtr), static_cast<unsigned char>(value), count, stream));
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  std::memset(attributes, 0, sizeof(*attributes));
  unsigned type = 0;
  if (d->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, Dptr(ptr)) !=
      CUDA_SUCCESS) {
    attributes->type = cudaMemoryTypeUnregistered;  // plain host memory: success, "no type"
    attributes->device = -2;
    attributes->hostPointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  if (type == CU_MEMORYTYPE_HOST) {
    attributes->type = cudaMemoryTypeHost;
    attributes->device = CurrentOrdinal(d);
    attributes->hostPointer = const_cast<void*>(ptr);
    attributes->devicePointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  int ordinal = 0;
  d->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, Dptr(ptr));
  attributes->type = cudaMemoryTypeDevice;
  attributes->device = ordinal;
  attributes->devicePointer = const_cast<void*>(ptr);
  return cudaSuccess;
}

// ----------------------------------------------------------------- streams

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  if (pStream == nullptr) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  return Ret(d->cuStreamCreateWithPriority(pStream, flags, priority));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return cudaStreamCreateWithPriority(pStream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return cudaStreamCreateWithPriority(pStream, 0, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  SIM_READY(d);
  return Ret(d->cuStreamDestroy(stream));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  SIM_READY(d);
  return Ret(d->cuStreamSynchronize(stream));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  SIM_READY(d);
  return Ret(d->cuStreamQuery(stream));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  SIM_READY(d);
  return Ret(d->cuStreamWaitEvent(stream, event, flags));
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  SIM_READY(d);
  return Ret(d->cuStreamGetFlags(hStream, flags));
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  SIM_READY(d);
  return Ret(d->cuStreamGetPriority(hStream, priority));
}

cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  SIM_READY(d);
  return Ret(d->cuStreamGetId(hStream, streamId));
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  SIM_READY(d);
  return Ret(d->cuStreamGetDevice(hStream, device));
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  SIM_READY(d);
  return Ret(d->cuLaunchHostFunc(stream, fn, userData));
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                  void* userData, unsigned int flags) {
  if (callback == nullptr || flags != 0) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  auto* cb = new Callback{callback, stream, userData};
  CUresult rc = d->cuLaunchHostFunc(stream, RunCallback, cb);
  if (rc != CUDA_SUCCESS) delete cb;
  return Ret(rc);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  enum cudaStreamCaptureStatus* pCaptureStatus) {
  (void)stream;
  if (pCaptureStatus == nullptr) return Ret(cudaErrorInvalidValue);
  *pCaptureStatus = cudaStreamCaptureStatusNone;  // the simulator never captures graphs
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return Ret(cudaErrorInvalidValue);
  std::swap(*mode, t_capture_mode);
  return cudaSuccess;
}

// ----------------------------------------------------------------- events

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  return Ret(d->cuEventCreate(event, flags));
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, 0); }

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  SIM_READY(d);
  return Ret(d->cuEventRecord(event, stream));
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  (void)flags;
  return cudaEventRecord(event, stream);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  SIM_READY(d);
  return Ret(d->cuEventQuery(event));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  SIM_READY(d);
  return Ret(d->cuEventSynchronize(event));
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  SIM_READY(d);
  return Ret(d->cuEventDestroy(event));
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  SIM_READY(d);
  return Ret(d->cuEventElapsedTime(ms, start, end));
}

// ----------------------------------------------------------------- IPC

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  if (handle == nullptr) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  CUipcMemHandle h;
  CUresult rc = d->cuIpcGetMemHandle(&h, Dptr(devPtr));
  if (rc == CUDA_SUCCESS) std::memcpy(handle, &h, sizeof(h));
  return Ret(rc);
}

cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  if (devPtr == nullptr) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  CUipcMemHandle h;
  std::memcpy(&h, &handle, sizeof(h));
  CUdeviceptr p = 0;
  CUresult rc = d->cuIpcOpenMemHandle(&p, h, flags);
  if (rc == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
  return Ret(rc);
}

cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  SIM_READY(d);
  return Ret(d->cuIpcCloseMemHandle(Dptr(devPtr)));
}

cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  if (handle == nullptr) return Ret(cudaErrorInvalidValue);
  SIM_READY(d);
  CUipcEventHandle h;
  CUresult rc = d->cuIpcGetEventHandle(&h, event);
  if (rc == CUDA_SUCCESS) std::memcpy(handle, &h, sizeof(h));
  return Ret(rc);
}

cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  SIM_READY(d);
  CUipcEventHandle h;
  std::memcpy(&h, &handle, sizeof(h));
  return Ret(d->cuIpcOpenEventHandle(event, h));
}

// ----------------------------------------------------------------- driver entry points

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult* driverStatus) {
  if (symbol == nullptr || funcPtr == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  const DriverTable* d = Driver(&err);
  if (d == nullptr) return Ret(err);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult rc = d->cuGetProcAddress(symbol, funcPtr, static_cast<int>(cudaVersion), flags, &status);
  if (driverStatus) *driverStatus = static_cast<cudaDriverEntryPointQueryResult>(status);
  // A symbol the driver lacks is reported through driverStatus, not as an error.
  return rc == CUDA_ERROR_NOT_FOUND ? cudaSuccess : Ret(rc);
}

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult* driverStatus) {
  return cudaGetDriverEntryPointByVersion(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

}  // extern "C"

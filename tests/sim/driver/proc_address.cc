// cuGetProcAddress: how the runtime, NCCL and frameworks find driver entry
// points without linking libcuda. Names are the driver's base names
// ("cuMemAlloc"); cuda.h's macros turn each identifier below into the
// versioned symbol a CUDA 13 caller expects (cuMemAlloc_v2, ...).

#include <cuda.h>

#include <cstring>

#include "driver/driver_state.h"

namespace {

struct ProcEntry {
  const char* name;
  void* fn;
};

#define SIM_PROC(name) \
  { #name, reinterpret_cast < void*>(&name) }

const ProcEntry kProcTable[] = {
    SIM_PROC(cuInit),
    SIM_PROC(cuDriverGetVersion),
    SIM_PROC(cuGetErrorString),
    SIM_PROC(cuGetErrorName),
    SIM_PROC(cuDeviceGet),
    SIM_PROC(cuDeviceGetCount),
    SIM_PROC(cuDeviceGetName),
    SIM_PROC(cuDeviceGetUuid),
    SIM_PROC(cuDeviceTotalMem),
    SIM_PROC(cuDeviceGetAttribute),
    SIM_PROC(cuDeviceGetPCIBusId),
    SIM_PROC(cuDeviceGetByPCIBusId),
    SIM_PROC(cuDeviceCanAccessPeer),
    SIM_PROC(cuDevicePrimaryCtxRetain),
    SIM_PROC(cuDevicePrimaryCtxRelease),
    SIM_PROC(cuDevicePrimaryCtxGetState),
    SIM_PROC(cuDevicePrimaryCtxSetFlags),
    SIM_PROC(cuDevicePrimaryCtxReset),
    SIM_PROC(cuCtxGetCurrent),
    SIM_PROC(cuCtxSetCurrent),
    SIM_PROC(cuCtxPushCurrent),
    SIM_PROC(cuCtxPopCurrent),
    SIM_PROC(cuCtxGetDevice),
    SIM_PROC(cuCtxGetFlags),
    SIM_PROC(cuCtxSynchronize),
    SIM_PROC(cuCtxGetStreamPriorityRange),
    SIM_PROC(cuMemAlloc),
    SIM_PROC(cuMemAllocManaged),
    SIM_PROC(cuMemFree),
    SIM_PROC(cuMemGetInfo),
    SIM_PROC(cuMemGetAddressRange),
    SIM_PROC(cuMemHostAlloc),
    SIM_PROC(cuMemAllocHost),
    SIM_PROC(cuMemFreeHost),
    SIM_PROC(cuMemHostRegister),
    SIM_PROC(cuMemHostUnregister),
    SIM_PROC(cuMemHostGetDevicePointer),
    SIM_PROC(cuMemcpy),
    SIM_PROC(cuMemcpyAsync),
    SIM_PROC(cuMemcpyHtoD),
    SIM_PROC(cuMemcpyDtoH),
    SIM_PROC(cuMemcpyDtoD),
    SIM_PROC(cuMemcpyHtoDAsync),
    SIM_PROC(cuMemcpyDtoHAsync),
    SIM_PROC(cuMemcpyDtoDAsync),
    SIM_PROC(cuMemcpyPeer),
    SIM_PROC(cuMemcpyPeerAsync),
    SIM_PROC(cuMemsetD8),
    SIM_PROC(cuMemsetD32),
    SIM_PROC(cuMemsetD8Async),
    SIM_PROC(cuMemsetD32Async),
    SIM_PROC(cuPointerGetAttribute),
    SIM_PROC(cuPointerGetAttributes),
    SIM_PROC(cuStreamCreate),
    SIM_PROC(cuStreamCreateWithPriority),
    SIM_PROC(cuStreamDestroy),
    SIM_PROC(cuStreamSynchronize),
    SIM_PROC(cuStreamQuery),
    SIM_PROC(cuStreamIsCapturing),
    SIM_PROC(cuStreamWaitEvent),
    SIM_PROC(cuStreamGetFlags),
    SIM_PROC(cuStreamGetPriority),
    SIM_PROC(cuStreamGetId),
    SIM_PROC(cuStreamGetCtx),
    SIM_PROC(cuStreamGetDevice),
    SIM_PROC(cuLaunchHostFunc),
    SIM_PROC(cuStreamAddCallback),
    SIM_PROC(cuEventCreate),
    SIM_PROC(cuEventDestroy),
    SIM_PROC(cuEventRecord),
    SIM_PROC(cuEventRecordWithFlags),
    SIM_PROC(cuEventQuery),
    SIM_PROC(cuEventSynchronize),
    SIM_PROC(cuEventElapsedTime),
    SIM_PROC(cuIpcGetMemHandle),
    SIM_PROC(cuIpcOpenMemHandle),
    SIM_PROC(cuIpcCloseMemHandle),
    SIM_PROC(cuIpcGetEventHandle),
    SIM_PROC(cuIpcOpenEventHandle),
    SIM_PROC(cuGetProcAddress),
    SIM_PROC(cuCtxEnablePeerAccess),
    SIM_PROC(cuCtxDisablePeerAccess),
    SIM_PROC(cuMemGetAllocationGranularity),
    SIM_PROC(cuMemCreate),
    SIM_PROC(cuMemRelease),
    SIM_PROC(cuMemExportToShareableHandle),
    SIM_PROC(cuMemImportFromShareableHandle),
    SIM_PROC(cuMemAddressReserve),
    SIM_PROC(cuMemAddressFree),
    SIM_PROC(cuMemMap),
    SIM_PROC(cuMemUnmap),
    SIM_PROC(cuMemSetAccess),
    SIM_PROC(cuMulticastGetGranularity),
    SIM_PROC(cuMulticastCreate),
    SIM_PROC(cuMulticastAddDevice),
    SIM_PROC(cuMulticastBindMem),
    SIM_PROC(cuMulticastUnbind),
};

#undef SIM_PROC

CUresult Lookup(const char* symbol, void** pfn, CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const ProcEntry& e : kProcTable) {
    if (std::strcmp(e.name, symbol) == 0) {
      *pfn = e.fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

}  // namespace

extern "C" {

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* symbolStatus) {
  (void)cudaVersion;
  (void)flags;
  return Lookup(symbol, pfn, symbolStatus);
}

// The pre-12.0 form, still exported by real drivers for old callers.
#undef cuGetProcAddress
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  (void)cudaVersion;
  (void)flags;
  return Lookup(symbol, pfn, nullptr);
}

}  // extern "C"

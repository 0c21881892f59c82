#include "knowledge/cuda_names.h"

#include "absl/strings/str_cat.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;

// The results these calls give, with the driver's and the runtime's names
// (the numbers are shared since CUDA 10) and cuGetErrorString's text.
struct Result {
  int32_t code;
  const char* driver;
  const char* runtime;
  const char* text;
};
constexpr Result kResults[] = {
    {1, "CUDA_ERROR_INVALID_VALUE", "cudaErrorInvalidValue", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "cudaErrorInitializationError", "initialization error"},
    {35, "CUDA_ERROR_35", "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {100, "CUDA_ERROR_NO_DEVICE", "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "cudaErrorInvalidDevice", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "cudaErrorDeviceUninitialized", "invalid device context"},
    {205, "CUDA_ERROR_MAP_FAILED", "cudaErrorMapBufferObjectFailed",
     "mapping of buffer object failed"},
    {208, "CUDA_ERROR_ALREADY_MAPPED", "cudaErrorAlreadyMapped", "resource already mapped"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "cudaErrorPeerAccessUnsupported",
     "peer access is not supported between these two devices"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "cudaErrorSymbolNotFound", "named symbol not found"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "cudaErrorPeerAccessAlreadyEnabled",
     "peer access is already enabled"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "cudaErrorPeerAccessNotEnabled",
     "peer access has not been enabled"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "cudaErrorNotPermitted", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "cudaErrorNotSupported", "operation not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "cudaErrorSystemNotReady", "system not yet initialized"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "cudaErrorSystemDriverMismatch",
     "system has unsupported display driver / cuda driver combination"},
    {999, "CUDA_ERROR_UNKNOWN", "cudaErrorUnknown", "unknown error"},
};

const Result* FindResult(int32_t code) {
  for (const Result& r : kResults)
    if (r.code == code) return &r;
  return nullptr;
}

}  // namespace

std::string CudaFunctionName(uint32_t function) {
  switch (function) {
    case f::kCuIpcGetMemHandle:
      return "cuIpcGetMemHandle";
    case f::kCuIpcOpenMemHandle:
      return "cuIpcOpenMemHandle";
    case f::kCuIpcCloseMemHandle:
      return "cuIpcCloseMemHandle";
    case f::kCuIpcGetEventHandle:
      return "cuIpcGetEventHandle";
    case f::kCuIpcOpenEventHandle:
      return "cuIpcOpenEventHandle";
    case f::kCuMemCreate:
      return "cuMemCreate";
    case f::kCuMemExportToShareableHandle:
      return "cuMemExportToShareableHandle";
    case f::kCuMemImportFromShareableHandle:
      return "cuMemImportFromShareableHandle";
    case f::kCuMemMap:
      return "cuMemMap";
    case f::kCuMemSetAccess:
      return "cuMemSetAccess";
    case f::kCuMemRelease:
      return "cuMemRelease";
    case f::kCuMemAddressReserve:
      return "cuMemAddressReserve";
    case f::kCuMulticastCreate:
      return "cuMulticastCreate";
    case f::kCuMulticastAddDevice:
      return "cuMulticastAddDevice";
    case f::kCuMulticastBindMem:
      return "cuMulticastBindMem";
    case f::kCuCtxEnablePeerAccess:
      return "cuCtxEnablePeerAccess";
    case f::kCuDeviceCanAccessPeer:
      return "cuDeviceCanAccessPeer";
    case f::kCudaIpcGetMemHandle:
      return "cudaIpcGetMemHandle";
    case f::kCudaIpcOpenMemHandle:
      return "cudaIpcOpenMemHandle";
    case f::kCudaIpcCloseMemHandle:
      return "cudaIpcCloseMemHandle";
    case f::kCudaIpcGetEventHandle:
      return "cudaIpcGetEventHandle";
    case f::kCudaIpcOpenEventHandle:
      return "cudaIpcOpenEventHandle";
    case f::kCudaDeviceEnablePeerAccess:
      return "cudaDeviceEnablePeerAccess";
    case f::kCudaDeviceCanAccessPeer:
      return "cudaDeviceCanAccessPeer";
    default:
      return absl::StrCat("CudaFunction ", function);
  }
}

bool CudaRuntimeFunction(uint32_t function) { return function >= f::kCudaIpcGetMemHandle; }

std::string CudaResultName(int32_t result, bool runtime) {
  if (result == 0) return runtime ? "cudaSuccess" : "CUDA_SUCCESS";
  if (const Result* r = FindResult(result)) return runtime ? r->runtime : r->driver;
  return absl::StrCat("CUDA error ", result);
}

std::string CudaResultText(int32_t result) {
  const Result* r = FindResult(result);
  return r != nullptr ? r->text : "";
}

}  // namespace ncclwatch::decoder

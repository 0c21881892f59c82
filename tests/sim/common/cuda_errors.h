// The CUDA error codes the simulator can return, with the driver's and the
// runtime's names for each and the text both print. Since CUDA 10 the runtime's
// codes equal the driver's for every error they share; the runtime-only codes
// (17, 35, 98) have no driver name.
//
// tests/unit/sim_cuda_errors_test.cc checks every row against the real
// libcudart.so.13's cudaGetErrorName/cudaGetErrorString.

#ifndef NCCLWATCH_TESTS_SIM_COMMON_CUDA_ERRORS_H_
#define NCCLWATCH_TESTS_SIM_COMMON_CUDA_ERRORS_H_

namespace ncclsim {

struct CudaErrorInfo {
  int code;
  const char* driver_name;   // CUresult name, or nullptr
  const char* runtime_name;  // cudaError_t name
  const char* text;
};

inline constexpr CudaErrorInfo kCudaErrors[] = {
    {0, "CUDA_SUCCESS", "cudaSuccess", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "cudaErrorInvalidValue", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "cudaErrorInitializationError", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "cudaErrorCudartUnloading", "driver shutting down"},
    {17, nullptr, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "cudaErrorStubLibrary", "CUDA driver is a stub library"},
    {35, nullptr, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "cudaErrorDevicesUnavailable",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {98, nullptr, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {100, "CUDA_ERROR_NO_DEVICE", "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "cudaErrorInvalidDevice", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "cudaErrorDeviceUninitialized", "invalid device context"},
    {205, "CUDA_ERROR_MAP_FAILED", "cudaErrorMapBufferObjectFailed",
     "mapping of buffer object failed"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", "cudaErrorECCUncorrectable",
     "uncorrectable ECC error encountered"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "cudaErrorPeerAccessUnsupported",
     "peer access is not supported between these two devices"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "cudaErrorOperatingSystem",
     "OS call failed or operation not supported on this OS"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "cudaErrorSymbolNotFound", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "cudaErrorNotReady", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorIllegalAddress",
     "an illegal memory access was encountered"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "cudaErrorPeerAccessAlreadyEnabled",
     "peer access is already enabled"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "cudaErrorLaunchFailure", "unspecified launch failure"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "cudaErrorPeerAccessNotEnabled",
     "peer access has not been enabled"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "cudaErrorNotPermitted", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "cudaErrorNotSupported", "operation not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "cudaErrorSystemNotReady", "system not yet initialized"},
    {999, "CUDA_ERROR_UNKNOWN", "cudaErrorUnknown", "unknown error"},
};

inline const CudaErrorInfo* FindCudaError(int code) {
  for (const CudaErrorInfo& e : kCudaErrors)
    if (e.code == code) return &e;
  return nullptr;
}

}  // namespace ncclsim

#endif  // NCCLWATCH_TESTS_SIM_COMMON_CUDA_ERRORS_H_

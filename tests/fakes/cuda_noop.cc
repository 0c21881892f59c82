// A do-nothing CUDA driver (libcuda.so.1) with the functions the shim's
// completion tracking calls: events are recorded and complete at once (timed
// ones 0.25 ms apart), no stream is ever capturing. What the shim adds on top of it is its own cost
// of tracking completion; a real driver's cuStreamIsCapturing and
// cuEventRecord come on top of that (they are the driver's, as PyTorch pays
// them for its own events).
//
// CUDA_NOOP_CAPTURING=0xADDR makes the stream with that handle report that a
// CUDA graph capture is active on it (cuStreamIsCapturing), as a stream
// between cudaStreamBeginCapture and cudaStreamEndCapture does.

#include <cuda.h>
#include <stdlib.h>

namespace {
int g_context;
int g_events[4096];
int g_next_event;
}  // namespace

extern "C" {

CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = reinterpret_cast<CUcontext>(&g_context);
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent_v2(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (ctx) *ctx = reinterpret_cast<CUcontext>(&g_context);
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice) {
  *ctx = reinterpret_cast<CUcontext>(&g_context);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetPCIBusId(char* bus, int len, CUdevice) {
  if (len > 0) bus[0] = '\0';
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent* event, unsigned) {
  *event = reinterpret_cast<CUevent>(&g_events[g_next_event++ % 4096]);
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult cuEventQuery(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float* ms, CUevent, CUevent) {  // cuda.h: cuEventElapsedTime_v2
  *ms = 0.25f;
  return CUDA_SUCCESS;
}
int g_streams[64];
int g_next_stream;
CUresult cuStreamCreate(CUstream* stream, unsigned) {
  *stream = reinterpret_cast<CUstream>(&g_streams[g_next_stream++ % 64]);
  return CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  static const unsigned long long capturing = [] {
    const char* v = getenv("CUDA_NOOP_CAPTURING");
    return v ? strtoull(v, nullptr, 0) : 0ull;
  }();
  const bool active = capturing != 0 && reinterpret_cast<unsigned long long>(stream) == capturing;
  *status = active ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult, const char** s) {
  *s = "CUDA_SUCCESS";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char** s) {
  *s = "no error";
  return CUDA_SUCCESS;
}

}  // extern "C"

// The CUDA functions the shim calls itself, found in the libraries the
// process already loaded (libcuda.so.1, libcudart.so.*), never by loading
// one: a process without a driver stays without one.
//
//   - for init forensics: the driver and runtime versions, the calling
//     thread's device and its PCI bus id (read-only: the driver API has no
//     sticky "last error", cudaRuntimeGetVersion reads a constant, so the
//     program sees nothing of them); when a communicator is created;
//   - for completion tracking (core/completion.h): events made when a
//     communicator is, recorded after each operation (the HOT PATH's one
//     call out: cuStreamIsCapturing and cuEventRecord, which are the
//     driver's and not async-signal-safe), queried by the watcher.
//
// ResolveRealCuda is not on the hot path.

#ifndef NCCLWATCH_SHIM_RESOLVE_REAL_CUDA_H_
#define NCCLWATCH_SHIM_RESOLVE_REAL_CUDA_H_

#include <stddef.h>

namespace ncclwatch::shim {

// Looks the functions up in the loaded libraries; again, when one that was
// missing may have been loaded since (the loader loaded something since
// the last look: LoaderGeneration), else not.
void ResolveRealCuda();

int CudaDriverVersion();   // cuDriverGetVersion, 0 unknown
int CudaRuntimeVersion();  // cudaRuntimeGetVersion, 0 unknown

// The driver functions completion tracking uses (core/completion.h), with
// cuda.h's signatures written on plain types (CUresult and CUdevice are
// ints; handles are pointers). Found by ResolveRealCuda; any may be null
// (no driver loaded), and then completion is not tracked.
struct CudaDriverCalls {
  int (*event_create)(void** event, unsigned flags);
  int (*event_record)(void* event, const void* stream);
  int (*event_query)(void* event);
  int (*event_destroy)(void* event);
  int (*stream_is_capturing)(const void* stream, int* status);
  int (*ctx_get_current)(void** ctx);
  int (*ctx_set_current)(void* ctx);
  int (*ctx_push_current)(void* ctx);
  int (*ctx_pop_current)(void** ctx);
  int (*ctx_get_device)(int* device);
  int (*primary_ctx_retain)(void** ctx, int device);
  int (*get_error_name)(int error, const char** name);
  int (*get_error_string)(int error, const char** text);
  // GPU times (core/completion.h): the watcher's anchor stream and event,
  // and the time between two timed events. Any may be null: no times then.
  int (*stream_create)(void** stream, unsigned flags);
  int (*event_synchronize)(void* event);
  int (*event_elapsed)(float* ms, void* start, void* end);

  bool CanTrack() const {
    return event_create && event_record && event_query && stream_is_capturing && ctx_get_current &&
           ctx_set_current && ctx_push_current && ctx_pop_current && ctx_get_device &&
           primary_ctx_retain;
  }
  bool CanTime() const { return stream_create && event_synchronize && event_elapsed; }
};
extern CudaDriverCalls g_cuda;

// The current context's device and its PCI bus id ("0000:18:00.0"); false
// when no context is current or no driver is loaded.
bool CurrentCudaDevice(int* device, char* bus_id, size_t bus_id_len);

// The current context's device only (cuCtxGetDevice), for the CUDA
// wrappers' failure path; false when no context is current or no driver is
// known yet.
bool CurrentCudaOrdinal(int* device);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_RESOLVE_REAL_CUDA_H_

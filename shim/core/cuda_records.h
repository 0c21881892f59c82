// What the CUDA memory-sharing wrappers record (interpose/cuda_hooks.cc):
// one CudaCall record per call to a function that shares memory between
// processes or devices (legacy IPC, cuMem shareable handles, multicast,
// peer access).
//
// HOT PATH: RecordCudaCall allocates nothing, takes no lock, makes no system
// call, is async-signal-safe and leaves errno as it found it. A failure goes
// to the pinned region with every argument the wrapper summarised, so that a
// long run cannot overwrite what init forensics needs; a success goes to the
// ring with its function, result and handle only (one slot).

#ifndef NCCLWATCH_SHIM_CORE_CUDA_RECORDS_H_
#define NCCLWATCH_SHIM_CORE_CUDA_RECORDS_H_

#include <stdint.h>

namespace ncclwatch::shim {

struct CudaCallEvent {
  uint32_t function = 0;  // fields::CudaFunction
  int result = 0;         // CUresult / cudaError_t
  uint32_t via = 0;       // fields::cuda_call::Via
  int device = -1;
  int peer = -1;
  uint64_t size = 0;
  uint64_t ptr = 0;
  uint64_t handle = 0;
  uint32_t handle_type = 0;
  uint64_t flags = 0;
  int fd = -1;
  bool has_fd = false;  // fd is an argument or a result (-1 included)
  int can_access = -1;
  int err = 0;  // errno after a failing call
  uint32_t num_devices = 0;
  uint32_t access_flags = 0;
  const void* caller = nullptr;
};

void RecordCudaCall(const CudaCallEvent& e);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_CUDA_RECORDS_H_

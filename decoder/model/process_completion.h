// ProcessCompletion: what a process's watcher records say about its GPU work
// and its life, summarised once per process (the job model) for the diagnosis.
//
//   per communicator rank  whether completion was tracked; collectives issued
//                          and completed on the GPU; the oldest operation not
//                          completed (or a call that never returned); a Stall
//                          written since the last completion
//   per process            the heartbeats (first, last, interval); the CUDA
//                          errors the watcher met; NCCL's asynchronous errors
//
// Completion may be untracked (no CUDA driver, an old trace, a benchmark):
// then only calls that never returned count as pending, and nothing is said
// about the GPU.
//
// Thread-safety: plain values, built by SummariseCompletion (pure).

#ifndef NCCLWATCH_DECODER_MODEL_PROCESS_COMPLETION_H_
#define NCCLWATCH_DECODER_MODEL_PROCESS_COMPLETION_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/last_call.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

// One rank of one communicator in the process.
struct CommCompletion {
  uint64_t comm = 0;
  int32_t rank = -1;
  bool tracked = false;       // CUDA events followed its GPU work
  std::string why_not;        // not tracked: the shim's reason, "" when no record said
  uint64_t issued = 0;        // collectives issued: #0 .. #issued-1 (from its stream)
  uint64_t completed = 0;     // collectives completed on the GPU (the last Progress)
  bool has_progress = false;  // a Progress was read (else `completed` is not known: the watcher
                              // may not have written one yet)
  int64_t progress_ns = 0;    // when that Progress was written (realtime), 0 none
  // When the count first read `completed`: the earliest Progress of that
  // count (the watcher writes one whenever any operation of the
  // communicator completes, sends and receives too, so `progress_ns` may be
  // far later), or the watcher's hold that restored it; 0 none.
  int64_t completed_ns = 0;
  bool pending = false;  // an operation not completed, or a call not returned
  bool in_call = false;  // ... that call had not returned (blocked in NCCL)
  LastCall oldest;       // the oldest such operation
  bool stalled = false;  // a Stall was written after the last completion
  uint64_t stall_waited_ms = 0;

  // What `pending`, `in_call` and `oldest` were chosen from, with each
  // operation's place in the process's timeline: the collectives not known
  // complete (newest first), and the oldest send or receive not known
  // complete (if any), for RaiseCompleted.
  std::vector<std::pair<uint64_t, LastCall>> unfinished_collectives;
  std::pair<uint64_t, LastCall> unfinished_p2p{UINT64_MAX, LastCall{}};
  bool p2p_in_call = false;  // a send or receive of it had not returned
};

// Raises `c`'s count of completed collectives to `floor` (at most what it
// issued) where it was lower, and with it what is pending: for a rank whose
// own count stopped short of the truth (a sticky CUDA error, a death before
// its watcher's next poll) while the other members' counts prove more (a
// collective completes on none of them unless every member's GPU ran it).
// Calls that never returned stay pending.
void RaiseCompleted(uint64_t floor, CommCompletion* c);

// A CUDA error the watcher met (trace.proto CudaError).
struct DeviceError {
  int64_t when_ns = 0;
  uint64_t comm = 0;
  int32_t result = 0;
  std::string name;
  std::string text;
  int32_t device = -1;
  std::string bus_id;
  uint64_t completed = 0;
};

// An NCCL error reported asynchronously (ncclCommGetAsyncError).
struct AsyncError {
  int64_t when_ns = 0;
  uint64_t comm = 0;
  int32_t result = 0;
  std::string text;
};

struct ProcessCompletion {
  // Heartbeats (realtime): none when beats is 0 (an old trace).
  uint64_t beats = 0;
  int64_t first_beat_ns = 0;
  int64_t last_beat_ns = 0;
  uint32_t interval_ms = 0;  // the shim's interval; 0 unknown
  std::vector<CommCompletion> comms;
  std::vector<DeviceError> device_errors;  // in time order
  std::vector<AsyncError> async_errors;    // in time order

  // Whether every communicator rank it holds had its completion tracked
  // (false when it holds none).
  bool AllTracked() const;
  // Whether any operation it issued is not known complete (or a call of it
  // never returned).
  bool AnyPending() const;
  // The heartbeat interval in ns, 1 s when unknown.
  int64_t IntervalNs() const { return (interval_ms ? interval_ms : 1000) * int64_t{1'000'000}; }
};

ProcessCompletion SummariseCompletion(const ProcessTrace& trace);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_PROCESS_COMPLETION_H_

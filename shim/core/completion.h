// GPU completion of each communicator's work, as CUDA events.
//
// Why events (README, "How completion is tracked"): after each operation NCCL
// accepted, the shim records one CUDA event on the operation's stream, and a
// watcher thread (core/watcher.h) queries the events in order. This is what
// PyTorch's ProcessGroupNCCL does; it works with every NCCL release and every
// way NCCL is reached, it never synchronises the program's streams (an event
// record is an asynchronous stream operation that nothing waits on), and a
// sticky device error shows up in the query. Stream memory operations
// (cuStreamWriteValue64 into the trace mapping) would need the file-backed
// mapping pinned for the GPU, which the kernel refuses for disk-backed files;
// NCCL's profiler plugin exists only from NCCL 2.23 on and only for the NCCL
// that loads it. The watcher writes what it learns (Progress records) into the
// same crash-proof ring.
//
//   program thread (HOT PATH)                 watcher thread
//   ─────────────────────────                 ──────────────
//   cuStreamIsCapturing(stream) == NONE
//   cuEventRecord(markers[head % N].begin, stream)
//   ncclAllReduce(...) returns ncclSuccess
//   cuEventRecord(markers[head % N].event, stream)
//   head = head + 1  (release) ─────────────> for i in tail..head:
//                                               cuEventQuery(markers[i % N].event)
//                                               done: tail = i + 1, Progress record,
//                                               GpuTime record (cuEventElapsedTime)
//
// GPU times (issue 23: a slow GPU is one that reaches the collective last
// while its host enqueued it on time). The events are timed (no
// CU_EVENT_DISABLE_TIMING), and a second one, `begin`, is recorded on the
// stream just before the operation is forwarded: it completes when the
// stream reaches the operation. Once the marker after it completes, the
// watcher asks cuEventElapsedTime for begin -> end (the GPU's own timer,
// half a microsecond) and anchor -> end, where the anchor is an event it
// recorded on a stream of its own and waited for (BeginAnchor, its host
// time known to within the wait; taken again every 10 s, so the GPU's and
// the host's clocks cannot drift apart far), and writes a GpuTime (a GPU-time
// slot, ring format 4).
// The begin marker costs the hot path one cuEventRecord: outside a group its
// capture check serves the marker after the operation too. Inside a group
// the begin marker is recorded at the communicator's first operation of the
// group. No begin marker where there would be no marker (captured, the
// marker ring full).
//
// Inside a group, operations are noted per thread and the markers are
// recorded after the outermost ncclGroupEnd (when NCCL launched them). An
// operation issued during CUDA graph capture gets no marker (one would add a
// node to the program's graph): an Untracked record says so. So does an
// operation a non-blocking communicator had not enqueued yet (ncclInProgress).
// When a communicator's marker ring is full (the host is kMarkers operations
// ahead of its GPU), the operation goes without one; a later marker on the
// same communicator covers it, since NCCL runs a communicator's work in order.
//
// A track (kMarkers events and their bookkeeping, 56 KiB) lives as long as
// the process: the watcher may hold a pointer to it at any time. When its
// communicator is destroyed it goes to a pool, and the next communicator
// made in the same CUDA context takes it, events and all (re-recording an
// event is allowed, whatever it recorded before). So memory and events grow
// with the communicators alive at once, not with those ever made.
//
// HOT PATH (MarkOperation, NoteGroupOperation, FlushGroupOperations): the
// shim's own code allocates nothing, takes no lock and makes no system call;
// the CUDA driver's cuStreamIsCapturing and cuEventRecord are called once
// per operation (or per communicator per group), errno kept. They are not
// async-signal-safe, and neither is the NCCL call they follow.
// TrackCompletion and EndCompletion run when communicators are made and
// destroyed; the rest runs on the watcher thread.

#ifndef NCCLWATCH_SHIM_CORE_COMPLETION_H_
#define NCCLWATCH_SHIM_CORE_COMPLETION_H_

#include <stddef.h>
#include <stdint.h>

#include "core/comm_registry.h"

namespace ncclwatch::shim {

// An operation's arguments, as its call slot has them: kept with its marker,
// so that the watcher can hold the operation a hang is about where the ring
// cannot lap it (a HeldOperation record) after the ring lost its call slot.
struct OpSignature {
  uint64_t count;
  uint64_t caller;
  int32_t datatype;
  int32_t redop;  // -1: none
  int32_t root;   // -1: none
};

// One operation (or group of operations) whose completion an event tells.
struct Marker {
  void* event;           // CUevent, created when the communicator was tracked
  void* begin;           // CUevent recorded before the operation; nullptr: untimed
  uint32_t begun;        // `begin` was recorded for this marker
  uint64_t collectives;  // the communicator's collective count once it is done
  uint64_t t;            // trace clock when recorded: operations recorded before are covered
  uint64_t seq;          // the (last) operation's number
  uint32_t call;         // its trace.proto Call
  int32_t peer;          // point-to-point: the peer, else -1
  uint32_t send;         // point-to-point: 1 send, 0 receive
  uint32_t group_ops;    // operations in its group, 0 outside one
  OpSignature sig;       // the (last) operation's arguments
};

// A communicator's markers and what the watcher learned from them.
struct CompletionTrack {
  static constexpr uint32_t kMarkers = 1024;

  CommState* comm;
  const void* handle;  // the ncclComm_t
  uint64_t id;
  void* context;  // CUcontext the events belong to
  int device;
  Marker markers[kMarkers];
  uint64_t head;     // markers recorded (program threads; release)
  uint64_t tail;     // markers seen complete (watcher; release)
  uint32_t ended;    // set when the communicator is finalized, destroyed, aborted or revoked
  uint32_t readers;  // the watcher's threads inside this track now (a round, a stall check)
  uint32_t flushed;  // FlushCompletion ran
  uint32_t pooled;   // free for the next communicator of its context (ReleaseCompletion)
  // The watcher's own (other threads read them for the stall check):
  uint64_t completed;          // collectives completed
  uint64_t completed_t;        // the newest completed marker's `t`
  uint64_t progress_ns;        // CLOCK_MONOTONIC of the last completion seen
  uint64_t seen;               // markers the watcher has noticed
  uint64_t seen_ns[kMarkers];  // when it first noticed each pending one
  int32_t error;               // the CUresult a query failed with, 0 none
  uint64_t stall_reported;     // 1 + the marker index a stall was reported for, 0 none
  uint64_t held;               // 1 + the marker index last held (HeldOperation), 0 none
  uint32_t held_pinned;        // HeldOperation records written to the pinned region
  // GPU times (the watcher's): an anchor event on a stream of the shim's own,
  // its CLOCK_MONOTONIC time (0: none yet), how far off it may be, and when
  // it was taken. Kept with the track in the pool (they belong to its context).
  void* anchor_stream;
  void* anchor_event;
  uint64_t anchor_ns;
  uint64_t anchor_error_ns;
  uint64_t anchor_taken_ns;
};

// When a communicator is made (not the hot path): creates its events in the
// context of its device and writes its CompletionTracking record (pinned
// region), tracked or not and why. Starts the watcher with the first one.
void TrackCompletion(CommState* comm, const void* handle, int device);

// Before an operation on `comm` is forwarded to NCCL (HOT PATH): the begin
// marker on `stream` (see above). Returns 1 when it was recorded, for
// MarkOperation; 0 when not (untracked, captured, in a group that already
// has one for `comm`, the marker ring full, untimed events).
uint32_t BeginTrackedOperation(CommState* comm, const void* stream);
inline uint32_t BeginOperation(CommState* comm, const void* stream) {
  if (comm == nullptr || __atomic_load_n(&comm->completion, __ATOMIC_ACQUIRE) == nullptr) return 0;
  return BeginTrackedOperation(comm, stream);
}

// After an operation on `comm` returned `result` (HOT PATH). Outside a group
// and accepted: a marker on `stream` (or an Untracked record); inside one:
// noted for FlushGroupOperations. `begun`: what BeginOperation returned.
// Inline up to the question whether `comm` is tracked at all, which most
// calls answer no to when no GPU is followed.
void MarkTrackedOperation(CommState* comm, const void* stream, int result, uint32_t call,
                          uint64_t seq, int peer, bool send, const OpSignature& sig,
                          uint32_t begun);
inline void MarkOperation(CommState* comm, const void* stream, int result, uint32_t call,
                          uint64_t seq, int peer, bool send, const OpSignature& sig,
                          uint32_t begun) {
  if (comm == nullptr || __atomic_load_n(&comm->completion, __ATOMIC_ACQUIRE) == nullptr) return;
  MarkTrackedOperation(comm, stream, result, call, seq, peer, send, sig, begun);
}

// After the outermost ncclGroupEnd returned `result` (HOT PATH): one marker
// per communicator used in the group, on the stream of its last operation.
void FlushGroupOperations(int result);

// Before a communicator is finalized, destroyed, aborted or revoked: the
// watcher stops querying it (waiting, at most a second, for a round in
// progress to leave it).
void EndCompletion(const void* handle);
// After that call returned: one last query of the communicator's markers on
// the calling thread (NCCL has flushed or aborted its work), so the trace
// says how much of it completed.
void FlushCompletion(const void* handle);
// After the communicator was destroyed or aborted (and flushed): its track,
// events and memory, go back to a pool, for the next communicator made in
// the same CUDA context (events belong to one), so a process that makes and
// destroys communicators keeps as many tracks as it has alive at once. A
// track the watcher is still inside (stuck in the driver) is left alone.
void ReleaseCompletion(const void* handle);
// In a forked child (the fork handler; async-signal-safe): the parent's
// CUDA contexts and the watcher's threads are not the child's; its tracks
// end, are never reused, and the child starts with none.
void CompletionForkChild();

// The watcher's side (core/watcher.cc).
constexpr size_t kMaxTracks = 4096;
CompletionTrack* TrackAt(size_t i);  // nullptr past the last
size_t TrackCount();
// Queries `track`'s pending markers in order; writes a Progress record when
// more completed, a GpuTime record per completed marker (taking the anchor
// first when it has none or an old one) and a CudaError record when a
// query fails; holds the oldest
// pending operation once it has waited kHoldAfterNs (a HeldOperation record,
// in the pinned region). `now_ns` is CLOCK_MONOTONIC.
void PollTrack(CompletionTrack* track, uint64_t now_ns);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_COMPLETION_H_

// HOT PATH (BeginOperation, MarkOperation, FlushGroupOperations): the
// shim's own code allocates nothing, takes no lock and makes no system call;
// the CUDA driver's cuStreamIsCapturing and cuEventRecord are called, errno
// kept (see completion.h). TrackCompletion, EndCompletion and PollTrack are
// not on the hot path.

#include "core/completion.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "core/call_records.h"
#include "core/errno_guard.h"
#include "core/record_builder.h"
#include "core/startup_stack.h"
#include "core/tracer.h"
#include "core/watcher.h"
#include "ncclwatch/trace_fields.h"
#include "resolve/real_cuda.h"
#include "ring/trace_clock.h"

namespace ncclwatch::shim {
namespace {

namespace f = fields;

constexpr int kCudaSuccess = 0;
constexpr int kCudaNotReady = 600;          // CUDA_ERROR_NOT_READY
constexpr int kCaptureNone = 0;             // CU_STREAM_CAPTURE_STATUS_NONE
constexpr unsigned kDisableTiming = 2;      // CU_EVENT_DISABLE_TIMING
constexpr unsigned kStreamNonBlocking = 1;  // CU_STREAM_NON_BLOCKING

CompletionTrack* g_tracks[kMaxTracks];
size_t g_track_count = 0;  // atomic; entries below it are published

// CommState -> its current track. A communicator made again at a reused
// address gets a new track; the old one has been ended.
CompletionTrack* TrackOf(const CommState* comm) {
  auto* t = static_cast<CompletionTrack*>(__atomic_load_n(&comm->completion, __ATOMIC_ACQUIRE));
  return (t != nullptr && !__atomic_load_n(&t->ended, __ATOMIC_ACQUIRE)) ? t : nullptr;
}

// What a thread noted inside a group, per communicator.
struct GroupNote {
  CommState* comm;
  const void* stream;
  uint64_t collectives;
  uint64_t seq;
  uint32_t call;
  int32_t peer;
  uint32_t send;
  uint32_t ops;
  uint32_t begun;  // the begin marker was recorded (at the group's first operation)
  OpSignature sig;
};
constexpr int kGroupNotes = 16;
struct GroupNotes {
  GroupNote notes[kGroupNotes];
  int count;
};
__thread GroupNotes t_group __attribute__((tls_model("initial-exec")));

void WriteUntracked(const CommState* comm, uint32_t call, uint64_t seq, uint32_t reason) {
  RecordBuilder<> r(f::record::kUntracked);
  namespace k = f::untracked;
  r.w().Fixed64(k::kComm, comm->id);
  r.w().Varint(k::kCall, call);
  r.w().Varint(k::kSeq, seq);
  r.w().Varint(k::kReason, reason);
  r.Append(Region::kRing);
}

// Records one marker on `stream` for what `note` describes.
void Record(CompletionTrack* track, const GroupNote& note) {
  // Outside a group, a begin marker on the same stream answered the capture
  // question already (nothing starts a capture inside an NCCL call).
  if (note.begun == 0 || note.ops != 0) {
    int status = -1;
    if (g_cuda.stream_is_capturing(note.stream, &status) != kCudaSuccess) return;
    if (status != kCaptureNone) {
      WriteUntracked(note.comm, note.call, note.seq, f::untracked::kCaptured);
      return;
    }
  }
  // One thread at a time per communicator (NCCL's rule): head is ours.
  const uint64_t head = __atomic_load_n(&track->head, __ATOMIC_RELAXED);
  if (head - __atomic_load_n(&track->tail, __ATOMIC_ACQUIRE) >= CompletionTrack::kMarkers) return;
  Marker& m = track->markers[head % CompletionTrack::kMarkers];
  if (g_cuda.event_record(m.event, note.stream) != kCudaSuccess) return;
  m.collectives = note.collectives;
  m.t = TraceNow();
  m.seq = note.seq;
  m.call = note.call;
  m.peer = note.peer;
  m.send = note.send;
  m.group_ops = note.ops;
  m.begun = note.begun;
  m.sig = note.sig;
  __atomic_store_n(&track->head, head + 1, __ATOMIC_RELEASE);
}

void StartTracking(CommState* comm, const void* handle, int device);

void WriteTracking(uint64_t id, uint32_t mechanism, const char* why_not, uint32_t markers,
                   int device) {
  RecordBuilder<512> r(f::record::kCompletionTracking);
  namespace k = f::completion_tracking;
  r.w().Fixed64(k::kComm, id);
  r.w().Varint(k::kMechanism, mechanism);
  if (why_not != nullptr) r.w().String(k::kWhyNot, why_not);
  r.w().Varint(k::kMarkers, markers);
  r.w().Sint(k::kDevice, device);
  r.Append(Region::kPinned);
}

}  // namespace

CompletionTrack* TrackAt(size_t i) {
  return i < kMaxTracks ? __atomic_load_n(&g_tracks[i], __ATOMIC_ACQUIRE) : nullptr;
}

size_t TrackCount() {
  const size_t n = __atomic_load_n(&g_track_count, __ATOMIC_ACQUIRE);
  return n < kMaxTracks ? n : kMaxTracks;
}

void TrackCompletion(CommState* comm, const void* handle, int device) {
  if (comm == nullptr || !Tracing()) return;
  ErrnoGuard keep;
  // The CUDA driver's calls (1024 events made) on the shim's stack, not on
  // a program thread's that may be small.
  RunOnStartupStack([&] { StartTracking(comm, handle, device); });
}

namespace {

// A pooled track whose events belong to `ctx`, taken out of the pool, or
// nullptr.
CompletionTrack* TakePooled(void* ctx) {
  const size_t n = TrackCount();
  for (size_t i = 0; i < n; ++i) {
    CompletionTrack* t = TrackAt(i);
    if (t == nullptr || t->context != ctx || !__atomic_load_n(&t->pooled, __ATOMIC_ACQUIRE))
      continue;
    // No watcher thread inside it (EndCompletion's protocol: one that comes
    // in from now on sees it ended and leaves).
    if (__atomic_load_n(&t->readers, __ATOMIC_SEQ_CST) != 0) continue;
    uint32_t expected = 1;
    if (!__atomic_compare_exchange_n(&t->pooled, &expected, 0u, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      continue;
    // Its events must still be there: a context destroyed and made again
    // (cudaDeviceReset) takes its events with it. Such a track stays out of
    // the pool for good.
    const int rc = g_cuda.event_query(t->markers[0].event);
    if (rc != kCudaSuccess && rc != kCudaNotReady) continue;
    return t;
  }
  return nullptr;
}

// A new track with its events, in the current context, or nullptr (*why_not said).
CompletionTrack* MakeTrack(const char** why_not) {
  // A place in g_tracks first: the watcher finds tracks there.
  size_t index = __atomic_load_n(&g_track_count, __ATOMIC_ACQUIRE);
  do {
    if (index >= kMaxTracks) {
      *why_not = "more than 4096 communicators tracked at once in this process";
      return nullptr;
    }
  } while (!__atomic_compare_exchange_n(&g_track_count, &index, index + 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
  void* m = mmap(nullptr, sizeof(CompletionTrack), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CompletionTrack* track = nullptr;
  if (m == MAP_FAILED) {
    *why_not = "could not map memory for its markers";
  } else {
    track = static_cast<CompletionTrack*>(m);  // zeroed by mmap
    // Timed events, and a begin event per marker, where the driver can tell
    // the time between two (GPU times); else untimed ones, as before.
    const bool timed = g_cuda.CanTime();
    const unsigned flags = timed ? 0u : kDisableTiming;
    uint32_t made = 0;
    for (; made < CompletionTrack::kMarkers; ++made) {
      Marker& mk = track->markers[made];
      if (g_cuda.event_create(&mk.event, flags) != kCudaSuccess) break;
      if (timed && g_cuda.event_create(&mk.begin, 0) != kCudaSuccess) {
        if (g_cuda.event_destroy) g_cuda.event_destroy(mk.event);
        mk.begin = nullptr;
        break;
      }
    }
    if (made < CompletionTrack::kMarkers) {
      for (uint32_t i = 0; i < made; ++i) {
        if (g_cuda.event_destroy == nullptr) break;
        g_cuda.event_destroy(track->markers[i].event);
        if (track->markers[i].begin != nullptr) g_cuda.event_destroy(track->markers[i].begin);
      }
      munmap(m, sizeof(CompletionTrack));
      track = nullptr;
      *why_not = "cuEventCreate failed";
    }
  }
  if (track == nullptr) {
    // The place stays, empty (the watcher skips it): rare enough.
    return nullptr;
  }
  // The anchor's stream and event (GPU times): none, and no absolute times,
  // when they cannot be made.
  if (track->markers[0].begin != nullptr &&
      (g_cuda.stream_create(&track->anchor_stream, kStreamNonBlocking) != kCudaSuccess ||
       g_cuda.event_create(&track->anchor_event, 0) != kCudaSuccess)) {
    track->anchor_stream = nullptr;
    track->anchor_event = nullptr;
  }
  track->ended = 1;  // until it is set up (StartTracking)
  __atomic_store_n(&g_tracks[index], track, __ATOMIC_RELEASE);
  return track;
}

void StartTracking(CommState* comm, const void* handle, int device) {
  const char* why_not = nullptr;
  // A driver loaded since the process's first NCCL call (ncclGetUniqueId
  // before any CUDA call, as NCCL's one-device-per-process example does).
  if (!g_cuda.CanTrack()) ResolveRealCuda();
  if (!g_cuda.CanTrack()) why_not = "no CUDA driver loaded (libcuda.so.1 was not found)";
  if (why_not == nullptr && !CompletionTrackingEnabled()) why_not = "NCCLWATCH_COMPLETION=0";
  void* ctx = nullptr;
  void* saved = nullptr;
  bool switched = false;
  if (why_not == nullptr) {
    // The events belong to the context of the communicator's device: the
    // calling thread's current one when it is that device's (the usual
    // case), else the device's primary context (ncclCommInitAll).
    int current_device = -1;
    if (g_cuda.ctx_get_current(&saved) != kCudaSuccess) saved = nullptr;
    if (saved != nullptr && g_cuda.ctx_get_device(&current_device) == kCudaSuccess &&
        (device < 0 || current_device == device)) {
      ctx = saved;
      if (device < 0) device = current_device;
    } else if (device >= 0 && g_cuda.primary_ctx_retain(&ctx, device) == kCudaSuccess &&
               g_cuda.ctx_set_current(ctx) == kCudaSuccess) {
      switched = true;
    } else {
      why_not = "no CUDA context for the communicator's device";
    }
  }
  CompletionTrack* track = nullptr;
  if (why_not == nullptr) {
    track = TakePooled(ctx);
    if (track == nullptr) track = MakeTrack(&why_not);
  }
  if (switched) g_cuda.ctx_set_current(saved);
  if (track == nullptr) {
    WriteTracking(comm->id, f::completion_tracking::kNone, why_not, 0, device);
    return;
  }
  // Set up while ended (the watcher leaves it alone), live last. A pooled
  // track's markers keep their events; the rest starts afresh.
  track->comm = comm;
  track->handle = handle;
  track->id = comm->id;
  track->context = ctx;
  track->device = device;
  track->head = 0;
  track->tail = 0;
  track->flushed = 0;
  track->completed = 0;
  track->completed_t = 0;
  track->progress_ns = MonotonicNs();
  track->seen = 0;
  memset(track->seen_ns, 0, sizeof(track->seen_ns));
  track->error = 0;
  track->stall_reported = 0;
  track->held = 0;
  track->held_pinned = 0;
  track->anchor_ns = 0;  // taken again: the pooled track's may be old
  track->anchor_taken_ns = 0;
  WriteTracking(comm->id, f::completion_tracking::kCudaEvents, nullptr, CompletionTrack::kMarkers,
                device);
  // Ends any earlier track of this CommState (a communicator at a reused address).
  if (CompletionTrack* old = TrackOf(comm)) __atomic_store_n(&old->ended, 1u, __ATOMIC_RELEASE);
  __atomic_store_n(&track->ended, 0u, __ATOMIC_SEQ_CST);
  __atomic_store_n(&comm->completion, track, __ATOMIC_RELEASE);
  StartWatcher();
}

}  // namespace

uint32_t BeginTrackedOperation(CommState* comm, const void* stream) {
  CompletionTrack* track = TrackOf(comm);
  if (track == nullptr || track->markers[0].begin == nullptr) return 0;
  ErrnoGuard keep;
  if (ThisThread().group_depth > 0) {  // one per communicator per group: at its first operation
    const GroupNotes& g = t_group;
    for (int i = 0; i < g.count; ++i)
      if (g.notes[i].comm == comm) return 0;
  }
  int status = -1;
  if (g_cuda.stream_is_capturing(stream, &status) != kCudaSuccess || status != kCaptureNone)
    return 0;
  // The slot of the marker this operation will get (one thread at a time
  // per communicator): free unless the ring is full, and then it gets none.
  const uint64_t head = __atomic_load_n(&track->head, __ATOMIC_RELAXED);
  if (head - __atomic_load_n(&track->tail, __ATOMIC_ACQUIRE) >= CompletionTrack::kMarkers) return 0;
  Marker& m = track->markers[head % CompletionTrack::kMarkers];
  return g_cuda.event_record(m.begin, stream) == kCudaSuccess ? 1u : 0u;
}

void MarkTrackedOperation(CommState* comm, const void* stream, int result, uint32_t call,
                          uint64_t seq, int peer, bool send, const OpSignature& sig,
                          uint32_t begun) {
  if (comm == nullptr || !Accepted(result)) return;  // refused: nothing to complete
  CompletionTrack* track = TrackOf(comm);
  if (track == nullptr) return;  // untracked (no GPU): before errno is saved, which costs two calls
  ErrnoGuard keep;
  const GroupNote note{comm,
                       stream,
                       __atomic_load_n(&comm->next_seq, __ATOMIC_RELAXED),
                       seq,
                       call,
                       peer,
                       send ? 1u : 0u,
                       0,
                       begun,
                       sig};
  if (ThisThread().group_depth > 0) {
    GroupNotes& g = t_group;
    for (int i = 0; i < g.count; ++i) {
      if (g.notes[i].comm == comm) {
        const uint32_t ops = g.notes[i].ops + 1;
        const uint32_t first_begun = g.notes[i].begun;
        g.notes[i] = note;
        g.notes[i].ops = ops;
        g.notes[i].begun = first_begun;
        return;
      }
    }
    // Claimed, then filled. Every slot at or past `count` holds no
    // communicator (FlushGroupOperations clears those it used), so a signal
    // handler on this thread whose operation on another communicator is
    // noted between the claim and the fill passes over the claimed slot and
    // claims the next: neither note overwrites the other (filled first and
    // claimed after, the handler's was lost, and its operation got no
    // marker).
    int n = __atomic_load_n(&g.count, __ATOMIC_RELAXED);
    while (n < kGroupNotes && !__atomic_compare_exchange_n(&g.count, &n, n + 1, false,
                                                           __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    if (n < kGroupNotes) {
      GroupNote first = note;
      first.ops = 1;
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      g.notes[n] = first;
    }
    return;  // more communicators than notes: a later marker covers the rest
  }
  if (result == kNcclInProgress) {  // a non-blocking communicator enqueues it later
    WriteUntracked(comm, call, seq, f::untracked::kInProgress);
    return;
  }
  Record(track, note);
}

void FlushGroupOperations(int result) {
  GroupNotes& g = t_group;
  if (g.count == 0) return;
  ErrnoGuard keep;
  const int count = __atomic_load_n(&g.count, __ATOMIC_RELAXED);
  for (int i = 0; i < count; ++i) {
    const GroupNote& note = g.notes[i];
    if (note.comm == nullptr) continue;  // claimed, not filled yet (MarkTrackedOperation)
    CompletionTrack* track = TrackOf(note.comm);
    if (track == nullptr) continue;
    if (result == kNcclSuccess) {
      Record(track, note);
    } else if (result == kNcclInProgress) {
      WriteUntracked(note.comm, note.call, note.seq, f::untracked::kInProgress);
    }
  }
  // The slots emptied before they are given back (MarkTrackedOperation).
  for (int i = 0; i < count; ++i) g.notes[i].comm = nullptr;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&g.count, 0, __ATOMIC_RELAXED);
}

void EndCompletion(const void* handle) {
  const size_t n = TrackCount();
  for (size_t i = 0; i < n; ++i) {
    CompletionTrack* t = TrackAt(i);
    if (t == nullptr || t->handle != handle || __atomic_load_n(&t->ended, __ATOMIC_ACQUIRE))
      continue;
    __atomic_store_n(&t->ended, 1u, __ATOMIC_SEQ_CST);
    // A round of the watcher may be inside it (querying its events, asking
    // NCCL for its asynchronous error): let it leave, but never wait on a
    // watcher stuck in the driver for more than a second.
    const uint64_t deadline = MonotonicNs() + 1000000000ull;
    while (__atomic_load_n(&t->readers, __ATOMIC_SEQ_CST) && MonotonicNs() < deadline)
      sched_yield();
  }
}

void ReleaseCompletion(const void* handle) {
  const size_t n = TrackCount();
  for (size_t i = 0; i < n; ++i) {
    CompletionTrack* t = TrackAt(i);
    if (t == nullptr || t->handle != handle || !__atomic_load_n(&t->ended, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&t->pooled, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&t->readers, __ATOMIC_SEQ_CST) != 0)
      continue;
    t->comm = nullptr;
    __atomic_store_n(&t->pooled, 1u, __ATOMIC_RELEASE);
  }
}

void CompletionForkChild() {
  const size_t n = TrackCount();
  for (size_t i = 0; i < n; ++i) {
    CompletionTrack* t = TrackAt(i);
    if (t == nullptr) continue;
    __atomic_store_n(&t->ended, 1u, __ATOMIC_RELEASE);
    __atomic_store_n(&t->pooled, 0u, __ATOMIC_RELEASE);
    __atomic_store_n(&g_tracks[i], static_cast<CompletionTrack*>(nullptr), __ATOMIC_RELEASE);
  }
  __atomic_store_n(&g_track_count, size_t{0}, __ATOMIC_RELEASE);
}

void FlushCompletion(const void* handle) {
  const size_t n = TrackCount();
  for (size_t i = 0; i < n; ++i) {
    CompletionTrack* t = TrackAt(i);
    if (t == nullptr || t->handle != handle || !__atomic_load_n(&t->ended, __ATOMIC_ACQUIRE) ||
        __atomic_exchange_n(&t->flushed, 1u, __ATOMIC_ACQ_REL))
      continue;
    if (__atomic_load_n(&t->readers, __ATOMIC_SEQ_CST)) continue;  // the watcher is stuck in it
    ErrnoGuard keep;
    void* saved = nullptr;
    const bool restore = g_cuda.ctx_get_current(&saved) == kCudaSuccess;
    PollTrack(t, MonotonicNs());
    if (restore) g_cuda.ctx_set_current(saved);
  }
}

namespace {

// An operation pending this long since the watcher first saw it is held.
constexpr uint64_t kHoldAfterNs = 1000ull * 1000 * 1000;
// HeldOperation records a communicator writes to the pinned region; later
// ones (a job whose operations routinely take a second) go to the ring.
constexpr uint32_t kMaxPinnedHolds = 64;

// Holds `track`'s oldest pending operation (marker `tail`) once it has
// waited kHoldAfterNs: a HeldOperation record with its arguments and what
// the GPU had completed, where the ring cannot lap it, so that a host that
// goes on enqueuing while its GPU waits cannot overwrite what the hang is
// about. Once per operation.
void MaybeHold(CompletionTrack* track, uint64_t tail, uint64_t now_ns) {
  if (track->held == tail + 1) return;
  const uint64_t noticed = track->seen_ns[tail % CompletionTrack::kMarkers];
  if (now_ns < noticed || now_ns - noticed < kHoldAfterNs) return;
  track->held = tail + 1;
  const Marker& m = track->markers[tail % CompletionTrack::kMarkers];
  RecordBuilder<> r(f::record::kHeldOperation);
  namespace k = f::held_operation;
  r.w().Fixed64(k::kComm, track->id);
  r.w().Varint(k::kCall, m.call);
  r.w().Varint(k::kSeq, m.seq);
  r.w().Sint(k::kPeer, m.peer);
  if (m.send) r.w().Varint(k::kSend, 1);
  r.w().Varint(k::kCount, m.sig.count);
  r.w().Sint(k::kDatatype, m.sig.datatype);
  r.w().Sint(k::kRedop, m.sig.redop);
  r.w().Sint(k::kRoot, m.sig.root);
  r.w().Fixed64(k::kCaller, m.sig.caller);
  r.w().Varint(k::kEnqueuedT, m.t);
  r.w().Varint(k::kCompleted, track->completed);
  r.w().Varint(k::kGroupOps, m.group_ops);
  r.w().Sint(k::kRank, track->comm->rank);
  r.w().Varint(k::kWaitedMs, (now_ns - noticed) / 1000000ull);
  r.Append(track->held_pinned++ < kMaxPinnedHolds ? Region::kPinned : Region::kRing);
}

}  // namespace

namespace {

// The anchor is taken again this often: the GPU's timer and the host's
// clock drift apart by parts per million.
constexpr uint64_t kAnchorEveryNs = 10ull * 1000 * 1000 * 1000;
// A try whose wait took longer (the watcher descheduled) is tried again.
constexpr uint64_t kAnchorGoodNs = 200ull * 1000;

// Records the anchor event on the shim's own (empty, non-blocking) stream
// and waits for it: it completed between the two host times read around
// that, which the anchor takes the middle of. The narrowest of three tries.
// The track's context is current.
void TakeAnchor(CompletionTrack* track, uint64_t now_ns) {
  track->anchor_taken_ns = now_ns;
  uint64_t best = UINT64_MAX;
  for (int attempt = 0; attempt < 3 && best > kAnchorGoodNs; ++attempt) {
    const uint64_t t0 = MonotonicNs();
    if (g_cuda.event_record(track->anchor_event, track->anchor_stream) != kCudaSuccess ||
        g_cuda.event_synchronize(track->anchor_event) != kCudaSuccess)
      return;
    const uint64_t t1 = MonotonicNs();
    // Only the last try's event is there to measure from: each try
    // replaces the anchor, better or not (a worse one is still an anchor).
    best = t1 - t0;
    track->anchor_ns = t0 + (t1 - t0) / 2;
    track->anchor_error_ns = (t1 - t0 + 1) / 2;
  }
}

int64_t MsToNs(float ms) { return static_cast<int64_t>(static_cast<double>(ms) * 1e6); }

// One completed marker's GPU times (GpuTime, ring: a GPU-time slot).
void WriteGpuTime(const CompletionTrack* track, const Marker& m) {
  uint64_t gpu_ns = 0, begin_ns = 0, end_ns = 0;
  float ms = 0;
  if (m.begun && g_cuda.event_elapsed(&ms, m.begin, m.event) == kCudaSuccess && ms >= 0)
    gpu_ns = static_cast<uint64_t>(MsToNs(ms));
  if (track->anchor_ns != 0 &&
      g_cuda.event_elapsed(&ms, track->anchor_event, m.event) == kCudaSuccess) {
    const int64_t end = static_cast<int64_t>(track->anchor_ns) + MsToNs(ms);
    if (end > 0) end_ns = static_cast<uint64_t>(end);
    if (end_ns > gpu_ns && gpu_ns != 0) begin_ns = end_ns - gpu_ns;
  }
  if (gpu_ns == 0 && end_ns == 0) return;
  // A fixed slot, not protobuf (ring_format.h, format 4): one per tracked
  // operation, as many as the rank's collectives, each read back as fast.
  ncclwatch_gpu_time_slot s = {};
  s.comm = track->id;
  s.call = m.call;
  s.seq = m.seq;
  s.collectives = m.collectives;
  s.group_ops = m.group_ops;
  s.begin_ns = begin_ns;
  s.end_ns = end_ns;
  s.gpu_ns = gpu_ns;
  if (end_ns) s.anchor_error_ns = track->anchor_error_ns;
  AppendGpuTimeSlot(s);
}

}  // namespace

void PollTrack(CompletionTrack* track, uint64_t now_ns) {
  const uint64_t head = __atomic_load_n(&track->head, __ATOMIC_ACQUIRE);
  for (uint64_t i = track->seen; i < head; ++i)
    track->seen_ns[i % CompletionTrack::kMarkers] = now_ns;
  track->seen = head;
  if (track->error != 0) return;
  uint64_t tail = track->tail;
  const uint64_t before = tail;
  int failed = 0;
  const bool timed = track->markers[0].begin != nullptr;
  if (tail < head) {
    g_cuda.ctx_set_current(track->context);
    if (timed && track->anchor_event != nullptr &&
        (track->anchor_ns == 0 || now_ns - track->anchor_taken_ns >= kAnchorEveryNs))
      TakeAnchor(track, now_ns);
  }
  for (; tail < head; ++tail) {
    const Marker& m = track->markers[tail % CompletionTrack::kMarkers];
    const int rc = g_cuda.event_query(m.event);
    if (rc == kCudaNotReady) break;
    if (rc != kCudaSuccess) {
      failed = rc;
      break;
    }
    track->completed = m.collectives;
    track->completed_t = m.t;
    if (timed) WriteGpuTime(track, m);
  }
  if (tail != before) {
    __atomic_store_n(&track->tail, tail, __ATOMIC_RELEASE);
    __atomic_store_n(&track->progress_ns, now_ns, __ATOMIC_RELAXED);
    RecordBuilder<> r(f::record::kProgress);
    namespace k = f::progress;
    r.w().Fixed64(k::kComm, track->id);
    r.w().Varint(k::kCollectives, track->completed);
    r.w().Varint(k::kEnqueuedT, track->completed_t);
    r.w().Varint(k::kPending, head - tail);
    r.w().Varint(k::kIssued, __atomic_load_n(&track->comm->next_seq, __ATOMIC_RELAXED));
    r.Append(Region::kRing);
  }
  if (failed == 0 && tail < head) MaybeHold(track, tail, now_ns);
  if (failed != 0) {
    track->error = failed;
    const char* name = nullptr;
    const char* text = nullptr;
    if (g_cuda.get_error_name == nullptr || g_cuda.get_error_name(failed, &name) != kCudaSuccess)
      name = nullptr;
    if (g_cuda.get_error_string == nullptr ||
        g_cuda.get_error_string(failed, &text) != kCudaSuccess)
      text = nullptr;
    RecordBuilder<640> r(f::record::kCudaError);
    namespace k = f::cuda_error;
    r.w().Fixed64(k::kComm, track->id);
    r.w().Sint(k::kResult, failed);
    if (name != nullptr) r.w().Bytes(k::kName, name, strnlen(name, 120));
    if (text != nullptr) r.w().Bytes(k::kText, text, strnlen(text, 400));
    r.w().Sint(k::kDevice, track->device);
    r.w().Varint(k::kWhere, f::cuda_error::kWhereEventQuery);
    r.w().Varint(k::kSeq, track->completed);
    r.Append(Region::kPinned);
  }
}

}  // namespace ncclwatch::shim

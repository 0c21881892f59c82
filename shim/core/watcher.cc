// The watcher's threads (watcher.h). Not on the hot path: nothing here runs
// on the program's threads except StartWatcher (when a communicator is made),
// FinalPoll (in the exit() hook) and FinalPollFromSignal (in a fatal signal's
// handler, _exit, _Exit, quick_exit and the exec family: async-signal-safe,
// it only asks the poller and waits).

#include "core/watcher.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/call_records.h"
#include "core/completion.h"
#include "core/record_builder.h"
#include "core/rendezvous_sockets.h"
#include "core/tracer.h"
#include "ncclwatch/trace_fields.h"
#include "resolve/real_cuda.h"
#include "resolve/real_nccl.h"
#include "ring/trace_clock.h"

namespace ncclwatch::shim {
namespace {

namespace f = fields;

constexpr uint64_t kPollNs = 20ull * 1000 * 1000;
constexpr uint64_t kGrowLookNs = 50ull * 1000 * 1000;
// How long a last round may hold up a process's end, at most.
constexpr uint64_t kFinalWaitNs = 1000ull * 1000 * 1000;
// Thread numbers of the watcher's records (Record.thread), apart from the
// program's 1, 2, ...
constexpr uint32_t kPollThread = 0xfffffff1u;
constexpr uint32_t kBeatThread = 0xfffffff2u;

struct Settings {
  int parsed;
  int completion;         // NCCLWATCH_COMPLETION != "0"
  uint64_t stall_ns;      // NCCLWATCH_STALL, 0 off
  uint32_t heartbeat_ms;  // NCCLWATCH_HEARTBEAT_MS
};
Settings g_settings;
uint32_t g_started_pid = 0;  // the process the threads run in
uint32_t g_beat_pid = 0;     // the process the heartbeat thread runs in
int g_poll_busy = 0;         // a round of queries is running (poller or FinalPoll)
// Last rounds asked of the poller by a dying process (FinalPollFromSignal),
// a futex word the poller sleeps on, and the requests it has answered.
uint32_t g_final_asked = 0;
uint32_t g_final_done = 0;
int32_t g_poller_tid = 0;  // 0 until the poller runs in this process

void Warn(const char* line) {
  const size_t n = strnlen(line, 1024);
  (void)!write(2, line, n);
}

// Parsed once, when the first communicator is tracked (getenv: not the hot path).
const Settings& TheSettings() {
  if (__atomic_load_n(&g_settings.parsed, __ATOMIC_ACQUIRE)) return g_settings;
  Settings s = {1, 1, 300ull * 1000000000ull, 1000};
  char msg[512];
  if (const char* v = getenv("NCCLWATCH_COMPLETION")) s.completion = strcmp(v, "0") != 0;
  if (const char* v = getenv("NCCLWATCH_STALL")) {
    char* end = nullptr;
    const double secs = strtod(v, &end);
    if (end != v && *end == '\0' && secs >= 0 && secs <= 86400 * 7) {
      s.stall_ns = static_cast<uint64_t>(secs * 1e9);
    } else {
      snprintf(msg, sizeof(msg),
               "ncclwatch: NCCLWATCH_STALL='%.100s' is not seconds from 0 (off) to 604800; "
               "using 300\n",
               v);
      Warn(msg);
    }
  }
  if (const char* v = getenv("NCCLWATCH_HEARTBEAT_MS")) {
    char* end = nullptr;
    const long ms = strtol(v, &end, 10);
    if (end != v && *end == '\0' && ms >= 10 && ms <= 60000) {
      s.heartbeat_ms = static_cast<uint32_t>(ms);
    } else {
      snprintf(msg, sizeof(msg),
               "ncclwatch: NCCLWATCH_HEARTBEAT_MS='%.100s' is not milliseconds from 10 to 60000; "
               "using 1000\n",
               v);
      Warn(msg);
    }
  }
  g_settings = s;
  __atomic_store_n(&g_settings.parsed, 1, __ATOMIC_RELEASE);
  return g_settings;
}

void SleepNs(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// An asynchronous error NCCL holds for the communicator, recorded once per
// (result, error) as the program's own ncclCommGetAsyncError calls are.
// Called with t->readers counting this thread and t not ended.
void PollAsyncError(CompletionTrack* t) {
  auto get_async = g_real.ncclCommGetAsyncError;
  if (get_async == nullptr) return;
  {
    ncclResult_t error = ncclSuccess;
    auto* comm = static_cast<ncclComm_t>(const_cast<void*>(t->handle));
    const ncclResult_t r = get_async(comm, &error);
    if (r == ncclSuccess && error != ncclSuccess && error != ncclInProgress) {
      const uint64_t combo = (static_cast<uint64_t>(static_cast<uint32_t>(r)) << 32) |
                             static_cast<uint32_t>(error) | (1ull << 63);
      if (__atomic_exchange_n(&t->comm->last_async, combo, __ATOMIC_RELAXED) != combo) {
        auto last_error = g_real.ncclGetLastError;
        RecordNcclError(f::kCommGetAsyncError, error, t->handle,
                        last_error != nullptr ? last_error(comm) : nullptr, true);
      }
    }
  }
}

void PollRound(bool async_errors) {
  const uint64_t now = MonotonicNs();
  const size_t n = TrackCount();
  for (size_t i = 0; i < n; ++i) {
    CompletionTrack* t = TrackAt(i);
    if (t == nullptr || __atomic_load_n(&t->ended, __ATOMIC_ACQUIRE)) continue;
    // Dekker with EndCompletion: either it sees `readers` and waits, or this
    // sees `ended` and leaves the communicator alone (and a track taken from
    // the pool is set up while ended).
    __atomic_fetch_add(&t->readers, 1u, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&t->ended, __ATOMIC_SEQ_CST)) {
      PollTrack(t, now);
      if (async_errors) PollAsyncError(t);
    }
    __atomic_fetch_sub(&t->readers, 1u, __ATOMIC_SEQ_CST);
  }
}

const char* OpName(uint32_t call) {
  const char* name = f::CallName(call);
  return name != nullptr ? name : "operation";
}

void ReportStall(CompletionTrack* t, const Marker& m, uint64_t waited_ns, uint64_t pending) {
  const CommState* c = t->comm;
  const uint64_t waited_ms = waited_ns / 1000000ull;
  RecordBuilder<> r(f::record::kStall);
  namespace k = f::stall;
  r.w().Fixed64(k::kComm, t->id);
  r.w().Varint(k::kCall, m.call);
  r.w().Varint(k::kSeq, m.seq);
  r.w().Sint(k::kPeer, m.peer);
  if (m.send) r.w().Varint(k::kSend, 1);
  r.w().Varint(k::kWaitedMs, waited_ms);
  r.w().Varint(k::kCompleted, t->completed);
  r.w().Varint(k::kPending, pending);
  r.w().Varint(k::kGroupOps, m.group_ops);
  r.w().Sint(k::kRank, c->rank);
  r.w().Sint(k::kNranks, c->nranks);
  r.Append(Region::kRing);

  char waits[160];
  if (m.call == f::kSend) {
    snprintf(waits, sizeof(waits), "it waits for rank %d to receive", m.peer);
  } else if (m.call == f::kRecv) {
    snprintf(waits, sizeof(waits), "it waits for rank %d to send", m.peer);
  } else if (m.call == f::kWaitSignal) {
    snprintf(waits, sizeof(waits), "it waits for signals from rank %d", m.peer);
  } else if (m.call == f::kPutSignal || m.call == f::kSignal) {
    snprintf(waits, sizeof(waits), "it waits for its GPU to reach rank %d's window", m.peer);
  } else if (c->nranks > 1) {
    snprintf(waits, sizeof(waits), "it waits for the other %d ranks of the communicator",
             c->nranks - 1);
  } else {
    snprintf(waits, sizeof(waits), "it waits for its GPU");
  }
  char group[48] = "";
  if (m.group_ops > 1) snprintf(group, sizeof(group), " (in a group of %u)", m.group_ops);
  char line[640];
  snprintf(line, sizeof(line),
           "ncclwatch: STALL pid %u rank %d: %s #%llu%s on communicator %016llx has not completed "
           "after %llu s; %s (%llu collectives completed, %llu operations pending)\n",
           g_pid, c->rank, OpName(m.call), static_cast<unsigned long long>(m.seq), group,
           static_cast<unsigned long long>(t->id),
           static_cast<unsigned long long>(waited_ms / 1000), waits,
           static_cast<unsigned long long>(t->completed), static_cast<unsigned long long>(pending));
  Warn(line);
}

void CheckStall(CompletionTrack* t, uint64_t now, uint64_t stall_ns);

void CheckStalls(uint64_t stall_ns) {
  if (stall_ns == 0) return;
  const uint64_t now = MonotonicNs();
  const size_t n = TrackCount();
  for (size_t i = 0; i < n; ++i) {
    CompletionTrack* t = TrackAt(i);
    if (t == nullptr || __atomic_load_n(&t->ended, __ATOMIC_ACQUIRE)) continue;
    // As PollRound: counted in, so the track is not set up for another
    // communicator while this reads it.
    __atomic_fetch_add(&t->readers, 1u, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&t->ended, __ATOMIC_SEQ_CST)) CheckStall(t, now, stall_ns);
    __atomic_fetch_sub(&t->readers, 1u, __ATOMIC_SEQ_CST);
  }
}

void CheckStall(CompletionTrack* t, uint64_t now, uint64_t stall_ns) {
  const uint64_t tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
  const uint64_t head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
  const uint64_t seen = __atomic_load_n(&t->seen, __ATOMIC_ACQUIRE);
  if (tail >= head || tail >= seen) return;  // nothing pending, or not noticed yet
  const uint64_t noticed =
      __atomic_load_n(&t->seen_ns[tail % CompletionTrack::kMarkers], __ATOMIC_RELAXED);
  const uint64_t progress = __atomic_load_n(&t->progress_ns, __ATOMIC_RELAXED);
  const uint64_t since = noticed > progress ? noticed : progress;
  if (now < since || now - since < stall_ns) return;
  if (__atomic_load_n(&t->stall_reported, __ATOMIC_RELAXED) == tail + 1) return;
  __atomic_store_n(&t->stall_reported, tail + 1, __ATOMIC_RELAXED);
  ReportStall(t, t->markers[tail % CompletionTrack::kMarkers], now - since, head - tail);
}

// Every kPollNs, or at once when a dying process asks for a last round
// (FinalPollFromSignal wakes the futex it sleeps on).
void* PollMain(void*) {
  SetThisThreadIndex(kPollThread);
  __atomic_store_n(&g_poller_tid, static_cast<int32_t>(syscall(SYS_gettid)), __ATOMIC_RELEASE);
  for (;;) {
    const uint32_t asked = __atomic_load_n(&g_final_asked, __ATOMIC_ACQUIRE);
    if (__atomic_exchange_n(&g_poll_busy, 1, __ATOMIC_ACQUIRE) == 0) {
      PollRound(true);
      __atomic_store_n(&g_poll_busy, 0, __ATOMIC_RELEASE);
      __atomic_store_n(&g_final_done, asked, __ATOMIC_RELEASE);
    }
    timespec wait{0, static_cast<long>(kPollNs)};
    syscall(SYS_futex, &g_final_asked, FUTEX_WAIT_PRIVATE, asked, &wait, nullptr, 0);
  }
  return nullptr;
}

void* BeatMain(void*) {
  SetThisThreadIndex(kBeatThread);
  const Settings& s = TheSettings();
  for (uint64_t beat = 1;; ++beat) {
    {
      RecordBuilder<> r(f::record::kHeartbeat);
      r.w().Varint(f::heartbeat::kBeat, beat);
      r.w().Varint(f::heartbeat::kIntervalMs, s.heartbeat_ms);
      r.Append(Region::kRing);
    }
    FlushRendezvousSockets();
    if (s.completion) CheckStalls(s.stall_ns);
    // While the ring is small, a look every kGrowLookNs for communicators
    // adopted on the hot path, which cannot grow it (core/tracer.h).
    const uint64_t until = MonotonicNs() + static_cast<uint64_t>(s.heartbeat_ms) * 1000000ull;
    for (uint64_t now = MonotonicNs(); now < until; now = MonotonicNs()) {
      const bool small = TraceRingIsSmall();
      if (small) GrowTraceRingForAdopted();
      SleepNs(small && until - now > kGrowLookNs ? kGrowLookNs : until - now);
    }
  }
  return nullptr;
}

bool Spawn(void* (*main)(void*), const char* name) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t thread;
  const bool ok = pthread_create(&thread, &attr, main, nullptr) == 0;
  pthread_attr_destroy(&attr);
  if (ok) pthread_setname_np(thread, name);
  return ok;
}

}  // namespace

bool CompletionTrackingEnabled() { return TheSettings().completion != 0; }

namespace {

// Claims `*pid_word` for this process; false when a thread was started for
// it already.
bool FirstInThisProcess(uint32_t* pid_word) {
  const uint32_t pid = static_cast<uint32_t>(getpid());
  uint32_t started = __atomic_load_n(pid_word, __ATOMIC_ACQUIRE);
  if (started == pid) return false;
  return __atomic_compare_exchange_n(pid_word, &started, pid, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
}

// Spawns `main` with every signal blocked: the program's signals keep going
// to the program's threads. All but the faults a thread raises itself: a
// blocked one kills the process at once, and a store into a trace file
// truncated under the process (a heartbeat) must reach the shim's SIGBUS
// handler, which makes it harmless (ring_writer.h).
bool SpawnQuiet(void* (*main)(void*), const char* name) {
  sigset_t all, old;
  sigfillset(&all);
  static const int kFaults[] = {SIGBUS, SIGSEGV, SIGFPE, SIGILL};
  for (int s : kFaults) sigdelset(&all, s);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const bool ok = Spawn(main, name);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

}  // namespace

void StartHeartbeat() {
  if (!TracingNow() || !FirstInThisProcess(&g_beat_pid)) return;
  const int saved_errno = errno;
  TheSettings();
  if (!SpawnQuiet(BeatMain, "ncclwatch-beat"))
    Warn("ncclwatch: could not start the heartbeat thread; no heartbeat\n");
  errno = saved_errno;
}

void StartWatcher() {
  if (!Tracing()) return;
  if (!FirstInThisProcess(&g_started_pid)) return;
  const int saved_errno = errno;
  TheSettings();
  __atomic_store_n(&g_poll_busy, 0, __ATOMIC_RELEASE);  // a forked child starts afresh
  StartHeartbeat();
  if (TheSettings().completion && !SpawnQuiet(PollMain, "ncclwatch-poll"))
    Warn("ncclwatch: could not start the watcher thread; no completion tracking\n");
  errno = saved_errno;
}

void FinalPoll() {
  if (__atomic_load_n(&g_started_pid, __ATOMIC_ACQUIRE) != g_pid || !g_cuda.CanTrack()) return;
  // Waits for a round in progress (a loaded machine may have paused the
  // poller inside one), at most a second: never holds up the exit long.
  const uint64_t deadline = MonotonicNs() + kFinalWaitNs;
  while (__atomic_exchange_n(&g_poll_busy, 1, __ATOMIC_ACQUIRE) != 0) {
    if (MonotonicNs() > deadline) return;
    SleepNs(1000000);
  }
  PollRound(false);
  __atomic_store_n(&g_poll_busy, 0, __ATOMIC_RELEASE);
}

void FinalPollFromSignal() {
  if (__atomic_load_n(&g_started_pid, __ATOMIC_ACQUIRE) != g_pid) return;
  const int32_t poller = __atomic_load_n(&g_poller_tid, __ATOMIC_ACQUIRE);
  if (poller == 0 || poller == static_cast<int32_t>(syscall(SYS_gettid))) return;
  const uint32_t want = __atomic_add_fetch(&g_final_asked, 1, __ATOMIC_ACQ_REL);
  syscall(SYS_futex, &g_final_asked, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  const uint64_t deadline = MonotonicNs() + kFinalWaitNs;
  while (static_cast<int32_t>(__atomic_load_n(&g_final_done, __ATOMIC_ACQUIRE) - want) < 0) {
    if (MonotonicNs() > deadline) return;
    timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
}

}  // namespace ncclwatch::shim

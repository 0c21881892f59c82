// What the shim writes for each kind of NCCL call, and around the process's
// life (exit, fatal signals).
//
// HOT PATH: Begin/EndCollective, Begin/EndP2p, BeginGroup/EndGroup (inline,
// below: they are most of what an NCCL entry point costs), BeginApi, RecordCollConfig,
// Begin/EndOneSided, RecordNcclVersion,
// RecordNcclError, RecordAsyncError and the process functions (RecordProcessEnd, RecordFatalSignal)
// allocate nothing, take no lock, make no system call, are async-signal-safe, and leave errno as
// they found it. The communicator lifecycle functions run when communicators are made and
// destroyed; RecordCommInitEnd also rescans the modules (not signal-safe).

#ifndef NCCLWATCH_SHIM_CORE_CALL_RECORDS_H_
#define NCCLWATCH_SHIM_CORE_CALL_RECORDS_H_

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm_registry.h"
#include "core/record_builder.h"
#include "core/tracer.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::shim {

// NCCL's result codes the shim's own logic tests, by name (nccl.h's
// ncclResult_t; interpose/nccl_hooks.cc checks them against it). The
// core's files do not include nccl.h.
inline constexpr int kNcclSuccess = 0;
inline constexpr int kNcclInProgress = 7;  // a non-blocking communicator's call under way

// Succeeded, as far as numbering goes (ncclSuccess or ncclInProgress).
inline bool Accepted(int result) { return result == kNcclSuccess || result == kNcclInProgress; }

struct CollectiveCall {
  CallRecord record;
  CommState* comm = nullptr;
  uint64_t seq = 0;
};

// `root` < 0 for collectives without one, `redop` < 0 for those that do not reduce.
inline CollectiveCall BeginCollective(uint32_t call, const void* sendbuff, const void* recvbuff,
                                      size_t count, int datatype, int redop, int root,
                                      const void* comm, const void* stream, const void* caller);
inline void EndCollective(const CollectiveCall& c, int result);

struct P2pCall {
  CallRecord record;
  CommState* comm = nullptr;
  uint64_t* counter = nullptr;
  uint64_t seq = 0;
};

inline P2pCall BeginP2p(bool send, const void* buff, size_t count, int datatype, int peer,
                        const void* comm, const void* stream, const void* caller);
inline void EndP2p(const P2pCall& c, int result);

// ncclGroupStart/End/SimulateEnd: keeps the thread's group depth and id.
inline CallRecord BeginGroup(uint32_t call, const void* caller);
inline void EndGroup(uint32_t call, const CallRecord& record, int result);

// What a collective's per-call config (ncclCollConfig_t, NCCL 2.31) asked
// for, read by the entry point (interpose/, which has nccl.h) within the
// config's own size; fields it did not reach keep these defaults.
struct CollConfigView {
  uint64_t size = 0;
  uint32_t version = 0;
  bool magic_ok = false;
  bool has[9] = {};  // which of the fields below the config's size covered
  int32_t min_ctas = 0, max_ctas = 0, nvls_ctas = 0, cga_cluster_size = 0;
  const char* alg_selection = nullptr;  // not copied yet: CollConfig copies at most 64 bytes
  int32_t force_alg_selection = 0, cta_policy = 0;
  uint64_t user_profiler_tag = 0;
  bool launch_completion_event = false;
  uint32_t ext_options = 0;
  enum Field { kMinCtas, kMaxCtas, kNvlsCtas, kCga, kAlg, kForce, kCtaPolicy, kTag, kEvent };
};
// Written just before the collective's own record, with the number the
// collective gets if NCCL accepts it (trace.proto CollConfig).
void RecordCollConfig(uint32_t call, const void* comm, const CollConfigView& config);

// One-sided operations (NCCL 2.29): signals are numbered per communicator,
// peer and direction (trace.proto OneSided).
struct OneSidedWait {  // laid out as nccl.h's ncclWaitSignalDesc_t (checked where it is read)
  int op_cnt, peer, sig_idx, ctx;
};
struct OneSidedArgs {
  uint32_t call = 0;  // kPutSignal, kSignal, kWaitSignal
  int peer = -1;
  uint64_t count = 0;
  int datatype = 0;
  const void* window = nullptr;
  uint64_t offset = 0;
  int sig_idx = 0, ctx = 0;
  uint32_t flags = 0;
  const void* stream = nullptr;
  const void* buff = nullptr;
  const void* caller = nullptr;
  const OneSidedWait* waits = nullptr;  // kWaitSignal
  int n_desc = 0;
};
struct OneSidedCall {
  CallRecord record;
  CommState* comm = nullptr;
  uint64_t seq = 0;  // put/signal: its number to the peer; wait: the first descriptor's
};
OneSidedCall BeginOneSided(const void* comm, const OneSidedArgs& args);
// Counts what NCCL accepted: the signal sent, or the signals awaited.
void EndOneSided(const OneSidedCall& c, const OneSidedArgs& args, int result);

// Any other entry point; `value` is what it reported, where that matters.
CallRecord BeginApi(uint32_t call, const void* comm, int64_t value, const void* caller);
// ncclGetVersion: the version the program's NCCL reports, written once per
// process to the pinned region (version skew is read from it).
void RecordNcclVersion(int result, int version, const void* caller);
// After an NCCL call failed (or reported an asynchronous error): NCCL's own
// text for it (`last_error`, from ncclGetLastError), to the pinned region.
// Only ever on a failure path.
void RecordNcclError(uint32_t call, int result, const void* comm, const char* last_error,
                     bool async);
// ncclCommGetAsyncError: written only when (result, error) changes for the
// communicator, so a watchdog polling it does not flood the ring.
// Returns whether it wrote one.
bool RecordAsyncError(const void* comm, int result, int async_error, const void* caller);

// --- Communicator lifecycle (pinned region)

// The identity of a communicator made from unique ids.
uint64_t CommIdFromUniqueIds(const void* ids, size_t bytes);
// The identity of ncclCommInitAll's communicator: local to this process.
uint64_t CommIdForInitAll();
// The identity of a split (color) or shrink (excluded ranks) of `parent`.
uint64_t CommIdForSplit(uint64_t parent, uint32_t split_index, int color);
uint64_t CommIdForShrink(uint64_t parent, uint32_t split_index, const int* excluded, int nexcluded);
// The identity of a grown communicator as its existing ranks derive it (the
// new ranks know only the id they were given: CommIdFromUniqueIds).
uint64_t CommIdForGrow(uint64_t parent, uint32_t split_index);

struct CommInitBegin {
  uint64_t comm = 0;
  uint32_t call = 0;
  int nranks = -1;
  int rank = -1;
  uint64_t parent = 0;
  int color = 0;
  int key = 0;
  uint32_t split_index = 0;
  const int* excluded = nullptr;
  int nexcluded = 0;
  int blocking = -1;
  const void* caller = nullptr;
  int device = -1;               // the calling thread's CUDA device, -1 unknown
  const char* bus_id = nullptr;  // its PCI bus id
  uint64_t grow_id = 0;          // ncclCommGrow: the identity of the id the caller passed
};
void RecordCommInitBegin(const CommInitBegin& b);

// After the init call: registers the communicator, records the outcome, the
// modules loaded since, and a time anchor.
void RecordCommInitEnd(uint64_t comm, int result, const void* handle, int rank, int nranks,
                       int device);

// ncclCommFinalize, Destroy, Abort and Revoke: the CommEnd record, written
// before the call with its result pending, and the result after.
CallRecord BeginCommEnd(uint32_t call, const void* comm);
void EndCommEnd(const CallRecord& record, int result);

// --- The process

// How the process ended (trace.proto ProcessEnd.How): exit() or main
// returning, _exit(), quick_exit(); written once per trace file. `last`
// false for an exec (and an exec that failed), which a later end may follow.
void RecordProcessEnd(uint32_t how, int exit_code, bool last = true);
// From the signal handler. `disposition`: 0 default, 1 ignore, 2 handler.
void RecordFatalSignal(int signo, const siginfo_t* info, uint32_t disposition);

// ---- the per-call path, inline into each NCCL entry point

// What the last per-call record of this thread looked up: its ThreadState
// and the registry entry of the communicator it used. Consecutive calls of
// a thread are almost always on one communicator, so most calls skip the
// registry's lookup. Entries never move, so a cached pointer stays valid;
// one being re-registered (a new communicator at the address) is not
// `ready`, and one freed and taken by another communicator holds another
// handle: either is looked up again (comm_registry.h).
struct CallCache {
  ThreadState* thread;
  const void* handle;
  CommState* comm;
};
extern __thread CallCache t_call_cache __attribute__((tls_model("initial-exec")));

inline uint64_t Ptr(const void* p) { return reinterpret_cast<uint64_t>(p); }

__attribute__((always_inline)) inline ThreadState& CachedThread() {
  CallCache& cache = t_call_cache;
  if (__builtin_expect(cache.thread == nullptr, 0)) cache.thread = &ThisThread();
  return *cache.thread;
}

__attribute__((always_inline)) inline CommState* CachedComm(const void* handle) {
  CallCache& cache = t_call_cache;
  if (__builtin_expect(cache.handle == handle && handle != nullptr, 1) &&
      __atomic_load_n(&cache.comm->ready, __ATOMIC_ACQUIRE) &&
      __atomic_load_n(&cache.comm->handle, __ATOMIC_RELAXED) ==
          reinterpret_cast<uintptr_t>(handle)) {
    return cache.comm;
  }
  CommState* c = g_comms.FindOrAdopt(handle);
  if (c != nullptr) {
    cache.handle = handle;
    cache.comm = c;
  }
  return c;
}

// errno: nothing on these paths can set it (table lookups, thread-local
// state, stores into the mapped ring, the TSC or a vDSO clock_gettime with a
// valid clock, which sets errno only on failure), so they need no ErrnoGuard.

__attribute__((always_inline)) inline CollectiveCall BeginCollective(
    uint32_t call, const void* sendbuff, const void* recvbuff, size_t count, int datatype,
    int redop, int root, const void* comm, const void* stream, const void* caller) {
  CollectiveCall c;
  c.comm = CachedComm(comm);
  const ThreadState& t = CachedThread();
  ncclwatch_call_slot v{};
  v.thread = t.index;
  if (c.comm != nullptr) {
    c.seq = __atomic_load_n(&c.comm->next_seq, __ATOMIC_RELAXED);
    v.comm = c.comm->id;
    v.rank = c.comm->rank;
  } else {
    v.rank = -1;
  }
  v.seq = c.seq;
  v.count = count;
  v.stream = Ptr(stream);
  v.sendbuff = Ptr(sendbuff);
  v.recvbuff = Ptr(recvbuff);
  if (t.group_depth > 0) {
    v.group = t.group_id;
    v.flags = NCCLWATCH_CALL_IN_GROUP;
  }
  v.caller = Ptr(caller);
  v.call = call;
  v.datatype = datatype;
  v.redop = redop < 0 ? -1 : redop;
  v.root = root < 0 ? -1 : root;
  c.record = AppendCallSlot(NCCLWATCH_SLOT_COLLECTIVE, v);
  return c;
}

__attribute__((always_inline)) inline void EndCollective(const CollectiveCall& c, int result) {
  c.record.Finish(result);
  // NCCL requires one thread at a time per communicator (its calls are
  // ordered by the program), so a plain load and store suffice: no locked
  // instruction on every call. Concurrent callers, which NCCL forbids, could
  // at worst repeat a number.
  if (c.comm != nullptr && Accepted(result) &&
      __atomic_load_n(&c.comm->next_seq, __ATOMIC_RELAXED) == c.seq) {
    __atomic_store_n(&c.comm->next_seq, c.seq + 1, __ATOMIC_RELAXED);
  }
}

__attribute__((always_inline)) inline P2pCall BeginP2p(bool send, const void* buff, size_t count,
                                                       int datatype, int peer, const void* comm,
                                                       const void* stream, const void* caller) {
  P2pCall c;
  CommState* cs = CachedComm(comm);
  c.comm = cs;
  const ThreadState& t = CachedThread();
  ncclwatch_call_slot v{};
  v.thread = t.index;
  v.rank = -1;
  if (cs != nullptr) {
    uint64_t* counters = __atomic_load_n(&cs->p2p_seq, __ATOMIC_ACQUIRE);
    if (counters != nullptr && peer >= 0 && peer < cs->nranks) {
      c.counter = counters + (send ? 0 : cs->nranks) + peer;
      c.seq = __atomic_load_n(c.counter, __ATOMIC_RELAXED);
    }
    v.comm = cs->id;
    v.rank = cs->rank;
  }
  v.seq = c.seq;
  v.call = send ? fields::kSend : fields::kRecv;
  v.peer = peer;
  v.count = count;
  v.datatype = datatype;
  v.stream = Ptr(stream);
  v.sendbuff = Ptr(buff);
  if (t.group_depth > 0) {
    v.group = t.group_id;
    v.flags = NCCLWATCH_CALL_IN_GROUP;
  }
  v.caller = Ptr(caller);
  v.redop = -1;
  v.root = -1;
  c.record = AppendCallSlot(NCCLWATCH_SLOT_P2P, v);
  return c;
}

__attribute__((always_inline)) inline void EndP2p(const P2pCall& c, int result) {
  c.record.Finish(result);
  // As for collectives: one thread at a time per communicator, no lock prefix.
  if (c.counter != nullptr && Accepted(result) &&
      __atomic_load_n(c.counter, __ATOMIC_RELAXED) == c.seq) {
    __atomic_store_n(c.counter, c.seq + 1, __ATOMIC_RELAXED);
  }
}

__attribute__((always_inline)) inline CallRecord BeginGroup(uint32_t call, const void* caller) {
  ThreadState& t = CachedThread();
  if (call == fields::kGroupStart) {
    if (t.group_depth++ == 0) t.group_id = NextGroupId();
  }
  ncclwatch_call_slot v{};
  v.thread = t.index;
  v.call = call;
  v.group = t.group_id;
  v.depth = call == fields::kGroupStart ? t.group_depth : (t.group_depth ? t.group_depth - 1 : 0);
  v.caller = Ptr(caller);
  v.redop = -1;
  v.root = -1;
  v.rank = -1;
  return AppendCallSlot(NCCLWATCH_SLOT_GROUP, v);
}

__attribute__((always_inline)) inline void EndGroup(uint32_t call, const CallRecord& record,
                                                    int result) {
  record.Finish(result);
  ThreadState& t = CachedThread();
  if (call != fields::kGroupStart && t.group_depth > 0 && --t.group_depth == 0) t.group_id = 0;
}

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_CALL_RECORDS_H_

// HOT PATH (collectives, point-to-point, groups, API calls, process end,
// fatal signals): no allocation, no lock, no system call, async-signal-safe,
// errno untouched. Communicator creation and end are not on the hot path.
//
// errno: BeginApi, like the inline per-call functions in call_records.h,
// needs no ErrnoGuard, because nothing it runs can set errno: table lookups,
// thread-local state, stores into the mapped ring, the TSC or a vDSO
// clock_gettime with a valid clock (which sets errno only on failure).
// Paths that may reach libc calls that can (the pinned records, time anchors
// written from there, module scans) keep the guard.

#include "core/call_records.h"

#include <errno.h>

#include "core/errno_guard.h"
#include "core/rendezvous_sockets.h"
#include "core/tracer.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::shim {
namespace {

namespace f = fields;

uint32_t g_process_ended = 0;  // FirstForThisFile

}  // namespace

__thread CallCache t_call_cache __attribute__((tls_model("initial-exec")));

CallRecord BeginApi(uint32_t call, const void* comm, int64_t value, const void* caller) {
  CommState* cs = comm ? g_comms.Find(comm) : nullptr;
  namespace k = f::api;
  return AppendRingRecord(f::record::kApi, k::kResult, [&](wire::WireWriter& w) {
    w.Varint(k::kCall, call);
    if (cs) w.Fixed64(k::kComm, cs->id);
    if (value != 0) w.Sint(k::kValue, value);
    w.Fixed64(k::kCaller, Ptr(caller));
  });
}

void RecordCollConfig(uint32_t call, const void* comm, const CollConfigView& v) {
  CommState* cs = CachedComm(comm);
  namespace k = f::coll_config;
  using F = CollConfigView;
  RecordBuilder<> r(f::record::kCollConfig);
  if (cs) {
    r.w().Fixed64(k::kComm, cs->id);
    r.w().Varint(k::kSeq, __atomic_load_n(&cs->next_seq, __ATOMIC_RELAXED));
  }
  r.w().Varint(k::kCall, call);
  r.w().Varint(k::kSize, v.size);
  r.w().Varint(k::kVersion, v.version);
  if (v.magic_ok) r.w().Varint(k::kMagicOk, 1);
  if (v.has[F::kMinCtas]) r.w().Sint(k::kMinCtas, v.min_ctas);
  if (v.has[F::kMaxCtas]) r.w().Sint(k::kMaxCtas, v.max_ctas);
  if (v.has[F::kNvlsCtas]) r.w().Sint(k::kNvlsCtas, v.nvls_ctas);
  if (v.has[F::kCga]) r.w().Sint(k::kCgaClusterSize, v.cga_cluster_size);
  if (v.has[F::kAlg] && v.alg_selection != nullptr) {
    // The caller's string, at most 64 bytes of it, printable ASCII only.
    char text[64];
    size_t n = 0;
    for (; n < sizeof(text) && v.alg_selection[n] != '\0'; ++n) {
      const unsigned char c = static_cast<unsigned char>(v.alg_selection[n]);
      text[n] = c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
    }
    r.w().Bytes(k::kAlgSelection, text, n);
  }
  if (v.has[F::kForce]) r.w().Sint(k::kForceAlgSelection, v.force_alg_selection);
  if (v.has[F::kCtaPolicy]) r.w().Sint(k::kCtaPolicy, v.cta_policy);
  if (v.has[F::kTag] && v.user_profiler_tag != 0)
    r.w().Varint(k::kUserProfilerTag, v.user_profiler_tag);
  if (v.has[F::kEvent] && v.launch_completion_event) r.w().Varint(k::kLaunchCompletionEvent, 1);
  if (v.ext_options != 0) r.w().Varint(k::kExtOptions, v.ext_options);
  r.Append(Region::kRing);
}

OneSidedCall BeginOneSided(const void* comm, const OneSidedArgs& a) {
  OneSidedCall c;
  c.comm = CachedComm(comm);
  const ThreadState& t = CachedThread();
  // [sends][receives][signals sent][signals awaited], nranks each (comm_registry.h).
  uint64_t* counters = c.comm ? __atomic_load_n(&c.comm->p2p_seq, __ATOMIC_ACQUIRE) : nullptr;
  const int n = c.comm ? c.comm->nranks : 0;
  auto sent = [&](int peer) -> uint64_t {
    return counters != nullptr && peer >= 0 && peer < n
               ? __atomic_load_n(&counters[2 * n + peer], __ATOMIC_RELAXED)
               : 0;
  };
  auto awaited = [&](int peer) -> uint64_t {
    return counters != nullptr && peer >= 0 && peer < n
               ? __atomic_load_n(&counters[3 * n + peer], __ATOMIC_RELAXED)
               : 0;
  };
  namespace k = f::one_sided;
  RecordBuilder<512> r(f::record::kOneSided);
  r.PendingResult(k::kResult);
  if (c.comm) {
    r.w().Fixed64(k::kComm, c.comm->id);
    r.w().Sint(k::kRank, c.comm->rank);
  }
  r.w().Varint(k::kCall, a.call);
  if (a.call == f::kWaitSignal) {
    r.w().Sint(k::kNDesc, a.n_desc);
    for (int i = 0; a.waits != nullptr && i < a.n_desc && i < 16; ++i) {
      const OneSidedWait& d = a.waits[i];
      // Earlier descriptors of this call for the same peer come first.
      uint64_t before = awaited(d.peer);
      for (int j = 0; j < i; ++j)
        if (a.waits[j].peer == d.peer && a.waits[j].op_cnt > 0) before += a.waits[j].op_cnt;
      if (i == 0) c.seq = before;
      const size_t m = r.w().BeginMessage(k::kWaits);
      r.w().Sint(k::wait::kPeer, d.peer);
      r.w().Sint(k::wait::kOpCnt, d.op_cnt);
      r.w().Sint(k::wait::kSigIdx, d.sig_idx);
      r.w().Sint(k::wait::kCtx, d.ctx);
      r.w().Varint(k::wait::kSeq, before);
      r.w().EndMessage(m);
    }
  } else {
    c.seq = sent(a.peer);
    r.w().Sint(k::kPeer, a.peer);
    r.w().Varint(k::kSeq, c.seq);
    if (a.call == f::kPutSignal) {
      r.w().Varint(k::kCount, a.count);
      r.w().Sint(k::kDatatype, a.datatype);
      r.w().Fixed64(k::kWindow, Ptr(a.window));
      r.w().Varint(k::kOffset, a.offset);
      r.w().Fixed64(k::kBuff, Ptr(a.buff));
    }
  }
  if (a.call != f::kWaitSignal) {
    r.w().Sint(k::kSigIdx, a.sig_idx);
    r.w().Sint(k::kCtx, a.ctx);
  }
  if (a.flags != 0) r.w().Varint(k::kFlags, a.flags);
  r.w().Fixed64(k::kStream, Ptr(a.stream));
  if (t.group_depth > 0) r.w().Varint(k::kGroup, t.group_id);
  r.w().Fixed64(k::kCaller, Ptr(a.caller));
  c.record = r.Append(Region::kRing);
  return c;
}

void EndOneSided(const OneSidedCall& c, const OneSidedArgs& a, int result) {
  c.record.Finish(result);
  if (c.comm == nullptr || !Accepted(result)) return;
  uint64_t* counters = __atomic_load_n(&c.comm->p2p_seq, __ATOMIC_ACQUIRE);
  const int n = c.comm->nranks;
  if (counters == nullptr) return;
  // As for sends and receives: one thread at a time per communicator.
  auto bump = [&](uint64_t* p, uint64_t by) {
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + by, __ATOMIC_RELAXED);
  };
  if (a.call == f::kWaitSignal) {
    for (int i = 0; a.waits != nullptr && i < a.n_desc; ++i) {
      const OneSidedWait& d = a.waits[i];
      if (d.peer >= 0 && d.peer < n && d.op_cnt > 0)
        bump(&counters[3 * n + d.peer], static_cast<uint64_t>(d.op_cnt));
    }
  } else if (a.peer >= 0 && a.peer < n) {
    bump(&counters[2 * n + a.peer], 1);
  }
}

void RecordNcclVersion(int result, int version, const void* caller) {
  static uint32_t recorded = 0;
  if (!FirstForThisFile(&recorded)) return;
  ErrnoGuard keep;
  RecordBuilder<> r(f::record::kApi);
  namespace k = f::api;
  r.w().Fixed32(k::kResult, static_cast<uint32_t>(result));
  r.w().Varint(k::kCall, f::kGetVersion);
  r.w().Sint(k::kValue, version);
  r.w().Fixed64(k::kCaller, Ptr(caller));
  r.Append(Region::kPinned);
}

void RecordNcclError(uint32_t call, int result, const void* comm, const char* last_error,
                     bool async) {
  ErrnoGuard keep;
  CommState* cs = comm ? g_comms.Find(comm) : nullptr;
  RecordBuilder<640> r(f::record::kNcclError);
  namespace k = f::nccl_error;
  r.w().Varint(k::kCall, call);
  r.w().Fixed32(k::kResult, static_cast<uint32_t>(result));
  if (cs) r.w().Fixed64(k::kComm, cs->id);
  if (last_error != nullptr) {
    // ASCII only (a proto3 string must be valid UTF-8, and a cut could split
    // a character): anything else becomes '?'.
    char text[480];
    size_t n = 0;
    for (; n < sizeof(text) && last_error[n] != '\0'; ++n) {
      const unsigned char c = static_cast<unsigned char>(last_error[n]);
      text[n] = c < 0x80 ? static_cast<char>(c) : '?';
    }
    r.w().Bytes(k::kLastError, text, n);
  }
  if (async) r.w().Varint(k::kAsync, 1);
  r.Append(Region::kPinned);
}

bool RecordAsyncError(const void* comm, int result, int async_error, const void* caller) {
  ErrnoGuard keep;
  CommState* cs = g_comms.Find(comm);
  const uint64_t combo = (static_cast<uint64_t>(static_cast<uint32_t>(result)) << 32) |
                         static_cast<uint32_t>(async_error) | (1ull << 63);
  if (cs != nullptr && __atomic_exchange_n(&cs->last_async, combo, __ATOMIC_RELAXED) == combo)
    return false;
  RecordBuilder<> r(f::record::kApi);
  namespace k = f::api;
  r.w().Fixed32(k::kResult, static_cast<uint32_t>(result));
  r.w().Varint(k::kCall, f::kCommGetAsyncError);
  if (cs) r.w().Fixed64(k::kComm, cs->id);
  r.w().Sint(k::kValue, async_error);
  r.w().Fixed64(k::kCaller, Ptr(caller));
  r.Append(Region::kRing);
  return true;
}

uint64_t CommIdFromUniqueIds(const void* ids, size_t bytes) { return HashBytes(ids, bytes); }

uint64_t CommIdForInitAll() {
  static uint64_t counter = 0;
  const uint64_t n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  const uint64_t pid = g_pid;
  return HashBytes(&n, sizeof(n), HashBytes(&pid, sizeof(pid), HashBytes("ncclCommInitAll", 15)));
}

uint64_t CommIdForSplit(uint64_t parent, uint32_t split_index, int color) {
  uint64_t h = HashBytes(&parent, sizeof(parent), HashBytes("split", 5));
  h = HashBytes(&split_index, sizeof(split_index), h);
  return HashBytes(&color, sizeof(color), h);
}

uint64_t CommIdForShrink(uint64_t parent, uint32_t split_index, const int* excluded,
                         int nexcluded) {
  uint64_t h = HashBytes(&parent, sizeof(parent), HashBytes("shrink", 6));
  h = HashBytes(&split_index, sizeof(split_index), h);
  // In ascending order, so every survivor derives the same identity however
  // it listed the excluded ranks. (Selection order: n is small.)
  int last = -1;
  for (int i = 0; i < nexcluded; ++i) {
    int next = -1;
    for (int j = 0; j < nexcluded; ++j)
      if (excluded[j] > last && (next < 0 || excluded[j] < next)) next = excluded[j];
    if (next < 0) break;
    h = HashBytes(&next, sizeof(next), h);
    last = next;
  }
  return h;
}

uint64_t CommIdForGrow(uint64_t parent, uint32_t split_index) {
  const uint64_t h = HashBytes(&parent, sizeof(parent), HashBytes("grow", 4));
  return HashBytes(&split_index, sizeof(split_index), h);
}

void RecordCommInitBegin(const CommInitBegin& b) {
  ErrnoGuard keep;
  GrowTraceRing();  // a communicator: the whole ring from here on
  RecordBuilder<512> r(f::record::kCommInitBegin);
  namespace k = f::comm_init_begin;
  r.w().Fixed64(k::kComm, b.comm);
  r.w().Varint(k::kCall, b.call);
  r.w().Sint(k::kNranks, b.nranks);
  r.w().Sint(k::kRank, b.rank);
  if (b.parent) {
    r.w().Fixed64(k::kParent, b.parent);
    r.w().Sint(k::kColor, b.color);
    r.w().Sint(k::kKey, b.key);
    r.w().Varint(k::kSplitIndex, b.split_index);
  }
  for (int i = 0; i < b.nexcluded && i < 32; ++i) r.w().Sint(k::kExcluded, b.excluded[i]);
  r.w().Sint(k::kBlocking, b.blocking);
  r.w().Fixed64(k::kCaller, Ptr(b.caller));
  r.w().Sint(k::kDevice, b.device);
  if (b.bus_id != nullptr && b.bus_id[0] != '\0') r.w().String(k::kBusId, b.bus_id);
  if (b.grow_id != 0) r.w().Fixed64(k::kGrowId, b.grow_id);
  r.Append(Region::kPinned);
}

void RecordCommInitEnd(uint64_t comm, int result, const void* handle, int rank, int nranks,
                       int device) {
  ErrnoGuard keep;
  if (handle != nullptr && Accepted(result)) g_comms.Register(handle, comm, rank, nranks);
  RecordBuilder<> r(f::record::kCommInitEnd);
  namespace k = f::comm_init_end;
  r.w().Fixed64(k::kComm, comm);
  r.w().Fixed32(k::kResult, static_cast<uint32_t>(result));
  r.w().Fixed64(k::kHandle, Ptr(handle));
  r.w().Sint(k::kRank, rank);
  r.w().Sint(k::kDevice, device);
  r.w().Sint(k::kNranks, nranks);
  r.Append(Region::kPinned);
  RecordNewModules();
  WriteTimeAnchor(Region::kPinned);
}

CallRecord BeginCommEnd(uint32_t call, const void* comm) {
  ErrnoGuard keep;
  CommState* cs = g_comms.Find(comm);
  RecordBuilder<> r(f::record::kCommEnd);
  namespace k = f::comm_end;
  r.PendingResult(k::kResult);
  r.w().Fixed64(k::kComm, cs ? cs->id : 0);
  r.w().Fixed64(k::kHandle, Ptr(comm));
  r.w().Varint(k::kCall, call);
  r.w().Sint(k::kRank, cs ? cs->rank : -1);
  return r.Append(Region::kPinned);
}

void EndCommEnd(const CallRecord& record, int result) {
  ErrnoGuard keep;
  record.Finish(result);
  WriteTimeAnchor(Region::kPinned);
}

void RecordProcessEnd(uint32_t how, int exit_code, bool last) {
  ErrnoGuard keep;
  if (last ? !FirstForThisFile(&g_process_ended)
           : __atomic_load_n(&g_process_ended, __ATOMIC_ACQUIRE) == g_trace_generation)
    return;
  FlushRendezvousSockets();  // the counts since the last heartbeat
  WriteTimeAnchor(Region::kPinned);
  RecordBuilder<> r(f::record::kProcessEnd);
  r.w().Varint(f::process_end::kHow, how);
  r.w().Sint(f::process_end::kExitCode, exit_code);
  r.Append(Region::kPinned);
}

void RecordFatalSignal(int signo, const siginfo_t* info, uint32_t disposition) {
  ErrnoGuard keep;
  FlushRendezvousSockets();
  RecordBuilder<> r(f::record::kFatalSignal);
  namespace k = f::fatal_signal;
  r.w().Sint(k::kSigno, signo);
  if (info != nullptr) {
    r.w().Sint(k::kCode, info->si_code);
    r.w().Fixed64(k::kAddress, Ptr(info->si_addr));
    if (info->si_code <= 0)
      r.w().Sint(k::kSenderPid, info->si_pid);  // sent by a process, not a fault
  }
  r.w().Varint(k::kDisposition, disposition);
  r.Append(Region::kPinned);
  WriteTimeAnchor(Region::kPinned);
}

}  // namespace ncclwatch::shim

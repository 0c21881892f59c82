// HOT PATH (collectives, point-to-point, groups, API calls, process end,
// fatal signals): no allocation, no lock, no system call, async-signal-safe,
// errno untouched. Communicator creation and end are not on the hot path.
//
// errno: the per-call functions (Begin/EndCollective, Begin/EndP2p,
// Begin/EndGroup, BeginApi) need no ErrnoGuard, because nothing they run can
// set errno: table lookups, thread-local state, stores into the mapped ring,
// the TSC or a vDSO clock_gettime with a valid clock (which sets errno only
// on failure). Paths that may reach libc calls that can (the pinned
// records, time anchors written from there, module scans) keep the guard.

#include "core/call_records.h"

#include <errno.h>

#include "core/tracer.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::shim {
namespace {

namespace f = fields;

// Keeps errno across the shim's own work: the program must see NCCL's.
class ErrnoGuard {
 public:
  ErrnoGuard() : saved_(errno) {}
  ~ErrnoGuard() { errno = saved_; }

 private:
  int saved_;
};

uint64_t Ptr(const void* p) { return reinterpret_cast<uint64_t>(p); }

int g_process_ended = 0;

}  // namespace

CollectiveCall BeginCollective(uint32_t call, const void* sendbuff, const void* recvbuff,
                               size_t count, int datatype, int redop, int root, const void* comm,
                               const void* stream, const void* caller) {
  // No ErrnoGuard: nothing on this path can set errno (see the top).
  CollectiveCall c;
  c.comm = g_comms.FindOrAdopt(comm);
  const ThreadState& t = ThisThread();
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

void EndCollective(const CollectiveCall& c, int result) {
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

P2pCall BeginP2p(bool send, const void* buff, size_t count, int datatype, int peer,
                 const void* comm, const void* stream, const void* caller) {
  P2pCall c;
  CommState* cs = g_comms.FindOrAdopt(comm);
  c.comm = cs;
  const ThreadState& t = ThisThread();
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
  v.call = send ? f::kSend : f::kRecv;
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

void EndP2p(const P2pCall& c, int result) {
  c.record.Finish(result);
  // As for collectives: one thread at a time per communicator, no lock prefix.
  if (c.counter != nullptr && Accepted(result) &&
      __atomic_load_n(c.counter, __ATOMIC_RELAXED) == c.seq) {
    __atomic_store_n(c.counter, c.seq + 1, __ATOMIC_RELAXED);
  }
}

CallRecord BeginGroup(uint32_t call, const void* caller) {
  ThreadState& t = ThisThread();
  if (call == f::kGroupStart) {
    if (t.group_depth++ == 0) t.group_id = NextGroupId();
  }
  ncclwatch_call_slot v{};
  v.thread = t.index;
  v.call = call;
  v.group = t.group_id;
  v.depth = call == f::kGroupStart ? t.group_depth : (t.group_depth ? t.group_depth - 1 : 0);
  v.caller = Ptr(caller);
  v.redop = -1;
  v.root = -1;
  v.rank = -1;
  return AppendCallSlot(NCCLWATCH_SLOT_GROUP, v);
}

void EndGroup(uint32_t call, const CallRecord& record, int result) {
  record.Finish(result);
  ThreadState& t = ThisThread();
  if (call != f::kGroupStart && t.group_depth > 0 && --t.group_depth == 0) t.group_id = 0;
}

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

void RecordNcclVersion(int result, int version, const void* caller) {
  static int recorded = 0;
  if (__atomic_exchange_n(&recorded, 1, __ATOMIC_RELAXED) != 0) return;
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

void RecordCommInitBegin(const CommInitBegin& b) {
  ErrnoGuard keep;
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

void RecordProcessEnd(uint32_t how, int exit_code) {
  ErrnoGuard keep;
  if (__atomic_exchange_n(&g_process_ended, 1, __ATOMIC_ACQ_REL)) return;
  WriteTimeAnchor(Region::kPinned);
  RecordBuilder<> r(f::record::kProcessEnd);
  r.w().Varint(f::process_end::kHow, how);
  r.w().Sint(f::process_end::kExitCode, exit_code);
  r.Append(Region::kPinned);
}

void RecordFatalSignal(int signo, const siginfo_t* info, uint32_t disposition) {
  ErrnoGuard keep;
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

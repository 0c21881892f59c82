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

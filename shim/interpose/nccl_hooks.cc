// The NCCL entry points as libncclwatch.so exports them: each forwards to the
// real NCCL (resolve/real_nccl.h) with its arguments unchanged and returns the real
// result unchanged, recording the call around it (core/call_records.h).
// pncclX is an alias of ncclX, as in NCCL itself.
//
// HOT PATH (collectives, point-to-point, groups, queries): no allocation, no
// lock, no system call, async-signal-safe, errno as NCCL left it, once the
// real function is resolved (see resolve/real_nccl.h for the first call). The
// communicator create/destroy hooks also record modules and query NCCL.
//
// This file is compiled once more for each library slot (interpose/nccl_wrappers.h):
// nccl_hooks_slot<k>.cc define NCCLWATCH_SLOT k and include it, which makes
// the same hooks, hidden, in namespace ncclwatch_slot<k>, forwarding to
// slot k's table: the wrappers dlsym hands out for another NCCL
// (interpose/nccl_wrappers.h).

#ifndef NCCLWATCH_SLOT
#define NCCLWATCH_SLOT 0
#endif

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "core/call_records.h"
#include "core/comm_registry.h"
#include "core/completion.h"
#include "core/inventory.h"
#include "core/nccl_code.h"
#include "core/startup_stack.h"
#include "core/tracer.h"
#include "interpose/nccl_wrappers.h"
#include "ncclwatch/trace_fields.h"
#include "resolve/nccl_exports.h"
#include "resolve/real_cuda.h"
#include "resolve/real_nccl.h"  // nccl.h and nccl_device.h

using namespace ncclwatch::shim;  // NOLINT: this file is the shim's NCCL surface
namespace f = ncclwatch::fields;

#define NCCLWATCH_CAT2(a, b) a##b
#define NCCLWATCH_CAT(a, b) NCCLWATCH_CAT2(a, b)

#if NCCLWATCH_SLOT == 0
// The hook is a hidden function; ncclX and pncclX are its exported aliases,
// which the shim may hide from the dynamic linker (resolve/nccl_exports.h).
// The shim's own references (the wrapper table) name the hidden function, so
// they never depend on what a lookup of the exported name finds.
#define NCCLWATCH_API(ret, func, ...)                                                     \
  extern "C" __attribute__((visibility("hidden"))) ret NcclwatchHook_##func(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), alias("NcclwatchHook_" #func)))        \
  ret func(__VA_ARGS__);                                                                  \
  extern "C" __attribute__((visibility("default"), alias("NcclwatchHook_" #func)))        \
  ret p##func(__VA_ARGS__);                                                               \
  extern "C" __attribute__((visibility("hidden"))) ret NcclwatchHook_##func(__VA_ARGS__)
#define NCCLWATCH_HOOK(name) ::NcclwatchHook_##name
#else
#define NCCLWATCH_SLOT_NS NCCLWATCH_CAT(ncclwatch_slot, NCCLWATCH_SLOT)
#define NCCLWATCH_API(ret, func, ...) \
  namespace NCCLWATCH_SLOT_NS {       \
  ret func(__VA_ARGS__);              \
  }                                   \
  ret NCCLWATCH_SLOT_NS::func(__VA_ARGS__)
#define NCCLWATCH_HOOK(name) ::NCCLWATCH_SLOT_NS::name
#endif

#define CALLER __builtin_return_address(0)

// Resolves the real function or returns what a missing NCCL gives.
#define REAL_OR_FAIL(name)          \
  auto real = NCCLWATCH_REAL(name); \
  if (__builtin_expect(real == nullptr, 0)) return NoRealNccl(#name)

static_assert(kNcclSuccess == ncclSuccess && kNcclInProgress == ncclInProgress,
              "core/call_records.h names NCCL's result codes as nccl.h does");

namespace {

// After a call NCCL refused: its result and its own text for why. Only on
// the failure path; a call that succeeds pays one comparison.
inline void NoteFailure(uint32_t call, ncclResult_t r, const void* comm) {
  if (__builtin_expect(Accepted(r), 1)) return;
  auto last_error = NCCLWATCH_REAL(ncclGetLastError);
  RecordNcclError(call, r, comm, last_error != nullptr ? last_error(nullptr) : nullptr, false);
}

bool Reduces(uint32_t call) {
  return call == f::kAllReduce || call == f::kReduce || call == f::kReduceScatter ||
         call == f::kAllReduceConfig || call == f::kReduceConfig || call == f::kReduceScatterConfig;
}

// A call NCCL makes to its own entry points (ncclBcast calls ncclBroadcast,
// ncclCommInitAll ncclGetUniqueId and the group calls, window registration
// ncclCommRegister, teardown ncclDevCommDestroy and ncclCommWindowDeregister,
// all through its exported symbols, so through the shim): part of the call
// the program made, which is recorded, not a call of its own. Goes straight
// through unrecorded.
bool InsideNccl(const void* caller) { return ThisThread().in_call != 0 || FromNccl(caller); }

// One collective: record, forward, record the result. Inlined into each
// entry point, so its arguments are not copied onto the stack once more.
template <typename Fn, typename... Args>
__attribute__((always_inline)) inline ncclResult_t Collective(
    Fn real, uint32_t call, const void* sendbuff, const void* recvbuff, size_t count,
    ncclDataType_t datatype, int redop, int root, ncclComm_t comm, cudaStream_t stream,
    const void* caller, Args... args) {
  if (!Tracing()) return real(args...);
  const int reduces = Reduces(call) ? redop : -1;
  CollectiveCall c = BeginCollective(call, sendbuff, recvbuff, count, datatype, reduces, root, comm,
                                     stream, caller);
  const uint32_t begun = BeginOperation(c.comm, stream);
  const ncclResult_t r = real(args...);
  EndCollective(c, r);
  MarkOperation(c.comm, stream, r, call, c.seq, -1, false,
                OpSignature{count, reinterpret_cast<uint64_t>(caller), datatype, reduces,
                            root < 0 ? -1 : root},
                begun);
  NoteFailure(call, r, comm);
  return r;
}

int DeviceOf(ncclComm_t comm) {
  int device = -1;
  if (auto fn = NCCLWATCH_REAL(ncclCommCuDevice)) {
    if (comm != nullptr && fn(comm, &device) != ncclSuccess) device = -1;
  }
  return device;
}

int RanksOf(ncclComm_t comm) {
  int n = -1;
  if (auto fn = NCCLWATCH_REAL(ncclCommCount)) {
    if (comm != nullptr && fn(comm, &n) != ncclSuccess) n = -1;
  }
  return n;
}

int RankOf(ncclComm_t comm) {
  int r = -1;
  if (auto fn = NCCLWATCH_REAL(ncclCommUserRank)) {
    if (comm != nullptr && fn(comm, &r) != ncclSuccess) r = -1;
  }
  return r;
}

ncclComm_t Made(ncclResult_t r, ncclComm_t* out) {
  return (Accepted(r) && out != nullptr) ? *out : nullptr;
}

int ConfigBlocking(const ncclConfig_t* config) {
  return (config == nullptr || config->blocking == NCCL_CONFIG_UNDEF_INT) ? -1 : config->blocking;
}

// The first time NCCL creates an id or a communicator: where its code is
// (so the libc hooks know its calls) and the process's inventory.
// On the shim's start-up stack: the inventory reads files into buffers there.
void FirstInit() {
  static uint32_t done = 0;  // the trace file generation it ran for (core/tracer.h)
  const uint32_t generation = __atomic_load_n(&g_trace_generation, __ATOMIC_ACQUIRE);
  if (__atomic_load_n(&done, __ATOMIC_ACQUIRE) == generation) return;
  RunOnStartupStack([] {
    UpdateNcclExports();
    RecordNewModules();
    ResolveRealCuda();
    LoadedVersions v;
    if (auto get_version = NCCLWATCH_REAL(ncclGetVersion)) get_version(&v.nccl);
    Dl_info info;
    if (NCCLWATCH_TABLE.ncclGetVersion != nullptr &&
        dladdr(reinterpret_cast<void*>(NCCLWATCH_TABLE.ncclGetVersion), &info) != 0) {
      v.nccl_path = info.dli_fname;
    }
    v.cuda_driver = CudaDriverVersion();
    v.cuda_runtime = CudaRuntimeVersion();
    RecordInventoryOnce(v);
  });
  __atomic_store_n(&done, generation, __ATOMIC_RELEASE);
}

// Marks this thread as inside an NCCL init or teardown call, so the libc
// calls that fail under it are recorded even when they are not NCCL's own.
class InitScope {
 public:
  explicit InitScope(uint32_t call) : saved_(ThisThread().in_call) {
    ThisThread().in_call = call;
    FirstInit();
  }
  // What the call loaded (plugins, libibverbs): the outcome of its dlopens.
  ~InitScope() {
    RecordNewModules();
    ThisThread().in_call = saved_;
  }

 private:
  uint32_t saved_;
};

// The calling thread's device and its PCI bus id, into `b`. The driver may
// have been loaded since the process's first NCCL call (an id made before
// any CUDA call): looked for again if so.
void NoteDevice(CommInitBegin* b, char* bus_id, size_t n) {
  ResolveRealCuda();
  int device = -1;
  if (CurrentCudaDevice(&device, bus_id, n)) {
    b->device = device;
    b->bus_id = bus_id;
  }
}

// A communicator's creation: its begin record (with the calling thread's
// GPU), the real call, NCCL's error text if it failed, and its end record.
// `ask_nccl`: its rank and size come from NCCL once made (splits, shrinks),
// not from the arguments.
template <typename Call>
ncclResult_t TracedInit(CommInitBegin& b, ncclComm_t* out, bool ask_nccl, Call call) {
  InitScope scope(b.call);
  char bus_id[32];
  NoteDevice(&b, bus_id, sizeof(bus_id));
  RecordCommInitBegin(b);
  const ncclResult_t r = call();
  NoteFailure(b.call, r, nullptr);
  ncclComm_t made = Made(r, out);
  const int device = DeviceOf(made);
  RecordCommInitEnd(b.comm, r, made, ask_nccl ? RankOf(made) : b.rank,
                    ask_nccl ? RanksOf(made) : b.nranks, device);
  if (made != nullptr) TrackCompletion(g_comms.Find(made), made, device);
  return r;
}

// A group call: recorded around the real one.
template <typename Fn, typename... Args>
ncclResult_t TracedGroup(Fn real, uint32_t call, const void* caller, Args... args) {
  if (!Tracing() || __builtin_expect(ThisThread().in_call != 0, 0)) return real(args...);
  CallRecord rec = BeginGroup(call, caller);
  const ncclResult_t r = real(args...);
  EndGroup(call, rec, r);
  // The outermost end launched the group's operations (a simulated end launches nothing).
  if (call != f::kGroupStart && ThisThread().group_depth == 0)
    FlushGroupOperations(call == f::kGroupEnd ? r : -1);
  NoteFailure(call, r, nullptr);
  return r;
}

}  // namespace

// ------------------------------------------------------------ collectives

NCCLWATCH_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclAllReduce);
  return Collective(real, f::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1, comm, stream,
                    CALLER, sendbuff, recvbuff, count, datatype, op, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclBroadcast);
  // NCCL's ncclBcast is a call of ncclBroadcast: one collective, recorded as
  // the Bcast the program called.
  if (__builtin_expect(FromNccl(CALLER), 0))
    return real(sendbuff, recvbuff, count, datatype, root, comm, stream);
  return Collective(real, f::kBroadcast, sendbuff, recvbuff, count, datatype, -1, root, comm,
                    stream, CALLER, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
              ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclBcast);
  return Collective(real, f::kBcast, buff, buff, count, datatype, -1, root, comm, stream, CALLER,
                    buff, count, datatype, root, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
              cudaStream_t stream) {
  REAL_OR_FAIL(ncclReduce);
  return Collective(real, f::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream,
                    CALLER, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclAllGather);
  return Collective(real, f::kAllGather, sendbuff, recvbuff, sendcount, datatype, -1, -1, comm,
                    stream, CALLER, sendbuff, recvbuff, sendcount, datatype, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff,
              size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
              cudaStream_t stream) {
  REAL_OR_FAIL(ncclReduceScatter);
  return Collective(real, f::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, comm,
                    stream, CALLER, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclAlltoAll);
  return Collective(real, f::kAllToAll, sendbuff, recvbuff, count, datatype, -1, -1, comm, stream,
                    CALLER, sendbuff, recvbuff, count, datatype, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclGather);
  return Collective(real, f::kGather, sendbuff, recvbuff, count, datatype, -1, root, comm, stream,
                    CALLER, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclScatter);
  return Collective(real, f::kScatter, sendbuff, recvbuff, count, datatype, -1, root, comm, stream,
                    CALLER, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

// ------------------------------------------------------------ point-to-point

NCCLWATCH_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
              int peer, ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclSend);
  if (!Tracing()) return real(sendbuff, count, datatype, peer, comm, stream);
  const void* caller = CALLER;
  P2pCall c = BeginP2p(true, sendbuff, count, datatype, peer, comm, stream, caller);
  const uint32_t begun = BeginOperation(c.comm, stream);
  const ncclResult_t r = real(sendbuff, count, datatype, peer, comm, stream);
  EndP2p(c, r);
  MarkOperation(c.comm, stream, r, f::kSend, c.seq, peer, true,
                OpSignature{count, reinterpret_cast<uint64_t>(caller), datatype, -1, -1}, begun);
  NoteFailure(f::kSend, r, comm);
  return r;
}

NCCLWATCH_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype,
              int peer, ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclRecv);
  if (!Tracing()) return real(recvbuff, count, datatype, peer, comm, stream);
  const void* caller = CALLER;
  P2pCall c = BeginP2p(false, recvbuff, count, datatype, peer, comm, stream, caller);
  const uint32_t begun = BeginOperation(c.comm, stream);
  const ncclResult_t r = real(recvbuff, count, datatype, peer, comm, stream);
  EndP2p(c, r);
  MarkOperation(c.comm, stream, r, f::kRecv, c.seq, peer, false,
                OpSignature{count, reinterpret_cast<uint64_t>(caller), datatype, -1, -1}, begun);
  NoteFailure(f::kRecv, r, comm);
  return r;
}

// ------------------------------------------------------------ groups

NCCLWATCH_API(ncclResult_t, ncclGroupStart) {
  REAL_OR_FAIL(ncclGroupStart);
  return TracedGroup(real, f::kGroupStart, CALLER);
}

NCCLWATCH_API(ncclResult_t, ncclGroupEnd) {
  REAL_OR_FAIL(ncclGroupEnd);
  return TracedGroup(real, f::kGroupEnd, CALLER);
}

NCCLWATCH_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  REAL_OR_FAIL(ncclGroupSimulateEnd);
  return TracedGroup(real, f::kGroupSimulateEnd, CALLER, simInfo);
}

// ------------------------------------------------------------ communicators

NCCLWATCH_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  REAL_OR_FAIL(ncclGetUniqueId);
  if (!Tracing() || InsideNccl(CALLER)) return real(uniqueId);
  // Written after the call (it does not block), with the identity of the
  // communicator this id will make, so the decoder can tell whose id it was.
  const void* caller = CALLER;
  InitScope scope(f::kGetUniqueId);
  const ncclResult_t r = real(uniqueId);
  NoteFailure(f::kGetUniqueId, r, nullptr);
  const int64_t id = (r == ncclSuccess && uniqueId != nullptr)
                         ? static_cast<int64_t>(CommIdFromUniqueIds(uniqueId, sizeof(*uniqueId)))
                         : 0;
  BeginApi(f::kGetUniqueId, nullptr, id, caller).Finish(r);
  return r;
}

NCCLWATCH_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
              int rank) {
  REAL_OR_FAIL(ncclCommInitRank);
  if (!Tracing()) return real(comm, nranks, commId, rank);
  CommInitBegin b;
  b.comm = CommIdFromUniqueIds(&commId, sizeof(commId));
  b.call = f::kCommInitRank;
  b.nranks = nranks;
  b.rank = rank;
  b.caller = CALLER;
  return TracedInit(b, comm, false, [&] { return real(comm, nranks, commId, rank); });
}

NCCLWATCH_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks,
              ncclUniqueId commId, int rank, ncclConfig_t* config) {
  REAL_OR_FAIL(ncclCommInitRankConfig);
  if (!Tracing()) return real(comm, nranks, commId, rank, config);
  CommInitBegin b;
  b.comm = CommIdFromUniqueIds(&commId, sizeof(commId));
  b.call = f::kCommInitRankConfig;
  b.nranks = nranks;
  b.rank = rank;
  b.blocking = ConfigBlocking(config);
  b.caller = CALLER;
  return TracedInit(b, comm, false, [&] { return real(comm, nranks, commId, rank, config); });
}

NCCLWATCH_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
              int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  REAL_OR_FAIL(ncclCommInitRankScalable);
  if (!Tracing() || commIds == nullptr || nId < 1)
    return real(newcomm, nranks, myrank, nId, commIds, config);
  CommInitBegin b;
  b.comm = CommIdFromUniqueIds(commIds, sizeof(ncclUniqueId) * static_cast<size_t>(nId));
  b.call = f::kCommInitRankScalable;
  b.nranks = nranks;
  b.rank = myrank;
  b.blocking = ConfigBlocking(config);
  b.caller = CALLER;
  return TracedInit(b, newcomm, false,
                    [&] { return real(newcomm, nranks, myrank, nId, commIds, config); });
}

NCCLWATCH_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist) {
  REAL_OR_FAIL(ncclCommInitAll);
  if (!Tracing() || comm == nullptr || ndev < 1) return real(comm, ndev, devlist);
  InitScope scope(f::kCommInitAll);
  CommInitBegin b;
  b.comm = CommIdForInitAll();
  b.call = f::kCommInitAll;
  b.nranks = ndev;
  b.caller = CALLER;
  for (int i = 0; i < ndev; ++i) {
    b.rank = i;
    RecordCommInitBegin(b);
  }
  const ncclResult_t r = real(comm, ndev, devlist);
  NoteFailure(f::kCommInitAll, r, nullptr);
  for (int i = 0; i < ndev; ++i) {
    ncclComm_t made = Accepted(r) ? comm[i] : nullptr;
    const int device = DeviceOf(made);
    RecordCommInitEnd(b.comm, r, made, i, ndev, device);
    if (made != nullptr) TrackCompletion(g_comms.Find(made), made, device);
  }
  return r;
}

NCCLWATCH_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
              ncclConfig_t* config) {
  REAL_OR_FAIL(ncclCommSplit);
  if (!Tracing()) return real(comm, color, key, newcomm, config);
  CommState* parent = g_comms.FindOrAdopt(comm);
  CommInitBegin b;
  b.call = f::kCommSplit;
  b.parent = parent ? parent->id : 0;
  b.split_index = parent ? __atomic_fetch_add(&parent->split_count, 1u, __ATOMIC_RELAXED) : 0;
  b.color = color;
  b.key = key;
  b.comm = color == NCCL_SPLIT_NOCOLOR ? 0 : CommIdForSplit(b.parent, b.split_index, color);
  b.blocking = ConfigBlocking(config);
  b.caller = CALLER;
  return TracedInit(b, newcomm, true, [&] { return real(comm, color, key, newcomm, config); });
}

NCCLWATCH_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
              int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  REAL_OR_FAIL(ncclCommShrink);
  if (!Tracing())
    return real(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  CommState* parent = g_comms.FindOrAdopt(comm);
  const int nexcluded =
      excludeRanksList != nullptr && excludeRanksCount > 0 ? excludeRanksCount : 0;
  CommInitBegin b;
  b.call = f::kCommShrink;
  b.parent = parent ? parent->id : 0;
  b.split_index = parent ? __atomic_fetch_add(&parent->split_count, 1u, __ATOMIC_RELAXED) : 0;
  b.comm = CommIdForShrink(b.parent, b.split_index, excludeRanksList, nexcluded);
  b.nranks = parent && parent->nranks > 0 ? parent->nranks - nexcluded : -1;
  b.excluded = excludeRanksList;
  b.nexcluded = nexcluded;
  b.blocking = ConfigBlocking(config);
  b.caller = CALLER;
  return TracedInit(b, newcomm, true, [&] {
    return real(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  });
}

namespace {

template <typename Fn>
ncclResult_t CommEnd(Fn real, uint32_t call, ncclComm_t comm) {
  if (!Tracing()) return real(comm);
  InitScope scope(call);
  EndCompletion(comm);
  CallRecord rec = BeginCommEnd(call, comm);
  const ncclResult_t r = real(comm);
  FlushCompletion(comm);
  NoteFailure(call, r, comm);
  EndCommEnd(rec, r);
  // Gone (a non-blocking communicator's destroy goes on in the
  // background, but the program may not use it again): its registry entry
  // and its completion track are free for the next communicator.
  if ((call == f::kCommDestroy || call == f::kCommAbort) && Accepted(r) && comm != nullptr) {
    g_comms.Remove(comm);
    ReleaseCompletion(comm);
  }
  return r;
}

}  // namespace

NCCLWATCH_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  REAL_OR_FAIL(ncclCommFinalize);
  return CommEnd(real, f::kCommFinalize, comm);
}

NCCLWATCH_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  REAL_OR_FAIL(ncclCommDestroy);
  return CommEnd(real, f::kCommDestroy, comm);
}

NCCLWATCH_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  REAL_OR_FAIL(ncclCommAbort);
  return CommEnd(real, f::kCommAbort, comm);
}

NCCLWATCH_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  REAL_OR_FAIL(ncclCommRevoke);
  if (!Tracing()) return real(comm, revokeFlags);
  InitScope scope(f::kCommRevoke);
  EndCompletion(comm);
  CallRecord rec = BeginCommEnd(f::kCommRevoke, comm);
  const ncclResult_t r = real(comm, revokeFlags);
  FlushCompletion(comm);
  NoteFailure(f::kCommRevoke, r, comm);
  EndCommEnd(rec, r);
  return r;
}

NCCLWATCH_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  REAL_OR_FAIL(ncclCommGetAsyncError);
  const ncclResult_t r = real(comm, asyncError);
  if (Tracing()) {
    const int async = asyncError != nullptr ? *asyncError : -1;
    // A new error (not the one a watchdog polled a moment ago): with NCCL's text.
    if (RecordAsyncError(comm, r, async, CALLER) && r == ncclSuccess && async >= 0 &&
        !Accepted(async)) {
      auto last_error = NCCLWATCH_REAL(ncclGetLastError);
      RecordNcclError(f::kCommGetAsyncError, async, comm,
                      last_error != nullptr ? last_error(nullptr) : nullptr, true);
    }
  }
  return r;
}

// ------------------------------------------------------------ queries

// Recorded once: the version the program saw.
NCCLWATCH_API(ncclResult_t, ncclGetVersion, int* version) {
  REAL_OR_FAIL(ncclGetVersion);
  const ncclResult_t r = real(version);
  if (Tracing())
    RecordNcclVersion(r, r == ncclSuccess && version != nullptr ? *version : 0, CALLER);
  return r;
}

// Forwarded, not recorded.

NCCLWATCH_API(const char*, ncclGetErrorString, ncclResult_t result) {
  auto real = NCCLWATCH_REAL(ncclGetErrorString);
  return real ? real(result) : "unknown result code";
}

NCCLWATCH_API(const char*, ncclGetLastError, ncclComm_t comm) {
  auto real = NCCLWATCH_REAL(ncclGetLastError);
  return real ? real(comm) : "";
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
NCCLWATCH_API(void, ncclResetDebugInit) {
  if (auto real = NCCLWATCH_REAL(ncclResetDebugInit)) real();
}
#pragma GCC diagnostic pop

NCCLWATCH_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  REAL_OR_FAIL(ncclCommCount);
  return real(comm, count);
}

NCCLWATCH_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  REAL_OR_FAIL(ncclCommCuDevice);
  return real(comm, device);
}

NCCLWATCH_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  REAL_OR_FAIL(ncclCommUserRank);
  return real(comm, rank);
}

// ------------------------------------------------------------ memory, registration, operators

namespace {

template <typename Fn, typename... Args>
ncclResult_t ApiValue(Fn real, uint32_t call, const void* comm, int64_t value, const void* caller,
                      Args... args) {
  if (!Tracing() || InsideNccl(caller)) return real(args...);
  CallRecord rec = BeginApi(call, comm, value, caller);
  const ncclResult_t r = real(args...);
  rec.Finish(r);
  NoteFailure(call, r, comm);
  return r;
}

template <typename Fn, typename... Args>
ncclResult_t Api(Fn real, uint32_t call, const void* comm, const void* caller, Args... args) {
  return ApiValue(real, call, comm, 0, caller, args...);
}

}  // namespace

NCCLWATCH_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  REAL_OR_FAIL(ncclMemAlloc);
  return Api(real, f::kMemAlloc, nullptr, CALLER, ptr, size);
}

NCCLWATCH_API(ncclResult_t, ncclMemFree, void* ptr) {
  REAL_OR_FAIL(ncclMemFree);
  return Api(real, f::kMemFree, nullptr, CALLER, ptr);
}

NCCLWATCH_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
              void** handle) {
  REAL_OR_FAIL(ncclCommRegister);
  return Api(real, f::kCommRegister, comm, CALLER, comm, buff, size, handle);
}

NCCLWATCH_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  REAL_OR_FAIL(ncclCommDeregister);
  return Api(real, f::kCommDeregister, comm, CALLER, comm, handle);
}

NCCLWATCH_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
              ncclWindow_t* win, int winFlags) {
  REAL_OR_FAIL(ncclCommWindowRegister);
  return Api(real, f::kCommWindowRegister, comm, CALLER, comm, buff, size, win, winFlags);
}

NCCLWATCH_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  REAL_OR_FAIL(ncclCommWindowDeregister);
  return Api(real, f::kCommWindowDeregister, comm, CALLER, comm, win);
}

NCCLWATCH_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
              ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  REAL_OR_FAIL(ncclRedOpCreatePreMulSum);
  return Api(real, f::kRedOpCreatePreMulSum, comm, CALLER, op, scalar, datatype, residence, comm);
}

NCCLWATCH_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  REAL_OR_FAIL(ncclRedOpDestroy);
  return Api(real, f::kRedOpDestroy, comm, CALLER, op, comm);
}

// ------------------------------------------------------------ the device API (2.28)

// A device-API communicator: the GPU's kernels then communicate on their own
// (LSA loads and stores, GIN puts), which no host call shows. Recorded, so
// the decoder can say what it does not see for that communicator.
NCCLWATCH_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm,
              ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm) {
  REAL_OR_FAIL(ncclDevCommCreate);
  return Api(real, f::kDevCommCreate, comm, CALLER, comm, reqs, outDevComm);
}

NCCLWATCH_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, ncclDevComm_t const* devComm) {
  REAL_OR_FAIL(ncclDevCommDestroy);
  return Api(real, f::kDevCommDestroy, comm, CALLER, comm, devComm);
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)

NCCLWATCH_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t* props) {
  REAL_OR_FAIL(ncclCommQueryProperties);
  return Api(real, f::kCommQueryProperties, comm, CALLER, comm, props);
}

// The device pointers of a window's memory: `value` is the rank asked for.
NCCLWATCH_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset,
              void** outPtr) {
  REAL_OR_FAIL(ncclGetLsaMultimemDevicePointer);
  return Api(real, f::kGetLsaMultimemDevicePointer, nullptr, CALLER, window, offset, outPtr);
}

NCCLWATCH_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset,
              ncclMultimemHandle multimem, void** outPtr) {
  REAL_OR_FAIL(ncclGetMultimemDevicePointer);
  return Api(real, f::kGetMultimemDevicePointer, nullptr, CALLER, window, offset, multimem, outPtr);
}

NCCLWATCH_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset,
              int lsaRank, void** outPtr) {
  REAL_OR_FAIL(ncclGetLsaDevicePointer);
  return ApiValue(real, f::kGetLsaDevicePointer, nullptr, lsaRank, CALLER, window, offset, lsaRank,
                  outPtr);
}

NCCLWATCH_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer,
              void** outPtr) {
  REAL_OR_FAIL(ncclGetPeerDevicePointer);
  return ApiValue(real, f::kGetPeerDevicePointer, nullptr, peer, CALLER, window, offset, peer,
                  outPtr);
}

// ------------------------------------------------------------ growing, suspending (2.29)

// The id a communicator grows with, made by one of its ranks: recorded with
// its identity (as CommIdFromUniqueIds derives it), after the call, so the
// decoder can join the new ranks, which know only that id, to the others.
NCCLWATCH_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId) {
  REAL_OR_FAIL(ncclCommGetUniqueId);
  if (!Tracing() || InsideNccl(CALLER)) return real(comm, uniqueId);
  const void* caller = CALLER;
  const ncclResult_t r = real(comm, uniqueId);
  NoteFailure(f::kCommGetUniqueId, r, comm);
  const int64_t id = (r == ncclSuccess && uniqueId != nullptr)
                         ? static_cast<int64_t>(CommIdFromUniqueIds(uniqueId, sizeof(*uniqueId)))
                         : 0;
  BeginApi(f::kCommGetUniqueId, comm, id, caller).Finish(r);
  return r;
}

// Existing ranks pass their communicator (the one that made the id passes
// it too); new ranks pass none and their rank. The existing ranks' new
// communicator is derived from the parent, as a split's; the new ranks'
// from the id (CommInitBegin.grow_id links the two).
NCCLWATCH_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId,
              int rank, ncclComm_t* newcomm, ncclConfig_t* config) {
  REAL_OR_FAIL(ncclCommGrow);
  if (!Tracing() || InsideNccl(CALLER)) return real(comm, nRanks, uniqueId, rank, newcomm, config);
  CommInitBegin b;
  b.call = f::kCommGrow;
  b.nranks = nRanks;
  b.grow_id = uniqueId != nullptr ? CommIdFromUniqueIds(uniqueId, sizeof(*uniqueId)) : 0;
  b.blocking = ConfigBlocking(config);
  b.caller = CALLER;
  if (comm != nullptr) {
    CommState* parent = g_comms.FindOrAdopt(comm);
    b.parent = parent ? parent->id : 0;
    b.split_index = parent ? __atomic_fetch_add(&parent->split_count, 1u, __ATOMIC_RELAXED) : 0;
    b.comm = CommIdForGrow(b.parent, b.split_index);
    b.rank = parent ? parent->rank : -1;
  } else {
    b.comm = b.grow_id;
    b.rank = rank;
  }
  return TracedInit(b, newcomm, true,
                    [&] { return real(comm, nRanks, uniqueId, rank, newcomm, config); });
}

// `value`: the flags (NCCL_SUSPEND_MEM).
NCCLWATCH_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  REAL_OR_FAIL(ncclCommSuspend);
  return ApiValue(real, f::kCommSuspend, comm, flags, CALLER, comm, flags);
}

NCCLWATCH_API(ncclResult_t, ncclCommResume, ncclComm_t comm) {
  REAL_OR_FAIL(ncclCommResume);
  return Api(real, f::kCommResume, comm, CALLER, comm);
}

// `value`: the statistic asked for.
NCCLWATCH_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat,
              uint64_t* value) {
  REAL_OR_FAIL(ncclCommMemStats);
  return ApiValue(real, f::kCommMemStats, comm, stat, CALLER, comm, stat, value);
}

NCCLWATCH_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win,
              void** outUserPtr) {
  REAL_OR_FAIL(ncclWinGetUserPtr);
  return Api(real, f::kWinGetUserPtr, comm, CALLER, comm, win, outUserPtr);
}

// ------------------------------------------------------------ one-sided (2.29)

namespace {

// ncclWaitSignal's descriptors are read as the core's OneSidedWait, in place.
static_assert(sizeof(OneSidedWait) == sizeof(ncclWaitSignalDesc_t) &&
                  offsetof(OneSidedWait, op_cnt) == offsetof(ncclWaitSignalDesc_t, opCnt) &&
                  offsetof(OneSidedWait, peer) == offsetof(ncclWaitSignalDesc_t, peer) &&
                  offsetof(OneSidedWait, sig_idx) == offsetof(ncclWaitSignalDesc_t, sigIdx) &&
                  offsetof(OneSidedWait, ctx) == offsetof(ncclWaitSignalDesc_t, ctx),
              "core/call_records.h's OneSidedWait is ncclWaitSignalDesc_t");

template <typename Fn, typename... Args>
ncclResult_t OneSided(Fn real, const OneSidedArgs& a, ncclComm_t comm, Args... args) {
  OneSidedCall c = BeginOneSided(comm, a);
  const uint32_t begun = BeginOperation(c.comm, a.stream);
  const ncclResult_t r = real(args...);
  EndOneSided(c, a, r);
  const int peer =
      a.call == f::kWaitSignal ? (a.n_desc > 0 && a.waits ? a.waits[0].peer : -1) : a.peer;
  MarkOperation(c.comm, a.stream, r, a.call, c.seq, peer, a.call != f::kWaitSignal,
                OpSignature{a.count, reinterpret_cast<uint64_t>(a.caller), a.datatype, -1, -1},
                begun);
  NoteFailure(a.call, r, comm);
  return r;
}

}  // namespace

NCCLWATCH_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count,
              ncclDataType_t datatype, int peer, ncclWindow_t peerWin, size_t peerWinOffset,
              int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclPutSignal);
  if (!Tracing())
    return real(localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx, flags, comm,
                stream);
  OneSidedArgs a;
  a.call = f::kPutSignal;
  a.peer = peer;
  a.count = count;
  a.datatype = datatype;
  a.window = peerWin;
  a.offset = peerWinOffset;
  a.sig_idx = sigIdx;
  a.ctx = ctx;
  a.flags = flags;
  a.stream = stream;
  a.buff = localbuff;
  a.caller = CALLER;
  return OneSided(real, a, comm, localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx,
                  ctx, flags, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags,
              ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclSignal);
  if (!Tracing()) return real(peer, sigIdx, ctx, flags, comm, stream);
  OneSidedArgs a;
  a.call = f::kSignal;
  a.peer = peer;
  a.sig_idx = sigIdx;
  a.ctx = ctx;
  a.flags = flags;
  a.stream = stream;
  a.caller = CALLER;
  return OneSided(real, a, comm, peer, sigIdx, ctx, flags, comm, stream);
}

NCCLWATCH_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs,
              ncclComm_t comm, cudaStream_t stream) {
  REAL_OR_FAIL(ncclWaitSignal);
  if (!Tracing()) return real(nDesc, signalDescs, comm, stream);
  OneSidedArgs a;
  a.call = f::kWaitSignal;
  a.waits = reinterpret_cast<const OneSidedWait*>(signalDescs);
  a.n_desc = signalDescs != nullptr && nDesc > 0 ? nDesc : 0;
  a.stream = stream;
  a.caller = CALLER;
  return OneSided(real, a, comm, nDesc, signalDescs, comm, stream);
}

#endif  // 2.29

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 31, 0)

// ------------------------------------------------------------ collectives with a config (2.31)

namespace {

// What the config asks for, each field read only if the config's own size
// covers it (a config made with an older nccl.h is shorter).
CollConfigView ViewOf(const ncclCollConfig_t* c) {
  CollConfigView v;
  v.size = c->size;
  v.version = c->version;
  v.magic_ok = c->magic == NCCL_API_MAGIC;
  using F = CollConfigView;
#define NCCLWATCH_COVERS(member) (v.size >= offsetof(ncclCollConfig_t, member) + sizeof(c->member))
  if (NCCLWATCH_COVERS(ext)) {
    for (const ncclConfigExt_t* e = c->ext; e != nullptr && v.ext_options < 64; e = e->next)
      ++v.ext_options;
  }
  if ((v.has[F::kMinCtas] = NCCLWATCH_COVERS(minCTAs))) v.min_ctas = c->minCTAs;
  if ((v.has[F::kMaxCtas] = NCCLWATCH_COVERS(maxCTAs))) v.max_ctas = c->maxCTAs;
  if ((v.has[F::kNvlsCtas] = NCCLWATCH_COVERS(nvlsCTAs))) v.nvls_ctas = c->nvlsCTAs;
  if ((v.has[F::kCga] = NCCLWATCH_COVERS(cgaClusterSize))) v.cga_cluster_size = c->cgaClusterSize;
  if ((v.has[F::kAlg] = NCCLWATCH_COVERS(algSelection))) v.alg_selection = c->algSelection;
  if ((v.has[F::kForce] = NCCLWATCH_COVERS(forceAlgSelection)))
    v.force_alg_selection = c->forceAlgSelection;
  if ((v.has[F::kCtaPolicy] = NCCLWATCH_COVERS(CTAPolicy))) v.cta_policy = c->CTAPolicy;
  if ((v.has[F::kTag] = NCCLWATCH_COVERS(userProfilerTag)))
    v.user_profiler_tag = c->userProfilerTag;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 32, 0)
  if ((v.has[F::kEvent] = NCCLWATCH_COVERS(launchCompletionEvent)))
    v.launch_completion_event = c->launchCompletionEvent != nullptr;
#endif
#undef NCCLWATCH_COVERS
  return v;
}

// A collective with a per-call config: numbered with the classic ones (it
// is one, as NCCL counts them), its config written just before it.
template <typename Fn, typename... Args>
__attribute__((always_inline)) inline ncclResult_t ConfigCollective(
    Fn real, uint32_t call, const void* sendbuff, const void* recvbuff, size_t count,
    ncclDataType_t datatype, int redop, int root, ncclComm_t comm, cudaStream_t stream,
    const ncclCollConfig_t* config, const void* caller, Args... args) {
  if (!Tracing()) return real(args...);
  if (config != nullptr) RecordCollConfig(call, comm, ViewOf(config));
  return Collective(real, call, sendbuff, recvbuff, count, datatype, redop, root, comm, stream,
                    caller, args...);
}

}  // namespace

NCCLWATCH_API(ncclResult_t, ncclAllReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  REAL_OR_FAIL(ncclAllReduceConfig);
  return ConfigCollective(real, f::kAllReduceConfig, sendbuff, recvbuff, count, datatype, op, -1,
                          comm, stream, config, CALLER, sendbuff, recvbuff, count, datatype, op,
                          comm, stream, config);
}

NCCLWATCH_API(ncclResult_t, ncclBroadcastConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  REAL_OR_FAIL(ncclBroadcastConfig);
  return ConfigCollective(real, f::kBroadcastConfig, sendbuff, recvbuff, count, datatype, -1, root,
                          comm, stream, config, CALLER, sendbuff, recvbuff, count, datatype, root,
                          comm, stream, config);
}

NCCLWATCH_API(ncclResult_t, ncclReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
              cudaStream_t stream, const ncclCollConfig_t* config) {
  REAL_OR_FAIL(ncclReduceConfig);
  return ConfigCollective(real, f::kReduceConfig, sendbuff, recvbuff, count, datatype, op, root,
                          comm, stream, config, CALLER, sendbuff, recvbuff, count, datatype, op,
                          root, comm, stream, config);
}

NCCLWATCH_API(ncclResult_t, ncclAllGatherConfig, const void* sendbuff, void* recvbuff,
              size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  REAL_OR_FAIL(ncclAllGatherConfig);
  return ConfigCollective(real, f::kAllGatherConfig, sendbuff, recvbuff, sendcount, datatype, -1,
                          -1, comm, stream, config, CALLER, sendbuff, recvbuff, sendcount, datatype,
                          comm, stream, config);
}

NCCLWATCH_API(ncclResult_t, ncclReduceScatterConfig, const void* sendbuff, void* recvbuff,
              size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
              cudaStream_t stream, const ncclCollConfig_t* config) {
  REAL_OR_FAIL(ncclReduceScatterConfig);
  return ConfigCollective(real, f::kReduceScatterConfig, sendbuff, recvbuff, recvcount, datatype,
                          op, -1, comm, stream, config, CALLER, sendbuff, recvbuff, recvcount,
                          datatype, op, comm, stream, config);
}

NCCLWATCH_API(ncclResult_t, ncclAlltoAllConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  REAL_OR_FAIL(ncclAlltoAllConfig);
  return ConfigCollective(real, f::kAllToAllConfig, sendbuff, recvbuff, count, datatype, -1, -1,
                          comm, stream, config, CALLER, sendbuff, recvbuff, count, datatype, comm,
                          stream, config);
}

NCCLWATCH_API(ncclResult_t, ncclGatherConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  REAL_OR_FAIL(ncclGatherConfig);
  return ConfigCollective(real, f::kGatherConfig, sendbuff, recvbuff, count, datatype, -1, root,
                          comm, stream, config, CALLER, sendbuff, recvbuff, count, datatype, root,
                          comm, stream, config);
}

NCCLWATCH_API(ncclResult_t, ncclScatterConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  REAL_OR_FAIL(ncclScatterConfig);
  return ConfigCollective(real, f::kScatterConfig, sendbuff, recvbuff, count, datatype, -1, root,
                          comm, stream, config, CALLER, sendbuff, recvbuff, count, datatype, root,
                          comm, stream, config);
}

#endif  // 2.31

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 32, 0)

// Socket encryption for the process: `value` is the mode asked for (the
// pre-shared key is never read).
NCCLWATCH_API(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t* config) {
  REAL_OR_FAIL(ncclSetEncryption);
  const bool has_mode =
      config != nullptr && config->size >= offsetof(ncclEncryptionConfig_t, mode) + sizeof(int);
  return ApiValue(real, f::kSetEncryption, nullptr, has_mode ? config->mode : -1, CALLER, config);
}

#endif  // 2.32

// ------------------------------------------------------------ this slot's wrappers

namespace ncclwatch::shim {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void* const NCCLWATCH_CAT(g_wrappers_slot, NCCLWATCH_SLOT)[kNcclFunctions] = {
#define NCCLWATCH_NCCL_FN(name) reinterpret_cast<void*>(&NCCLWATCH_HOOK(name)),
#include "resolve/nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN
};
#pragma GCC diagnostic pop
}  // namespace ncclwatch::shim

// What the shim writes for each kind of NCCL call, and around the process's
// life (exit, fatal signals).
//
// HOT PATH: Begin/EndCollective, Begin/EndP2p, BeginGroup/EndGroup,
// BeginApi, RecordNcclVersion, RecordNcclError, RecordAsyncError and the
// process functions (RecordProcessEnd, RecordFatalSignal) allocate nothing,
// take no lock, make no system call, are async-signal-safe, and leave errno
// as they found it. The communicator lifecycle functions run when
// communicators are made and destroyed; RecordCommInitEnd also rescans the
// modules (not signal-safe).

#ifndef NCCLWATCH_SHIM_CORE_CALL_RECORDS_H_
#define NCCLWATCH_SHIM_CORE_CALL_RECORDS_H_

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm_registry.h"
#include "core/record_builder.h"

namespace ncclwatch::shim {

// Succeeded, as far as numbering goes (ncclSuccess or ncclInProgress).
inline bool Accepted(int result) { return result == 0 || result == 7; }

struct CollectiveCall {
  CallRecord record;
  CommState* comm = nullptr;
  uint64_t seq = 0;
};

// `root` < 0 for collectives without one, `redop` < 0 for those that do not reduce.
CollectiveCall BeginCollective(uint32_t call, const void* sendbuff, const void* recvbuff,
                               size_t count, int datatype, int redop, int root, const void* comm,
                               const void* stream, const void* caller);
void EndCollective(const CollectiveCall& c, int result);

struct P2pCall {
  CallRecord record;
  CommState* comm = nullptr;
  uint64_t* counter = nullptr;
  uint64_t seq = 0;
};

P2pCall BeginP2p(bool send, const void* buff, size_t count, int datatype, int peer,
                 const void* comm, const void* stream, const void* caller);
void EndP2p(const P2pCall& c, int result);

// ncclGroupStart/End/SimulateEnd: keeps the thread's group depth and id.
CallRecord BeginGroup(uint32_t call, const void* caller);
void EndGroup(uint32_t call, const CallRecord& record, int result);

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

// exit()/main returning (how = 1) or _exit() (how = 2); written once.
void RecordProcessEnd(uint32_t how, int exit_code);
// From the signal handler. `disposition`: 0 default, 1 ignore, 2 handler.
void RecordFatalSignal(int signo, const siginfo_t* info, uint32_t disposition);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_CALL_RECORDS_H_

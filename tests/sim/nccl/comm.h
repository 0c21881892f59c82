// A simulated NCCL communicator and its lifecycle.
//
// Init, in the order NCCL does it (and failing where NCCL fails):
//   CUDA device (Cuda failure '...' -> ncclUnhandledCudaError)
//   bootstrap interface and ring (socket and bootstrap errors)
//   all-gather of peer info; version and duplicate-GPU checks (ncclInvalidUsage)
//   transport: /dev/shm segments or CUDA IPC buffers (ncclSystemError, ...)
//   progress thread; "Init COMPLETE"
//
// A non-blocking communicator (config.blocking = 0) initialises on its own
// thread and reports ncclInProgress until done. Inside ncclGroupStart/End,
// inits and splits run together when the group ends, one thread each.
//
// Destroyed communicators are not freed: the handle stays recognisable, so a
// use after destroy gets an error instead of a crash.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_COMM_H_
#define NCCLWATCH_TESTS_SIM_NCCL_COMM_H_

#include <nccl.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl/bootstrap.h"
#include "nccl/peer_info.h"
#include "nccl/progress.h"
#include "nccl/reduce.h"
#include "nccl/transport.h"

namespace ncclsim::nccl {

enum class CommState { kInitializing, kReady, kFinalized, kRevoked, kFailed, kDestroyed };

}  // namespace ncclsim::nccl

struct ncclComm {
  static constexpr uint64_t kMagic = 0x6e63636c73696d21ull;  // "ncclsim!"
  uint64_t magic = kMagic;
  std::atomic<ncclsim::nccl::CommState> state{ncclsim::nccl::CommState::kInitializing};
  std::atomic<int> async_error{ncclInProgress};  // an ncclResult_t

  int rank = 0;
  int nranks = 0;
  int cuda_dev = 0;
  int64_t bus_id = 0;
  uint64_t comm_hash = 0;
  int local_rank = 0;
  int local_ranks = 0;
  int nnodes = 1;
  bool blocking = true;
  std::string name;
  ncclComm* parent = nullptr;
  int split_color = 0;
  int split_key = 0;

  volatile uint32_t abort_flag = 0;
  std::unique_ptr<ncclsim::nccl::Bootstrap> bootstrap;
  std::vector<ncclsim::nccl::PeerInfo> peers;
  ncclsim::nccl::Transport transport;
  ncclsim::nccl::ProgressEngine progress;
  int split_count = 0;  // splits, shrinks and grows made from this communicator

  // One-sided (NCCL 2.29): the windows registered (the next one's index),
  // and per peer the signals this rank's waits have asked for so far.
  int next_window = 0;
  std::vector<uint64_t> signals_awaited;
  std::atomic<bool> suspended{false};  // ncclCommSuspend(NCCL_SUSPEND_MEM) .. ncclCommResume
  int dev_comms = 0;                   // device-API communicators alive (ncclDevCommCreate)

  std::mutex mu;
  std::map<int, ncclsim::nccl::Reduction> premul_ops;  // ncclRedOpCreatePreMulSum
  int next_redop = ncclNumOps;
  std::thread background;  // non-blocking init or finalize
};

namespace ncclsim::nccl {

// ncclCommInitRank / InitRankConfig / InitRankScalable.
ncclResult_t CommInitRank(ncclComm_t* out, int nranks, std::vector<BootstrapHandle> handles,
                          int rank, const ncclConfig_t* config, const char* func_name);
// ncclCommSplit (color may be NCCL_SPLIT_NOCOLOR) and ncclCommShrink.
ncclResult_t CommSplit(ncclComm_t parent, int color, int key, ncclComm_t* out,
                       const ncclConfig_t* config);
ncclResult_t CommShrink(ncclComm_t parent, const int* exclude, int nexclude, ncclComm_t* out,
                        const ncclConfig_t* config, int flags);
// ncclCommGetUniqueId: an id for growing `comm`, with a root of its own (on
// this rank), which the rank passes to ncclCommGrow and to the new ranks.
ncclResult_t CommGetGrowId(ncclComm_t comm, BootstrapHandle* out);
// ncclCommGrow: the existing ranks (parent set, rank -1; the one that made
// the id passes it, the others none) keep their ranks; new ranks (parent
// null) join with the id and their rank. All meet at the id's root.
ncclResult_t CommGrow(ncclComm_t parent, int nranks, const BootstrapHandle* id, int rank,
                      ncclComm_t* out, const ncclConfig_t* config);
ncclResult_t CommFinalize(ncclComm_t comm);
ncclResult_t CommDestroy(ncclComm_t comm);
ncclResult_t CommAbort(ncclComm_t comm);
ncclResult_t CommRevoke(ncclComm_t comm, int flags);

// Whether `comm` is a communicator handle this library made (any state).
bool IsComm(ncclComm_t comm);
// NCCL's ncclCommEnsureReady: the comm can take work, or why not.
ncclResult_t CommEnsureReady(ncclComm_t comm, const char* opname);
// Marks the comm failed with an asynchronous error (a GPU fault).
void CommSetAsyncError(ncclComm_t comm, ncclResult_t error);

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_COMM_H_

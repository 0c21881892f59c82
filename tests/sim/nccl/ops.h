// One NCCL operation as the simulator executes it.
//
// Every collective is planned as point-to-point transfers over the rank's
// connections (transport.h):
//
//   AllReduce      send my buffer to every peer; fold all ranks' buffers
//   Broadcast      root sends to every peer
//   Reduce         every peer sends to root; root folds
//   AllGather      send my block to every peer; each peer's block lands at its offset
//   ReduceScatter  send block p to peer p; fold block `me` from every peer
//   AlltoAll       send block p to peer p; receive block p from peer p
//   Gather/Scatter to or from root, block by block
//   Send/Recv      one transfer
//   PutSignal      one transfer into the peer's window, the signal with its
//                  last chunk; Signal an empty one (the receiver's progress
//                  engine takes them as they come: OneSidedState)
//   WaitSignal     no transfer: done once each peer's signals reached a count
//
// A fold takes the ranks' inputs in rank order, chunk by chunk, so that every
// rank computes identical results. Data moves in chunks of the receiver's
// step size; each chunk carries the operation's signature, and a receiver
// never takes a chunk of another operation: mismatched calls hang.
//
// Thread-safety: an Op is built by the calling thread and then touched only by
// its communicator's progress thread.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_OPS_H_
#define NCCLWATCH_TESTS_SIM_NCCL_OPS_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "nccl/fifo.h"
#include "nccl/reduce.h"

namespace ncclsim::nccl {

class Op;
class Transport;

// Which op is first in line on each connection: per peer, the ops that will
// use the connection to (send) or from (recv) that peer, in posting order.
// Only the first may move data on it.
struct LineUp {
  std::vector<std::deque<Op*>> send;
  std::vector<std::deque<Op*>> recv;
};

// NCCL's ncclFunc_t numbering.
enum class Func : uint32_t {
  kBroadcast = 0,
  kReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kAllReduce = 4,
  kSendRecv = 5,
  kSend = 6,
  kRecv = 7,
  kAlltoAll = 8,
  kScatter = 9,
  kGather = 10,
  // One-sided (NCCL 2.29): 11 is NCCL's AllGatherV, which the API does not expose.
  kPutSignal = 12,
  kSignal = 13,
  kWaitSignal = 14,
};

// The receiving side of one-sided traffic, owned by a communicator's progress
// engine (progress.h): its windows, by registration index (NCCL registers
// windows collectively, so the index is the same on every rank), and the
// signals that arrived from each peer. A put or signal lands here without
// any call of the receiver's, as NCCL's do.
struct OneSidedState {
  struct Window {
    char* base = nullptr;
    size_t size = 0;
  };
  std::mutex mu;                // windows
  std::vector<Window> windows;  // index -> its memory here (base null once deregistered)
  std::unique_ptr<std::atomic<uint64_t>[]> received;  // per peer
  int nranks = 0;

  void Reset(int n);
  // Copies bytes of a put into window `index` at `offset`, within its bounds.
  void Place(int index, uint64_t offset, const char* data, size_t bytes);
  uint64_t Received(int peer) const;
  void Count(int peer);
};

bool IsOneSided(Func f);

const char* FuncName(Func f);  // "AllReduce", as NCCL names operations
bool IsRooted(Func f);
bool IsReduction(Func f);

// What the user asked for.
struct OpArgs {
  Func func = Func::kAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t redop = ncclSum;
  int peer = 0;  // root for rooted collectives, peer for Send/Recv, PutSignal and Signal
  cudaStream_t stream = nullptr;
  // PutSignal: the peer's window (its registration index) and the byte
  // offset into it.
  int window = -1;
  uint64_t window_offset = 0;
  // WaitSignal: per peer, the count of its signals that must have arrived.
  std::vector<std::pair<int, uint64_t>> wait_until;
};

class Op {
 public:
  // Plans `args` for `rank` of `nranks`. `reduction` says how to fold.
  Op(const OpArgs& args, int rank, int nranks, const Reduction& reduction);

  const OpArgs& args() const { return args_; }
  const OpSignature& signature() const { return sig_; }
  bool SendsTo(int peer) const;
  bool ReceivesFrom(int peer) const;
  // Whether it moves data to or from another rank (what NCCLSIM_SLOW_LINK slows).
  bool UsesPeers() const;

  // Copies the local part of the result (and, for aliased buffers, takes the
  // snapshot the sends read from). Called once, when the stream reaches the op.
  void Start();

  // Moves whatever can move now on the connections where this op is first in
  // line. Returns true if anything moved.
  bool Progress(Transport& t, const LineUp& line);

  // Whether this op is finished with its connection to/from `peer`.
  bool SendDone(int peer) const;
  bool RecvDone(int peer) const;
  bool Done() const;

  // A Send to self and a Recv from self in one group become a local copy.
  void PairWithSelfSend(Op& send);

  // One-sided ops: where signals are counted and puts to self land.
  void SetOneSided(OneSidedState* state) { one_sided_ = state; }

 private:
  struct Transfer {
    int peer;
    char* buf;  // source (send) or destination (receive)
    size_t bytes;
    size_t done = 0;
    bool empty_posted = false;  // a signal (no data) is one empty chunk
    bool Finished() const { return done >= bytes && (bytes > 0 || empty_posted); }
  };
  struct Fold {
    std::vector<int> peers;  // every rank but this one
    const char* mine;
    char* dst;
    size_t bytes;
    size_t done = 0;
    bool wait_for_sends;  // in-place AllReduce: my chunk must leave before it is overwritten
  };

  bool ProgressSend(Transfer& s, Fifo& f);
  bool ProgressRecv(Transfer& r, Fifo& f);
  bool ProgressFold(Transport& t);

  OpArgs args_;
  int rank_;
  int nranks_;
  Reduction reduction_;
  OpSignature sig_;
  std::vector<Transfer> sends_;
  std::vector<Transfer> recvs_;
  std::optional<Fold> fold_;
  const char* local_src_ = nullptr;
  char* local_dst_ = nullptr;
  size_t local_bytes_ = 0;
  std::vector<char> snapshot_;  // copy of an aliased send buffer
  bool needs_snapshot_ = false;
  bool self_unpaired_ = false;  // a Send/Recv to self waiting for its partner
  OneSidedState* one_sided_ = nullptr;
  bool one_sided_to_self_ = false;  // a put or signal to this rank: lands at Start
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_OPS_H_

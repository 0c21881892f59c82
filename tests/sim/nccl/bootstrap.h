// The simulated NCCL's bootstrap: how ranks that only share an ncclUniqueId
// find each other over real TCP, built the way NCCL builds it.
//
//   ncclGetUniqueId            picks the interface (socket.h), opens the root's
//                              listener and starts the root thread; the id holds
//                              {random magic, root address}.
//   rank r, at init            listens twice (for the root's reply, for its ring
//                              neighbour), and a third time for tagged p2p
//                              messages; tells its root where; the root, once
//                              every rank checked in, tells each rank the address
//                              of its ring successor; ranks connect the ring and
//                              all-gather everyone's p2p address over it.
//   AllGather / Barrier        over the ring.
//   Send / Recv (peer, tag)    one short-lived connection per message; a message
//                              that arrives before it is asked for is kept.
//   split / shrink             the members agree on each other's ring address
//                              through the parent's p2p messages, then build
//                              their own ring: no root is involved, so a shrink
//                              works while excluded ranks are dead.
//
// With several ids (ncclCommInitRankScalable), root i serves a contiguous block
// of ranks, and the first rank of each block also reports to the previous root,
// which is how the last rank of a block learns its successor.
//
// Failures surface as NCCL's: a rank that is gone makes its ring neighbours'
// receives fail with "Connection closed by remote peer" (ncclRemoteError).
//
// Thread-safety: a Bootstrap is used by its communicator's one caller at a
// time; Abort() may be called from another thread.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_BOOTSTRAP_H_
#define NCCLWATCH_TESTS_SIM_NCCL_BOOTSTRAP_H_

#include <nccl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "nccl/socket.h"

namespace ncclsim::nccl {

// The layout of ncclUniqueId's bytes in the simulator (and in NCCL).
struct BootstrapHandle {
  uint64_t magic;
  SocketAddress addr;
};
static_assert(sizeof(BootstrapHandle) <= NCCL_UNIQUE_ID_BYTES, "handle must fit in ncclUniqueId");

// Picks the bootstrap interface once per process; WARNs and fails as NCCL
// does ("Bootstrap : no socket interface found" -> ncclInvalidUsage).
ncclResult_t BootstrapNetInit();

// Fills an id and, unless NCCL_COMM_ID names the root, starts its root.
ncclResult_t BootstrapGetUniqueId(BootstrapHandle* handle);

// Starts a root listening at handle->addr (NCCL_COMM_ID: rank 0 does this).
ncclResult_t BootstrapCreateRoot(const BootstrapHandle& handle);

class Bootstrap {
 public:
  // Joins the job described by `handles` (one per root) as `rank` of `nranks`.
  static ncclResult_t Init(const std::vector<BootstrapHandle>& handles, int rank, int nranks,
                           volatile uint32_t* abort_flag, std::unique_ptr<Bootstrap>* out);

  // Builds the bootstrap of a communicator made of the parent ranks `members`
  // (in new-rank order), of which this process is members[new_rank]. Uses only
  // the parent's p2p messages with tag `tag`, so ranks not in `members` take
  // no part.
  static ncclResult_t FromParent(Bootstrap& parent, const std::vector<int>& members, int new_rank,
                                 int tag, uint64_t magic, volatile uint32_t* abort_flag,
                                 std::unique_ptr<Bootstrap>* out);

  // data holds nranks() blocks of `block` bytes; block rank() is ours.
  ncclResult_t AllGather(void* data, size_t block);
  ncclResult_t Barrier();
  ncclResult_t Send(int peer, int tag, const void* data, size_t size);
  ncclResult_t Recv(int peer, int tag, void* data, size_t size);

  // Closes every socket; further calls fail.
  void Close();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  uint64_t magic() const { return magic_; }

 private:
  struct Unexpected {
    int peer;
    int tag;
    std::vector<char> data;
  };

  ncclResult_t ConnectRing(const SocketAddress& next);
  ncclResult_t FinishInit();  // all-gathers p2p addresses

  int rank_ = 0;
  int nranks_ = 0;
  uint64_t magic_ = 0;
  volatile uint32_t* abort_flag_ = nullptr;
  Socket ring_listen_;
  Socket ring_send_;  // to rank+1
  Socket ring_recv_;  // from rank-1
  Socket p2p_listen_;
  std::vector<SocketAddress> p2p_addrs_;
  std::vector<Unexpected> unexpected_;
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_BOOTSTRAP_H_

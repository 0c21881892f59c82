// P2pMatching: pairs every send with its receive.
//
// Each rank's sends and receives come from its CommStreams, which already
// say how many collectives it had issued before each. The shim numbers sends and receives per
// communicator, peer and direction, so send #k from rank s to rank d must meet receive #k at d from
// s, with the same count and datatype (as NCCL requires). Each side of a pair of ranks is kept,
// compactly, only until the other side is added; then the two are compared and dropped.
//
// What it finds: the first #k where the sizes differ; the first #k whose two
// sides were posted between different collectives of the communicator (they
// share its stream, so each side waits behind a collective the other is
// waiting for); or an unmatched tail: sends never received, receives never sent.
//
// A side read from a node's summary may have left out blocks of its calls
// (model/left_out_calls.h LeftOutP2p), each as a digest: a block one side
// left out is compared by digest with the other side's (left out too, or
// digested here from its calls there, when it holds them all). Where the
// digests differ, or the other side's calls there cannot be digested, the
// pair is a P2pGap: what the verdict could not see (a summary_gap note).
// The counts of collectives before are compared where both sides know
// every count of the block (the digests), and not where one side knows
// none (the calls' numbers and sizes alone, as the traces whole compare
// them); where both know some, the same number (a ring that lost its
// start knows none before its first collective: the block's first calls),
// the digests; other numbers known cannot be compared by digest: a gap
// not compared, unless the sizes already differ.

#ifndef NCCLWATCH_DECODER_ANALYSIS_P2P_MATCHING_H_
#define NCCLWATCH_DECODER_ANALYSIS_P2P_MATCHING_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "model/process_trace.h"

namespace ncclwatch::decoder {

// One send or receive, as kept for matching.
struct P2pOp {
  uint64_t seq = 0;
  uint64_t count = 0;
  int32_t datatype = 0;
  int64_t when_ns = 0;  // realtime when it was posted
  uint64_t caller = 0;
  // How many collectives of the communicator the rank had issued before it:
  // both sides must agree, or on one stream each waits for the other.
  // -1: unknown (none came before it in a trace that lost records, or the
  // trace lost slots among those it holds: model/comm_stream.h).
  int64_t collectives_before = -1;
};

struct P2pProblem {
  enum Kind { kSizeMismatch, kSendNotReceived, kReceiveNotSent, kOrderMismatch };
  Kind kind = kSizeMismatch;
  uint64_t comm = 0;
  int32_t sender = -1;  // communicator ranks
  int32_t receiver = -1;
  int sender_process = -1;
  int receiver_process = -1;
  uint64_t seq = 0;
  P2pOp send;                      // kSizeMismatch, kSendNotReceived, kOrderMismatch
  P2pOp receive;                   // kSizeMismatch, kReceiveNotSent, kOrderMismatch
  uint64_t other_side_posted = 0;  // how many the other side posted in all
  int64_t when_ns = 0;
};

// Sends #first_seq..#end_seq-1 from `sender` to `receiver` on `comm` that
// a summary left out of one side and that could not be compared with the
// other's (kNotCompared), or whose digests differ (kDiffer).
struct P2pGap {
  enum Kind { kNotCompared, kDiffer };
  Kind kind = kNotCompared;
  uint64_t comm = 0;
  int32_t sender = -1;  // communicator ranks
  int32_t receiver = -1;
  int sender_process = -1;
  int receiver_process = -1;
  bool sender_left_out = false;  // which side's summary left them out (both: both)
  bool receiver_left_out = false;
  uint64_t first_seq = 0;
  uint64_t end_seq = 0;
  // kNotCompared only because the side not left out has a trace that lost
  // its start and holds the block from its first number on (its ring
  // begins inside it): what the traces whole compare there is that side's
  // part alone (analysis/summary_gaps.h says why that is a note alone).
  bool ring_start = false;
};

class P2pMatching {
 public:
  // Adds one process's sends and receives (all its communicators).
  void AddProcess(int process, const ProcessTrace& trace);
  // After the last process: a pair only one side of which posted anything is
  // compared with an empty other side, when `member` says that rank's trace
  // is present (giving its process index); a missing trace proves nothing.
  void Finish(const std::function<bool(uint64_t comm, int32_t rank, int* process)>& member);
  // What the pairs disagree on, in the order found.
  const std::vector<P2pProblem>& problems() const { return problems_; }
  // Where a summary's left-out blocks kept a pair from being compared, by
  // pair, then number: at most kMaxGapsPerPair a pair (consecutive blocks
  // alike are one), the rest counted in more_gaps().
  static constexpr size_t kMaxGapsPerPair = 16;
  const std::vector<P2pGap>& gaps() const { return gaps_; }
  size_t more_gaps() const { return more_gaps_; }

 private:
  // A block its summary left out, and its digests (LeftOutP2p).
  struct LeftBlock {
    uint64_t block = 0;
    P2pBlockDigest d;
  };
  struct Side {
    bool present = false;
    int process = -1;
    uint64_t posted = 0;  // highest seq + 1: how many it posted since the communicator began
    std::vector<P2pOp> ops;
    // Blocks its summary left out, sorted by block.
    std::vector<LeftBlock> left;
  };
  struct Pair {
    Side sends;
    Side receives;
    bool compared = false;
  };
  using Key = std::tuple<uint64_t, int32_t, int32_t>;  // comm, sender, receiver

  void Compare(const Key& key, Pair& pair);
  void CompareLeftOut(const P2pProblem& base, const Side& s, const Side& r, uint64_t compared_to);

  std::map<Key, Pair> pairs_;
  std::set<std::pair<uint64_t, int32_t>> lost_start_;  // (comm, rank) whose trace lost its start
  std::vector<P2pProblem> problems_;
  std::vector<P2pGap> gaps_;
  size_t more_gaps_ = 0;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_P2P_MATCHING_H_

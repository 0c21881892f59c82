// LeftOutCalls: the collectives of one (communicator, rank) that a node's
// summary (`ncclwatch summarize`, summary/summary_format.h) left out of a
// trace, as digests the analyses can still compare; LeftOutP2p, its sends
// and receives to one peer, likewise.
//
// A summary keeps each stream's first and last calls whole and leaves out
// the middle in whole blocks of kLeftOutBlock sequence numbers, on one grid
// every node uses (block k holds #k*kLeftOutBlock .. #(k+1)*kLeftOutBlock-1).
// Each block left out is kept as one 64-bit digest of its calls' signatures
// (summary/call_digest.h), so two ranks that left out the same block are
// still compared (equal digests: the same calls, as far as NCCL matches
// them), and a block one rank left out where another kept its calls is
// known not to have been compared (analysis/summary_gaps.h).
//
//   digests[i] is block first_block + i; calls counts the calls left out.
//
// Thread-safety: plain data.

#ifndef NCCLWATCH_DECODER_MODEL_LEFT_OUT_CALLS_H_
#define NCCLWATCH_DECODER_MODEL_LEFT_OUT_CALLS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ncclwatch::decoder {

// Sequence numbers per block of left-out calls: the grid every summary uses
// (in its header: a summary of another grid is refused). A window's edges
// are rounded out to it, so each end keeps up to one block more than its
// window: 256, the window of a communicator of 131,072 ranks
// (summary/summary_format.h CommWindow), keeps that job's merge to about
// 550 calls a rank where a grid of 1,024 kept 1,570.
inline constexpr uint64_t kLeftOutBlock = 256;

struct LeftOutCalls {
  uint64_t comm = 0;
  int32_t rank = -1;
  uint64_t first_block = 0;       // the first block left out
  std::vector<uint64_t> digests;  // one per block left out, from first_block on
  uint64_t calls = 0;             // collectives left out

  size_t Blocks() const { return digests.size(); }
  // The sequence numbers left out: [FirstSeq(), EndSeq()).
  uint64_t FirstSeq() const { return first_block * kLeftOutBlock; }
  uint64_t EndSeq() const { return (first_block + Blocks()) * kLeftOutBlock; }
};

// A block of sends or receives left out (LeftOutP2p).
struct P2pBlockDigest {
  uint64_t digest = 0;     // the counts of collectives before folded in
  uint64_t signature = 0;  // without them
  uint32_t unknown = 0;    // calls whose count is not known
  bool operator==(const P2pBlockDigest& o) const {
    return digest == o.digest && signature == o.signature && unknown == o.unknown;
  }
};

// The sends (or the receives) of one rank to (from) one peer on one
// communicator that a summary left out: numbered per (communicator, rank,
// peer, direction) by the shim, so send #k from rank s to rank d meets
// receive #k at d from s (analysis/p2p_matching.h). Left out as the
// collectives are, in whole blocks of the same grid, each one digest of its
// calls' number, count, datatype and count of collectives before each
// (summary/call_digest.h P2pDigest): the sender's block and the receiver's
// are equal when their calls match. A count not known (-1: the trace lost
// collectives it may have followed) is folded as none, so each block keeps
// too its calls' digest without the counts (P2pSignatureDigest) and how
// many of its calls' counts are not known: a block whose counts one side
// knows none of is compared as the traces would compare it, on the calls'
// numbers and sizes alone (analysis/p2p_matching.h).
struct LeftOutP2p {
  uint64_t comm = 0;
  int32_t rank = -1;  // the rank that posted them
  int32_t peer = -1;  // to (a send) or from (a receive)
  bool send = false;
  uint64_t first_block = 0;
  std::vector<P2pBlockDigest> blocks;  // one per block left out, from first_block on
  uint64_t calls = 0;

  size_t Blocks() const { return blocks.size(); }
  uint64_t FirstSeq() const { return first_block * kLeftOutBlock; }
  uint64_t EndSeq() const { return (first_block + Blocks()) * kLeftOutBlock; }
};

// The collectives of one (communicator, rank) a summarized trace kept, per
// block of the same grid, each block's digest summed as a left-out block's
// is: worked out by the summary's reader (summary/summary_reader.h), on the
// core that decodes the trace, for the gap analysis to compare with the
// blocks other nodes left out (analysis/summary_gaps.h), so that a merge of
// thousands of nodes does not digest every kept call on its one thread.
// `blocks` holds (block, digest, calls) in the order the stream's calls
// cross into each (a block met twice, by numbers out of order, twice).
struct KeptBlocks {
  bool any = false;  // the stream has collectives
  uint64_t lo = 0;   // its lowest and highest numbers
  uint64_t hi = 0;
  struct Block {
    uint64_t block = 0;
    uint64_t digest = 0;
    uint64_t calls = 0;
  };
  std::vector<Block> blocks;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_LEFT_OUT_CALLS_H_

// SummaryGaps: where the calls node summaries left out (model/
// left_out_calls.h) kept the analyses from comparing a communicator's ranks.
//
// From the traces themselves the collective alignment compares every rank
// at every number its trace holds. A summary keeps each rank's first and
// last calls and, for the blocks of numbers in between, one digest per
// block. So, per communicator and block some rank left out:
//   - every rank that reached the block left it out, or kept it whole (its
//     digest is computed here, as the summary's was): the digests agree, and
//     the ranks were compared there as the traces would have been; or they
//     disagree: the ranks' calls differ somewhere in the block (kDiffer);
//   - a rank whose calls there could not be digested (it kept only part of
//     the block: its trace begins or ends inside it, or it came as a whole
//     trace, not summarized) was not compared with those that left it out
//     (kNotCompared; kDiffer where the digests there disagree already).
// Either is a gap in what the verdict saw: the diagnosis says so in a note,
// with the nodes whose traces to read in full, and never calls a job
// healthy over it; but for a gap not compared only because a rank's ring
// begins inside the block (`ring_start`: it lost its older calls, and
// holds every number from its first to the block's end), which is the
// note alone: every ring that wrapped begins inside some block its peers
// may leave out, and the traces whole compare there only the calls past
// the ring's start (at most kLeftOutBlock - 1). Consecutive blocks with
// the same ranks are one gap.
//
// Memory: the digests the summaries carry, plus one per kept block of the
// summarized ranks (their calls are few: the summaries' windows).
//
// Thread-safety: none; one analysis owns it.

#ifndef NCCLWATCH_DECODER_ANALYSIS_SUMMARY_GAPS_H_
#define NCCLWATCH_DECODER_ANALYSIS_SUMMARY_GAPS_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "model/left_out_calls.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

struct SummaryGap {
  enum Kind { kNotCompared, kDiffer };
  Kind kind = kNotCompared;
  uint64_t comm = 0;
  uint64_t first_seq = 0;  // the numbers [first_seq, end_seq)
  uint64_t end_seq = 0;
  // (process, rank in the communicator). kNotCompared: the ranks whose
  // summaries left the calls out, and those whose calls there could not be
  // compared with them. kDiffer: the ranks whose digest differs from the
  // most common one, and those that have the most common one.
  std::vector<std::pair<int, int32_t>> left_out;
  std::vector<std::pair<int, int32_t>> kept;
  // kNotCompared: each rank in `kept` is one whose ring begins inside the
  // block (its trace lost its start, and holds the block from its first
  // number on).
  bool ring_start = false;
};

class SummaryGaps {
 public:
  // At most this many gaps per communicator are listed of each sort (the
  // first): those only where a ring begins, and the others; the rest are
  // counted, every block still compared (a gap of a ring's start is a
  // note alone: one of another sort after many such must be listed).
  static constexpr size_t kMaxGapsPerComm = 16;

  // Whether the calls of traces read whole are digested too (by block), to
  // be compared with summaries' digests: set when a job mixes the two
  // (DiagnoseEvidence does), left off for traces alone (no summary to
  // compare with, and no cost).
  void DigestWholeTraces(bool on) { digest_whole_ = on; }
  void AddProcess(int process, const ProcessTrace& trace);
  // Whether any process added came from a summary that left calls out.
  bool any_left_out() const { return any_left_out_; }
  // After the last process: the gaps, by communicator, then number, at
  // most `listed` per communicator of each sort.
  struct Found {
    std::vector<SummaryGap> gaps;
    size_t more = 0;  // past `listed`, not listed
  };
  Found Find(size_t listed = kMaxGapsPerComm) const;

 private:
  struct Member {
    int process = -1;
    int32_t rank = -1;
    bool any = false;
    uint64_t lo = 0;  // the numbers its trace held, left out or not
    uint64_t hi = 0;
    bool digested = false;    // from a summary: its kept blocks digested below
    bool lost_start = false;  // its trace does not hold the stream's start
    // Sorted by block, one entry a block (flat: a job of 131,072 ranks
    // holds tens of digests each).
    struct Left {
      uint64_t block = 0;
      uint64_t digest = 0;
    };
    using Kept = KeptBlocks::Block;
    std::vector<Left> left;
    std::vector<Kept> kept;
  };
  std::map<uint64_t, std::vector<Member>> comms_;
  bool any_left_out_ = false;
  bool digest_whole_ = false;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_SUMMARY_GAPS_H_

// LinkSkew: which rank's link to the others (its NIC, its NVLinks) is slow:
// the communicators it belongs to take longer to finish their collectives,
// once every member has arrived, than the other communicators of their kind.
//
// Evidence: the shim's GpuTime records (core/completion.h), per collective
// and rank the time from the GPU reaching it to finishing it, on the GPU's
// own timer. The members of a collective finish it together, so the
// shortest of those times is the member that reached it last, and it is how
// long the collective took once everyone was there: its transfer over the
// links (the "tail"). No clock shared between hosts is needed. A slow host
// or a slow GPU makes the others wait for it before that: its own time in
// the collective stays short, and the tail with it, so neither is taken
// for a link. A slow link stretches every member's time, its own too.
//
// Like is compared with like: the communicators of one kind (the same
// number of members: the tensor-parallel pairs of a job, its data-parallel
// groups, its pipeline stage pairs) move the same data over the same kind
// of links. The kind's usual tail is the median of its communicators'
// median tails (at least kMinComms of them: with fewer, a slow one cannot
// be told from the usual). A collective is slow when its tail exceeds the
// usual by kMinExtraNs and by the usual itself (twice as long). A
// communicator is slow when it is slow far more often than the kind's other
// communicators are (the host straggler's test: at least kMinTimesLast and
// half its collectives, and beyond what the others' rate, taken as at
// least 1/20, gives by chance at kSigmas: lateness::BeyondChance), so a job
// whose collectives are slowed at random names no one.
//
// The slow communicators are then intersected: the rank in the most of
// them, when it is the only one in that many (and that is two or more), is
// named, with the slow communicators it belongs to; when no single rank
// stands out (one slow pair: either end's link), the members every one of
// them shares are named together (a pair: the link between them). Repeated
// for the slow communicators left over.
//
// Thread-safety: none; one analysis owns it.

#ifndef NCCLWATCH_DECODER_ANALYSIS_LINK_SKEW_H_
#define NCCLWATCH_DECODER_ANALYSIS_LINK_SKEW_H_

#include <cstdint>
#include <map>
#include <vector>

#include "analysis/arrival_skew.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

// A communicator whose collectives took longer than its kind's usual once
// every member had arrived, with the evidence (findings/straggler_evidence.h,
// "last" reading "slow": times_last its slow collectives, median_late_ns their
// tail beyond the usual, gapped = compared); began_ns when its first member's
// GPU reached the first slow one.
struct SlowComm : StragglerEvidence {
  uint64_t comm = 0;
  std::vector<int> member_processes;  // by member rank
  std::vector<int32_t> member_ranks;  // ... their ranks in it
  int kind_comms = 0;                 // communicators of its kind compared (itself included)
  int64_t usual_ns = 0;               // the kind's usual tail
};

// A slow link: the rank (or ranks) every one of `comms` shares.
struct LinkStraggler {
  // The process whose link is slow; several when the slow communicators do
  // not tell which of their shared members it is (a pair: the link between).
  std::vector<int> processes;
  // The slow communicators it explains: the widest first, then the one with
  // the most slow collectives.
  std::vector<SlowComm> comms;
};

class LinkSkew {
 public:
  static constexpr size_t kWindow = ArrivalSkew::kWindow;
  static constexpr int64_t kMinExtraNs = 2 * ArrivalSkew::kMinGapNs;
  static constexpr int kMinComms = 3;

  void AddProcess(int index, const ProcessTrace& t);
  // Every slow link found, the one with the most slow communicators first.
  std::vector<LinkStraggler> Stragglers() const;

 private:
  struct Sample {
    int64_t gpu_ns = 0;
    int64_t begin_ns =
        0;  // when the GPU reached it (realtime, through the first anchor); 0 unknown
    uint32_t call = 0;
  };
  struct Member {
    int process = -1;
    std::map<uint64_t, Sample> by_seq;  // the last kWindow collectives timed
    // Its node's summary left out earlier GPU times of the communicator:
    // `by_seq` holds only the last ones it kept.
    bool summary_cut = false;
  };
  std::map<uint64_t, std::map<int32_t, Member>> comms_;  // communicator -> rank -> member
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_LINK_SKEW_H_

// JoinConcurrentRanks: which processes of one launcher and program ran as
// one job, when nothing else (a communicator, a job id) says so: two that
// ran at the same time (their [first_ns, last_ns] overlap) as different
// ranks are one job, and so, in turn, is each that either is one job with.
//
// Found by a sweep in order of start, not by every pair (131,072 ranks are
// 8.6 billion pairs): those still running when one starts all overlap it;
// if they hold two ranks or more they are already one job (the later of
// any two of different ranks met the earlier running), so joining it to
// one of them is joining it to all; if they all hold its rank, it joins
// none. O(n log n). A process whose times run backwards (last before first:
// a crafted trace) is compared with each other one, as the overlap test
// says.
//
// Thread-safety: a pure function.

#ifndef NCCLWATCH_DECODER_ANALYSIS_CONCURRENT_RANKS_H_
#define NCCLWATCH_DECODER_ANALYSIS_CONCURRENT_RANKS_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace ncclwatch::decoder {

struct RankSpan {
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  int32_t rank = -1;
};

// Calls `join(a, b)` (indices into `spans`) for enough pairs that joining
// them all makes the same groups as joining every two that overlap with
// different ranks (and joins no two that are not in one such group).
void JoinConcurrentRanks(const std::vector<RankSpan>& spans,
                         const std::function<void(size_t, size_t)>& join);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_CONCURRENT_RANKS_H_

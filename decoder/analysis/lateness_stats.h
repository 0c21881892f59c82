// The statistics every "who comes last" analysis shares (arrival_skew.h:
// the host that enqueues last; gpu_skew.h: the GPU that reaches the
// operation last): a quantile, whether a member's count of being last
// stands out from chance, and when its straggling began and whether it
// worsens.
//
// Thread-safety: pure functions.

#ifndef NCCLWATCH_DECODER_ANALYSIS_LATENESS_STATS_H_
#define NCCLWATCH_DECODER_ANALYSIS_LATENESS_STATS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "findings/straggler_evidence.h"

namespace ncclwatch::decoder::lateness {

// Evidence below this names no one.
constexpr uint64_t kMinTimesLast = 10;
// Standard deviations above chance a straggler's count must stand.
constexpr double kSigmas = 5.0;

// The q-quantile of `v` (0 when empty).
int64_t Quantile(std::vector<int64_t> v, double q);

// The natural log of the chance that `k` or more of `n` independent trials
// succeed, each with chance `p` (the binomial's upper tail), exactly; 0
// (certain) when k is 0, and when k is more than n (nothing to judge).
double LogChanceAtLeast(uint64_t k, uint64_t n, double p);

// Whether `k` of `n`, where chance alone gives each trial `p`, is more than
// chance: the binomial tail is at most the normal tail's `sigmas` deviations
// out (5 sigma: 2.9e-7). Exact, not by the normal approximation, whose tail
// is lighter than the binomial's for small p: its 5-sigma bar at p = 1/4
// and 40 trials, 24, has an exact chance of 2.8e-6, ten times 2.9e-7.
bool BeyondChance(uint64_t k, uint64_t n, double p, double sigmas = kSigmas);

// Whether a member last in `count` of `gapped` collectives (of `members`)
// is a straggler: a member no different from the others is last in about
// 1/members of them; a straggler is last in at least kMinTimesLast, at least
// half of them, and more often than chance allows at `sigmas` (kSigmas
// unless given; BeyondChance): a job whose ranks are slowed at random names
// no one.
bool StandsOut(uint64_t count, uint64_t gapped, int members, double sigmas = kSigmas);

// StandsOut over a member's whole series, or else over its collectives from
// the change point of `last` on (ChangePoint), for a straggling that began
// later: `last[i]` whether the member was last in collective i, `gapped[i]`
// whether anyone was (by a gap). On a busy machine the collectives before
// can hold many that someone came last in by chance, and a straggling that
// began late in the window would drown in them.
// The part since must hold at least kMinSince collectives, and stand
// SinceSigmas(last.size()) deviations above chance, not kSigmas: its split
// is the one of many that makes it densest.
constexpr size_t kMinSince = 4 * kMinTimesLast;
bool StandsOutOrSince(const std::vector<uint8_t>& last, const std::vector<uint8_t>& gapped,
                      int members);

// The bar for a part chosen as the best of `splits` candidates: kSigmas
// with its chance shared out among them all (a Bonferroni bound, the
// normal tail's deviations for it about sqrt(kSigmas^2 + 2 ln splits)):
// 5.8 for 75 collectives, 6.2 for 1,000, 6.6 for 10,000.
double SinceSigmas(size_t splits);

// The change point of a 0/1 series: the index s splitting it into [0, s)
// and [s, n) with the least squared error around each part's mean, where
// the part after is at least twice as dense; 0 when no split beats none.
// Each part at least 5 long and a twentieth of the series.
size_t ChangePoint(const std::vector<uint8_t>& x);

// When a straggling began and whether it worsens: `last[i]` whether the
// member was last in collective i, `gap[i]` by how much then.
struct Straggling {
  size_t began = 0;            // index of its first collective (ChangePoint)
  int64_t early_late_ns = 0;   // median gap in the first half of its straggling
  int64_t recent_late_ns = 0;  // ... and in the second
  int64_t late_ns = 0;         // ... and over all of it
  bool worsening = false;
};
// Whether a straggling dated at `began` (DateStraggling) persists: from it
// on, the member was last in at least kMinTimesLast collectives and in a
// third of them at least. The rate test counts only the collectives someone
// came last in by a gap; on a busy machine those can be few, and a rank the
// scheduler held back for a handful of steps can fill them: a burst that
// short, or a rank last now and then among many collectives where no one
// came last, is no straggler.
bool Persists(const std::vector<uint8_t>& last, size_t began);

// The call a member was last in most often: `calls[i]` collective i's
// call, `last[i]` whether the member was last in it; with how often, and of
// how many of that call. The lowest call on a tie.
struct CallLast {
  uint32_t call = 0;
  uint64_t times_last = 0;
  uint64_t compared = 0;
};
CallLast MostOftenLast(const std::vector<uint32_t>& calls, const std::vector<uint8_t>& last);

Straggling DateStraggling(const std::vector<uint8_t>& last, const std::vector<int64_t>& gap,
                          int64_t min_gap_ns);

// The window of evidence a straggler is described by, the same in every
// skew analysis: `seqs[i]` collective i's number, `last[i]` whether the
// member (or communicator) was late in it, `gap[i]` by how much, `min_gap_ns`
// the least gap that counts as late. `from_start`: every member's series
// held the communicator's first collective (an analysis that cannot tell
// passes true; then only first_seq decides).
struct Window {
  uint64_t first_seq = 0;  // the first and last collective compared
  uint64_t last_seq = 0;
  bool window_start = false;   // the window began after the communicator's first collective
  int64_t median_late_ns = 0;  // its gap when late, median
  int64_t p90_late_ns = 0;     // ... and 90th percentile
  // Its gap when late from when its straggling began on, median: what a
  // floor on its effect is held to (before, a busy machine's chance gaps).
  int64_t since_late_ns = 0;
  size_t began = 0;           // index of its straggling's first collective (DateStraggling)
  uint64_t began_seq = 0;     // ... and its number
  bool began_later = false;   // it began after first_seq (a change point)
  int64_t early_late_ns = 0;  // median gap in the first and second half of its straggling
  int64_t recent_late_ns = 0;
  bool worsening = false;
  bool persists = false;  // Persists(last, began)
};
// `seqs`, `last` and `gap` are of one length, at least 1.
Window DescribeWindow(const std::vector<uint64_t>& seqs, bool from_start,
                      const std::vector<uint8_t>& last, const std::vector<int64_t>& gap,
                      int64_t min_gap_ns);

// The fewest calls node summaries kept of any member they cut short of
// `window` (StragglerEvidence::summary_kept), 0 when none did: `cut(m)`
// says whether member m's summary left out calls it would have read,
// `kept(m)` how many it has. (A member cut, but narrowed to fewer than its
// summary kept since, lost nothing to the summary.)
template <typename Members, typename Cut, typename Kept>
uint64_t FewestKept(const Members& members, uint64_t window, Cut cut, Kept kept) {
  uint64_t fewest = 0;
  for (const auto& [rank, m] : members) {
    if (!cut(m)) continue;
    const uint64_t k = kept(m);
    if (k < window && (fewest == 0 || k < fewest)) fewest = k;
  }
  return fewest;
}

// Copies window `w` into a straggler's evidence: what arrival, GPU and link
// skew all report. began_ns stays with the caller: each dates it by its own
// times.
void SetWindow(const Window& w, StragglerEvidence* x);

}  // namespace ncclwatch::decoder::lateness

#endif  // NCCLWATCH_DECODER_ANALYSIS_LATENESS_STATS_H_

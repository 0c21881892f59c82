// ArrivalSkew: which rank's host enqueues a communicator's collectives last,
// how often, by how much, and since when (a host straggler).
//
// A collective completes on no rank before every member has issued it, so
// the member whose host enqueues it last holds the others back by the gap
// between its enqueue and the one before it. Per communicator and member,
// the enqueue times of its last kWindow numbered collectives are kept (as
// each process is added: a job's memory stays one window per member). Past
// kMaxKept times in all (8,192 members of 4,096), the window narrows by
// halves, to the widest that keeps members x window within it (at 131,072
// members, 256 each): every member's series is cut to it, whatever the
// order they came in, and the straggler's figures say so (`window`). Per
// collective every member issued, the last member and its gap are found; a
// gap under kMinGapNs is "arrived together" (scheduler noise, one process's
// microseconds of bookkeeping) and blames no one.
//
// A rank is a straggler of a communicator when it was last, by a gap, far
// more often than chance allows: with n members, a member that is no
// different from the others is last in about 1/n of the gapped collectives;
// a straggler must be last in at least half of them, and so often that
// chance gives it less than 5 sigma's 2.9e-7, by the binomial's exact tail
// (a job whose ranks are slowed at random, by a busy machine or a jittery
// data loader, names no one), late by a twentieth of its collectives'
// interval at least (kIntervalsPerLate), and its straggling must persist
// (lateness_stats.h, Persists: from when it began, last in 10 collectives
// at least and a third of them: not a few steps a busy machine held one
// rank back). When it began is the change
// point of its "last, by a gap" series (the split into a before and an after
// with the least squared error, each a twentieth of the series at least, the
// rate after twice the rate before); whether it is getting worse compares its
// median gap in the first and second half of its straggling.
//
// Times are the enqueue times on each host's own clock (realtime): on one
// host they compare exactly; across hosts, each host's clock offset as the
// job's own collectives measured it (host_clocks.h, AlignClocks) is taken
// off first, and the finding states the residual; a host no collective
// aligned is compared as its clock read, and the finding says so.
//
// Thread-safety: none; one analysis owns it.

#ifndef NCCLWATCH_DECODER_ANALYSIS_ARRIVAL_SKEW_H_
#define NCCLWATCH_DECODER_ANALYSIS_ARRIVAL_SKEW_H_

#include <cstdint>
#include <map>
#include <vector>

#include "analysis/host_clocks.h"
#include "analysis/lateness_stats.h"
#include "findings/straggler_evidence.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

// A rank its host made last to a communicator's collectives, with the
// evidence (findings/straggler_evidence.h); began_ns dated by its host's
// enqueues.
struct ArrivalStraggler : StragglerEvidence {
  uint64_t comm = 0;
  int32_t rank = -1;  // in the communicator
  int process = -1;
  std::vector<int> member_processes;
};

// A member's recent lateness, for a live view (status): over the last
// collectives every member issued, how often it came last by a gap, and its
// median gap then.
struct RecentLateness {
  uint64_t comm = 0;
  int32_t rank = -1;
  int process = -1;
  uint64_t compared = 0;
  uint64_t times_last = 0;
  int64_t median_late_ns = 0;  // 0 when never last
};

// One collective every member issued: from the first member's enqueue to
// the last's, and who was last (-1: together, within kMinGapNs).
struct ArrivalSpan {
  uint64_t comm = 0;
  uint64_t seq = 0;
  uint32_t call = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  int32_t last = -1;  // member rank
  int64_t gap = 0;    // the last one's gap to the one before it
  int members = 0;
};

class ArrivalSkew {
 public:
  static constexpr size_t kWindow = 4096;              // collectives per member
  static constexpr size_t kMaxKept = size_t{1} << 25;  // members x window, at most
  static constexpr int64_t kMinGapNs = 1000 * 1000;    // 1 ms
  // A straggler's lateness (the median of its gaps when last, since its
  // straggling began) must also be a twentieth of its collectives'
  // interval, as a slow GPU's (gpu_skew.h):
  // a host a millisecond late to a collective that comes once a second (a
  // rank that logs, or saves a little more, each step) holds its job back
  // by a thousandth, nothing to name it for.
  static constexpr int64_t kIntervalsPerLate = 20;
  static constexpr uint64_t kMinTimesLast = lateness::kMinTimesLast;
  static constexpr double kSigmas = lateness::kSigmas;

  // `max_kept`: members x window at most (tests narrow it sooner).
  explicit ArrivalSkew(size_t max_kept = kMaxKept) : max_kept_(max_kept) {}

  void AddProcess(int index, const ProcessTrace& t);
  // After the last process: every member's times put on the reference
  // host's clock (host_clocks.h), before anything is compared.
  void AlignClocks(const HostClocks& clocks);
  // The collectives kept per member now (kWindow, or narrower past max_kept).
  size_t window() const { return window_; }
  // Every straggler found, by communicator, then rank. `stopped`: per
  // communicator, the number where its collectives stopped (the GPUs
  // waited there for ever, or the job ended): only the collectives before it
  // are compared, since past it the hosts enqueue with nothing completing
  // and a late one held no one back.
  std::vector<ArrivalStraggler> Stragglers(const std::map<uint64_t, uint64_t>& stopped = {}) const;
  // Every collective compared, by communicator, then number.
  std::vector<ArrivalSpan> Spans() const;
  // Every member's lateness over the last `window` collectives compared.
  std::vector<RecentLateness> Recent(size_t window) const;

 private:
  struct Series {
    int process = -1;
    uint64_t first_seq = 0;      // seq of ns[0]
    bool from_start = false;     // the window starts at the communicator's collective #0
    std::vector<int64_t> ns;     // enqueue time of first_seq + i; INT64_MIN when not recorded
    std::vector<uint32_t> call;  // its call
    // Its node's summary left out calls within the window: ns holds only
    // what the summary kept after them.
    bool summary_cut = false;
  };
  using Members = std::map<int32_t, Series>;  // by member rank
  // A collective every member issued: who came last (-1: together), by how much.
  struct Op {
    uint64_t seq;
    int32_t last;
    int64_t gap;
    uint32_t call;
    int64_t first_ns;
    int64_t last_ns;
  };
  static std::vector<Op> Compare(const Members& members);
  // Cuts `s` to its last `window` collectives recorded.
  static void Narrow(Series* s, size_t window);

  std::map<uint64_t, Members> comms_;  // per communicator
  size_t max_kept_ = kMaxKept;
  size_t members_ = 0;       // series kept, in all communicators
  size_t window_ = kWindow;  // what each keeps: kWindow, halved past kMaxKept
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_ARRIVAL_SKEW_H_

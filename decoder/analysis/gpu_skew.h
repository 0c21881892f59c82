// GpuSkew: which rank's GPU reaches a communicator's collectives last while
// its host enqueued them in time (a slow GPU: compute, throttling).
//
// Evidence: the shim's GpuTime records (core/completion.h), per collective
// and rank the time from the GPU reaching the collective (its begin marker)
// to finishing it, measured by the GPU's own timer. A collective finishes on
// all its members at almost the same moment (none can finish before the
// last has brought its data), so the member whose GPU reached it last is
// the one with the shortest time in it, and it was late by the difference
// to the next shortest: the job's own alignment, which needs no clock
// shared between hosts (the residual is how far apart the members finish,
// well under a millisecond on one node; kMinGapNs absorbs it).
//
// A GPU reaches a collective late either because its host enqueued it late
// (the GPU sat idle: a host straggler, arrival_skew.h) or because its own
// earlier work held it. So per collective the GPU-last member's lateness
// is set against its host's (its enqueue after the others' latest, on the
// hosts' clocks): only what its GPU adds beyond that (at least kMinGapNs
// and a quarter of its lateness) counts it as GPU-late. A host that waits
// on its own slow GPU (a synchronize each step) enqueues late too, but its
// GPU still adds its own delay on top, which a host straggler's never does.
// And the GPU must have been doing something else than NCCL's work before
// it (its time from its previous operation's end to this one's begin at
// least half what it adds): a GPU that reaches a collective late because it
// was still in the previous one (which the slow rank finished first) is
// not slow itself.
// The rate test, the change point and the trend are the host straggler's
// (lateness_stats.h): a job with random jitter names no one.
//
// Thread-safety: none; one analysis owns it.

#ifndef NCCLWATCH_DECODER_ANALYSIS_GPU_SKEW_H_
#define NCCLWATCH_DECODER_ANALYSIS_GPU_SKEW_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "analysis/arrival_skew.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

// A slow GPU: the host straggler's figures, where "last" is the GPU's
// arrival, plus how late its host was meanwhile.
struct GpuStraggler : ArrivalStraggler {
  uint64_t timed = 0;         // collectives of the communicator with every member's GPU time
  int64_t host_late_ns = 0;   // its host's lateness when its GPU was late, median (0: on time)
  uint64_t host_on_time = 0;  // ... of those, how often its host was not last by kMinGapNs
};

class GpuSkew {
 public:
  static constexpr size_t kWindow = ArrivalSkew::kWindow;
  static constexpr int64_t kMinGapNs = ArrivalSkew::kMinGapNs;

  // A slow GPU's lateness (since it began: lateness::Window's
  // since_late_ns) must also be at least this, and a twentieth of its
  // collectives' interval: a GPU that comes a millisecond late because
  // another collective ended a millisecond apart on it is nothing to report.
  static constexpr int64_t kMinLateNs = 2 * kMinGapNs;

  void AddProcess(int index, const ProcessTrace& t);
  // After the last process: the hosts' enqueue and finish times on the
  // reference host's clock (host_clocks.h), as ArrivalSkew's.
  void AlignClocks(const HostClocks& clocks);
  // Every slow GPU found, by communicator, then rank.
  std::vector<GpuStraggler> Stragglers() const;
  // Whether member `rank` of `comm`, whose host enqueued collective `seq`
  // `gap_ns` after the others, was late because it had waited on its own
  // GPU: each member's host idles from its GPU's last finish before the
  // enqueue to the enqueue (the host work of a step that synchronizes);
  // when `rank`'s idled less than half the gap longer than the others'
  // longest, its GPU finished late, not its host (a GPU that waited on a
  // slow peer's data). Nothing when the GPU times do not say (a member's
  // time of `seq` or its GPU's finish before it not recorded, or left out
  // of a node's summary).
  std::optional<bool> WaitedOnGpu(uint64_t comm, int32_t rank, uint64_t seq, int64_t gap_ns) const;
  // Whether host straggler `s` was late mostly because it waited on its own
  // GPU: WaitedOnGpu in at least half of the collectives it came last in,
  // among `spans` (ArrivalSkew::Spans()), that the GPU times say anything
  // of (a summary keeps a communicator's last kSummaryGpuTimes: judged on
  // those, as the traces would judge them on all). Such a rank is not named
  // a host straggler in a job with a slow GPU: its GPU waited on the slow
  // one's data.
  bool ExplainsHostStraggler(const ArrivalStraggler& s,
                             const std::vector<ArrivalSpan>& spans) const;

 private:
  struct Sample {
    int64_t gpu_ns = 0;      // begin -> end on the GPU
    int64_t enqueue_ns = 0;  // the host's enqueue (realtime); INT64_MIN unknown
    // From the GPU finishing its previous operation (of any communicator)
    // to reaching this one: its own work in between, or idling for its
    // host; INT64_MIN unknown (no anchor, no previous operation).
    int64_t since_previous_ns = INT64_MIN;
    uint32_t call = 0;
  };
  // A member's samples by collective number, dense: the map they once were
  // made the analysis of 1,024 ranks take a second, a lookup per member and
  // collective.
  struct Member {
    int process = -1;
    uint64_t first_seq = 0;       // the number of samples[0]
    std::vector<Sample> samples;  // the last kWindow numbers; gpu_ns 0: not timed
    // Its node's summary left out earlier GPU times of the communicator:
    // `samples` holds only the last ones it kept.
    bool summary_cut = false;
    const Sample* At(uint64_t seq) const {
      if (seq < first_seq || seq - first_seq >= samples.size()) return nullptr;
      const Sample& x = samples[seq - first_seq];
      return x.gpu_ns == 0 ? nullptr : &x;
    }
    Sample* At(uint64_t seq) {
      return const_cast<Sample*>(static_cast<const Member*>(this)->At(seq));
    }
  };
  std::map<uint64_t, std::map<int32_t, Member>> comms_;  // communicator -> rank -> member
  // Per process, when its GPU finished each timed operation (realtime, sorted;
  // the last kWindow x 4), and from when they are all there: before the
  // earliest kept (ends trimmed to the last kWindow x 4, or a summary that
  // kept a communicator's last GPU times only), a finish may be missing, and
  // the last one found before a time may not be the last there was.
  struct Ends {
    std::vector<int64_t> at;
    int64_t complete_from = INT64_MIN;
  };
  std::map<int, Ends> gpu_ends_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_GPU_SKEW_H_

// JobAnalysis: reads a job's processes one at a time and keeps what the
// diagnosis needs.
//
// AddProcess takes a decoded process, adds it to the job model
// (model/job_model.h: its record, the memberships indexed), and feeds its
// events to the analyses (collective alignment per communicator,
// point-to-point matching, order inversion, arrival skew). Memory therefore
// grows with the number of processes, plus about one process's worth of
// events per communicator and a window of enqueue times per member, not with
// the total number of records.
//
// Thread-safety: single-threaded.

#ifndef NCCLWATCH_DECODER_ANALYSIS_JOB_ANALYSIS_H_
#define NCCLWATCH_DECODER_ANALYSIS_JOB_ANALYSIS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/arrival_skew.h"
#include "analysis/collective_alignment.h"
#include "analysis/gpu_skew.h"
#include "analysis/host_clocks.h"
#include "analysis/link_skew.h"
#include "analysis/order_inversion.h"
#include "analysis/p2p_matching.h"
#include "analysis/signal_matching.h"
#include "analysis/summary_gaps.h"
#include "model/init_evidence.h"
#include "model/job_model.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

struct UnreadableTrace {
  std::string path;
  std::string error;
  // A folder that could not be searched, or a link not followed: it may hold
  // a rank's trace, so the job cannot be called healthy without it.
  bool may_hold_traces = false;
};

class JobAnalysis {
 public:
  // Before the first process: the job mixes traces and node summaries, so
  // the traces' calls are digested to be compared with what the summaries
  // left out (analysis/summary_gaps.h).
  void MixesSummaries() { gaps_.DigestWholeTraces(true); }
  void AddProcess(const ProcessTrace& trace);
  void AddUnreadable(const std::string& path, const std::string& error,
                     bool may_hold_traces = false);
  // After the last process.
  void Finish();

  // The job model the processes were added to (model/job_model.h).
  const JobModel& model() const { return model_; }
  const std::vector<ProcessRecord>& processes() const { return model_.processes(); }
  const std::vector<std::pair<std::string, std::string>>& duplicates() const {
    return model_.duplicates();
  }
  // The logs' init evidence joined to the model (JobModel::JoinLogEvidence),
  // after Finish.
  std::set<int> JoinLogEvidence(const std::vector<InitEvidence>& logs, bool timed) {
    return model_.JoinLogEvidence(logs, timed);
  }
  const std::vector<JobModel::UntracedInit>& untraced_init() const {
    return model_.untraced_init();
  }
  const std::vector<UnreadableTrace>& unreadable() const { return unreadable_; }
  const std::map<uint64_t, CollectiveAlignment>& alignments() const { return alignments_; }
  const P2pMatching& p2p() const { return p2p_; }
  const SignalMatching& signals() const { return signals_; }
  const OrderInversion& order() const { return order_; }
  const ArrivalSkew& arrivals() const { return arrivals_; }
  const GpuSkew& gpu_arrivals() const { return gpu_arrivals_; }
  const HostClocks& clocks() const { return clocks_; }
  const LinkSkew& links() const { return links_; }
  const SummaryGaps& summary_gaps() const { return gaps_; }

  int GlobalRank(int process, uint64_t comm, int32_t comm_rank) const {
    return model_.GlobalRank(process, comm, comm_rank);
  }
  int CommSize(uint64_t comm) const { return model_.CommSize(comm); }
  int ProcessOf(uint64_t comm, int32_t comm_rank) const {
    return model_.ProcessOf(comm, comm_rank);
  }

 private:
  JobModel model_;
  std::vector<UnreadableTrace> unreadable_;
  std::map<uint64_t, CollectiveAlignment> alignments_;
  P2pMatching p2p_;
  SignalMatching signals_;  // one-sided signals and their waits (NCCL 2.29)
  OrderInversion order_;
  ArrivalSkew arrivals_;
  GpuSkew gpu_arrivals_;
  HostClocks clocks_;  // each host's clock offset, by the job's collectives
  LinkSkew links_;
  SummaryGaps gaps_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_JOB_ANALYSIS_H_

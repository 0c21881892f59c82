#include "analysis/job_analysis.h"

namespace ncclwatch::decoder {

void JobAnalysis::AddUnreadable(const std::string& path, const std::string& error,
                                bool may_hold_traces) {
  unreadable_.push_back({path, error, may_hold_traces});
}

void JobAnalysis::AddProcess(const ProcessTrace& t) {
  const std::optional<int> added = model_.Add(t);
  if (!added) return;  // a duplicate
  const int index = *added;
  // The analyses. Each member of a communicator is one CommStream here; a
  // member that made no collective still counts (it was expected to).
  for (const CommStream& s : t.streams)
    if (s.any() || s.membership >= 0) alignments_[s.comm].AddMember(index, s, t);
  p2p_.AddProcess(index, t);
  signals_.AddProcess(index, t);
  order_.AddProcess(index, t);
  arrivals_.AddProcess(index, t);
  gpu_arrivals_.AddProcess(index, t);
  clocks_.AddProcess(index, t);
  links_.AddProcess(index, t);
  gaps_.AddProcess(index, t);
}

void JobAnalysis::Finish() {
  // A peer's trace proves it posted nothing only if its ring still holds
  // everything since the communicator began.
  auto whole = [this](uint64_t comm, int32_t rank, int* process) {
    *process = ProcessOf(comm, rank);
    if (*process < 0) return false;
    const TraceFileStats& s = processes()[*process].stats;
    return s.ring_overwritten == 0 && s.lapped_slots == 0;
  };
  p2p_.Finish(whole);
  signals_.Finish(whole);
  clocks_.Solve();
  arrivals_.AlignClocks(clocks_);
  gpu_arrivals_.AlignClocks(clocks_);
}

}  // namespace ncclwatch::decoder

#include "analysis/log_evidence.h"

#include <set>
#include <utility>
#include <vector>

namespace ncclwatch::decoder {

bool ExplainsTraces(const Finding& f) {
  if (f.role != FindingRole::kRootCause && f.role != FindingRole::kConsequence) return false;
  switch (f.kind) {
    case FindingKind::kGpuFault:
    case FindingKind::kOutOfMemory:
    case FindingKind::kNvlinkFabric:
    case FindingKind::kCudaIpcFailure:
    case FindingKind::kNetworkError:
    case FindingKind::kCudaError:
      return true;
    case FindingKind::kRankDied: {
      const auto* x = std::get_if<LogFacts>(&f.facts);
      return x != nullptr && x->cause == LogCause::kCrash;
    }
    default:
      return false;
  }
}

namespace {

// The rank of the one traced process the host numbers `pid`, or -1.
int RankOfHostPid(int pid, const std::vector<TracedPid>& traced) {
  int rank = -1, found = 0;
  for (const TracedPid& t : traced) {
    if (t.pid != pid) continue;
    if (t.pid_namespace != kInitPidNamespace) return -1;  // a container's number: not comparable
    rank = t.rank;
    ++found;
  }
  return found == 1 ? rank : -1;
}

// Whether log finding `f` says why ranks with no trace did what the traces
// saw of them: it is about those ranks only, they are among the ranks the
// traces' root cause names as absent (`absent`: a rank that never came to
// the rendezvous, never entered a collective), and it is a cause the logs
// found (their root cause or a consequence: which of a job's failures a
// log shows first depends on who printed first), not a wait.
bool ExplainsUntraced(const Finding& f, const std::set<int>& traced_ranks,
                      const std::set<int>& absent) {
  if (f.role != FindingRole::kRootCause && f.role != FindingRole::kConsequence) return false;
  if (const auto* init = std::get_if<InitFailureFacts>(&f.facts);
      init != nullptr && init->subsystem == Area::kWaiting)
    return false;
  switch (f.kind) {
    case FindingKind::kRendezvousFailure:
    case FindingKind::kInitFailure:
    case FindingKind::kRankDied:
    case FindingKind::kCollectiveMismatch:
    case FindingKind::kDdpUsage:
      break;
    default:
      return false;
  }
  if (f.ranks.empty()) return false;
  bool named = false;
  for (int r : f.ranks) {
    if (traced_ranks.count(r) > 0) return false;
    named |= absent.count(r) > 0;
  }
  return named;
}

}  // namespace

void AddLogEvidence(const LogDiagnosis& logs, const std::vector<TracedPid>& traced, Diagnosis* d) {
  // What the traces already found of a kind the logs explain (a GPU fault the
  // traced CUDA error shows), and whether their root cause names its ranks.
  std::set<FindingKind> traced_kinds;
  bool traced_ranks = false;
  // The ranks the traces' root causes name as absent: a rank that never
  // came to the rendezvous or never entered a collective (never one the
  // traces' own evidence of it explains: they hold none of it).
  std::set<int> absent;
  for (const Finding& f : d->findings) {
    if (f.role == FindingRole::kRootCause || f.role == FindingRole::kConsequence)
      traced_kinds.insert(f.kind);
    traced_ranks |= f.role == FindingRole::kRootCause && !f.ranks.empty();
    if (f.role == FindingRole::kRootCause &&
        (f.kind == FindingKind::kMissingRank || f.kind == FindingKind::kRendezvousFailure))
      absent.insert(f.ranks.begin(), f.ranks.end());
  }
  // The ranks the traces hold; none is told apart where a trace has no rank.
  std::set<int> with_trace;
  for (const TracedPid& t : traced) {
    if (t.rank < 0) absent.clear();
    with_trace.insert(t.rank);
  }
  std::vector<Finding> causes, notes;
  std::set<std::vector<int>> untraced_explained;  // one cause for each set of untraced ranks
  for (Finding f : logs.findings) {
    if (const auto* x = std::get_if<LogFacts>(&f.facts);
        x != nullptr && x->pid && f.ranks.empty()) {
      if (const int rank = RankOfHostPid(*x->pid, traced); rank >= 0) f.ranks = {rank};
    }
    // The logs lead with what the traces could not see; a finding the traces
    // already made, with its ranks, is said better by them, and a cause of no
    // known rank does not displace one that names its rank: notes then.
    if ((ExplainsTraces(f) && traced_kinds.count(f.kind) == 0 &&
         (!f.ranks.empty() || !traced_ranks)) ||
        (ExplainsUntraced(f, with_trace, absent) && untraced_explained.insert(f.ranks).second)) {
      causes.push_back(f);
      causes.back().role = causes.size() == 1 ? FindingRole::kRootCause : FindingRole::kConsequence;
    } else {
      notes.push_back(f);
      notes.back().role = FindingRole::kNote;
    }
  }
  // Logs that show a problem the traces did not: the logs' own root cause leads.
  if (causes.empty() && logs.problem && !d->problem && !logs.findings.empty()) {
    causes.push_back(logs.findings.front());
    causes.back().role = FindingRole::kRootCause;
    notes.erase(notes.begin());
  }
  const int job = d->findings.empty() ? 0 : d->findings.front().job;
  for (Finding& f : causes) f.job = job;
  for (Finding& f : notes) f.job = job;
  std::vector<Finding> all = std::move(causes);
  const bool led = !all.empty();
  for (Finding& f : d->findings) {
    // What the traces concluded follows what the logs say caused it.
    if (led && f.job == job && f.role == FindingRole::kRootCause)
      f.role = FindingRole::kConsequence;
    all.push_back(std::move(f));
  }
  for (Finding& f : notes) all.push_back(std::move(f));
  d->findings = std::move(all);
  if (led) d->problem = true;
}

}  // namespace ncclwatch::decoder

#include "analysis/diagnosis.h"

#include <algorithm>
#include <set>
#include <utility>

#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"

namespace ncclwatch::decoder {
namespace {

using diagnosis::Candidate;
using diagnosis::DiagnosisContext;
using diagnosis::kTeardownRaceNs;
using diagnosis::Life;

// Whether candidate `c` is only that a rank was behind when the launcher
// ended the job: the others had waited for it less than kTeardownRaceNs,
// and it was in host code, or waited on its GPU for work still in flight
// (DiagnosisContext::Stuck).
bool BehindAtTeardown(const DiagnosisContext& cx, const Candidate& c) {
  if (c.process < 0) return false;
  const int64_t teardown = cx.TeardownNs(cx.job_of[c.process]);
  if (teardown <= 0 || teardown - c.finding.when_ns >= kTeardownRaceNs) return false;
  if (const auto* m = std::get_if<MissingRankFacts>(&c.finding.facts)) {
    if (c.finding.kind != FindingKind::kMissingRank) return false;
    if (m->departure.how == Departure::kWaitingOnGpu) {
      for (const CommCompletion& cc : cx.Comms(c.process))
        if (cc.comm == c.finding.comm) return !cx.Stuck(c.process, cc);
      return false;
    }
    return m->departure.how == Departure::kAliveIdle ||
           m->departure.how == Departure::kAliveUntilSignal;
  }
  if (const auto* p2p = std::get_if<P2pMismatchFacts>(&c.finding.facts)) {
    return p2p->Unmatched();
  }
  return false;
}

// A rank missing from a collective because it waits in a split another
// member never called (SkippedCreation names that member).
bool WaitsInSkippedCreation(const DiagnosisContext& cx, const Candidate& c) {
  if (c.finding.kind != FindingKind::kMissingRank || c.process < 0) return false;
  const auto* m = std::get_if<MissingRankFacts>(&c.finding.facts);
  return m != nullptr && m->creation_call == 0 && cx.waiting_in_creation.count(c.process) > 0;
}

// Live, a rank that is merely behind (it has not reached a collective, or
// not yet posted a send or receive, the others have) is not a finding while
// nothing in its job is stuck: ranks run at different steps.
bool NotYet(const DiagnosisContext& cx, const Candidate& c) {
  if (c.process < 0 || cx.lives[c.process] != Life::kLive) return false;
  const int j = cx.job_of[c.process];
  if (!cx.job_live[j]) return false;
  bool behind = c.finding.kind == FindingKind::kMissingRank;
  if (const auto* p2p = std::get_if<P2pMismatchFacts>(&c.finding.facts)) {
    behind = p2p->Unmatched();
  }
  if (!behind) return false;
  for (int q : cx.jobs[j]) {
    if (cx.lives[q] != Life::kLive) return false;  // a rank ended or froze: not a race
    for (const CommCompletion& cc : cx.Comms(q))
      if (cx.Stuck(q, cc)) return false;
  }
  return true;
}

// The candidates ranked into findings, per job: the root cause first (the
// lowest tier, then the earliest), its consequences, the job's warnings;
// then the notes.

void Conclude(DiagnosisContext& cx, Diagnosis* out) {
  cx.candidates.erase(std::remove_if(cx.candidates.begin(), cx.candidates.end(),
                                     [&](const Candidate& c) {
                                       return NotYet(cx, c) || BehindAtTeardown(cx, c) ||
                                              WaitsInSkippedCreation(cx, c);
                                     }),
                      cx.candidates.end());
  // One finding per rank that died (the communicator where it was first
  // missed), and per rank that went missing for the same reason.
  std::stable_sort(cx.candidates.begin(), cx.candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.tier != b.tier) return a.tier < b.tier;
                     return a.finding.when_ns < b.finding.when_ns;
                   });
  std::set<std::pair<FindingKind, std::vector<int>>> seen;
  std::vector<Candidate> kept;
  for (const Candidate& c : cx.candidates) {
    if (c.finding.kind == FindingKind::kRankDied || c.finding.kind == FindingKind::kMissingRank ||
        c.finding.kind == FindingKind::kRankFrozen) {
      if (!seen.insert({c.finding.kind, c.finding.ranks}).second) continue;
    }
    kept.push_back(c);
  }
  std::vector<bool> job_has_cause(cx.jobs.size(), false);
  for (Candidate& c : kept) {
    c.finding.job = c.process >= 0 ? cx.job_of[c.process] : 0;
    job_has_cause[c.finding.job] = true;
  }
  // A job where nothing was found is healthy only when it is. A job made
  // only of bystanders (processes with NCCL loaded that never called it
  // and have no launcher rank: torchrun's agent, a helper importing torch)
  // beside a job of ranks is not judged: its exit is not a rank's.
  bool ranks_elsewhere = false;
  for (size_t j = 0; j < cx.jobs.size(); ++j) ranks_elsewhere |= !Bystanders(cx, j);
  for (size_t j = 0; j < cx.jobs.size(); ++j)
    if (!job_has_cause[j] && !(ranks_elsewhere && Bystanders(cx, j))) CheckHealth(cx, j, &kept);
  std::vector<bool> job_has_root(cx.jobs.size(), false);
  for (Candidate& c : kept) {
    c.finding.job = c.process >= 0 ? cx.job_of[c.process] : 0;
    c.finding.role =
        job_has_root[c.finding.job] ? FindingRole::kConsequence : FindingRole::kRootCause;
    job_has_root[c.finding.job] = true;
    // Where the hang is, for findings about a collective that have none yet.
    if (!c.finding.phase && c.finding.comm && c.finding.seq &&
        c.finding.kind != FindingKind::kInitFailure &&
        c.finding.kind != FindingKind::kRankExitError) {
      const bool p2p = c.finding.kind == FindingKind::kP2pMismatch;
      c.finding.phase = !p2p && *c.finding.seq == 0 ? HangPhase::kStartup : HangPhase::kStep;
    }
  }
  // A trace missing from a job where nothing else is found: the job cannot
  // be called healthy without it.
  for (Finding& n : cx.notes) {
    if (n.kind != FindingKind::kMissingTraces) continue;
    if (n.job < 0 || n.job >= static_cast<int>(cx.jobs.size()) || job_has_root[n.job]) continue;
    n.role = FindingRole::kRootCause;
    job_has_root[n.job] = true;
  }
  // So is a folder that could not be searched, or a link not followed, where
  // nothing is found in any job: it may hold a rank's trace.
  if (std::find(job_has_root.begin(), job_has_root.end(), true) == job_has_root.end()) {
    for (Finding& n : cx.notes) {
      const auto* u = std::get_if<UnreadableTracesFacts>(&n.facts);
      if (u == nullptr || u->not_searched.empty() || cx.jobs.empty()) continue;
      n.role = FindingRole::kRootCause;
      n.job = 0;
      job_has_root[0] = true;
    }
  }
  // And calls node summaries left out where the analyses needed them:
  // what they hold was not seen, so a job with nothing else found is not
  // healthy over it (its note names the nodes to read in full); but for
  // gaps only where a rank's ring begins inside what others left out (the
  // traces whole compare there at most a block's calls past the ring's
  // start: analysis/summary_gaps.h), the note alone.
  // (A live job stays `running`, the note beside it: its nodes may simply
  // have been summarized moments apart.)
  for (Finding& n : cx.notes) {
    if (n.kind != FindingKind::kSummaryGap) continue;
    const auto* gaps = std::get_if<SummaryGapFacts>(&n.facts);
    if (gaps != nullptr && gaps->ring_starts_only) continue;
    if (n.job < 0 || n.job >= static_cast<int>(cx.jobs.size()) || job_has_root[n.job]) continue;
    if (cx.job_live[n.job]) continue;
    n.role = FindingRole::kRootCause;
    job_has_root[n.job] = true;
  }
  for (size_t j = 0; j < cx.jobs.size(); ++j) {
    for (const Finding& n : cx.notes)
      if (n.role == FindingRole::kRootCause && n.job == static_cast<int>(j))
        out->findings.push_back(n);
    for (const Candidate& c : kept)
      if (c.finding.job == static_cast<int>(j)) out->findings.push_back(c.finding);
    for (const Finding& w : cx.warnings)
      if (w.job == static_cast<int>(j)) out->findings.push_back(w);
  }
  // Warnings (communicators ordered differently on separate streams) and
  // notes leave a job healthy: only a cause makes a problem.
  out->problem = !kept.empty();
  for (const Finding& n : cx.notes) {
    if (n.role == FindingRole::kRootCause) {
      out->problem = true;
      continue;
    }
    out->findings.push_back(n);
  }
}

// A live job with no problem is running: per communicator, the oldest
// operation not done everywhere, the ranks that entered it and those that
// had not, and for how long.
void Pending(const DiagnosisContext& cx, Diagnosis* out) {
  out->running = cx.live && !out->problem;
  if (!out->running) return;
  for (const auto& [comm, al] : cx.job.alignments()) {
    if (comm == 0 || al.members().empty()) continue;
    const int job = cx.job_of[al.members().front().process];
    if (!cx.job_live[job]) continue;
    // The lowest number some member has not entered, where another has.
    std::optional<uint64_t> lowest;
    for (const AlignedMember& m : al.members()) {
      if (m.any && m.hi == UINT64_MAX) continue;
      const uint64_t next = m.any ? m.hi + 1 : 0;
      lowest = std::min(lowest.value_or(UINT64_MAX), next);
    }
    PendingOperation p;
    p.comm = comm;
    CollectiveSignature sig;
    int provider = -1;
    uint64_t caller = 0;
    if (lowest && al.ReferenceAt(*lowest, &sig, &p.since_ns, &provider, &caller)) {
      p.seq = *lowest;
      p.call = LastCall{true, sig.call, comm, p.seq, true};
      p.call.when_ns = p.since_ns;
      p.call.caller = caller;
      for (const AlignedMember& m : al.members()) {
        const int r = cx.Global(m.process, comm, m.comm_rank);
        (m.any && m.hi >= p.seq ? p.entered : p.not_entered).push_back(r);
      }
    } else {
      // Every member entered everything: the oldest operation a GPU has not finished.
      const LastCall* oldest = nullptr;
      for (const AlignedMember& m : al.members()) {
        for (const CommCompletion& c : cx.Comms(m.process))
          if (c.comm == comm && c.pending &&
              (oldest == nullptr || c.oldest.when_ns < oldest->when_ns))
            oldest = &c.oldest;
        p.entered.push_back(cx.Global(m.process, comm, m.comm_rank));
      }
      if (oldest == nullptr) continue;
      p.call = *oldest;
      p.seq = oldest->seq;
      p.since_ns = oldest->when_ns;
    }
    std::sort(p.entered.begin(), p.entered.end());
    std::sort(p.not_entered.begin(), p.not_entered.end());
    p.pending_ns = std::max<int64_t>(cx.observed.now_ns - p.since_ns, 0);
    out->pending.push_back(std::move(p));
  }
  std::stable_sort(out->pending.begin(), out->pending.end(),
                   [](const PendingOperation& a, const PendingOperation& b) {
                     return a.pending_ns > b.pending_ns;
                   });
}

}  // namespace

Diagnosis Diagnose(const JobAnalysis& job, const LivenessObservation& observed) {
  DiagnosisContext cx(job, observed);
  // The order matters: a family may read what an earlier one found
  // (FindUnsentSignals lowers missing ranks FindCollectiveProblems named;
  // FindStragglers compares lateness only before where FindCollectiveProblems
  // found a communicator stopped;
  // FindInitFailures leaves out the waits FindSkippedCreations explained;
  // FindStoppedRanks skips ranks already named).
  diagnosis::FindCollectiveProblems(cx);
  diagnosis::FindP2pMismatches(cx);
  diagnosis::FindUnsentSignals(cx);
  diagnosis::FindOrderInversions(cx);
  diagnosis::FindStragglers(cx);
  diagnosis::FindSkippedCreations(cx);
  diagnosis::FindInitFailures(cx);
  diagnosis::FindRendezvousFailures(cx);
  diagnosis::FindDeviceErrors(cx);
  diagnosis::FindStoppedRanks(cx);
  diagnosis::FindNeverCompleted(cx);
  diagnosis::NoteUnreadable(cx);
  diagnosis::NoteSummaryGaps(cx);
  diagnosis::NoteDuplicates(cx);
  diagnosis::NoteSetup(cx);
  diagnosis::NoteNotVisible(cx);
  diagnosis::FindBlindSpots(cx);
  Diagnosis out;
  out.jobs = cx.jobs;
  out.end_ns = cx.end_ns;
  out.live = cx.live;
  out.tracked = cx.tracked;
  out.untraced_judged = cx.untraced_judged;
  Conclude(cx, &out);
  Pending(cx, &out);
  return out;
}

}  // namespace ncclwatch::decoder

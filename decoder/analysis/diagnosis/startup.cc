// What went wrong before the first collective: a split or shrink a member
// never called, init failures, and rendezvous that never completed.

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"
#include "analysis/init_failure.h"
#include "analysis/rendezvous.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::diagnosis {

namespace {

namespace f = ::ncclwatch::fields;

// An init_failure that says only that its ranks waited for others.
bool WaitingOnly(const Finding& x) {
  const auto* init = std::get_if<InitFailureFacts>(&x.facts);
  return init != nullptr && init->subsystem == Area::kWaiting;
}

// What process `q`, a member of `comm` that never made a call the others
// made on it, did instead: left it, exited, died, or went on to other work.
DepartureFacts WhatInstead(const DiagnosisContext& cx, int q, uint64_t comm) {
  const ProcessRecord& p = cx.procs[q];
  DepartureFacts d;
  if (p.fate.kind == Fate::kExited) d.exit_code = p.fate.exit_code;
  for (const CommMembership& m : p.comms) {
    if (m.comm == comm && m.end_call != 0) {
      d.how = Departure::kLeftCommunicator;
      d.end_call = m.end_call;
      return d;
    }
  }
  if (p.fate.kind == Fate::kSignal && CrashSignal(p.fate.signo)) {
    d.kind = FindingKind::kRankDied;
    d.how = Departure::kDiedOfSignal;
    d.signo = p.fate.signo;
    return d;
  }
  if (auto s = p.suspended.find(comm); s != p.suspended.end()) {
    d.how = Departure::kSuspended;
    d.later_call = s->second;
    return d;
  }
  if (p.last.valid) {
    d.how = Departure::kWentOn;
    d.later_call = p.last;
    d.later_site = Site(q, p.last.caller);
    return d;
  }
  d.how = p.fate.kind == Fate::kExited ? Departure::kExited : Departure::kStopped;
  return d;
}

}  // namespace

void FindSkippedCreations(DiagnosisContext& cx) {
  struct Creation {
    uint32_t call = 0;
    int64_t first_ns = INT64_MAX;
    bool pending = false;
    std::set<int> callers;  // processes
  };
  std::map<std::pair<uint64_t, uint32_t>, Creation> creations;  // (parent, split index)
  for (const ProcessRecord& p : cx.procs) {
    for (size_t i = 0; i < p.comms.size(); ++i) {
      const CommMembership& m = p.comms[i];
      if ((m.init_call != f::kCommSplit && m.init_call != f::kCommShrink) || m.parent == 0)
        continue;
      Creation& c = creations[{m.parent, m.split_index}];
      c.call = m.init_call;
      c.first_ns = std::min(c.first_ns, p.comm_init_ns[i]);
      c.pending |= !m.init_returned;
      c.callers.insert(p.index);
    }
  }
  for (const auto& [key, c] : creations) {
    const auto& [parent, split_index] = key;
    if (!c.pending) continue;
    std::vector<int> skipped, entered;
    int skipper = -1;
    for (const ProcessRecord& p : cx.procs) {
      const CommMembership* in_parent = nullptr;
      for (const CommMembership& m : p.comms)
        if (m.comm == parent && m.Formed()) in_parent = &m;
      if (in_parent == nullptr) continue;
      const int r = cx.Global(p.index, parent, in_parent->rank);
      if (c.callers.count(p.index)) {
        entered.push_back(r);
        continue;
      }
      // A shrink leaves out the ranks it excludes.
      if (c.call == f::kCommShrink) {
        bool excluded = false;
        for (int q : c.callers)
          for (const CommMembership& m : cx.procs[q].comms)
            if (m.parent == parent && m.split_index == split_index)
              excluded |= std::count(m.excluded.begin(), m.excluded.end(), in_parent->rank) > 0;
        if (excluded) continue;
      }
      skipped.push_back(r);
      if (skipper < 0) skipper = p.index;
      cx.skipped_creation.insert({parent, p.index});
    }
    if (skipped.empty()) continue;
    for (int q : c.callers) cx.waiting_in_creation.insert(q);
    std::sort(skipped.begin(), skipped.end());
    std::sort(entered.begin(), entered.end());
    Candidate cand;
    cand.process = skipper;
    Finding& x = cand.finding;
    x.kind = FindingKind::kMissingRank;
    x.comm = parent;
    x.nranks = cx.job.CommSize(parent);
    x.ranks = skipped;
    x.when_ns = c.first_ns;
    x.phase = HangPhase::kStartup;
    MissingRankFacts facts;
    facts.creation_call = c.call;
    facts.split_index = split_index;
    facts.entered = entered;
    facts.departure = WhatInstead(cx, skipper, parent);
    x.facts = std::move(facts);
    cx.candidates.push_back(std::move(cand));
  }
}

// The job whose init the ranks without a trace were part of: the one job
// whose traced ranks waited in an init, or -1 when none or several did
// (then their logs are judged on their own). Only where the traced ranks
// did nothing but wait (no failure of their own, no crash): a log's times
// cannot be set against a trace's (a log without timestamps orders its
// lines only; NCCL stamps local time), so an untraced rank's failure is
// judged beside the traced ranks only where none of theirs competes with it.
int JobOfUntraced(const DiagnosisContext& cx) {
  int found = -1;
  for (size_t j = 0; j < cx.jobs.size(); ++j) {
    bool waited = false, own_cause = false;
    for (int q : cx.jobs[j]) {
      const ProcessRecord& p = cx.procs[q];
      waited |= p.init.init_pending;
      own_cause |=
          p.init.AnyFailure() || (p.fate.kind == Fate::kSignal && CrashSignal(p.fate.signo));
    }
    if (!waited) continue;
    if (found >= 0 || own_cause) return -1;
    found = static_cast<int>(j);
  }
  return found;
}

void FindInitFailures(DiagnosisContext& cx) {
  const int with_untraced = cx.job.untraced_init().empty() ? -1 : JobOfUntraced(cx);
  for (size_t j = 0; j < cx.jobs.size(); ++j) {
    const std::vector<int>& members = cx.jobs[j];
    std::vector<InitEvidence> evidence;
    for (int q : members) evidence.push_back(cx.procs[q].init);
    if (static_cast<int>(j) == with_untraced) {
      for (const JobModel::UntracedInit& u : cx.job.untraced_init()) {
        evidence.push_back(u.evidence);
        cx.untraced_judged.insert(u.log_processes.begin(), u.log_processes.end());
      }
    }
    for (InitFinding& f : DiagnoseInit(evidence)) {
      // Ranks that only wait in a split another member never called: the
      // skipped-creation finding explains them.
      if (WaitingOnly(f.finding) && cx.waiting_in_creation.count(f.process) > 0) continue;
      Candidate c;
      c.finding = std::move(f.finding);
      c.finding.nranks = c.finding.comm ? cx.job.CommSize(*c.finding.comm) : -1;
      // A rank with no trace (its log's evidence) is of this job all the same.
      c.process = f.process >= 0 ? f.process : members.front();
      cx.candidates.push_back(std::move(c));
    }
  }
}

void FindRendezvousFailures(DiagnosisContext& cx) {
  for (const std::vector<int>& members : cx.jobs) {
    std::vector<RendezvousEvidence> evidence;
    for (int q : members) {
      evidence.push_back(cx.procs[q].rendezvous);
      evidence.back().live = cx.lives[q] == Life::kLive;
    }
    std::optional<Finding> f = RendezvousFinding(evidence);
    if (!f) continue;
    Candidate c;
    c.finding = std::move(*f);
    c.process = members.front();
    if (c.finding.when_ns == 0) c.finding.when_ns = cx.procs[members.front()].first_ns;
    cx.candidates.push_back(std::move(c));
  }
}

}  // namespace ncclwatch::decoder::diagnosis

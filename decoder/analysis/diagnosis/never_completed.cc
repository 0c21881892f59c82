// Operations every member entered that the GPUs never finished
// (never_completed, tier 2), naming the ranks whose progress stopped first.

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::diagnosis {

namespace {

namespace f = ::ncclwatch::fields;

// Narrows `named` to the members whose progress stopped first: the
// earliest last completion (50 ms apart at least), else the earliest end
// of life (two heartbeat intervals apart); a tie keeps them all.
void StoppedFirst(const DiagnosisContext& cx,
                  std::vector<std::pair<int, const CommCompletion*>>* named,
                  NeverCompletedFacts::By* by) {
  constexpr int64_t kProgressTieNs = 50'000'000;  // the watcher polls every 20 ms
  if (named->size() < 2) return;
  int64_t first = INT64_MAX;
  for (const auto& [q, c] : *named) first = std::min(first, c->progress_ns);
  std::vector<std::pair<int, const CommCompletion*>> early;
  for (const auto& m : *named)
    if (m.second->progress_ns - first <= kProgressTieNs) early.push_back(m);
  if (early.size() < named->size()) {
    *named = early;
    if (*by == NeverCompletedFacts::By::kTie) *by = NeverCompletedFacts::By::kLastProgress;
    return;
  }
  int64_t alive = INT64_MAX, next = INT64_MAX;
  int who = -1;
  for (const auto& [q, c] : *named) {
    const int64_t until = cx.procs[q].AliveUntilNs();
    if (until < alive) {
      next = alive;
      alive = until;
      who = q;
    } else {
      next = std::min(next, until);
    }
  }
  if (who >= 0 && cx.procs[who].completion.beats > 0 &&
      next - alive >
          kFirstDeathIntervals * static_cast<double>(cx.procs[who].completion.IntervalNs())) {
    named->erase(
        std::remove_if(named->begin(), named->end(), [&](const auto& m) { return m.first != who; }),
        named->end());
    if (*by == NeverCompletedFacts::By::kTie) *by = NeverCompletedFacts::By::kLastProgress;
  }
}

void AddNeverCompleted(DiagnosisContext& cx, uint64_t comm, int nranks,
                       const std::vector<std::pair<int, const CommCompletion*>>& members,
                       const std::vector<std::pair<int, const CommCompletion*>>& named,
                       NeverCompletedFacts facts) {
  Candidate c;
  c.tier = 2;
  c.process = named.front().first;
  Finding& x = c.finding;
  x.kind = FindingKind::kNeverCompleted;
  x.comm = comm;
  x.seq = facts.op.seq;
  x.nranks = nranks;
  std::map<uint64_t, std::vector<int>> others;
  int64_t waited_from = INT64_MAX;
  bool live = false;
  for (const auto& member : members) {
    const auto q = member.first;
    const auto* cc = member.second;
    const int r = cx.Global(q, comm, cc->rank);
    const bool is_named =
        std::any_of(named.begin(), named.end(), [&](const auto& m) { return m.second == cc; });
    if (is_named) {
      x.ranks.push_back(r);
      facts.stopped_ns = std::max(facts.stopped_ns, cc->progress_ns);
      facts.stall_record |= cc->stalled;
    } else {
      others[cc->completed].push_back(r);
    }
    if (facts.op.call != f::kSend && facts.op.call != f::kRecv) {
      facts.entered.push_back(r);
    } else if (is_named || (cc->pending && cc->oldest.peer >= 0)) {
      facts.entered.push_back(r);
    }
    if (cc->pending) waited_from = std::min(waited_from, cc->oldest.when_ns);
    live |= cx.lives[q] == Life::kLive;
  }
  std::sort(x.ranks.begin(), x.ranks.end());
  std::sort(facts.entered.begin(), facts.entered.end());
  for (auto& [completed, ranks] : others) {
    std::sort(ranks.begin(), ranks.end());
    facts.others.push_back({ranks, completed});
  }
  facts.live = live;
  const int64_t end = live ? cx.observed.now_ns : cx.end_ns;
  if (waited_from != INT64_MAX && end > waited_from) facts.waited_ns = end - waited_from;
  facts.site = Site(named.front().first, facts.op.caller);
  x.when_ns = facts.stopped_ns > 0 ? facts.stopped_ns : facts.op.when_ns;
  x.phase = PhaseOfCall(facts.op);
  x.facts = std::move(facts);
  cx.candidates.push_back(std::move(c));
}

}  // namespace

void FindNeverCompleted(DiagnosisContext& cx) {
  std::map<uint64_t, std::vector<std::pair<int, const CommCompletion*>>> members;
  for (const ProcessRecord& p : cx.procs)
    for (const CommCompletion& c : cx.Comms(p.index))
      if (c.comm != 0) members[c.comm].push_back({p.index, &c});
  for (const auto& [comm, ms] : members) {
    const int nranks = cx.job.CommSize(comm);
    if (nranks <= 0 || static_cast<int>(ms.size()) < nranks) continue;
    bool tracked = true, stuck = false;
    uint64_t low = UINT64_MAX, issued = UINT64_MAX;
    bool known = false;  // some member's watcher wrote a Progress
    for (const auto& [q, c] : ms) {
      tracked &= c->tracked;
      stuck |= cx.Stuck(q, *c);
      known |= c->has_progress;
      issued = std::min(issued, c->issued);
    }
    // A member with no Progress yet (it died before its watcher wrote one)
    // completed an unknown number: the others' counts decide.
    for (const auto& [q, c] : ms)
      if (c->has_progress || !known) low = std::min(low, c->completed);
    if (!tracked || !stuck) continue;
    if (issued > low) {
      const auto al = cx.job.alignments().find(comm);
      if (al != cx.job.alignments().end()) {
        const std::optional<uint64_t> divergence = al->second.FirstDivergence();
        if (divergence && *divergence <= low) continue;  // the mismatch explains it
      }
      std::vector<std::pair<int, const CommCompletion*>> named;
      for (const auto& m : ms)
        if (m.second->completed == low && (m.second->has_progress || !known)) named.push_back(m);
      NeverCompletedFacts facts;
      size_t counted = 0;
      for (const auto& m : ms) counted += m.second->has_progress || !known;
      facts.by = named.size() < counted ? NeverCompletedFacts::By::kCompleted
                                        : NeverCompletedFacts::By::kTie;
      StoppedFirst(cx, &named, &facts.by);
      CollectiveSignature sig;
      int64_t entered_ns = 0;
      uint64_t caller = 0;
      LastCall op{true, 0, comm, low, true};
      if (al != cx.job.alignments().end() &&
          al->second.ReferenceAt(low, &sig, &entered_ns, nullptr, &caller)) {
        facts.collective = sig;
        op.call = sig.call;
        op.when_ns = entered_ns;
        op.caller = caller;
      }
      for (const auto& [q, c] : named)
        if (c->pending && c->oldest.has_seq && c->oldest.seq == low && c->oldest.call != f::kSend &&
            c->oldest.call != f::kRecv) {
          op = c->oldest;
          break;
        }
      facts.op = op;
      facts.completed = low;
      if (al != cx.job.alignments().end()) {
        for (const AlignedMember& m : al->second.members())
          if (!m.any || m.lo > low || m.hi < low)
            facts.arguments_lost.push_back(cx.Global(m.process, comm, m.comm_rank));
        std::sort(facts.arguments_lost.begin(), facts.arguments_lost.end());
      }
      AddNeverCompleted(cx, comm, nranks, ms, named, std::move(facts));
      continue;
    }
    // No collective left behind: a send or receive that never completed.
    if (cx.job.p2p().problems().size() > 0) {
      bool explained = false;
      for (const P2pProblem& pr : cx.job.p2p().problems()) explained |= pr.comm == comm;
      if (explained) continue;
    }
    std::vector<std::pair<int, const CommCompletion*>> named;
    for (const auto& m : ms)
      if (m.second->pending &&
          (m.second->oldest.call == f::kSend || m.second->oldest.call == f::kRecv))
        named.push_back(m);
    if (named.empty()) continue;
    NeverCompletedFacts facts;
    facts.by = NeverCompletedFacts::By::kTie;
    StoppedFirst(cx, &named, &facts.by);
    facts.op = named.front().second->oldest;
    facts.completed = named.front().second->completed;
    AddNeverCompleted(cx, comm, nranks, ms, named, std::move(facts));
  }
}

}  // namespace ncclwatch::decoder::diagnosis

// Processes that stopped living before the others (rank_died,
// rank_frozen), where no collective already named them.

#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"

namespace ncclwatch::decoder::diagnosis {

void FindStoppedRanks(DiagnosisContext& cx) {
  std::set<int> named;
  for (const Candidate& c : cx.candidates) {
    if (c.finding.kind == FindingKind::kRankDied || c.finding.kind == FindingKind::kRankFrozen)
      named.insert(c.finding.ranks.begin(), c.finding.ranks.end());
  }
  for (const ProcessRecord& p : cx.procs) {
    const int q = p.index;
    const Life life = cx.lives[q];
    // Frozen now, or died first.
    if (life != Life::kFrozen && !cx.DiedFirst(q)) continue;
    const int64_t gap = cx.StoppedFirstBy(q);
    if (named.count(p.rank)) continue;
    Candidate c;
    c.process = q;
    Finding& x = c.finding;
    StoppedRankFacts facts;
    x.kind = life == Life::kFrozen ? FindingKind::kRankFrozen : FindingKind::kRankDied;
    if (life == Life::kFrozen) {
      const char letter = cx.proc_state[q];
      facts.state = letter == 'T' || letter == 't' ? StoppedRankFacts::State::kStopped
                                                   : StoppedRankFacts::State::kHeartbeatStale;
      facts.proc_state = letter;
    }
    facts.signo = p.fate.kind == Fate::kSignal ? p.fate.signo : 0;
    facts.stopped_ns = cx.StoppedNs(q);
    facts.before_others_ns = gap;
    facts.doing = cx.Doing(q);
    facts.site = Site(q, facts.doing.caller);
    facts.waiting = cx.WaitingOthers(q);
    std::tie(facts.teardown_signo, facts.teardown_after_ns) = cx.TeardownAfter(q);
    std::optional<uint64_t> unused;
    cx.Locate(q, facts.doing.valid ? facts.doing.comm : 0, &x, &unused);
    x.when_ns = facts.stopped_ns;
    x.facts = std::move(facts);
    cx.candidates.push_back(std::move(c));
  }
}

}  // namespace ncclwatch::decoder::diagnosis

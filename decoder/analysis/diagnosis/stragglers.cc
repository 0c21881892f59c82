// Slow hosts, GPUs and links: a straggler warning per rank.

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"

namespace ncclwatch::decoder::diagnosis {

namespace {

// Slow links: a warning each, in `by_rank` under its (first) rank. Returns
// the (job, global rank) of every rank named.
std::set<std::pair<int, int>> LinkStragglers(DiagnosisContext& cx,
                                             std::map<std::pair<int, int>, Finding>* by_rank) {
  std::set<std::pair<int, int>> named;
  for (const LinkStraggler& link : cx.job.links().Stragglers()) {
    const SlowComm& c = link.comms.front();
    auto rank_of = [&](int process) {
      for (size_t i = 0; i < c.member_processes.size(); ++i)
        if (c.member_processes[i] == process)
          return cx.job.GlobalRank(process, c.comm, c.member_ranks[i]);
      return -1;
    };
    Finding x;
    x.kind = FindingKind::kStraggler;
    x.role = FindingRole::kWarning;
    x.comm = c.comm;
    x.seq = c.began_seq;
    x.nranks = cx.job.CommSize(c.comm);
    x.job = cx.job_of[link.processes.front()];
    x.phase = HangPhase::kStep;
    StragglerFacts facts;
    facts.cause = StragglerFacts::Cause::kLink;
    for (int p : link.processes) x.ranks.push_back(rank_of(p));
    std::sort(x.ranks.begin(), x.ranks.end());
    facts.rank = x.ranks.front();
    if (x.ranks.size() > 1) facts.link_ranks = x.ranks;
    static_cast<StragglerEvidence&>(facts) = c;
    x.when_ns = c.began_ns;
    facts.usual_ns = c.usual_ns;
    facts.kind_comms = c.kind_comms;
    for (size_t i = 1; i < link.comms.size(); ++i) facts.also_comms.push_back(link.comms[i].comm);
    std::set<std::string> hosts;
    for (int q : c.member_processes) hosts.insert(cx.procs[q].host);
    facts.hosts = static_cast<int>(hosts.size());
    x.facts = facts;
    for (int r : x.ranks) named.insert({x.job, r});
    by_rank->try_emplace({x.job, facts.rank}, std::move(x));
  }
  return named;
}

// Whether some member's GPU completed collective #seq of `comm` (its
// completion tracked): the communicator went on past it.
bool CompletedPast(const DiagnosisContext& cx, uint64_t comm, uint64_t seq) {
  for (size_t q = 0; q < cx.procs.size(); ++q)
    for (const CommCompletion& c : cx.Comms(static_cast<int>(q)))
      if (c.comm == comm && c.tracked && c.has_progress && c.completed > seq) return true;
  return false;
}

// Where each communicator's collectives stopped, as the collective
// families found it: the first number a rank never entered or died
// before, or whose count or collective the ranks disagreed on (a reduction
// operator or a datatype of one size runs on, with wrong results), and
// that no member's GPU completed. A collective completes on no rank before
// every member has issued it, so a host that enqueued late held the others
// back; past where the communicator stopped, the hosts enqueue with nothing
// completing (the GPUs wait at the stop, or the job is over), and who came
// last there held no one back: it says how busy each host was, not who
// slowed the job.
std::map<uint64_t, uint64_t> StoppedAt(const DiagnosisContext& cx) {
  std::map<uint64_t, uint64_t> at;
  for (const Candidate& c : cx.candidates) {
    const Finding& f = c.finding;
    const bool stops = f.kind == FindingKind::kMissingRank || f.kind == FindingKind::kRankDied ||
                       (f.kind == FindingKind::kCollectiveMismatch &&
                        (f.field == MismatchField::kCount || f.field == MismatchField::kOp));
    if (!stops || !f.comm || !f.seq || CompletedPast(cx, *f.comm, *f.seq)) continue;
    auto [it, fresh] = at.try_emplace(*f.comm, *f.seq);
    if (!fresh) it->second = std::min(it->second, *f.seq);
  }
  return at;
}

}  // namespace

void FindStragglers(DiagnosisContext& cx) {
  std::map<std::pair<int, int>, Finding> by_rank;  // (job, global rank)
  // Slow links (analysis/link_skew.h) first: the ranks of a slow link's
  // communicators wait on its collectives, so their hosts enqueue the
  // next ones late too; that is its link, not their hosts.
  std::set<std::pair<int, int>> slow_links = LinkStragglers(cx, &by_rank);
  // Slow GPUs next (analysis/gpu_skew.h): a rank whose GPU is slow and
  // whose host waits on it each step enqueues late too; its GPU is the
  // cause, and it is not named a host straggler as well.
  std::vector<GpuStraggler> gpus = cx.job.gpu_arrivals().Stragglers();
  std::set<std::pair<int, int>> slow_gpus;  // (job, global rank)
  for (const GpuStraggler& g : gpus)
    slow_gpus.insert({cx.job_of[g.process], cx.job.GlobalRank(g.process, g.comm, g.rank)});
  std::vector<std::pair<ArrivalStraggler, const GpuStraggler*>> all;
  for (const GpuStraggler& g : gpus) all.emplace_back(g, &g);
  // A host that came late only because it waited on its own GPU (which
  // waited on the slow GPU's data) is not a host straggler either: in a
  // job with a slow GPU, a rank whose late enqueues mostly came late
  // because its GPU finished late (GpuSkew::WaitedOnGpu) is left out.
  std::vector<ArrivalSpan> spans;
  const bool waits = !gpus.empty() || !slow_links.empty();
  if (waits) spans = cx.job.arrivals().Spans();
  // Lateness is compared only before where a communicator stopped.
  for (const ArrivalStraggler& s : cx.job.arrivals().Stragglers(StoppedAt(cx))) {
    const std::pair<int, int> who{cx.job_of[s.process],
                                  cx.job.GlobalRank(s.process, s.comm, s.rank)};
    if (slow_gpus.count(who) || slow_links.count(who)) continue;
    if (waits && cx.job.gpu_arrivals().ExplainsHostStraggler(s, spans)) continue;
    all.emplace_back(s, nullptr);
  }
  for (const auto& [s, gpu] : all) {
    if (gpu != nullptr &&
        slow_links.count({cx.job_of[s.process], cx.job.GlobalRank(s.process, s.comm, s.rank)}))
      continue;
    Finding x;
    x.kind = FindingKind::kStraggler;
    x.role = FindingRole::kWarning;
    x.comm = s.comm;
    x.seq = s.began_seq;
    x.nranks = cx.job.CommSize(s.comm);
    x.job = cx.job_of[s.process];
    x.when_ns = s.began_ns;
    x.phase = HangPhase::kStep;
    StragglerFacts facts;
    facts.rank = cx.job.GlobalRank(s.process, s.comm, s.rank);
    x.ranks = {facts.rank};
    static_cast<StragglerEvidence&>(facts) = s;
    if (gpu != nullptr) {
      facts.cause = StragglerFacts::Cause::kGpu;
      facts.host_late_ns = gpu->host_late_ns;
      facts.host_on_time = gpu->host_on_time;
    }
    const HostClocks::Among clocks = cx.job.clocks().Of(s.member_processes);
    facts.hosts = std::max(1, clocks.hosts);
    facts.clocks_aligned = facts.hosts > 1 && clocks.aligned;
    facts.clock_residual_ns = facts.clocks_aligned ? clocks.residual_ns : 0;
    x.facts = facts;
    auto [at, fresh] = by_rank.try_emplace({x.job, facts.rank}, x);
    if (fresh) continue;
    // The widest communicator it straggles in (the whole job waits there),
    // then the one with the most evidence; the others listed.
    StragglerFacts& kept = std::get<StragglerFacts>(at->second.facts);
    if (std::make_pair(facts.members, facts.times_last) >
        std::make_pair(kept.members, kept.times_last)) {
      facts.also_comms = std::move(kept.also_comms);
      facts.also_comms.push_back(at->second.comm.value_or(0));
      x.facts = facts;
      at->second = x;
    } else {
      kept.also_comms.push_back(s.comm);
    }
  }
  for (auto& [key, x] : by_rank) cx.warnings.push_back(std::move(x));
}

}  // namespace ncclwatch::decoder::diagnosis

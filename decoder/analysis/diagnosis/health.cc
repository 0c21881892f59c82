// A job where no family found a cause: healthy only when it is; otherwise
// what is known (rank_exit_error, killed_while_running, trace_overwritten,
// hang_unexplained, nccl_calls_unseen).

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"

namespace ncclwatch::decoder::diagnosis {

namespace {

// What a rank was doing when the job was seen hung or ended.
HangFacts::Group ActivityOf(const DiagnosisContext& cx, int q) {
  const ProcessRecord& p = cx.procs[q];
  HangFacts::Group g;
  g.ranks = {p.rank >= 0 ? p.rank : static_cast<int>(p.pid)};
  g.call = cx.Doing(q);
  const bool waiting = cx.Waiting(q);
  bool in_call = p.last.pending, stuck = false;
  for (const CommCompletion& c : cx.Comms(p.index)) {
    in_call |= c.in_call;
    stuck |= cx.Stuck(q, c);
  }
  const RankActivity waiting_as = in_call ? RankActivity::kInCall : RankActivity::kGpuPending;
  switch (cx.lives[q]) {
    case Life::kCleanExit:
      g.activity = waiting ? waiting_as : RankActivity::kExited;
      break;
    case Life::kErrorExit:
      g.activity = RankActivity::kExitedError;
      g.exit_code = p.fate.exit_code;
      break;
    case Life::kSignal:
      g.activity = waiting ? waiting_as : RankActivity::kSignal;
      g.signo = p.fate.signo;
      break;
    case Life::kGone:
      g.activity = waiting ? waiting_as : RankActivity::kKilled;
      break;
    case Life::kLive:
      g.activity = !waiting ? RankActivity::kIdle : stuck ? waiting_as : RankActivity::kProgressing;
      break;
    case Life::kFrozen:
    case Life::kStale:
      g.activity = waiting ? waiting_as : RankActivity::kIdle;
      break;
  }
  if (g.activity == RankActivity::kExited || g.activity == RankActivity::kKilled ||
      g.activity == RankActivity::kSignal || g.activity == RankActivity::kExitedError ||
      g.activity == RankActivity::kIdle) {
    g.call = p.last;
  }
  return g;
}

// A job its launcher or scheduler ended with a signal (a walltime, a
// cancel) while nothing in it was stuck: no operation or call had waited
// kTeardownRaceNs when the signal came. Said so, with the signal and each
// rank's last progress; no rank is blamed. Only where every rank's GPU
// completion and heartbeat were followed, its last NCCL call is in its
// trace, and its ring held its whole run or it made progress just before
// the signal (a ring that lost its start may have lost what waited).
// Returns whether it added it.
template <typename Add>
bool KilledWhileRunning(const DiagnosisContext& cx, size_t j, Add add) {
  const int64_t teardown = cx.TeardownNs(static_cast<int>(j));
  if (teardown <= 0) return false;
  KilledWhileRunningFacts facts;
  int64_t last_signal = 0;
  for (int q : cx.jobs[j]) {
    const ProcessRecord& p = cx.procs[q];
    if (cx.lives[q] != Life::kCleanExit && !cx.TornDown(q)) return false;
    if (!p.completion.AllTracked() || p.completion.beats == 0 || !p.last.valid) return false;
    for (const CommCompletion& c : cx.Comms(q))
      if (cx.Stuck(q, c)) return false;
    if (p.last.pending && teardown - p.last.when_ns >= kTeardownRaceNs) return false;
    KilledWhileRunningFacts::Rank r;
    r.rank = p.rank >= 0 ? p.rank : static_cast<int>(p.pid);
    r.last = p.last;
    r.finished = cx.lives[q] == Life::kCleanExit;
    r.progress_ns = p.last.valid ? p.last.when_ns : 0;
    for (const CommCompletion& c : cx.Comms(q))
      r.progress_ns = std::max(r.progress_ns, c.progress_ns);
    if (!r.finished) {
      r.before_signal_ns = std::max<int64_t>(p.fate.signal_ns - r.progress_ns, 0);
      if (p.lost_start && r.before_signal_ns >= kTeardownRaceNs) return false;
      last_signal = std::max(last_signal, p.fate.signal_ns);
      if (facts.signo == 0 || p.fate.signal_ns == teardown) facts.signo = p.fate.signo;
    }
    facts.ranks.push_back(r);
  }
  std::sort(facts.ranks.begin(), facts.ranks.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  facts.signal_ns = teardown;
  facts.spread_ns = last_signal - teardown;
  Finding x;
  x.kind = FindingKind::kKilledWhileRunning;
  x.when_ns = teardown;
  x.facts = std::move(facts);
  add(std::move(x), cx.jobs[j].front());
  return true;
}

Finding BlindSpot(const DiagnosisContext& cx, FindingKind kind, const std::vector<int>& processes) {
  Finding x;
  x.kind = kind;
  BlindSpotFacts facts;
  for (int q : processes) {
    const ProcessRecord& p = cx.procs[q];
    x.ranks.push_back(p.rank >= 0 ? p.rank : static_cast<int>(p.pid));
    facts.pids.push_back(p.pid);
    if (kind == FindingKind::kNcclCallsUnseen) {
      if (facts.nccl_path.empty()) facts.nccl_path = p.nccl_path;
      continue;
    }
    // The ring held the newest slots; the whole run claimed ring_claimed.
    const TraceFileStats& st = p.stats;
    const uint64_t held = st.ring_claimed - std::min(st.ring_claimed, st.ring_overwritten);
    const uint64_t ring = held * NCCLWATCH_SLOT_BYTES;
    const uint64_t needed = st.ring_claimed * NCCLWATCH_SLOT_BYTES;
    if (needed > facts.needed_bytes) {
      facts.ring_bytes = ring;
      facts.needed_bytes = needed;
      facts.overwritten = st.ring_overwritten + st.lapped_slots;
      facts.span_s = p.last_ns > p.first_ns ? static_cast<double>(p.last_ns - p.first_ns) / 1e9 : 0;
      facts.records_per_s =
          facts.span_s > 0 ? static_cast<double>(st.ring_claimed) / facts.span_s : 0;
    }
  }
  std::sort(x.ranks.begin(), x.ranks.end());
  x.when_ns = cx.end_ns;
  x.facts = std::move(facts);
  return x;
}

}  // namespace

void FindBlindSpots(DiagnosisContext& cx) {
  cx.overwritten.assign(cx.jobs.size(), {});
  cx.unseen.assign(cx.jobs.size(), {});
  for (const ProcessRecord& p : cx.procs) {
    if (p.lost_start) cx.overwritten[cx.job_of[p.index]].push_back(p.index);
    // A process whose trace says why its NCCL could not be seen gets the
    // nccl_not_visible note for it instead.
    if (p.nccl_loaded && !p.nccl_calls && !p.rank_source.empty() && p.not_seen.empty())
      cx.unseen[cx.job_of[p.index]].push_back(p.index);
  }
}

bool Bystanders(const DiagnosisContext& cx, size_t j) {
  for (int q : cx.jobs[j]) {
    const ProcessRecord& p = cx.procs[q];
    if (p.nccl_calls || !p.rendezvous.traced_from_load || !p.rank_source.empty()) return false;
  }
  return !cx.jobs[j].empty();
}

void CheckHealth(DiagnosisContext& cx, size_t j, std::vector<Candidate>* kept) {
  const std::vector<int>& members = cx.jobs[j];
  std::vector<int> error_exit;
  bool unhealthy = false;
  for (int q : members) {
    switch (cx.lives[q]) {
      case Life::kCleanExit:
        unhealthy |= cx.Waiting(q);
        break;
      case Life::kErrorExit:
        error_exit.push_back(q);
        break;
      case Life::kLive:
        for (const CommCompletion& c : cx.Comms(q)) unhealthy |= cx.Stuck(q, c);
        break;
      default:
        unhealthy = true;
    }
  }
  auto add = [&](Finding x, int q) {
    Candidate c;
    c.tier = 4;
    c.process = q;
    x.job = static_cast<int>(j);
    c.finding = std::move(x);
    kept->push_back(std::move(c));
  };
  for (int q : error_exit) {
    const ProcessRecord& p = cx.procs[q];
    Finding x;
    x.kind = FindingKind::kRankExitError;
    ExitErrorFacts facts;
    facts.exit_code = p.fate.exit_code;
    facts.signo = p.fate.signo;
    facts.last = p.last;
    facts.tracked = p.completion.AllTracked();
    facts.work_done = facts.tracked && !cx.Waiting(q);
    for (int o : members) {
      if (o != q && cx.lives[o] != Life::kCleanExit && cx.lives[o] != Life::kErrorExit &&
          cx.procs[o].AliveUntilNs() >= p.fate.when_ns) {
        facts.ended_after.push_back(cx.procs[o].rank);
      }
    }
    std::sort(facts.ended_after.begin(), facts.ended_after.end());
    if (cx.Waiting(q)) {  // where it left work behind
      std::optional<uint64_t> unused;
      const LastCall doing = cx.Doing(q);
      cx.Locate(q, doing.valid ? doing.comm : 0, &x, &unused);
      x.phase.reset();
    } else {
      x.ranks = {p.rank >= 0 ? p.rank : static_cast<int>(p.pid)};
    }
    x.when_ns = p.fate.when_ns;
    x.facts = std::move(facts);
    add(std::move(x), q);
  }
  if (!error_exit.empty()) return;
  if (unhealthy && KilledWhileRunning(cx, j, add)) return;
  if (unhealthy && !cx.overwritten[j].empty())
    add(BlindSpot(cx, FindingKind::kTraceOverwritten, cx.overwritten[j]),
        cx.overwritten[j].front());
  if (unhealthy) {
    Finding x;
    x.kind = FindingKind::kHangUnexplained;
    HangFacts facts;
    facts.live = cx.job_live[j];
    facts.tracked = true;
    std::map<std::tuple<RankActivity, uint32_t, uint64_t, uint64_t, bool, int, int, int>,
             HangFacts::Group>
        groups;
    std::set<std::pair<uint64_t, uint64_t>> waited_at;
    std::optional<HangPhase> phase;
    for (int q : members) {
      facts.tracked &= cx.procs[q].completion.AllTracked();
      HangFacts::Group g = ActivityOf(cx, q);
      const bool waiting =
          g.activity == RankActivity::kInCall || g.activity == RankActivity::kGpuPending;
      if (waiting) {
        x.ranks.push_back(g.ranks.front());
        waited_at.insert({g.call.comm, g.call.has_seq ? g.call.seq : UINT64_MAX});
        if (!phase && g.call.valid) phase = PhaseOfCall(g.call);
      }
      const auto key = std::make_tuple(g.activity, g.call.call, g.call.comm, g.call.seq,
                                       g.call.has_seq, g.call.peer, g.exit_code, g.signo);
      auto [it, fresh] = groups.try_emplace(key, g);
      if (!fresh) it->second.ranks.push_back(g.ranks.front());
    }
    if (x.ranks.empty()) {
      for (int q : members) x.ranks.push_back(cx.procs[q].rank);
    }
    std::sort(x.ranks.begin(), x.ranks.end());
    if (waited_at.size() == 1 && waited_at.begin()->first != 0) {
      x.comm = waited_at.begin()->first;
      x.nranks = cx.job.CommSize(*x.comm);
      if (waited_at.begin()->second != UINT64_MAX) x.seq = waited_at.begin()->second;
    }
    for (auto& [key, g] : groups) {
      std::sort(g.ranks.begin(), g.ranks.end());
      facts.groups.push_back(std::move(g));
    }
    std::sort(facts.groups.begin(), facts.groups.end(),
              [](const HangFacts::Group& a, const HangFacts::Group& b) {
                return a.ranks.front() < b.ranks.front();
              });
    x.phase = phase;
    x.when_ns = cx.end_ns;
    x.facts = std::move(facts);
    add(std::move(x), members.front());
  }
  if (!cx.unseen[j].empty())
    add(BlindSpot(cx, FindingKind::kNcclCallsUnseen, cx.unseen[j]), cx.unseen[j].front());
}

}  // namespace ncclwatch::decoder::diagnosis

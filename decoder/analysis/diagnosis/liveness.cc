// How each process stands: its life, when it stopped, whether its work is
// stuck, whether the launcher tore its job down, and its completion counts
// reconciled with the other members' (DiagnosisContext's liveness).

#include <algorithm>

#include "analysis/diagnosis/context.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::diagnosis {

namespace f = ::ncclwatch::fields;

void DiagnosisContext::Lives() {
  lives.assign(procs.size(), Life::kGone);
  proc_state.assign(procs.size(), 0);
  tracked = !procs.empty();
  for (const ProcessRecord& p : procs) {
    lives[p.index] = LifeOf(p);
    tracked &= p.completion.AllTracked();
  }
  job_live.assign(jobs.size(), false);
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (int q : jobs[j])
      if (lives[q] == Life::kLive || lives[q] == Life::kFrozen) job_live[j] = true;
    // A stale heartbeat is a sign of trouble only beside a fresh one (or a
    // process seen alive); among stale ones only, the job is over.
    for (int q : jobs[j])
      if (lives[q] == Life::kStale) lives[q] = job_live[j] ? Life::kFrozen : Life::kGone;
    live |= job_live[j];
  }
}

Life DiagnosisContext::LifeOf(const ProcessRecord& p) {
  if (p.fate.kind == Fate::kExited) {
    if (p.fate.exit_code == 0) return Life::kCleanExit;
    // An error code after a signal it handled (SIGTERM, 143): the launcher ended it.
    return p.fate.signo != 0 ? Life::kSignal : Life::kErrorExit;
  }
  if (p.fate.kind == Fate::kSignal) return Life::kSignal;
  const ProcessCompletion& c = p.completion;
  const bool beats = c.beats > 0 && observed.now_ns > 0;
  const bool fresh = beats && SeenNs(p.index) - c.last_beat_ns <= kFreshIntervals * c.IntervalNs();
  if (const ProcessObservation* o = observed.Find({p.host, p.pid, p.created_ns})) {
    proc_state[p.index] = o->letter;
    switch (o->state) {
      case ProcessObservation::State::kStopped:
        return Life::kFrozen;
      case ProcessObservation::State::kRunning:
        return beats && !fresh ? Life::kFrozen : Life::kLive;
      default:
        return Life::kGone;
    }
  }
  if (!beats) return Life::kGone;
  return fresh ? Life::kLive : Life::kStale;
}

int64_t DiagnosisContext::StoppedNs(int q) const {
  const ProcessRecord& p = procs[q];
  if (p.fate.kind == Fate::kSignal && p.fate.when_ns > 0) return p.fate.when_ns;
  return p.AliveUntilNs();
}

int64_t DiagnosisContext::OthersAliveUntil(int q) const {
  int64_t until = 0;
  for (int o : jobs[job_of[q]]) {
    if (o == q || procs[o].completion.beats == 0) continue;
    if (lives[o] == Life::kLive) until = std::max(until, SeenNs(o));
    until = std::max(until, procs[o].AliveUntilNs());
  }
  return until;
}

int64_t DiagnosisContext::StoppedFirstBy(int q) const {
  const ProcessRecord& p = procs[q];
  if (p.completion.beats == 0) return 0;
  const int64_t others = OthersAliveUntil(q);
  const int64_t gap = others - StoppedNs(q);
  return others > 0 && gap > kFirstDeathIntervals * static_cast<double>(p.completion.IntervalNs())
             ? gap
             : 0;
}

bool DiagnosisContext::Stuck(int q, const CommCompletion& c) const {
  if (!c.pending) return false;
  if (c.stalled) return true;
  if (lives[q] != Life::kLive) {
    // Where completion and liveness were followed, an operation that was
    // in flight when the launcher ended the job is not stuck.
    const int64_t teardown = TeardownNs(job_of[q]);
    if (teardown <= 0 || !c.tracked || procs[q].completion.beats == 0) return true;
    const int64_t since = std::max(c.progress_ns, c.oldest.when_ns);
    if (teardown - since < kTeardownRaceNs) return false;
    const LastCall& waits = c.oldest;
    if (!waits.has_seq || waits.call == f::kSend || waits.call == f::kRecv) return true;
    return teardown - CollectiveFinishedNs(job_of[q], c.comm, waits.seq) >= kTeardownRaceNs;
  }
  const int64_t since = std::max(c.progress_ns, c.oldest.when_ns);
  return SeenNs(q) - since > kLiveStuckNs;
}

int64_t DiagnosisContext::CollectiveFinishedNs(int j, uint64_t comm, uint64_t seq) const {
  const auto it = finished_.find({j, comm});
  if (it == finished_.end()) return 0;
  const std::vector<Finished>& by_count = it->second;
  const auto past = std::upper_bound(by_count.begin(), by_count.end(), seq,
                                     [](uint64_t s, const Finished& f) { return s < f.completed; });
  return past == by_count.end() ? 0 : past->latest_ns;
}

void DiagnosisContext::IndexFinished() {
  finished_.clear();
  for (const ProcessRecord& p : procs)
    for (const CommCompletion& c : p.completion.comms)
      if (c.tracked && c.has_progress && c.comm != 0)
        finished_[{job_of[p.index], c.comm}].push_back({c.completed, c.completed_ns});
  for (auto& [key, by_count] : finished_) {
    std::sort(by_count.begin(), by_count.end(),
              [](const Finished& a, const Finished& b) { return a.completed < b.completed; });
    int64_t latest = 0;
    for (auto it = by_count.rbegin(); it != by_count.rend(); ++it)
      it->latest_ns = latest = std::max(latest, it->latest_ns);
  }
}

int64_t DiagnosisContext::SeenNs(int q) const {
  const int64_t read = procs[q].read_ns;
  return read > 0 ? std::min(read, observed.now_ns) : observed.now_ns;
}

LastCall DiagnosisContext::Doing(int q) const {
  const ProcessRecord& p = procs[q];
  const CommCompletion* oldest = nullptr;
  for (const CommCompletion& c : Comms(p.index))
    if (c.pending && (oldest == nullptr || c.oldest.when_ns < oldest->oldest.when_ns)) oldest = &c;
  return oldest != nullptr ? oldest->oldest : p.last;
}

bool DiagnosisContext::Blind(int q) const { return !procs[q].completion.device_errors.empty(); }

bool DiagnosisContext::DiedFirst(int q) const {
  const Life life = lives[q];
  if (life != Life::kSignal && life != Life::kGone && life != Life::kFrozen) return false;
  return (life == Life::kSignal && CrashSignal(procs[q].fate.signo)) || StoppedFirstBy(q) > 0 ||
         TeardownAfter(q).first != 0;
}

bool DiagnosisContext::TornDown(int q) const {
  const Fate& fate = procs[q].fate;
  if (fate.signo == 0 || CrashSignal(fate.signo) || fate.signal_ns <= 0) return false;
  return fate.kind == Fate::kSignal || (fate.kind == Fate::kExited && fate.exit_code != 0);
}

int64_t DiagnosisContext::TeardownNs(int j) const {
  if (job_live[j]) return 0;
  int64_t first = INT64_MAX;
  for (int q : jobs[j]) {
    if (lives[q] == Life::kCleanExit) continue;
    if (TornDown(q)) {
      first = std::min(first, procs[q].fate.signal_ns);
    } else if (TeardownAfter(q).first == 0) {
      return 0;
    }
  }
  return first == INT64_MAX ? 0 : first;
}

std::pair<int, int64_t> DiagnosisContext::TeardownAfter(int q) const {
  if (lives[q] != Life::kGone || procs[q].fate.kind != Fate::kNoEnd ||
      procs[q].completion.beats == 0)
    return {0, 0};
  const int64_t last = procs[q].AliveUntilNs();
  int signo = 0;
  int64_t first = INT64_MAX;
  for (int o : jobs[job_of[q]]) {
    if (o == q || lives[o] == Life::kCleanExit) continue;
    if (!TornDown(o) || procs[o].fate.signal_ns < last) return {0, 0};
    if (procs[o].fate.signal_ns < first) {
      first = procs[o].fate.signal_ns;
      signo = procs[o].fate.signo;
    }
  }
  return signo != 0 ? std::make_pair(signo, first - last) : std::make_pair(0, int64_t{0});
}

void DiagnosisContext::Reconcile() {
  comms_.clear();
  for (const ProcessRecord& p : procs) comms_.push_back(p.completion.comms);
  std::vector<bool> short_count(procs.size(), false);
  for (const ProcessRecord& p : procs) short_count[p.index] = Blind(p.index) || DiedFirst(p.index);
  for (const ProcessRecord& p : procs) {
    if (!short_count[p.index]) continue;
    for (CommCompletion& c : comms_[p.index]) {
      if (!c.tracked || c.comm == 0) continue;
      std::optional<uint64_t> floor;
      for (const ProcessRecord& o : procs) {
        if (short_count[o.index]) continue;
        for (const CommCompletion& oc : o.completion.comms)
          if (oc.comm == c.comm && oc.tracked && oc.has_progress)
            floor = std::min(floor.value_or(UINT64_MAX), oc.completed);
      }
      if (floor) RaiseCompleted(*floor, &c);
    }
  }
}

bool DiagnosisContext::Waiting(int q) const {
  for (const CommCompletion& c : Comms(q))
    if (c.pending) return true;
  return procs[q].last.pending;
}

}  // namespace ncclwatch::decoder::diagnosis

#include "analysis/diagnosis.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "analysis/concurrent_ranks.h"
#include "analysis/init_failure.h"
#include "analysis/setup_notes.h"
#include "knowledge/nccl_semantics.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;

// A finding that may become the root cause, with the process it is about.
// The lowest tier wins, then the earliest: tier 0 a CUDA error, tier 1 what
// a rank did or suffered (mismatches, deaths, asynchronous errors), tier 2
// an operation that never completed, tier 3 a rank missing from a collective
// because its GPU never finished the one before, tier 4 what is said when
// nothing else is.
struct Candidate {
  Finding finding;
  int process = -1;
  int tier = 1;
};

// A process without an end record whose heartbeat is at most this many
// intervals old is live.
constexpr int64_t kFreshIntervals = 3;
// A process whose life ended more than this many intervals before the
// others' stopped living first: heartbeats are discrete, so a gap of two
// intervals (two beats missed) measures as 2 +- jitter.
constexpr double kFirstDeathIntervals = 1.5;
// Live: an operation pending this long with nothing completed since is stuck
// (unless the shim's watchdog said so sooner, with a Stall).
constexpr int64_t kLiveStuckNs = 10'000'000'000;
// Post-mortem, in a job its launcher or scheduler ended with a signal (a
// walltime, a cancel, the teardown after one rank died): what had waited less
// than this when the signal came was in flight, not stuck, and a rank that
// far behind was merely behind (as NotYet is, live). A hang caught this
// early cannot be told from a running job: it is reported as killed while
// running, which says so.
constexpr int64_t kTeardownRaceNs = 1'000'000'000;

// How a process stands at the end of its trace, or now.
enum class Life {
  kCleanExit,  // exited with code 0
  kErrorExit,  // exited with another code
  kSignal,     // a signal ended it
  kLive,       // no end; alive now (fresh heartbeat, or running on this host)
  kFrozen,     // no end; exists and is stopped, or its heartbeat went stale while it exists
  kStale,      // no end; its heartbeat is stale and it cannot be looked at (another host)
  kGone,       // no end; post-mortem, or its process is gone
};

bool IsInitCall(uint32_t call) {
  return call == f::kCommInitRank || call == f::kCommInitRankConfig || call == f::kCommInitAll ||
         call == f::kCommInitRankScalable || call == f::kCommSplit || call == f::kCommShrink ||
         call == f::kGetUniqueId;
}

bool IsEndCall(uint32_t call) {
  return call == f::kCommFinalize || call == f::kCommDestroy || call == f::kCommAbort ||
         call == f::kCommRevoke;
}

// Where a call waits, as the DDP hang checklist puts it.
HangPhase PhaseOfCall(const LastCall& c) {
  if (IsInitCall(c.call)) return HangPhase::kStartup;
  if (IsEndCall(c.call)) return HangPhase::kTeardown;
  if (c.has_seq && c.seq == 0 && c.call != f::kSend && c.call != f::kRecv)
    return HangPhase::kStartup;
  return HangPhase::kStep;
}

// Hardware faults among CUDA's errors; the rest are a kernel's or the program's.
bool HardwareError(const std::string& name) {
  for (const char* n :
       {"CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_NVLINK_UNCORRECTABLE", "CUDA_ERROR_DEVICE_UNAVAILABLE",
        "CUDA_ERROR_DEVICE_NOT_LICENSED", "CUDA_ERROR_SYSTEM_NOT_READY", "CUDA_ERROR_UNKNOWN"}) {
    if (name == n) return true;
  }
  return false;
}

bool CrashSignal(int signo) {
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL ||
         signo == SIGABRT || signo == SIGSYS || signo == SIGTRAP;
}

class Diagnoser {
 public:
  Diagnoser(const JobAnalysis& job, const LivenessObservation& observed)
      : job_(job), procs_(job.processes()), observed_(observed) {}

  Diagnosis Run() {
    ClusterJobs();
    for (const ProcessFacts& p : procs_) out_.end_ns = std::max(out_.end_ns, p.last_ns);
    Lives();
    Reconcile();
    for (const auto& [comm, alignment] : job_.alignments()) {
      if (comm == 0) continue;
      DiagnoseCommunicator(comm, alignment);
    }
    PointToPoint();
    Signals();
    Orders();
    Stragglers();
    SkippedCreation();
    Init();
    Rendezvous();
    DeviceErrors();
    StoppedRanks();
    NeverCompleted();
    Unreadable();
    SummaryGapsNote();
    Duplicates();
    Setup();
    NotVisible();
    BlindSpots();
    Conclude();
    Pending();
    return out_;
  }

 private:
  // ------------------------------------------------------------ liveness

  void Lives() {
    life_.assign(procs_.size(), Life::kGone);
    proc_state_.assign(procs_.size(), 0);
    out_.tracked = !procs_.empty();
    for (const ProcessFacts& p : procs_) {
      life_[p.index] = LifeOf(p);
      out_.tracked &= p.completion.AllTracked();
    }
    job_live_.assign(out_.jobs.size(), false);
    for (size_t j = 0; j < out_.jobs.size(); ++j) {
      for (int q : out_.jobs[j])
        if (life_[q] == Life::kLive || life_[q] == Life::kFrozen) job_live_[j] = true;
      // A stale heartbeat is a sign of trouble only beside a fresh one (or a
      // process seen alive); among stale ones only, the job is over.
      for (int q : out_.jobs[j])
        if (life_[q] == Life::kStale) life_[q] = job_live_[j] ? Life::kFrozen : Life::kGone;
      out_.live |= job_live_[j];
    }
  }

  Life LifeOf(const ProcessFacts& p) {
    if (p.fate.kind == Fate::kExited) {
      if (p.fate.exit_code == 0) return Life::kCleanExit;
      // An error code after a signal it handled (SIGTERM, 143): the launcher ended it.
      return p.fate.signo != 0 ? Life::kSignal : Life::kErrorExit;
    }
    if (p.fate.kind == Fate::kSignal) return Life::kSignal;
    const ProcessCompletion& c = p.completion;
    const bool beats = c.beats > 0 && observed_.now_ns > 0;
    const bool fresh =
        beats && SeenNs(p.index) - c.last_beat_ns <= kFreshIntervals * c.IntervalNs();
    if (const ProcessObservation* o = observed_.Find({p.host, p.pid, p.created_ns})) {
      proc_state_[p.index] = o->letter;
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

  bool Ended(int q) const {
    return life_[q] == Life::kCleanExit || life_[q] == Life::kErrorExit ||
           life_[q] == Life::kSignal || life_[q] == Life::kGone;
  }

  // When `q` stopped living (realtime): its signal, else its last sign of life.
  int64_t StoppedNs(int q) const {
    const ProcessFacts& p = procs_[q];
    if (p.fate.kind == Fate::kSignal && p.fate.when_ns > 0) return p.fate.when_ns;
    return p.AliveUntilNs();
  }

  // The latest sign of life of the other processes of `q`'s job with
  // heartbeats (now, if one of them is alive), 0 when none has any.
  int64_t OthersAliveUntil(int q) const {
    int64_t until = 0;
    for (int o : out_.jobs[job_of_[q]]) {
      if (o == q || procs_[o].completion.beats == 0) continue;
      if (life_[o] == Life::kLive) until = std::max(until, SeenNs(o));
      until = std::max(until, procs_[o].AliveUntilNs());
    }
    return until;
  }

  // How long before the others `q` stopped living, when that is more than
  // two heartbeat intervals (and both sides have heartbeats); else 0.
  int64_t StoppedFirstBy(int q) const {
    const ProcessFacts& p = procs_[q];
    if (p.completion.beats == 0) return 0;
    const int64_t others = OthersAliveUntil(q);
    const int64_t gap = others - StoppedNs(q);
    return others > 0 && gap > kFirstDeathIntervals * static_cast<double>(p.completion.IntervalNs())
               ? gap
               : 0;
  }

  // Whether `q`'s communicator rank `c` waits on work that does not move:
  // post-mortem, anything pending when a process that did not exit cleanly
  // ended (or at a clean exit); live, pending with nothing completed for a
  // while, or a Stall since the last completion.
  bool Stuck(int q, const CommCompletion& c) const {
    if (!c.pending) return false;
    if (c.stalled) return true;
    if (life_[q] != Life::kLive) {
      // Where completion and liveness were followed, an operation that was
      // in flight when the launcher ended the job is not stuck.
      const int64_t teardown = TeardownNs(job_of_[q]);
      return teardown <= 0 || !c.tracked || procs_[q].completion.beats == 0 ||
             teardown - std::max(c.progress_ns, c.oldest.when_ns) >= kTeardownRaceNs;
    }
    const int64_t since = std::max(c.progress_ns, c.oldest.when_ns);
    return SeenNs(q) - since > kLiveStuckNs;
  }

  // Live: the time `q` was seen at, for its heartbeat's freshness and how
  // long its work has waited: when its trace was read (reading the others
  // may take long on a busy machine, and its records stop at that moment),
  // at most the observation's time.
  int64_t SeenNs(int q) const {
    const int64_t read = procs_[q].read_ns;
    return read > 0 ? std::min(read, observed_.now_ns) : observed_.now_ns;
  }

  // `q`'s oldest pending operation (any communicator), or its last call.
  LastCall Doing(int q) const {
    const ProcessFacts& p = procs_[q];
    const CommCompletion* oldest = nullptr;
    for (const CommCompletion& c : Comms(p.index))
      if (c.pending && (oldest == nullptr || c.oldest.when_ns < oldest->oldest.when_ns))
        oldest = &c;
    return oldest != nullptr ? oldest->oldest : p.last;
  }

  // Whether `q`'s GPU reported a sticky CUDA error: every query of its
  // markers fails from then on, so its own completion count stopped short.
  bool Blind(int q) const { return !procs_[q].completion.device_errors.empty(); }

  // Whether `q` stopped living before the others of its job: a crash, an
  // end (a signal, gone, frozen) more than two heartbeat intervals before
  // theirs, or a death with nothing recorded before the launcher's teardown.
  bool DiedFirst(int q) const {
    const Life life = life_[q];
    if (life != Life::kSignal && life != Life::kGone && life != Life::kFrozen) return false;
    return (life == Life::kSignal && CrashSignal(procs_[q].fate.signo)) || StoppedFirstBy(q) > 0 ||
           TeardownAfter(q).first != 0;
  }

  // Whether a signal that is not a crash (the launcher's SIGTERM, a
  // scheduler's SIGINT) ended `q`, recorded: it did not survive it, or it
  // exited on it.
  bool TornDown(int q) const {
    const Fate& fate = procs_[q].fate;
    if (fate.signo == 0 || CrashSignal(fate.signo) || fate.signal_ns <= 0) return false;
    return fate.kind == Fate::kSignal || (fate.kind == Fate::kExited && fate.exit_code != 0);
  }

  // When the launcher (or scheduler) ended job `j` with a signal: the first
  // such signal recorded, where every process of the job that did not exit
  // cleanly recorded one, or died with nothing recorded before them. 0 when
  // the job was not ended so (all SIGKILLed, a crash, still running).
  int64_t TeardownNs(int j) const {
    if (job_live_[j]) return 0;
    int64_t first = INT64_MAX;
    for (int q : out_.jobs[j]) {
      if (life_[q] == Life::kCleanExit) continue;
      if (TornDown(q)) {
        first = std::min(first, procs_[q].fate.signal_ns);
      } else if (TeardownAfter(q).first == 0) {
        return 0;
      }
    }
    return first == INT64_MAX ? 0 : first;
  }

  // Whether candidate `c` is only that a rank was behind when the launcher
  // ended the job: the others had waited for it less than kTeardownRaceNs.
  bool BehindAtTeardown(const Candidate& c) const {
    if (c.process < 0) return false;
    const int64_t teardown = TeardownNs(job_of_[c.process]);
    if (teardown <= 0 || teardown - c.finding.when_ns >= kTeardownRaceNs) return false;
    if (const auto* m = std::get_if<MissingRankFacts>(&c.finding.facts)) {
      return c.finding.kind == FindingKind::kMissingRank &&
             (m->departure.how == Departure::kAliveIdle ||
              m->departure.how == Departure::kAliveUntilSignal);
    }
    if (const auto* p2p = std::get_if<P2pMismatchFacts>(&c.finding.facts)) {
      return p2p->problem == P2pMismatchFacts::Problem::kSendNotReceived ||
             p2p->problem == P2pMismatchFacts::Problem::kReceiveNotSent;
    }
    return false;
  }

  // When `q` ended with nothing recorded (no end, no signal: SIGKILL, the
  // OOM killer) while every other process of its job that did not exit
  // cleanly recorded the signal that ended it, at or after `q`'s last sign
  // of life: the signal and how long after. Launchers tear a job down when
  // one worker dies (torchrun, srun and mpirun SIGTERM the rest), so the one
  // without a recorded signal died first, however short the gap. {0, 0}
  // otherwise.
  // (Only where `q` has heartbeats: its watcher ran, and its trace is one
  // that records the signals that end it.)
  std::pair<int, int64_t> TeardownAfter(int q) const {
    if (life_[q] != Life::kGone || procs_[q].fate.kind != Fate::kNoEnd ||
        procs_[q].completion.beats == 0)
      return {0, 0};
    const int64_t last = procs_[q].AliveUntilNs();
    int signo = 0;
    int64_t first = INT64_MAX;
    for (int o : out_.jobs[job_of_[q]]) {
      if (o == q || life_[o] == Life::kCleanExit) continue;
      if (!TornDown(o) || procs_[o].fate.signal_ns < last) return {0, 0};
      if (procs_[o].fate.signal_ns < first) {
        first = procs_[o].fate.signal_ns;
        signo = procs_[o].fate.signo;
      }
    }
    return signo != 0 ? std::make_pair(signo, first - last) : std::make_pair(0, int64_t{0});
  }

  // `q`'s communicator ranks' completion, as Reconcile left it.
  const std::vector<CommCompletion>& Comms(int q) const { return comms_[q]; }

  // A process whose own completion counts stopped short of the truth: what
  // its watcher had not yet seen complete (up to a poll interval of work,
  // many collectives on a fast GPU) when its GPU faulted (Blind) or it
  // stopped living before the others stays uncounted. The other members'
  // counts bound its own from below, since a collective completes on none
  // of them unless every member's GPU ran it: its counts are raised to
  // theirs. (A live rank whose count lags stays as it is: its GPU may truly
  // wait there, as behind a dead receive path.)
  void Reconcile() {
    comms_.clear();
    for (const ProcessFacts& p : procs_) comms_.push_back(p.completion.comms);
    std::vector<bool> short_count(procs_.size(), false);
    for (const ProcessFacts& p : procs_)
      short_count[p.index] = Blind(p.index) || DiedFirst(p.index);
    for (const ProcessFacts& p : procs_) {
      if (!short_count[p.index]) continue;
      for (CommCompletion& c : comms_[p.index]) {
        if (!c.tracked || c.comm == 0) continue;
        std::optional<uint64_t> floor;
        for (const ProcessFacts& o : procs_) {
          if (short_count[o.index]) continue;
          for (const CommCompletion& oc : o.completion.comms)
            if (oc.comm == c.comm && oc.tracked && oc.has_progress)
              floor = std::min(floor.value_or(UINT64_MAX), oc.completed);
        }
        if (floor) RaiseCompleted(*floor, &c);
      }
    }
  }

  bool Waiting(int q) const {
    for (const CommCompletion& c : Comms(q))
      if (c.pending) return true;
    return procs_[q].last.pending;
  }

  void ClusterJobs() {
    std::vector<int> parent(procs_.size());
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    std::map<uint64_t, int> first;
    for (const ProcessFacts& p : procs_) {
      for (const CommMembership& m : p.comms) {
        if (m.comm == 0) continue;
        auto [it, fresh] = first.emplace(m.comm, p.index);
        if (!fresh) parent[find(p.index)] = find(it->second);
      }
    }
    // The process that made a communicator's unique id hosts its bootstrap
    // root, and belongs to that communicator's job even when it never joined
    // it (it may have exited before the others started).
    for (const ProcessFacts& p : procs_) {
      if (p.init.made_unique_id == 0) continue;
      if (auto it = first.find(p.init.made_unique_id); it != first.end())
        parent[find(p.index)] = find(it->second);
    }
    // A job whose communicators never formed (its ranks disagreed on the
    // root, say) shares none: its processes are the launcher's ranks of one
    // job id, or of one program and world size that ran at the same time.
    std::map<std::string, int> by_job_id;
    for (const ProcessFacts& p : procs_) {
      if (p.job_id.empty()) continue;
      auto [it, fresh] = by_job_id.emplace(p.job_id, p.index);
      if (!fresh) parent[find(p.index)] = find(it->second);
    }
    // Ranks stuck before NCCL (in their rendezvous) may disagree on the
    // world size itself: those are one job too. Two processes of the same
    // launcher, program and world size (or both before NCCL) that ran at
    // the same time as different ranks are one job (analysis/
    // concurrent_ranks.h: a sweep in time, not every pair).
    auto before_nccl = [](const ProcessFacts& p) {
      return p.comms.empty() && p.rendezvous.traced_from_load;
    };
    // Class key: (rank source, program, has a host, world size or -1 for
    // the class of those before NCCL, whatever their size).
    std::map<std::tuple<std::string, std::string, bool, int32_t>, std::vector<int>> classes;
    for (const ProcessFacts& a : procs_) {
      if (!a.job_id.empty() || a.rank_source.empty() || a.world_size <= 0) continue;
      classes[{a.rank_source, a.exe, a.host.empty(), a.world_size}].push_back(a.index);
      if (before_nccl(a)) classes[{a.rank_source, a.exe, a.host.empty(), -1}].push_back(a.index);
    }
    for (const auto& entry : classes) {
      const std::vector<int>& members = entry.second;  // (a lambda takes no structured binding)
      std::vector<RankSpan> spans;
      for (int q : members)
        spans.push_back({procs_[q].first_ns, procs_[q].last_ns, procs_[q].rank});
      JoinConcurrentRanks(spans,
                          [&](size_t a, size_t b) { parent[find(members[b])] = find(members[a]); });
    }
    // torchrun's agents (no rank: analysis/rendezvous.h) of one program that
    // ran at the same time are one job, their node ranks told apart as ranks
    // are (an agent whose node is not known, c10d's, counts as a node of its
    // own).
    std::map<std::pair<std::string, bool>, std::vector<int>> agents;
    for (const ProcessFacts& a : procs_)
      if (a.rendezvous.agent && a.job_id.empty())
        agents[{a.exe, a.host.empty()}].push_back(a.index);
    for (const auto& entry : agents) {
      const std::vector<int>& members = entry.second;
      std::vector<RankSpan> spans;
      for (int q : members) {
        const int node = procs_[q].rendezvous.rank;
        spans.push_back({procs_[q].first_ns, procs_[q].last_ns, node >= 0 ? node : -2 - q});
      }
      JoinConcurrentRanks(spans,
                          [&](size_t a, size_t b) { parent[find(members[b])] = find(members[a]); });
    }
    std::map<int, int> job_of_root;
    job_of_.assign(procs_.size(), 0);
    for (const ProcessFacts& p : procs_) {
      const int root = find(p.index);
      auto [it, fresh] = job_of_root.emplace(root, static_cast<int>(out_.jobs.size()));
      if (fresh) out_.jobs.emplace_back();
      out_.jobs[it->second].push_back(p.index);
      job_of_[p.index] = it->second;
    }
  }

  int Global(int process, uint64_t comm, int32_t rank) const {
    return job_.GlobalRank(process, comm, rank);
  }

  // Where a call was made, for the report to name.
  static CallSiteRef Site(int process, uint64_t caller) { return {process, caller}; }

  // The code a call site is in (module, offset), the same in every process
  // that loaded the module: ranks that stopped at the same place group together.
  std::pair<std::string, uint64_t> Code(const CallSiteRef& site) const {
    if (site.process < 0 || site.address == 0) return {"", site.address};
    for (const ModuleInfo& m : procs_[site.process].modules)
      if (site.address >= m.start && site.address < m.end) return {m.path, site.address - m.base};
    return {"", site.address};
  }

  // Whether any process of `process`'s job left an end or a signal behind:
  // evidence that a process of this job that left neither died without one.
  bool JobRecordsEnds(int process) const {
    for (int q : out_.jobs[job_of_[process]])
      if (q != process && procs_[q].fate.kind != Fate::kNoEnd) return true;
    return false;
  }

  // Whether `comm` is a communicator ncclCommGrow made whose two sides were
  // not joined (MissingTracesFacts::grow_unjoined): its members made it
  // with ncclCommGrow, and no trace holds the link (the existing root's
  // membership, with both identities).
  bool GrowUnjoined(uint64_t comm) const {
    bool grown = false;
    for (const ProcessFacts& p : procs_) {
      for (const CommMembership& m : p.comms) {
        if (m.comm != comm || m.init_call != f::kCommGrow) continue;
        if (m.parent != 0 && m.grow_id != 0 && m.grow_id != m.comm) return false;  // the link
        if (m.parent == 0 && m.grow_id != m.comm) return false;  // a gained rank, joined
        grown = true;
      }
    }
    return grown;
  }

  void DiagnoseCommunicator(uint64_t comm, const CollectiveAlignment& al) {
    const int nranks = job_.CommSize(comm);
    const auto& members = al.members();
    if (members.empty()) return;
    const int anchor_process = members.front().process;

    // Members whose traces are missing.
    if (nranks > 0) {
      std::set<int32_t> have;
      for (const AlignedMember& m : members) have.insert(m.comm_rank);
      // A trace can claim any size: name at most kMaxListedRanks of the
      // missing (NCCL's largest jobs are far below it).
      constexpr int kMaxListedRanks = 1 << 20;
      std::vector<int> missing;
      for (int r = 0; r < nranks && r < kMaxListedRanks; ++r)
        if (!have.count(r)) missing.push_back(r);
      if (!missing.empty()) {
        Finding n;
        n.kind = FindingKind::kMissingTraces;
        n.role = FindingRole::kNote;
        n.comm = comm;
        n.nranks = nranks;
        n.ranks = missing;  // communicator ranks: their global ranks are unknown
        MissingTracesFacts facts;
        facts.grow_unjoined = GrowUnjoined(comm);
        n.facts = facts;
        n.job = job_of_[anchor_process];
        notes_.push_back(n);
      }
    }

    const std::optional<uint64_t> divergence = al.FirstDivergence();
    if (divergence) Mismatch(comm, al, *divergence, nranks);

    // Ranks that never entered a collective another rank entered (before the
    // divergence, if there is one: that already explains what follows).
    const std::optional<uint64_t> frontier = al.Frontier();
    if (!frontier) return;
    const uint64_t limit = divergence ? *divergence : *frontier;
    struct Behind {
      std::vector<int> ranks;
      int process = -1;
      uint64_t next = 0;
      int64_t when_ns = 0;
      DepartureFacts departure;
      std::optional<uint64_t> last_seq;
      std::vector<CallSiteRef> sites;
    };
    // Ranks that left the same way at the same point, from the same place, go together.
    // Ranks that departed the same way are one group; a later call on
    // another communicator is compared by what it was.
    using CallKey = std::tuple<uint32_t, uint64_t, uint64_t, bool, int32_t>;
    using Key = std::tuple<FindingKind, uint64_t, Departure, uint32_t, std::optional<int>, int,
                           std::optional<uint64_t>, CallKey, std::pair<std::string, uint64_t>>;
    std::map<Key, Behind> groups;
    for (const AlignedMember& m : members) {
      if (m.any && m.hi >= limit) continue;
      // A ring that lost every collective of this communicator cannot say
      // which one the rank reached; a crafted last number has no successor.
      if (!m.any && !m.holds_start) continue;
      if (m.any && m.hi == UINT64_MAX) continue;
      const uint64_t next = m.any ? m.hi + 1 : 0;
      if (divergence && next > *divergence) continue;
      int64_t entered_ns = 0;
      CollectiveSignature sig;
      if (!al.ReferenceAt(next, &sig, &entered_ns, nullptr))
        continue;  // nobody entered it: not behind
      Behind b;
      b.departure = Classify(m, comm, entered_ns);
      b.next = next;
      b.when_ns = entered_ns;
      if (m.any) b.last_seq = m.hi;
      const DepartureFacts& d = b.departure;
      const Key key{d.kind,
                    next,
                    d.how,
                    d.end_call,
                    d.exit_code,
                    d.signo,
                    b.last_seq,
                    CallKey{d.later_call.call, d.later_call.comm, d.later_call.seq,
                            d.later_call.send, d.later_call.peer},
                    Code(d.later_site)};
      Behind& g = groups.try_emplace(key, b).first->second;
      g.ranks.push_back(Global(m.process, comm, m.comm_rank));
      if (g.process < 0) g.process = m.process;
      if (m.any) g.sites.push_back(Site(m.process, m.last.caller));
    }
    for (auto& [key, g] : groups) {
      CollectiveSignature sig;
      al.ReferenceAt(g.next, &sig, nullptr, nullptr);
      std::vector<int> others;
      for (const AlignedMember& m : members)
        if (m.any && m.hi >= g.next) others.push_back(Global(m.process, comm, m.comm_rank));
      Candidate c;
      // A rank that waits for its own GPU to finish an earlier operation is
      // missing because of that: the never_completed finding comes first.
      if (g.departure.how == Departure::kWaitingOnGpu) c.tier = 3;
      Finding& x = c.finding;
      x.kind = g.departure.kind;
      x.comm = comm;
      x.seq = g.next;
      x.nranks = nranks;
      x.ranks = g.ranks;
      x.when_ns = g.when_ns;
      MissingRankFacts facts;
      facts.call = sig;
      facts.entered = others;
      facts.last_seq = g.last_seq;
      if (!g.sites.empty()) facts.last_site = g.sites.front();
      facts.departure = g.departure;
      x.facts = std::move(facts);
      c.process = g.process;
      candidates_.push_back(c);
    }
  }

  // What a rank that stopped before collective `next` of `comm` did instead.
  DepartureFacts Classify(const AlignedMember& m, uint64_t comm, int64_t entered_ns) const {
    const ProcessFacts& p = procs_[m.process];
    const CommMembership* mem = nullptr;
    for (const CommMembership& x : p.comms)
      if (x.comm == comm && x.rank == m.comm_rank) mem = &x;
    DepartureFacts d;
    if (p.fate.kind == Fate::kExited) d.exit_code = p.fate.exit_code;
    if (mem != nullptr && mem->end_call != 0) {
      d.how = Departure::kLeftCommunicator;
      d.end_call = mem->end_call;
      return d;
    }
    const bool beats = p.completion.beats > 0;
    const bool idle = !Waiting(m.process);
    if (p.fate.kind == Fate::kExited) {
      // Exited on a signal it handled (the launcher's SIGTERM), after the
      // others entered, its heartbeat going on and no NCCL call pending:
      // it was alive, idle outside NCCL, until the job was ended.
      if (p.fate.signo != 0 && p.fate.exit_code != 0 && beats && idle &&
          p.fate.when_ns >= entered_ns) {
        d.how = Departure::kAliveIdle;
        d.until_signo = p.fate.signo;
        return d;
      }
      d.how = Departure::kExited;
      return d;
    }
    // A crash ends the question: what it did on other communicators before
    // is not why it never came back.
    if (p.fate.kind == Fate::kSignal && CrashSignal(p.fate.signo)) {
      d.signo = p.fate.signo;
      d.kind = FindingKind::kRankDied;
      d.how = Departure::kDiedOfSignal;
      return d;
    }
    // It suspended the communicator and never resumed it: it cannot join
    // the others' collective, whatever it does meanwhile.
    if (auto s = p.suspended.find(comm); s != p.suspended.end()) {
      d.how = Departure::kSuspended;
      d.later_call = s->second;
      return d;
    }
    // Its GPU never finished an earlier operation of this communicator: it
    // waits there (a host sync, say), not elsewhere.
    for (const CommCompletion& c : Comms(p.index)) {
      // (Without a Progress its watcher may not have written one yet: unknown.)
      if (c.comm != comm || !c.tracked || !c.has_progress || !c.pending || !c.oldest.has_seq)
        continue;
      const bool collective = c.oldest.call != f::kSend && c.oldest.call != f::kRecv;
      if (collective && c.oldest.seq < m.hi + 1 && life_[m.process] != Life::kCleanExit &&
          life_[m.process] != Life::kErrorExit) {
        d.how = Departure::kWaitingOnGpu;
        d.later_call = c.oldest;
        d.later_site = Site(m.process, c.oldest.caller);
        return d;
      }
    }
    if (p.fate.kind == Fate::kSignal && CrashSignal(p.fate.signo)) {
      d.signo = p.fate.signo;
      d.kind = FindingKind::kRankDied;
      d.how = Departure::kDiedOfSignal;
      return d;
    }
    if (std::optional<LastCall> later = p.ActivityAfter(comm)) {
      d.how = Departure::kOtherCommunicators;
      d.later_call = *later;
      d.later_site = Site(m.process, later->caller);
      return d;
    }
    if (p.fate.kind == Fate::kSignal) {
      d.signo = p.fate.signo;
      if (CrashSignal(p.fate.signo) || p.fate.when_ns < entered_ns) {
        d.kind = FindingKind::kRankDied;
        d.how = Departure::kDiedOfSignal;
      } else if (beats && idle) {
        d.how = Departure::kAliveIdle;  // its heartbeat went on until the job was ended
        d.until_signo = p.fate.signo;
        d.signo = 0;
      } else {
        d.how = Departure::kAliveUntilSignal;
      }
      return d;
    }
    // No end recorded: what the heartbeat and the machine say.
    const Life life = life_[m.process];
    if (life == Life::kFrozen) {
      d.kind = FindingKind::kRankFrozen;
      d.how = Departure::kFrozen;
      d.live = true;
      d.proc_state = proc_state_[m.process];
      d.stopped_before_ns = StoppedFirstBy(m.process);
      return d;
    }
    if (life == Life::kLive && idle) {
      d.how = Departure::kAliveIdle;
      d.live = true;
      return d;
    }
    if (beats && life == Life::kGone) {
      if (const int64_t gap = StoppedFirstBy(m.process)) {
        d.kind = FindingKind::kRankDied;
        d.how = Departure::kDiedFirst;
        d.stopped_before_ns = gap;
        return d;
      }
      if (idle) {
        d.how = Departure::kAliveIdle;  // alive until the others' traces end
        return d;
      }
    }
    if (JobRecordsEnds(m.process)) {
      d.kind = FindingKind::kRankDied;
      d.how = Departure::kKilledUntraced;
      return d;
    }
    d.how = Departure::kStopped;
    return d;
  }

  // ------------------------------------------------- completion and liveness

  // The global rank of process `q` on `comm` (its display rank when the
  // communicator is unknown).
  int RankOf(int q, uint64_t comm) const {
    for (const CommCompletion& c : Comms(q))
      if (c.comm == comm) return Global(q, comm, c.rank);
    return procs_[q].rank;
  }

  // The ranks of `q`'s job, other than `q`, that wait on NCCL work.
  std::vector<int> WaitingOthers(int q) const {
    std::vector<int> out;
    for (int o : out_.jobs[job_of_[q]])
      if (o != q && Waiting(o)) out.push_back(procs_[o].rank);
    std::sort(out.begin(), out.end());
    return out;
  }

  // A CUDA error (tier 0) or an NCCL asynchronous error (tier 1): the first
  // each process reported.
  void DeviceErrors() {
    for (const ProcessFacts& p : procs_) {
      const ProcessCompletion& pc = p.completion;
      if (!pc.device_errors.empty()) {
        const DeviceError& e = pc.device_errors.front();
        Candidate c;
        c.tier = 0;
        c.process = p.index;
        Finding& x = c.finding;
        x.kind = HardwareError(e.name) ? FindingKind::kGpuFault : FindingKind::kCudaError;
        DeviceErrorFacts facts;
        facts.result = e.result;
        facts.name = e.name;
        facts.text = e.text;
        facts.device = e.device;
        facts.bus_id = e.bus_id;
        facts.host = p.host;
        Locate(p.index, e.comm, &x, &facts.completed);
        if (e.comm != 0 && e.completed > facts.completed.value_or(0)) facts.completed = e.completed;
        x.when_ns = e.when_ns;
        facts.also = LaterErrors(p.index, e.when_ns);
        facts.waiting = WaitingOthers(p.index);
        x.facts = std::move(facts);
        candidates_.push_back(std::move(c));
      }
      if (!pc.async_errors.empty()) {
        const AsyncError& e = pc.async_errors.front();
        Candidate c;
        c.process = p.index;
        Finding& x = c.finding;
        x.kind = FindingKind::kNcclAsyncError;
        DeviceErrorFacts facts;
        facts.nccl = true;
        facts.result = e.result;
        facts.text = e.text;
        facts.host = p.host;
        Locate(p.index, e.comm, &x, &facts.completed);
        x.when_ns = e.when_ns;
        facts.waiting = WaitingOthers(p.index);
        x.facts = std::move(facts);
        candidates_.push_back(std::move(c));
      }
    }
  }

  // A finding about process `q` on `comm`: its rank, the communicator's
  // size, the operation it had not completed there (or anywhere), and where.
  void Locate(int q, uint64_t comm, Finding* x, std::optional<uint64_t>* completed) const {
    x->ranks = {RankOf(q, comm)};
    LastCall op;
    for (const CommCompletion& c : Comms(q)) {
      if (c.comm != comm) continue;
      if (c.tracked && c.has_progress) *completed = c.completed;
      if (c.pending) op = c.oldest;
      // Its watcher wrote no Progress (it faulted or died first): the
      // collective it had not finished is the first the other members had
      // not finished either.
      if (c.tracked && !c.has_progress && c.pending) {
        std::optional<uint64_t> frontier;
        for (const ProcessFacts& o : procs_) {
          if (o.index == q) continue;
          for (const CommCompletion& oc : Comms(o.index))
            if (oc.comm == comm && oc.has_progress)
              frontier = std::min(frontier.value_or(UINT64_MAX), oc.completed);
        }
        if (frontier && *frontier < c.issued) {
          op = LastCall{true, op.call, comm, *frontier, true, false, op.when_ns, 0};
          if (const auto al = job_.alignments().find(comm); al != job_.alignments().end()) {
            CollectiveSignature sig;
            if (al->second.ReferenceAt(*frontier, &sig, &op.when_ns, nullptr, &op.caller))
              op.call = sig.call;
          }
        }
      }
    }
    if (!op.valid && comm == 0) op = Doing(q);
    if (op.valid && op.comm != 0) comm = op.comm;
    if (comm != 0) {
      x->comm = comm;
      x->nranks = job_.CommSize(comm);
    }
    if (op.valid && op.has_seq) x->seq = op.seq;
    if (op.valid) x->phase = PhaseOfCall(op);
  }

  // The ranks of `q`'s job that reported a CUDA or NCCL error after `when`.
  std::vector<int> LaterErrors(int q, int64_t when) const {
    std::vector<int> out;
    for (int o : out_.jobs[job_of_[q]]) {
      if (o == q) continue;
      const ProcessCompletion& c = procs_[o].completion;
      const bool later = (!c.device_errors.empty() && c.device_errors.front().when_ns >= when) ||
                         (!c.async_errors.empty() && c.async_errors.front().when_ns >= when);
      if (later) out.push_back(procs_[o].rank);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Processes that stopped living before the others (their heartbeat ended
  // more than two intervals earlier, a crash, or stopped now), where no
  // collective the others entered without them already named them.
  void StoppedRanks() {
    std::set<int> named;
    for (const Candidate& c : candidates_) {
      if (c.finding.kind == FindingKind::kRankDied || c.finding.kind == FindingKind::kRankFrozen)
        named.insert(c.finding.ranks.begin(), c.finding.ranks.end());
    }
    for (const ProcessFacts& p : procs_) {
      const int q = p.index;
      const Life life = life_[q];
      // Frozen now, or died first.
      if (life != Life::kFrozen && !DiedFirst(q)) continue;
      const int64_t gap = StoppedFirstBy(q);
      if (named.count(p.rank)) continue;
      Candidate c;
      c.process = q;
      Finding& x = c.finding;
      StoppedRankFacts facts;
      x.kind = life == Life::kFrozen ? FindingKind::kRankFrozen : FindingKind::kRankDied;
      if (life == Life::kFrozen) {
        const char letter = proc_state_[q];
        facts.state = letter == 'T' || letter == 't' ? StoppedRankFacts::State::kStopped
                                                     : StoppedRankFacts::State::kHeartbeatStale;
        facts.proc_state = letter;
      }
      facts.signo = p.fate.kind == Fate::kSignal ? p.fate.signo : 0;
      facts.stopped_ns = StoppedNs(q);
      facts.before_others_ns = gap;
      facts.doing = Doing(q);
      facts.site = Site(q, facts.doing.caller);
      facts.waiting = WaitingOthers(q);
      std::tie(facts.teardown_signo, facts.teardown_after_ns) = TeardownAfter(q);
      std::optional<uint64_t> unused;
      Locate(q, facts.doing.valid ? facts.doing.comm : 0, &x, &unused);
      x.when_ns = facts.stopped_ns;
      x.facts = std::move(facts);
      candidates_.push_back(std::move(c));
    }
  }

  // Operations every member of a communicator entered that did not complete
  // on the GPUs (tier 2), where completion was tracked on every member.
  void NeverCompleted() {
    std::map<uint64_t, std::vector<std::pair<int, const CommCompletion*>>> members;
    for (const ProcessFacts& p : procs_)
      for (const CommCompletion& c : Comms(p.index))
        if (c.comm != 0) members[c.comm].push_back({p.index, &c});
    for (const auto& [comm, ms] : members) {
      const int nranks = job_.CommSize(comm);
      if (nranks <= 0 || static_cast<int>(ms.size()) < nranks) continue;
      bool tracked = true, stuck = false;
      uint64_t low = UINT64_MAX, issued = UINT64_MAX;
      bool known = false;  // some member's watcher wrote a Progress
      for (const auto& [q, c] : ms) {
        tracked &= c->tracked;
        stuck |= Stuck(q, *c);
        known |= c->has_progress;
        issued = std::min(issued, c->issued);
      }
      // A member with no Progress yet (it died before its watcher wrote one)
      // completed an unknown number: the others' counts decide.
      for (const auto& [q, c] : ms)
        if (c->has_progress || !known) low = std::min(low, c->completed);
      if (!tracked || !stuck) continue;
      if (issued > low) {
        const auto al = job_.alignments().find(comm);
        if (al != job_.alignments().end()) {
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
        StoppedFirst(&named, &facts.by);
        CollectiveSignature sig;
        int64_t entered_ns = 0;
        uint64_t caller = 0;
        LastCall op{true, 0, comm, low, true};
        if (al != job_.alignments().end() &&
            al->second.ReferenceAt(low, &sig, &entered_ns, nullptr, &caller)) {
          facts.collective = sig;
          op.call = sig.call;
          op.when_ns = entered_ns;
          op.caller = caller;
        }
        for (const auto& [q, c] : named)
          if (c->pending && c->oldest.has_seq && c->oldest.seq == low &&
              c->oldest.call != f::kSend && c->oldest.call != f::kRecv) {
            op = c->oldest;
            break;
          }
        facts.op = op;
        facts.completed = low;
        if (al != job_.alignments().end()) {
          for (const AlignedMember& m : al->second.members())
            if (!m.any || m.lo > low || m.hi < low)
              facts.arguments_lost.push_back(Global(m.process, comm, m.comm_rank));
          std::sort(facts.arguments_lost.begin(), facts.arguments_lost.end());
        }
        AddNeverCompleted(comm, nranks, ms, named, std::move(facts));
        continue;
      }
      // No collective left behind: a send or receive that never completed.
      if (job_.p2p().problems().size() > 0) {
        bool explained = false;
        for (const P2pProblem& pr : job_.p2p().problems()) explained |= pr.comm == comm;
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
      StoppedFirst(&named, &facts.by);
      facts.op = named.front().second->oldest;
      facts.completed = named.front().second->completed;
      AddNeverCompleted(comm, nranks, ms, named, std::move(facts));
    }
  }

  // Narrows `named` to the members whose progress stopped first: the
  // earliest last completion (50 ms apart at least), else the earliest end
  // of life (two heartbeat intervals apart); a tie keeps them all.
  void StoppedFirst(std::vector<std::pair<int, const CommCompletion*>>* named,
                    NeverCompletedFacts::By* by) const {
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
      const int64_t until = procs_[q].AliveUntilNs();
      if (until < alive) {
        next = alive;
        alive = until;
        who = q;
      } else {
        next = std::min(next, until);
      }
    }
    if (who >= 0 && procs_[who].completion.beats > 0 &&
        next - alive >
            kFirstDeathIntervals * static_cast<double>(procs_[who].completion.IntervalNs())) {
      named->erase(std::remove_if(named->begin(), named->end(),
                                  [&](const auto& m) { return m.first != who; }),
                   named->end());
      if (*by == NeverCompletedFacts::By::kTie) *by = NeverCompletedFacts::By::kLastProgress;
    }
  }

  void AddNeverCompleted(uint64_t comm, int nranks,
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
      const int r = Global(q, comm, cc->rank);
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
      live |= life_[q] == Life::kLive;
    }
    std::sort(x.ranks.begin(), x.ranks.end());
    std::sort(facts.entered.begin(), facts.entered.end());
    for (auto& [completed, ranks] : others) {
      std::sort(ranks.begin(), ranks.end());
      facts.others.push_back({ranks, completed});
    }
    facts.live = live;
    const int64_t end = live ? observed_.now_ns : out_.end_ns;
    if (waited_from != INT64_MAX && end > waited_from) facts.waited_ns = end - waited_from;
    facts.site = Site(named.front().first, facts.op.caller);
    x.when_ns = facts.stopped_ns > 0 ? facts.stopped_ns : facts.op.when_ns;
    x.phase = PhaseOfCall(facts.op);
    x.facts = std::move(facts);
    candidates_.push_back(std::move(c));
  }

  // Blind spots, per job: processes whose records were overwritten before
  // they could be read, and launcher ranks that loaded NCCL and made no call
  // the shim saw.
  void BlindSpots() {
    overwritten_.assign(out_.jobs.size(), {});
    unseen_.assign(out_.jobs.size(), {});
    for (const ProcessFacts& p : procs_) {
      if (p.lost_start) overwritten_[job_of_[p.index]].push_back(p.index);
      // A process whose trace says why its NCCL could not be seen gets the
      // nccl_not_visible note for it instead.
      if (p.nccl_loaded && !p.nccl_calls && !p.rank_source.empty() && p.not_seen.empty())
        unseen_[job_of_[p.index]].push_back(p.index);
    }
  }

  // What a rank was doing when the job was seen hung or ended.
  HangFacts::Group ActivityOf(int q) const {
    const ProcessFacts& p = procs_[q];
    HangFacts::Group g;
    g.ranks = {p.rank >= 0 ? p.rank : static_cast<int>(p.pid)};
    g.call = Doing(q);
    const bool waiting = Waiting(q);
    bool in_call = p.last.pending, stuck = false;
    for (const CommCompletion& c : Comms(p.index)) {
      in_call |= c.in_call;
      stuck |= Stuck(q, c);
    }
    const RankActivity waiting_as = in_call ? RankActivity::kInCall : RankActivity::kGpuPending;
    switch (life_[q]) {
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
        g.activity = !waiting ? RankActivity::kIdle
                     : stuck  ? waiting_as
                              : RankActivity::kProgressing;
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

  // A job with no cause found: HEALTHY only when it is. Otherwise the
  // findings that say what is known (tier 3).
  // Whether job `j` is made only of processes traced from NCCL's load that
  // made no NCCL call and have no launcher rank.
  bool Bystanders(size_t j) const {
    for (int q : out_.jobs[j]) {
      const ProcessFacts& p = procs_[q];
      if (p.nccl_calls || !p.rendezvous.traced_from_load || !p.rank_source.empty()) return false;
    }
    return !out_.jobs[j].empty();
  }

  void HealthCheck(size_t j, std::vector<Candidate>* kept) {
    const std::vector<int>& members = out_.jobs[j];
    std::vector<int> error_exit;
    bool unhealthy = false;
    for (int q : members) {
      switch (life_[q]) {
        case Life::kCleanExit:
          unhealthy |= Waiting(q);
          break;
        case Life::kErrorExit:
          error_exit.push_back(q);
          break;
        case Life::kLive:
          for (const CommCompletion& c : Comms(q)) unhealthy |= Stuck(q, c);
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
      const ProcessFacts& p = procs_[q];
      Finding x;
      x.kind = FindingKind::kRankExitError;
      ExitErrorFacts facts;
      facts.exit_code = p.fate.exit_code;
      facts.signo = p.fate.signo;
      facts.last = p.last;
      facts.tracked = p.completion.AllTracked();
      facts.work_done = facts.tracked && !Waiting(q);
      for (int o : members) {
        if (o != q && life_[o] != Life::kCleanExit && life_[o] != Life::kErrorExit &&
            procs_[o].AliveUntilNs() >= p.fate.when_ns) {
          facts.ended_after.push_back(procs_[o].rank);
        }
      }
      std::sort(facts.ended_after.begin(), facts.ended_after.end());
      if (Waiting(q)) {  // where it left work behind
        std::optional<uint64_t> unused;
        const LastCall doing = Doing(q);
        Locate(q, doing.valid ? doing.comm : 0, &x, &unused);
        x.phase.reset();
      } else {
        x.ranks = {p.rank >= 0 ? p.rank : static_cast<int>(p.pid)};
      }
      x.when_ns = p.fate.when_ns;
      x.facts = std::move(facts);
      add(std::move(x), q);
    }
    if (!error_exit.empty()) return;
    if (unhealthy && KilledWhileRunning(j, add)) return;
    if (unhealthy && !overwritten_[j].empty())
      add(BlindSpot(FindingKind::kTraceOverwritten, overwritten_[j]), overwritten_[j].front());
    if (unhealthy) {
      Finding x;
      x.kind = FindingKind::kHangUnexplained;
      HangFacts facts;
      facts.live = job_live_[j];
      facts.tracked = true;
      std::map<std::tuple<RankActivity, uint32_t, uint64_t, uint64_t, bool, int, int, int>,
               HangFacts::Group>
          groups;
      std::set<std::pair<uint64_t, uint64_t>> waited_at;
      std::optional<HangPhase> phase;
      for (int q : members) {
        facts.tracked &= procs_[q].completion.AllTracked();
        HangFacts::Group g = ActivityOf(q);
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
        for (int q : members) x.ranks.push_back(procs_[q].rank);
      }
      std::sort(x.ranks.begin(), x.ranks.end());
      if (waited_at.size() == 1 && waited_at.begin()->first != 0) {
        x.comm = waited_at.begin()->first;
        x.nranks = job_.CommSize(*x.comm);
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
      x.when_ns = out_.end_ns;
      x.facts = std::move(facts);
      add(std::move(x), members.front());
    }
    if (!unseen_[j].empty())
      add(BlindSpot(FindingKind::kNcclCallsUnseen, unseen_[j]), unseen_[j].front());
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
  bool KilledWhileRunning(size_t j, Add add) const {
    const int64_t teardown = TeardownNs(static_cast<int>(j));
    if (teardown <= 0) return false;
    KilledWhileRunningFacts facts;
    int64_t last_signal = 0;
    for (int q : out_.jobs[j]) {
      const ProcessFacts& p = procs_[q];
      if (life_[q] != Life::kCleanExit && !TornDown(q)) return false;
      if (!p.completion.AllTracked() || p.completion.beats == 0 || !p.last.valid) return false;
      for (const CommCompletion& c : Comms(q))
        if (Stuck(q, c)) return false;
      if (p.last.pending && teardown - p.last.when_ns >= kTeardownRaceNs) return false;
      KilledWhileRunningFacts::Rank r;
      r.rank = p.rank >= 0 ? p.rank : static_cast<int>(p.pid);
      r.last = p.last;
      r.finished = life_[q] == Life::kCleanExit;
      r.progress_ns = p.last.valid ? p.last.when_ns : 0;
      for (const CommCompletion& c : Comms(q))
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
    add(std::move(x), out_.jobs[j].front());
    return true;
  }

  Finding BlindSpot(FindingKind kind, const std::vector<int>& processes) const {
    Finding x;
    x.kind = kind;
    BlindSpotFacts facts;
    for (int q : processes) {
      const ProcessFacts& p = procs_[q];
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
        facts.span_s =
            p.last_ns > p.first_ns ? static_cast<double>(p.last_ns - p.first_ns) / 1e9 : 0;
        facts.records_per_s =
            facts.span_s > 0 ? static_cast<double>(st.ring_claimed) / facts.span_s : 0;
      }
    }
    std::sort(x.ranks.begin(), x.ranks.end());
    x.when_ns = out_.end_ns;
    x.facts = std::move(facts);
    return x;
  }

  void Mismatch(uint64_t comm, const CollectiveAlignment& al, uint64_t seq, int nranks) {
    // A node's summary left #seq out of some rank: who differs from whom
    // there cannot be told from the ranks left (it may blame the wrong one).
    // The summary_gap note says what could not be compared, and where to
    // read it in full.
    for (const AlignedMember& m : al.members())
      if (m.LeftOut(seq)) return;
    CollectiveSignature ref;
    int64_t when = 0;
    int ref_member = -1;
    uint64_t ref_caller = 0;
    al.ReferenceAt(seq, &ref, &when, &ref_member, &ref_caller);
    const int ref_process = ref_member >= 0 ? al.members()[ref_member].process : -1;
    struct Group {
      CollectiveSignature sig;
      std::vector<int> ranks;
      int process = -1;
      uint64_t caller = 0;
    };
    std::vector<Group> groups;
    std::vector<int> not_reached;
    for (const AlignedMember& m : al.members()) {
      CollectiveSignature sig;
      uint64_t caller = 0;
      if (m.diverges && m.first_divergence == seq) {
        sig = CollectiveSignature::Of(m.at_divergence);
        caller = m.at_divergence.caller;
      } else if (m.any && m.lo <= seq && m.hi >= seq) {
        sig = ref;
        caller = ref_caller;  // the same call, made from the same place as the reference's
      } else if ((m.any && m.lo > seq) || (!m.any && !m.holds_start)) {
        continue;  // its trace no longer holds #seq: it passed it, or cannot say
      } else {
        not_reached.push_back(Global(m.process, comm, m.comm_rank));
        continue;
      }
      auto it =
          std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.sig == sig; });
      if (it == groups.end()) {
        groups.push_back({sig, {}, sig == ref ? ref_process : m.process, caller});
        it = std::prev(groups.end());
      }
      it->ranks.push_back(Global(m.process, comm, m.comm_rank));
    }
    if (groups.size() < 2) return;
    // The majority did what NCCL expected of everyone; on a tie, the group
    // holding the lowest rank.
    std::sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
      if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
      return *std::min_element(a.ranks.begin(), a.ranks.end()) <
             *std::min_element(b.ranks.begin(), b.ranks.end());
    });
    const Group& majority = groups.front();
    Candidate c;
    Finding& x = c.finding;
    x.kind = FindingKind::kCollectiveMismatch;
    x.comm = comm;
    x.seq = seq;
    x.nranks = nranks;
    x.when_ns = when;
    x.field = CollectiveSignature::DifferingField(majority.sig, groups[1].sig);
    for (size_t i = 1; i < groups.size(); ++i)
      x.ranks.insert(x.ranks.end(), groups[i].ranks.begin(), groups[i].ranks.end());
    std::sort(x.ranks.begin(), x.ranks.end());
    CollectiveMismatchFacts facts;
    for (const Group& g : groups)
      facts.groups.push_back({g.ranks, g.sig, Site(g.process, g.caller)});
    facts.not_reached = not_reached;
    x.facts = std::move(facts);
    c.process = groups[1].process;
    candidates_.push_back(c);
  }

  void PointToPoint() {
    for (const P2pProblem& pr : job_.p2p().problems()) {
      Candidate c;
      Finding& x = c.finding;
      P2pMismatchFacts facts;
      facts.sender = Global(pr.sender_process, pr.comm, pr.sender);
      facts.receiver = Global(pr.receiver_process, pr.comm, pr.receiver);
      auto side = [](const P2pOp& o, int process) {
        return P2pMismatchFacts::Side{o.count, o.datatype, o.collectives_before,
                                      Site(process, o.caller)};
      };
      facts.send = side(pr.send, pr.sender_process);
      facts.receive = side(pr.receive, pr.receiver_process);
      facts.other_side_posted = pr.other_side_posted;
      x.kind = FindingKind::kP2pMismatch;
      x.comm = pr.comm;
      x.seq = pr.seq;
      x.nranks = job_.CommSize(pr.comm);
      x.ranks = {facts.sender, facts.receiver};
      x.when_ns = pr.when_ns;
      switch (pr.kind) {
        case P2pProblem::kSizeMismatch:
          facts.problem = P2pMismatchFacts::Problem::kSizeMismatch;
          x.field = pr.send.datatype != pr.receive.datatype ? MismatchField::kDatatype
                                                            : MismatchField::kCount;
          break;
        case P2pProblem::kOrderMismatch:
          facts.problem = P2pMismatchFacts::Problem::kOrderMismatch;
          x.field = MismatchField::kOrder;
          break;
        case P2pProblem::kSendNotReceived:
          facts.problem = P2pMismatchFacts::Problem::kSendNotReceived;
          break;
        case P2pProblem::kReceiveNotSent:
          facts.problem = P2pMismatchFacts::Problem::kReceiveNotSent;
          break;
      }
      x.facts = std::move(facts);
      c.process = pr.kind == P2pProblem::kReceiveNotSent ? pr.sender_process : pr.receiver_process;
      candidates_.push_back(c);
    }
  }

  // One-sided waits for signals a peer never sent (analysis/signal_matching.h).
  // The waiting rank's stream hangs behind the wait, so its absence from
  // the collectives after it follows from this (tier 3, as a rank waiting
  // for its own GPU).
  void Signals() {
    std::set<int> waiting;
    for (const SignalProblem& pr : job_.signals().problems()) {
      Candidate c;
      Finding& x = c.finding;
      P2pMismatchFacts facts;
      facts.problem = P2pMismatchFacts::Problem::kReceiveNotSent;
      facts.one_sided = true;
      facts.sender = Global(pr.sender_process, pr.comm, pr.sender);
      facts.receiver = Global(pr.receiver_process, pr.comm, pr.receiver);
      facts.receive.site = Site(pr.receiver_process, pr.caller);
      facts.other_side_posted = pr.sent;
      facts.awaited = pr.awaited;
      x.kind = FindingKind::kP2pMismatch;
      x.comm = pr.comm;
      x.seq = pr.seq;
      x.nranks = job_.CommSize(pr.comm);
      x.ranks = {facts.sender, facts.receiver};
      x.when_ns = pr.when_ns;
      waiting.insert(facts.receiver);
      x.facts = std::move(facts);
      c.process = pr.sender_process;
      candidates_.push_back(c);
    }
    if (waiting.empty()) return;
    for (Candidate& c : candidates_) {
      if (c.finding.kind != FindingKind::kMissingRank || c.finding.ranks.empty()) continue;
      bool all = true;
      for (int r : c.finding.ranks) all &= waiting.count(r) == 1;
      if (all) c.tier = std::max(c.tier, 3);
    }
  }

  void Orders() {
    for (const OrderInversionFinding& o : job_.order().Findings()) {
      Candidate c;
      Finding& x = c.finding;
      x.kind = FindingKind::kOrderInversion;
      x.comm = o.comm_a;
      x.seq = o.seq_a;
      x.nranks = job_.CommSize(o.comm_a);
      OrderInversionFacts facts;
      facts.rank = procs_[o.process].rank;
      facts.reference_rank = procs_[o.reference_process].rank;
      facts.other_comm = o.comm_b;
      facts.other_seq = o.seq_b;
      facts.comm_first = o.process_a_first;
      facts.same_stream = o.same_stream;
      // Both sides of the conflicting pair: which of two orders is "the" wrong
      // one is not something the traces can tell.
      x.ranks = {std::min(facts.rank, facts.reference_rank),
                 std::max(facts.rank, facts.reference_rank)};
      x.when_ns = o.when_ns;
      x.facts = facts;
      c.process = o.process;
      if (o.same_stream) {
        candidates_.push_back(c);
      } else {
        x.role = FindingRole::kWarning;
        x.job = job_of_[o.process];
        warnings_.push_back(x);
      }
    }
  }

  // Ranks whose host enqueued a communicator's collectives last, far more
  // often than chance allows (analysis/arrival_skew.h): a warning each (the
  // job may be healthy and slow), one per rank, in the widest communicator
  // it straggles in; the others listed.
  void Stragglers() {
    std::map<std::pair<int, int>, Finding> by_rank;  // (job, global rank)
    // Slow links (analysis/link_skew.h) first: the ranks of a slow link's
    // communicators wait on its collectives, so their hosts enqueue the
    // next ones late too; that is its link, not their hosts.
    std::set<std::pair<int, int>> slow_links = LinkStragglers(&by_rank);
    // Slow GPUs next (analysis/gpu_skew.h): a rank whose GPU is slow and
    // whose host waits on it each step enqueues late too; its GPU is the
    // cause, and it is not named a host straggler as well.
    std::vector<GpuStraggler> gpus = job_.gpu_arrivals().Stragglers();
    std::set<std::pair<int, int>> slow_gpus;  // (job, global rank)
    for (const GpuStraggler& g : gpus)
      slow_gpus.insert({job_of_[g.process], job_.GlobalRank(g.process, g.comm, g.rank)});
    std::vector<std::pair<ArrivalStraggler, const GpuStraggler*>> all;
    for (const GpuStraggler& g : gpus) all.emplace_back(g, &g);
    // A host that came late only because it waited on its own GPU (which
    // waited on the slow GPU's data) is not a host straggler either: in a
    // job with a slow GPU, a rank whose late enqueues mostly came late
    // because its GPU finished late (GpuSkew::WaitedOnGpu) is left out.
    std::vector<ArrivalSpan> spans;
    const bool waits = !gpus.empty() || !slow_links.empty();
    if (waits) spans = job_.arrivals().Spans();
    for (const ArrivalStraggler& s : job_.arrivals().Stragglers()) {
      const std::pair<int, int> who{job_of_[s.process], job_.GlobalRank(s.process, s.comm, s.rank)};
      if (slow_gpus.count(who) || slow_links.count(who)) continue;
      if (waits && job_.gpu_arrivals().ExplainsHostStraggler(s, spans)) continue;
      all.emplace_back(s, nullptr);
    }
    for (const auto& [s, gpu] : all) {
      if (gpu != nullptr &&
          slow_links.count({job_of_[s.process], job_.GlobalRank(s.process, s.comm, s.rank)}))
        continue;
      Finding x;
      x.kind = FindingKind::kStraggler;
      x.role = FindingRole::kWarning;
      x.comm = s.comm;
      x.seq = s.began_seq;
      x.nranks = job_.CommSize(s.comm);
      x.job = job_of_[s.process];
      x.when_ns = s.began_ns;
      x.phase = HangPhase::kStep;
      StragglerFacts facts;
      facts.rank = job_.GlobalRank(s.process, s.comm, s.rank);
      x.ranks = {facts.rank};
      facts.members = s.members;
      facts.compared = s.compared;
      facts.window = s.window;
      facts.gapped = s.gapped;
      facts.times_last = s.times_last;
      facts.call = s.call;
      facts.call_times_last = s.call_times_last;
      facts.call_compared = s.call_compared;
      facts.median_late_ns = s.median_late_ns;
      facts.p90_late_ns = s.p90_late_ns;
      facts.median_interval_ns = s.median_interval_ns;
      facts.first_seq = s.first_seq;
      facts.last_seq = s.last_seq;
      facts.window_start = s.window_start;
      facts.began_seq = s.began_seq;
      facts.began_ns = s.began_ns;
      facts.began_later = s.began_later;
      facts.early_late_ns = s.early_late_ns;
      facts.recent_late_ns = s.recent_late_ns;
      facts.worsening = s.worsening;
      if (gpu != nullptr) {
        facts.cause = StragglerFacts::Cause::kGpu;
        facts.host_late_ns = gpu->host_late_ns;
        facts.host_on_time = gpu->host_on_time;
      }
      const HostClocks::Among clocks = job_.clocks().Of(s.member_processes);
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
    for (auto& [key, x] : by_rank) warnings_.push_back(std::move(x));
  }

  // Slow links: a warning each, in `by_rank` under its (first) rank. Returns
  // the (job, global rank) of every rank named.
  std::set<std::pair<int, int>> LinkStragglers(std::map<std::pair<int, int>, Finding>* by_rank) {
    std::set<std::pair<int, int>> named;
    for (const LinkStraggler& link : job_.links().Stragglers()) {
      const SlowComm& c = link.comms.front();
      auto rank_of = [&](int process) {
        for (size_t i = 0; i < c.member_processes.size(); ++i)
          if (c.member_processes[i] == process)
            return job_.GlobalRank(process, c.comm, c.member_ranks[i]);
        return -1;
      };
      Finding x;
      x.kind = FindingKind::kStraggler;
      x.role = FindingRole::kWarning;
      x.comm = c.comm;
      x.seq = c.began_seq;
      x.nranks = job_.CommSize(c.comm);
      x.job = job_of_[link.processes.front()];
      x.phase = HangPhase::kStep;
      StragglerFacts facts;
      facts.cause = StragglerFacts::Cause::kLink;
      for (int p : link.processes) x.ranks.push_back(rank_of(p));
      std::sort(x.ranks.begin(), x.ranks.end());
      facts.rank = x.ranks.front();
      if (x.ranks.size() > 1) facts.link_ranks = x.ranks;
      facts.members = c.members;
      facts.compared = c.compared;
      facts.window = c.window;
      facts.gapped = c.compared;
      facts.times_last = c.slow;
      facts.call = c.call;
      facts.call_times_last = c.call_slow;
      facts.call_compared = c.call_compared;
      facts.median_late_ns = c.median_extra_ns;
      facts.p90_late_ns = c.p90_extra_ns;
      facts.first_seq = c.first_seq;
      facts.last_seq = c.last_seq;
      facts.window_start = c.window_start;
      facts.began_seq = c.began_seq;
      facts.began_ns = c.began_ns;
      x.when_ns = c.began_ns;
      facts.began_later = c.began_later;
      facts.early_late_ns = c.early_extra_ns;
      facts.recent_late_ns = c.recent_extra_ns;
      facts.worsening = c.worsening;
      facts.usual_ns = c.usual_ns;
      facts.kind_comms = c.kind_comms;
      for (size_t i = 1; i < link.comms.size(); ++i) facts.also_comms.push_back(link.comms[i].comm);
      std::set<std::string> hosts;
      for (int q : c.member_processes) hosts.insert(procs_[q].host);
      facts.hosts = static_cast<int>(hosts.size());
      x.facts = facts;
      for (int r : x.ranks) named.insert({x.job, r});
      by_rank->try_emplace({x.job, facts.rank}, std::move(x));
    }
    return named;
  }

  // Init forensics, job by job: each job's ranks' initialisation evidence.
  // Members of a communicator that never called a split (or shrink) of it
  // which the other members entered and still wait in: NCCL's split is
  // collective over the parent, so the rank that went elsewhere is the
  // cause, with what it did instead; the waiting ranks are not (their wait
  // is neither an init failure nor a rank missing from the parent's next
  // collective).
  void SkippedCreation() {
    struct Creation {
      uint32_t call = 0;
      int64_t first_ns = INT64_MAX;
      bool pending = false;
      std::set<int> callers;  // processes
    };
    std::map<std::pair<uint64_t, uint32_t>, Creation> creations;  // (parent, split index)
    for (const ProcessFacts& p : procs_) {
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
      for (const ProcessFacts& p : procs_) {
        const CommMembership* in_parent = nullptr;
        for (const CommMembership& m : p.comms)
          if (m.comm == parent && m.Formed()) in_parent = &m;
        if (in_parent == nullptr) continue;
        const int r = Global(p.index, parent, in_parent->rank);
        if (c.callers.count(p.index)) {
          entered.push_back(r);
          continue;
        }
        // A shrink leaves out the ranks it excludes.
        if (c.call == f::kCommShrink) {
          bool excluded = false;
          for (int q : c.callers)
            for (const CommMembership& m : procs_[q].comms)
              if (m.parent == parent && m.split_index == split_index)
                excluded |= std::count(m.excluded.begin(), m.excluded.end(), in_parent->rank) > 0;
          if (excluded) continue;
        }
        skipped.push_back(r);
        if (skipper < 0) skipper = p.index;
        skipped_creation_.insert({parent, p.index});
      }
      if (skipped.empty()) continue;
      for (int q : c.callers) waiting_in_creation_.insert(q);
      std::sort(skipped.begin(), skipped.end());
      std::sort(entered.begin(), entered.end());
      Candidate cand;
      cand.process = skipper;
      Finding& x = cand.finding;
      x.kind = FindingKind::kMissingRank;
      x.comm = parent;
      x.nranks = job_.CommSize(parent);
      x.ranks = skipped;
      x.when_ns = c.first_ns;
      x.phase = HangPhase::kStartup;
      MissingRankFacts facts;
      facts.creation_call = c.call;
      facts.split_index = split_index;
      facts.entered = entered;
      facts.departure = WhatInstead(skipper, parent);
      x.facts = std::move(facts);
      candidates_.push_back(std::move(cand));
    }
  }

  // An init_failure that says only that its ranks waited for others.
  static bool WaitingOnly(const Finding& x) {
    const auto* init = std::get_if<InitFailureFacts>(&x.facts);
    return init != nullptr && init->subsystem == "waiting";
  }

  // A rank missing from a collective because it waits in a split another
  // member never called (SkippedCreation names that member).
  bool WaitsInSkippedCreation(const Candidate& c) const {
    if (c.finding.kind != FindingKind::kMissingRank || c.process < 0) return false;
    const auto* m = std::get_if<MissingRankFacts>(&c.finding.facts);
    return m != nullptr && m->creation_call == 0 && waiting_in_creation_.count(c.process) > 0;
  }

  // What process `q`, a member of `comm` that never made a call the others
  // made on it, did instead: left it, exited, died, or went on to other work.
  DepartureFacts WhatInstead(int q, uint64_t comm) const {
    const ProcessFacts& p = procs_[q];
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

  void Init() {
    for (const std::vector<int>& members : out_.jobs) {
      std::vector<InitEvidence> evidence;
      for (int q : members) evidence.push_back(procs_[q].init);
      for (InitFinding& f : DiagnoseInit(evidence)) {
        // Ranks that only wait in a split another member never called: the
        // skipped-creation finding explains them.
        if (WaitingOnly(f.finding) && waiting_in_creation_.count(f.process) > 0) continue;
        Candidate c;
        c.finding = std::move(f.finding);
        c.finding.nranks = c.finding.comm ? job_.CommSize(*c.finding.comm) : -1;
        c.process = f.process;
        candidates_.push_back(std::move(c));
      }
    }
  }

  // A job that never got past its rendezvous (analysis/rendezvous.h).
  void Rendezvous() {
    for (const std::vector<int>& members : out_.jobs) {
      std::vector<RendezvousEvidence> evidence;
      for (int q : members) {
        evidence.push_back(procs_[q].rendezvous);
        evidence.back().live = life_[q] == Life::kLive;
      }
      std::optional<Finding> f = RendezvousFinding(evidence);
      if (!f) continue;
      Candidate c;
      c.finding = std::move(*f);
      c.process = members.front();
      if (c.finding.when_ns == 0) c.finding.when_ns = procs_[members.front()].first_ns;
      candidates_.push_back(std::move(c));
    }
  }

  void Duplicates() {
    if (job_.duplicates().empty()) return;
    Finding n;
    n.kind = FindingKind::kDuplicateTraces;
    n.role = FindingRole::kNote;
    DuplicateTracesFacts facts;
    for (const auto& [path, first] : job_.duplicates()) facts.duplicates.push_back({path, first});
    n.facts = std::move(facts);
    notes_.push_back(n);
  }

  // Notes on how each job's ranks were set up (analysis/setup_notes.h).
  void Setup() {
    for (size_t j = 0; j < out_.jobs.size(); ++j) {
      std::vector<const InitEvidence*> ranks;
      for (int q : out_.jobs[j]) ranks.push_back(&procs_[q].init);
      for (Finding& n : SetupNotes(ranks)) {
        n.job = static_cast<int>(j);
        notes_.push_back(std::move(n));
      }
    }
  }

  // One note per job whose processes had NCCL code the shim could not see.
  void NotVisible() {
    std::map<int, NcclNotVisibleFacts> by_job;
    for (const ProcessFacts& p : procs_) {
      for (const NcclNotSeenEvent& e : p.not_seen) {
        NcclNotVisibleFacts::Item item;
        item.process = p.index;
        item.rank = p.rank;
        item.host = p.host;
        item.pid = p.pid;
        item.reason = e.reason;
        item.path = e.path;
        item.comm = e.comm;
        item.calls_seen = e.calls_seen;
        by_job[job_of_[p.index]].items.push_back(std::move(item));
      }
    }
    for (auto& [job, facts] : by_job) {
      Finding n;
      n.kind = FindingKind::kNcclNotVisible;
      n.role = FindingRole::kNote;
      n.job = job;
      std::set<int> ranks;
      for (const NcclNotVisibleFacts::Item& i : facts.items)
        if (i.rank >= 0) ranks.insert(i.rank);
      n.ranks.assign(ranks.begin(), ranks.end());
      n.facts = std::move(facts);
      notes_.push_back(std::move(n));
    }
  }

  // Where node summaries left out calls the analyses needed, or that
  // differ: one note per job, with the nodes whose traces to read in full.
  void SummaryGapsNote() {
    if (!job_.summary_gaps().any_left_out()) return;
    const std::vector<SummaryGap> gaps = job_.summary_gaps().Find();
    if (gaps.empty()) return;
    std::map<int, SummaryGapFacts> by_job;
    constexpr size_t kListed = 8;
    auto node = [&](int process) {
      const ProcessFacts& p = procs_[process];
      if (p.summary.empty()) return p.path;
      return absl::StrCat(p.summary_host, " (", p.summary, ")");
    };
    for (const SummaryGap& g : gaps) {
      if (g.left_out.empty()) continue;
      SummaryGapFacts& facts = by_job[job_of_[g.left_out.front().first]];
      if (facts.gaps.size() >= kListed) {
        ++facts.more;
        continue;
      }
      SummaryGapFacts::Gap x;
      x.differ = g.kind == SummaryGap::kDiffer;
      x.comm = g.comm;
      x.first_seq = g.first_seq;
      x.last_seq = g.end_seq - 1;
      std::set<std::string> left_nodes, other_nodes;
      // A sample of each side at most: the note stays short at any scale.
      constexpr size_t kRanks = 64, kNodes = 16;
      for (const auto& [process, rank] : g.left_out) {
        if (x.left_out_ranks.size() < kRanks)
          x.left_out_ranks.push_back(Global(process, g.comm, rank));
        if (left_nodes.size() < kNodes) left_nodes.insert(node(process));
      }
      for (const auto& [process, rank] : g.kept) {
        if (x.other_ranks.size() < kRanks) x.other_ranks.push_back(Global(process, g.comm, rank));
        if (other_nodes.size() < kNodes) other_nodes.insert(node(process));
      }
      std::sort(x.left_out_ranks.begin(), x.left_out_ranks.end());
      std::sort(x.other_ranks.begin(), x.other_ranks.end());
      x.left_out_nodes.assign(left_nodes.begin(), left_nodes.end());
      x.other_nodes.assign(other_nodes.begin(), other_nodes.end());
      facts.gaps.push_back(std::move(x));
    }
    for (auto& [job, facts] : by_job) {
      Finding n;
      n.kind = FindingKind::kSummaryGap;
      n.role = FindingRole::kNote;
      n.job = job;
      const SummaryGapFacts::Gap& first = facts.gaps.front();
      n.comm = first.comm;
      n.seq = first.first_seq;
      std::set<int> ranks;
      for (const SummaryGapFacts::Gap& g : facts.gaps)
        ranks.insert(g.left_out_ranks.begin(), g.left_out_ranks.end());
      n.ranks.assign(ranks.begin(), ranks.end());
      n.facts = std::move(facts);
      notes_.push_back(std::move(n));
    }
  }

  void Unreadable() {
    if (job_.unreadable().empty()) return;
    Finding n;
    n.kind = FindingKind::kUnreadableTraces;
    n.role = FindingRole::kNote;
    UnreadableTracesFacts facts;
    for (const UnreadableTrace& u : job_.unreadable())
      (u.may_hold_traces ? facts.not_searched : facts.errors).push_back(u.error);
    n.facts = std::move(facts);
    notes_.push_back(n);
  }

  // Live, a rank that is merely behind (it has not reached a collective, or
  // not yet posted a send or receive, the others have) is not a finding while
  // nothing in its job is stuck: ranks run at different steps.
  bool NotYet(const Candidate& c) const {
    if (c.process < 0 || life_[c.process] != Life::kLive) return false;
    const int j = job_of_[c.process];
    if (!job_live_[j]) return false;
    bool behind = c.finding.kind == FindingKind::kMissingRank;
    if (const auto* p2p = std::get_if<P2pMismatchFacts>(&c.finding.facts)) {
      behind = p2p->problem == P2pMismatchFacts::Problem::kSendNotReceived ||
               p2p->problem == P2pMismatchFacts::Problem::kReceiveNotSent;
    }
    if (!behind) return false;
    for (int q : out_.jobs[j]) {
      if (life_[q] != Life::kLive) return false;  // a rank ended or froze: not a race
      for (const CommCompletion& cc : Comms(q))
        if (Stuck(q, cc)) return false;
    }
    return true;
  }

  void Conclude() {
    candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(),
                                     [&](const Candidate& c) {
                                       return NotYet(c) || BehindAtTeardown(c) ||
                                              WaitsInSkippedCreation(c);
                                     }),
                      candidates_.end());
    // One finding per rank that died (the communicator where it was first
    // missed), and per rank that went missing for the same reason.
    std::stable_sort(candidates_.begin(), candidates_.end(),
                     [](const Candidate& a, const Candidate& b) {
                       if (a.tier != b.tier) return a.tier < b.tier;
                       return a.finding.when_ns < b.finding.when_ns;
                     });
    std::set<std::pair<FindingKind, std::vector<int>>> seen;
    std::vector<Candidate> kept;
    for (const Candidate& c : candidates_) {
      if (c.finding.kind == FindingKind::kRankDied || c.finding.kind == FindingKind::kMissingRank ||
          c.finding.kind == FindingKind::kRankFrozen) {
        if (!seen.insert({c.finding.kind, c.finding.ranks}).second) continue;
      }
      kept.push_back(c);
    }
    std::vector<bool> job_has_cause(out_.jobs.size(), false);
    for (Candidate& c : kept) {
      c.finding.job = c.process >= 0 ? job_of_[c.process] : 0;
      job_has_cause[c.finding.job] = true;
    }
    // A job where nothing was found is healthy only when it is. A job made
    // only of bystanders (processes with NCCL loaded that never called it
    // and have no launcher rank: torchrun's agent, a helper importing torch)
    // beside a job of ranks is not judged: its exit is not a rank's.
    bool ranks_elsewhere = false;
    for (size_t j = 0; j < out_.jobs.size(); ++j) ranks_elsewhere |= !Bystanders(j);
    for (size_t j = 0; j < out_.jobs.size(); ++j)
      if (!job_has_cause[j] && !(ranks_elsewhere && Bystanders(j))) HealthCheck(j, &kept);
    std::vector<bool> job_has_root(out_.jobs.size(), false);
    for (Candidate& c : kept) {
      c.finding.job = c.process >= 0 ? job_of_[c.process] : 0;
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
    for (Finding& n : notes_) {
      if (n.kind != FindingKind::kMissingTraces) continue;
      if (n.job < 0 || n.job >= static_cast<int>(out_.jobs.size()) || job_has_root[n.job]) continue;
      n.role = FindingRole::kRootCause;
      job_has_root[n.job] = true;
    }
    // So is a folder that could not be searched, or a link not followed, where
    // nothing is found in any job: it may hold a rank's trace.
    if (std::find(job_has_root.begin(), job_has_root.end(), true) == job_has_root.end()) {
      for (Finding& n : notes_) {
        const auto* u = std::get_if<UnreadableTracesFacts>(&n.facts);
        if (u == nullptr || u->not_searched.empty() || out_.jobs.empty()) continue;
        n.role = FindingRole::kRootCause;
        n.job = 0;
        job_has_root[0] = true;
      }
    }
    // And calls node summaries left out where the analyses needed them:
    // what they hold was not seen, so a job with nothing else found is not
    // healthy over it (its note names the nodes to read in full).
    // (A live job stays `running`, the note beside it: its nodes may simply
    // have been summarized moments apart.)
    for (Finding& n : notes_) {
      if (n.kind != FindingKind::kSummaryGap) continue;
      if (n.job < 0 || n.job >= static_cast<int>(out_.jobs.size()) || job_has_root[n.job]) continue;
      if (job_live_[n.job]) continue;
      n.role = FindingRole::kRootCause;
      job_has_root[n.job] = true;
    }
    for (size_t j = 0; j < out_.jobs.size(); ++j) {
      for (const Finding& n : notes_)
        if (n.role == FindingRole::kRootCause && n.job == static_cast<int>(j))
          out_.findings.push_back(n);
      for (const Candidate& c : kept)
        if (c.finding.job == static_cast<int>(j)) out_.findings.push_back(c.finding);
      for (const Finding& w : warnings_)
        if (w.job == static_cast<int>(j)) out_.findings.push_back(w);
    }
    // Warnings (communicators ordered differently on separate streams) and
    // notes leave a job healthy: only a cause makes a problem.
    out_.problem = !kept.empty();
    for (const Finding& n : notes_) {
      if (n.role == FindingRole::kRootCause) {
        out_.problem = true;
        continue;
      }
      out_.findings.push_back(n);
    }
  }

  // A live job with no problem is running: per communicator, the oldest
  // operation not done everywhere, the ranks that entered it and those that
  // had not, and for how long.
  void Pending() {
    out_.running = out_.live && !out_.problem;
    if (!out_.running) return;
    for (const auto& [comm, al] : job_.alignments()) {
      if (comm == 0 || al.members().empty()) continue;
      const int job = job_of_[al.members().front().process];
      if (!job_live_[job]) continue;
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
          const int r = Global(m.process, comm, m.comm_rank);
          (m.any && m.hi >= p.seq ? p.entered : p.not_entered).push_back(r);
        }
      } else {
        // Every member entered everything: the oldest operation a GPU has not finished.
        const LastCall* oldest = nullptr;
        for (const AlignedMember& m : al.members()) {
          for (const CommCompletion& c : Comms(m.process))
            if (c.comm == comm && c.pending &&
                (oldest == nullptr || c.oldest.when_ns < oldest->when_ns))
              oldest = &c.oldest;
          p.entered.push_back(Global(m.process, comm, m.comm_rank));
        }
        if (oldest == nullptr) continue;
        p.call = *oldest;
        p.seq = oldest->seq;
        p.since_ns = oldest->when_ns;
      }
      std::sort(p.entered.begin(), p.entered.end());
      std::sort(p.not_entered.begin(), p.not_entered.end());
      p.pending_ns = std::max<int64_t>(observed_.now_ns - p.since_ns, 0);
      out_.pending.push_back(std::move(p));
    }
    std::stable_sort(out_.pending.begin(), out_.pending.end(),
                     [](const PendingOperation& a, const PendingOperation& b) {
                       return a.pending_ns > b.pending_ns;
                     });
  }

  const JobAnalysis& job_;
  const std::vector<ProcessFacts>& procs_;
  std::vector<std::vector<CommCompletion>> comms_;  // per process (Reconcile)
  const LivenessObservation& observed_;
  std::vector<Life> life_;
  std::vector<char> proc_state_;
  std::vector<bool> job_live_;
  std::vector<std::vector<int>> overwritten_, unseen_;  // per job: blind spots' processes
  std::vector<int> job_of_;
  std::vector<Candidate> candidates_;
  // SkippedCreation: (parent communicator, process) that never called a split
  // the others wait in, and the processes waiting in such a split.
  std::set<std::pair<uint64_t, int>> skipped_creation_;
  std::set<int> waiting_in_creation_;
  std::vector<Finding> warnings_;
  std::vector<Finding> notes_;
  Diagnosis out_;
};

}  // namespace

Diagnosis Diagnose(const JobAnalysis& job, const LivenessObservation& observed) {
  return Diagnoser(job, observed).Run();
}

}  // namespace ncclwatch::decoder

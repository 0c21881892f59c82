#include "analysis/diagnosis.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "analysis/init_failure.h"
#include "analysis/setup_notes.h"

namespace ncclwatch::decoder {
namespace {

// A finding that may become the root cause, with the process it is about.
struct Candidate {
  Finding finding;
  int process = -1;
};

bool CrashSignal(int signo) {
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL ||
         signo == SIGABRT || signo == SIGSYS || signo == SIGTRAP;
}

class Diagnoser {
 public:
  explicit Diagnoser(const JobAnalysis& job) : job_(job), procs_(job.processes()) {}

  Diagnosis Run() {
    ClusterJobs();
    for (const ProcessFacts& p : procs_) out_.end_ns = std::max(out_.end_ns, p.last_ns);
    for (const auto& [comm, alignment] : job_.alignments()) {
      if (comm == 0) continue;
      DiagnoseCommunicator(comm, alignment);
    }
    PointToPoint();
    Orders();
    Init();
    Unreadable();
    Duplicates();
    Setup();
    NotVisible();
    Conclude();
    return out_;
  }

 private:
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
    // A job whose communicators never formed (its ranks disagreed on the
    // root, say) shares none: its processes are the launcher's ranks of one
    // job id, or of one program and world size that ran at the same time.
    std::map<std::string, int> by_job_id;
    for (const ProcessFacts& p : procs_) {
      if (p.job_id.empty()) continue;
      auto [it, fresh] = by_job_id.emplace(p.job_id, p.index);
      if (!fresh) parent[find(p.index)] = find(it->second);
    }
    for (const ProcessFacts& a : procs_) {
      if (!a.job_id.empty() || a.rank_source.empty() || a.world_size <= 0) continue;
      for (const ProcessFacts& b : procs_) {
        if (b.index <= a.index || !b.job_id.empty() || b.rank_source != a.rank_source ||
            b.world_size != a.world_size || b.exe != a.exe || b.host.empty() != a.host.empty()) {
          continue;
        }
        const bool overlap = a.first_ns <= b.last_ns && b.first_ns <= a.last_ns;
        if (overlap && a.rank != b.rank) parent[find(b.index)] = find(a.index);
      }
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
        n.facts = MissingTracesFacts{};
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
    if (p.fate.kind == Fate::kExited) {
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
      } else {
        d.how = Departure::kAliveUntilSignal;
      }
      return d;
    }
    if (JobRecordsEnds(m.process)) {
      d.kind = FindingKind::kRankDied;
      d.how = Departure::kKilledUntraced;
      return d;
    }
    d.how = Departure::kStopped;
    return d;
  }

  void Mismatch(uint64_t comm, const CollectiveAlignment& al, uint64_t seq, int nranks) {
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
          x.field = pr.send.datatype != pr.receive.datatype ? "datatype" : "count";
          break;
        case P2pProblem::kOrderMismatch:
          facts.problem = P2pMismatchFacts::Problem::kOrderMismatch;
          x.field = "order";
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

  // Init forensics, job by job: each job's ranks' initialisation evidence.
  void Init() {
    for (const std::vector<int>& members : out_.jobs) {
      std::vector<InitEvidence> evidence;
      for (int q : members) evidence.push_back(procs_[q].init);
      for (InitFinding& f : DiagnoseInit(evidence)) {
        Candidate c;
        c.finding = std::move(f.finding);
        c.finding.nranks = c.finding.comm ? job_.CommSize(*c.finding.comm) : -1;
        c.process = f.process;
        candidates_.push_back(std::move(c));
      }
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

  void Unreadable() {
    if (job_.unreadable().empty()) return;
    Finding n;
    n.kind = FindingKind::kUnreadableTraces;
    n.role = FindingRole::kNote;
    UnreadableTracesFacts facts;
    for (const UnreadableTrace& u : job_.unreadable()) facts.errors.push_back(u.error);
    n.facts = std::move(facts);
    notes_.push_back(n);
  }

  void Conclude() {
    // One finding per rank that died (the communicator where it was first
    // missed), and per rank that went missing for the same reason.
    std::sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
      return a.finding.when_ns < b.finding.when_ns;
    });
    std::set<std::pair<FindingKind, std::vector<int>>> seen;
    std::vector<Candidate> kept;
    for (const Candidate& c : candidates_) {
      if (c.finding.kind == FindingKind::kRankDied || c.finding.kind == FindingKind::kMissingRank) {
        if (!seen.insert({c.finding.kind, c.finding.ranks}).second) continue;
      }
      kept.push_back(c);
    }
    std::vector<bool> job_has_root(out_.jobs.size(), false);
    for (Candidate& c : kept) {
      c.finding.job = c.process >= 0 ? job_of_[c.process] : 0;
      c.finding.role =
          job_has_root[c.finding.job] ? FindingRole::kConsequence : FindingRole::kRootCause;
      job_has_root[c.finding.job] = true;
    }
    for (size_t j = 0; j < out_.jobs.size(); ++j) {
      for (const Candidate& c : kept)
        if (c.finding.job == static_cast<int>(j)) out_.findings.push_back(c.finding);
      for (const Finding& w : warnings_)
        if (w.job == static_cast<int>(j)) out_.findings.push_back(w);
    }
    // Warnings (communicators ordered differently on separate streams) and
    // notes leave a job healthy: only a cause makes a problem.
    out_.problem = !kept.empty();
    for (const Finding& n : notes_) out_.findings.push_back(n);
  }

  const JobAnalysis& job_;
  const std::vector<ProcessFacts>& procs_;
  std::vector<int> job_of_;
  std::vector<Candidate> candidates_;
  std::vector<Finding> warnings_;
  std::vector<Finding> notes_;
  Diagnosis out_;
};

}  // namespace

Diagnosis Diagnose(const JobAnalysis& job) { return Diagnoser(job).Run(); }

}  // namespace ncclwatch::decoder

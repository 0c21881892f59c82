#include "analysis/diagnosis.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/init_failure.h"
#include "ncclwatch/trace_fields.h"
#include "report/call_site.h"
#include "report/json.h"
#include "report/names.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;

// A finding that may become the root cause, with the process it is about.
struct Candidate {
  Finding finding;
  int process = -1;
};

std::string CommPhrase(uint64_t comm, int nranks) {
  return nranks > 0 ? absl::StrCat("communicator ", CommShort(comm), " (", nranks, " ranks)")
                    : absl::StrCat("communicator ", CommShort(comm));
}

bool CrashSignal(int signo) {
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL || signo == SIGABRT ||
         signo == SIGSYS || signo == SIGTRAP;
}

std::string FieldHint(const std::string& field) {
  if (field == "op") return "one rank is in another phase of the program: a skipped or extra step, or a collective issued only on some branch";
  if (field == "count") return "tensor shapes differ between ranks: an uneven last batch, padding, or dynamic shapes";
  if (field == "datatype") return "precision differs between ranks: autocast or a dtype cast on one code path";
  if (field == "redop") return "the reduction differs between ranks: the same call must use the same operator everywhere";
  if (field == "root") return "the root differs between ranks: compute it the same way on every rank";
  return "";
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

  int Global(int process, uint64_t comm, int32_t rank) const { return job_.GlobalRank(process, comm, rank); }

  std::string Site(int process, uint64_t caller) const {
    return process >= 0 ? CallSite(procs_[process].modules, caller) : "an unknown call site";
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
      std::vector<int> missing;
      for (int r = 0; r < nranks; ++r)
        if (!have.count(r)) missing.push_back(r);
      if (!missing.empty()) {
        Finding n;
        n.kind = "missing_traces";
        n.role = "note";
        n.comm = comm;
        n.nranks = nranks;
        n.ranks = missing;  // communicator ranks: their global ranks are unknown
        n.detail = absl::StrFormat("the traces of %s of %s are missing; the rest was diagnosed without them",
                                   RanksNoun(missing), CommPhrase(comm, nranks));
        n.fix = "collect the trace folder (NCCLWATCH_DIR) of every node of the job and pass them all to ncclwatch diagnose";
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
      std::string kind, reason, did, fix;
      int signo = 0;
      std::optional<uint64_t> last_seq;
      std::vector<std::string> sites;
    };
    std::map<std::tuple<std::string, uint64_t, std::string>, Behind> groups;
    for (const AlignedMember& m : members) {
      if (m.any && m.hi >= limit) continue;
      const uint64_t next = m.any ? m.hi + 1 : 0;
      if (divergence && next > *divergence) continue;
      int64_t entered_ns = 0;
      CollectiveSignature sig;
      if (!al.ReferenceAt(next, &sig, &entered_ns, nullptr)) continue;  // nobody entered it: not behind
      Behind b;
      Classify(m, comm, entered_ns, &b.kind, &b.reason, &b.did, &b.fix, &b.signo);
      b.next = next;
      b.when_ns = entered_ns;
      if (m.any) b.last_seq = m.hi;
      Behind& g = groups.try_emplace({b.kind, next, b.reason}, b).first->second;
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
      x.kind = g.kind;
      x.comm = comm;
      x.seq = g.next;
      x.nranks = nranks;
      x.ranks = g.ranks;
      x.when_ns = g.when_ns;
      x.detail = absl::StrFormat("%s never entered collective #%u of %s, %s, which %s entered; %s", RanksNoun(g.ranks),
                                 g.next, CommPhrase(comm, nranks), sig.Describe(), RanksNoun(others), g.reason);
      x.fix = g.fix;
      x.groups.push_back({others, absl::StrCat("entered ", sig.Describe(), " #", g.next, " and waited")});
      x.groups.push_back({g.ranks, g.last_seq ? absl::StrCat("last entered #", *g.last_seq, " (", g.sites.front(), "), then ",
                                                             g.did)
                                              : absl::StrCat("made no collective on it, then ", g.did)});
      x.extra.push_back({"did_instead", JsonString(g.did)});
      x.extra.push_back({"last_seq", g.last_seq ? absl::StrCat(*g.last_seq) : "null"});
      if (g.kind == "rank_died") x.extra.push_back({"signal", g.signo ? JsonString(SignalName(g.signo)) : "null"});
      c.process = g.process;
      candidates_.push_back(c);
    }
  }

  // What a rank that stopped before collective `next` of `comm` did instead.
  void Classify(const AlignedMember& m, uint64_t comm, int64_t entered_ns, std::string* kind, std::string* reason,
                std::string* did, std::string* fix, int* signo) const {
    const ProcessFacts& p = procs_[m.process];
    const CommMembership* mem = nullptr;
    for (const CommMembership& x : p.comms)
      if (x.comm == comm && x.rank == m.comm_rank) mem = &x;
    const std::string after = m.any ? absl::StrCat("after collective #", m.hi) : "before its first collective";
    const std::string uneven =
        "make every rank run the same collectives the same number of times (uneven data per rank: drop the last "
        "uneven batch, pad the dataset, or use a join context such as torch.distributed.algorithms.Join)";
    *kind = "missing_rank";
    if (mem != nullptr && mem->end_call != 0) {
      const std::string call = CallName(mem->end_call);
      *did = call == "ncclCommAbort" ? "aborted the communicator"
             : call == "ncclCommRevoke" ? "revoked the communicator"
             : call == "ncclCommFinalize" ? "finalized the communicator"
                                          : "destroyed the communicator";
      *reason = absl::StrCat("it called ", call, " on it ", after,
                             p.fate.kind == Fate::kExited ? absl::StrCat(" and exited with code ", p.fate.exit_code) : "");
      *fix = absl::StrCat("the rank left the communicator while the others still used it: ", uneven);
      return;
    }
    if (p.fate.kind == Fate::kExited) {
      *did = absl::StrCat("exited (code ", p.fate.exit_code, ")");
      *reason = absl::StrCat("it exited with code ", p.fate.exit_code, " ", after, " without destroying it");
      *fix = absl::StrCat("the rank's program ended early: ", uneven);
      return;
    }
    if (std::optional<LastCall> later = p.ActivityAfter(comm)) {
      *did = absl::StrCat("kept calling other communicators (last: ", later->what, ")");
      *reason = absl::StrCat("it was alive and kept calling other communicators ", after, ": its last call was ",
                             later->what, " from ", Site(m.process, later->caller));
      *fix = "the rank took another code path: it waits on another communicator while the others wait on this one; "
             "issue the collectives of all communicators in the same order on every rank";
      return;
    }
    if (p.fate.kind == Fate::kSignal) {
      *signo = p.fate.signo;
      if (CrashSignal(p.fate.signo) || p.fate.when_ns < entered_ns) {
        *kind = "rank_died";
        *did = absl::StrCat("died of ", SignalName(p.fate.signo));
        *reason = absl::StrCat("its process died of ", SignalName(p.fate.signo), " ", after);
        *fix = "the others waited for a rank that was gone: read that rank's own error output (stack trace, core "
               "dump) for why it died";
        return;
      }
      *did = absl::StrCat("was still alive, until ", SignalName(p.fate.signo), " ended it with the rest of the job");
      *reason = absl::StrCat("it was alive but made no NCCL call on it ", after, " until ", SignalName(p.fate.signo),
                             " ended it with the rest of the job");
      *fix = "the rank is stuck outside NCCL (a data loader, I/O, a CPU-side lock, a different branch): see where "
             "its program was after its last call, e.g. with py-spy dump or gdb on a hung job";
      return;
    }
    if (JobRecordsEnds(m.process)) {
      *kind = "rank_died";
      *did = "died without a trace of why (SIGKILL or the out-of-memory killer)";
      *reason = absl::StrCat("its trace ends ", after,
                             " with neither an exit nor a signal, while the others' traces end with one: it was "
                             "killed by SIGKILL or by the out-of-memory killer");
      *fix = "check the node's kernel log (dmesg: oom-kill) and the container's memory limit, and the scheduler's log "
             "for a kill of that process";
      return;
    }
    *did = "stopped: no exit or signal recorded";
    *reason = absl::StrCat("its trace stops ", after,
                           " with no exit or signal recorded, like every trace of this job: it was either still alive "
                           "outside NCCL, or killed without a signal");
    *fix = "see where the rank's program was (py-spy dump, gdb) if the job still hangs; otherwise check for a SIGKILL "
           "or an out-of-memory kill (dmesg) of that process";
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
      } else {
        not_reached.push_back(Global(m.process, comm, m.comm_rank));
        continue;
      }
      auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.sig == sig; });
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
      return *std::min_element(a.ranks.begin(), a.ranks.end()) < *std::min_element(b.ranks.begin(), b.ranks.end());
    });
    const Group& majority = groups.front();
    Candidate c;
    Finding& x = c.finding;
    x.kind = "collective_mismatch";
    x.comm = comm;
    x.seq = seq;
    x.nranks = nranks;
    x.when_ns = when;
    x.field = CollectiveSignature::DifferingField(majority.sig, groups[1].sig);
    std::vector<std::string> deviant;
    for (size_t i = 1; i < groups.size(); ++i) {
      x.ranks.insert(x.ranks.end(), groups[i].ranks.begin(), groups[i].ranks.end());
      deviant.push_back(absl::StrCat(RanksNoun(groups[i].ranks), " called ", groups[i].sig.Describe()));
    }
    std::sort(x.ranks.begin(), x.ranks.end());
    x.detail = absl::StrFormat("%s as collective #%u of %s where %s called %s", absl::StrJoin(deviant, " and "), seq,
                               CommPhrase(comm, nranks), RanksNoun(majority.ranks), majority.sig.Describe());
    const std::string hint = FieldHint(x.field);
    x.fix = absl::StrFormat(
        "make every rank call the same collectives in the same order with the same arguments; %s took another path "
        "at collective #%u (see its call site)%s",
        RanksNoun(x.ranks), seq, hint.empty() ? "" : absl::StrCat(": ", hint));
    std::string groups_json = "[";
    for (size_t i = 0; i < groups.size(); ++i) {
      const Group& g = groups[i];
      x.groups.push_back({g.ranks, absl::StrCat(g.sig.Describe(), " #", seq, " (", Site(g.process, g.caller), ")")});
      absl::StrAppend(&groups_json, i ? "," : "", "{\"ranks\":[", absl::StrJoin(g.ranks, ","),
                      "],\"call\":", JsonString(g.sig.Describe()), ",\"call_site\":", JsonString(Site(g.process, g.caller)), "}");
    }
    groups_json += "]";
    if (!not_reached.empty()) x.groups.push_back({not_reached, "had not reached it"});
    x.extra.push_back({"expected", JsonString(majority.sig.Describe())});
    x.extra.push_back({"groups", groups_json});
    c.process = groups[1].process;
    candidates_.push_back(c);
  }

  void PointToPoint() {
    for (const P2pProblem& pr : job_.p2p().problems()) {
      const int nranks = job_.CommSize(pr.comm);
      const int sender = Global(pr.sender_process, pr.comm, pr.sender);
      const int receiver = Global(pr.receiver_process, pr.comm, pr.receiver);
      Candidate c;
      Finding& x = c.finding;
      x.kind = "p2p_mismatch";
      x.comm = pr.comm;
      x.seq = pr.seq;
      x.nranks = nranks;
      x.ranks = {sender, receiver};
      x.when_ns = pr.when_ns;
      auto op = [](const P2pOp& o) { return absl::StrCat(o.count, " x ", DatatypeName(o.datatype)); };
      switch (pr.kind) {
        case P2pProblem::kSizeMismatch:
          x.field = pr.send.datatype != pr.receive.datatype ? "datatype" : "count";
          x.detail = absl::StrFormat(
              "rank %d sent %s to rank %d as its send #%u to that peer on %s, but rank %d posted its receive #%u "
              "from rank %d for %s",
              sender, op(pr.send), receiver, pr.seq, CommPhrase(pr.comm, nranks), receiver, pr.seq, sender,
              op(pr.receive));
          x.groups.push_back({{sender}, absl::StrCat("Send #", pr.seq, " of ", op(pr.send), " to rank ", receiver, " (",
                                                     Site(pr.sender_process, pr.send.caller), ")")});
          x.groups.push_back({{receiver}, absl::StrCat("Recv #", pr.seq, " of ", op(pr.receive), " from rank ", sender,
                                                       " (", Site(pr.receiver_process, pr.receive.caller), ")")});
          break;
        case P2pProblem::kOrderMismatch: {
          x.field = "order";
          auto place = [](int64_t n) {
            return n == 0 ? std::string("before its first collective") : absl::StrCat("after collective #", n - 1);
          };
          x.detail = absl::StrFormat(
              "rank %d posted its send #%u to rank %d %s of %s, but rank %d posted the matching receive %s: both sides "
              "wait on the communicator's stream behind a collective the other has not reached",
              sender, pr.seq, receiver, place(pr.send.collectives_before), CommPhrase(pr.comm, nranks), receiver,
              place(pr.receive.collectives_before));
          x.groups.push_back({{sender}, absl::StrCat("Send #", pr.seq, " to rank ", receiver, " ",
                                                     place(pr.send.collectives_before), " (",
                                                     Site(pr.sender_process, pr.send.caller), ")")});
          x.groups.push_back({{receiver}, absl::StrCat("Recv #", pr.seq, " from rank ", sender, " ",
                                                       place(pr.receive.collectives_before), " (",
                                                       Site(pr.receiver_process, pr.receive.caller), ")")});
          break;
        }
        case P2pProblem::kSendNotReceived:
          x.detail = absl::StrFormat(
              "rank %d sent %s to rank %d as its send #%u to that peer on %s, and rank %d never posted the matching "
              "receive (it posted %u receives from rank %d)",
              sender, op(pr.send), receiver, pr.seq, CommPhrase(pr.comm, nranks), receiver, pr.other_side_posted, sender);
          x.groups.push_back({{sender}, absl::StrCat("Send #", pr.seq, " to rank ", receiver, " (",
                                                     Site(pr.sender_process, pr.send.caller), ")")});
          break;
        case P2pProblem::kReceiveNotSent:
          x.detail = absl::StrFormat(
              "rank %d posted receive #%u from rank %d (%s) on %s, and rank %d never sent it (it posted %u sends to "
              "rank %d)",
              receiver, pr.seq, sender, op(pr.receive), CommPhrase(pr.comm, nranks), sender, pr.other_side_posted,
              receiver);
          x.groups.push_back({{receiver}, absl::StrCat("Recv #", pr.seq, " from rank ", sender, " (",
                                                       Site(pr.receiver_process, pr.receive.caller), ")")});
          break;
      }
      x.fix = "post every send with a matching receive on the peer, in the same order, with the same count and "
              "datatype (grouped with ncclGroupStart/End when both directions run at once)";
      x.extra.push_back({"sender", absl::StrCat(sender)});
      x.extra.push_back({"receiver", absl::StrCat(receiver)});
      c.process = pr.kind == P2pProblem::kReceiveNotSent ? pr.sender_process : pr.receiver_process;
      candidates_.push_back(c);
    }
  }

  void Orders() {
    for (const OrderInversionFinding& o : job_.order().Findings()) {
      Candidate c;
      Finding& x = c.finding;
      x.kind = "order_inversion";
      x.comm = o.comm_a;
      x.seq = o.seq_a;
      x.nranks = job_.CommSize(o.comm_a);
      const int self_rank = procs_[o.process].rank;
      const int ref_rank = procs_[o.reference_process].rank;
      // Both sides of the conflicting pair: which of two orders is "the" wrong
      // one is not something the traces can tell.
      x.ranks = {std::min(self_rank, ref_rank), std::max(self_rank, ref_rank)};
      x.when_ns = o.when_ns;
      const std::string a = absl::StrCat("collective #", o.seq_a, " of ", CommShort(o.comm_a));
      const std::string b = absl::StrCat("collective #", o.seq_b, " of ", CommShort(o.comm_b));
      const std::string first = o.process_a_first ? a : b;
      const std::string second = o.process_a_first ? b : a;
      x.detail = absl::StrFormat("rank %d issued %s before %s, and rank %d the reverse%s", self_rank, first, second,
                                 ref_rank,
                                 o.same_stream ? ", each on a single stream: each waits for the other"
                                               : ", on different streams");
      x.fix = "issue the collectives of different communicators in the same order on every rank (or, if they must "
              "overlap, on separate streams that never wait on each other)";
      x.groups.push_back({{self_rank}, absl::StrCat(first, " then ", second)});
      x.groups.push_back({{ref_rank}, absl::StrCat(second, " then ", first)});
      x.extra.push_back({"other_comm", JsonString(CommName(o.comm_b))});
      x.extra.push_back({"other_seq", absl::StrCat(o.seq_b)});
      x.extra.push_back({"same_stream", o.same_stream ? "true" : "false"});
      c.process = o.process;
      if (o.same_stream) {
        candidates_.push_back(c);
      } else {
        x.role = "warning";
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

  void Unreadable() {
    if (job_.unreadable().empty()) return;
    Finding n;
    n.kind = "unreadable_traces";
    n.role = "note";
    std::vector<std::string> lines;
    for (const UnreadableTrace& u : job_.unreadable()) lines.push_back(u.error);
    n.detail = absl::StrCat(job_.unreadable().size(), " file(s) could not be read: ", absl::StrJoin(lines, "; "));
    n.fix = "re-collect those files whole (a copy made while the job still wrote them can be torn); files of another "
            "ncclwatch version need that version to read them";
    notes_.push_back(n);
  }

  void Conclude() {
    // One finding per rank that died (the communicator where it was first
    // missed), and per rank that went missing for the same reason.
    std::sort(candidates_.begin(), candidates_.end(),
              [](const Candidate& a, const Candidate& b) { return a.finding.when_ns < b.finding.when_ns; });
    std::set<std::pair<std::string, std::vector<int>>> seen;
    std::vector<Candidate> kept;
    for (const Candidate& c : candidates_) {
      if (c.finding.kind == "rank_died" || c.finding.kind == "missing_rank") {
        if (!seen.insert({c.finding.kind, c.finding.ranks}).second) continue;
      }
      kept.push_back(c);
    }
    std::vector<bool> job_has_root(out_.jobs.size(), false);
    for (Candidate& c : kept) {
      c.finding.job = c.process >= 0 ? job_of_[c.process] : 0;
      c.finding.role = job_has_root[c.finding.job] ? "consequence" : "root_cause";
      job_has_root[c.finding.job] = true;
    }
    for (size_t j = 0; j < out_.jobs.size(); ++j) {
      for (const Candidate& c : kept)
        if (c.finding.job == static_cast<int>(j)) out_.findings.push_back(c.finding);
      for (const Finding& w : warnings_)
        if (w.job == static_cast<int>(j)) out_.findings.push_back(w);
    }
    out_.problem = !kept.empty() || !warnings_.empty();
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

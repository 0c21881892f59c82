// Collectives a communicator's ranks disagree on (collective_mismatch), and
// ranks that never entered one the others entered (missing_rank, rank_died,
// rank_frozen), with what each did instead; members whose traces are
// missing (a missing_traces note).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::diagnosis {

namespace {

namespace f = ::ncclwatch::fields;

// The code a call site is in (module, offset), the same in every process
// that loaded the module: ranks that stopped at the same place group together.
std::pair<std::string, uint64_t> Code(const DiagnosisContext& cx, const CallSiteRef& site) {
  if (site.process < 0 || site.address == 0) return {"", site.address};
  for (const ModuleInfo& m : cx.procs[site.process].modules)
    if (site.address >= m.start && site.address < m.end) return {m.path, site.address - m.base};
  return {"", site.address};
}

// Whether any process of `process`'s job left an end or a signal behind:
// evidence that a process of this job that left neither died without one.
bool JobRecordsEnds(const DiagnosisContext& cx, int process) {
  for (int q : cx.jobs[cx.job_of[process]])
    if (q != process && cx.procs[q].fate.kind != Fate::kNoEnd) return true;
  return false;
}

// Whether `comm` is a communicator ncclCommGrow made whose two sides were
// not joined (MissingTracesFacts::grow_unjoined): its members made it
// with ncclCommGrow, and no trace holds the link (the existing root's
// membership, with both identities).
bool GrowUnjoined(const DiagnosisContext& cx, uint64_t comm) {
  bool grown = false;
  for (const ProcessRecord& p : cx.procs) {
    for (const CommMembership& m : p.comms) {
      if (m.comm != comm || m.init_call != f::kCommGrow) continue;
      if (m.parent != 0 && m.grow_id != 0 && m.grow_id != m.comm) return false;  // the link
      if (m.parent == 0 && m.grow_id != m.comm) return false;  // a gained rank, joined
      grown = true;
    }
  }
  return grown;
}

// What a rank that stopped before collective `next` of `comm` did instead.
DepartureFacts Classify(const DiagnosisContext& cx, const AlignedMember& m, uint64_t comm,
                        int64_t entered_ns) {
  const ProcessRecord& p = cx.procs[m.process];
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
  const bool idle = !cx.Waiting(m.process);
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
  for (const CommCompletion& c : cx.Comms(p.index)) {
    // (Without a Progress its watcher may not have written one yet: unknown.)
    if (c.comm != comm || !c.tracked || !c.has_progress || !c.pending || !c.oldest.has_seq)
      continue;
    const bool collective = c.oldest.call != f::kSend && c.oldest.call != f::kRecv;
    if (collective && c.oldest.seq < m.hi + 1 && cx.lives[m.process] != Life::kCleanExit &&
        cx.lives[m.process] != Life::kErrorExit) {
      d.how = Departure::kWaitingOnGpu;
      d.later_call = c.oldest;
      d.later_site = Site(m.process, c.oldest.caller);
      return d;
    }
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
  const Life life = cx.lives[m.process];
  if (life == Life::kFrozen) {
    d.kind = FindingKind::kRankFrozen;
    d.how = Departure::kFrozen;
    d.live = true;
    d.proc_state = cx.proc_state[m.process];
    d.stopped_before_ns = cx.StoppedFirstBy(m.process);
    return d;
  }
  if (life == Life::kLive && idle) {
    d.how = Departure::kAliveIdle;
    d.live = true;
    return d;
  }
  if (beats && life == Life::kGone) {
    if (const int64_t gap = cx.StoppedFirstBy(m.process)) {
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
  if (JobRecordsEnds(cx, m.process)) {
    d.kind = FindingKind::kRankDied;
    d.how = Departure::kKilledUntraced;
    return d;
  }
  d.how = Departure::kStopped;
  return d;
}

void Mismatch(DiagnosisContext& cx, uint64_t comm, const CollectiveAlignment& al, uint64_t seq,
              int nranks) {
  // A node's summary left #seq out of some rank: who differs from whom
  // there cannot be told from the ranks left (it may blame the wrong one).
  // The summary_gap note says what could not be compared, and where to
  // read it in full.
  for (const AlignedMember& m : al.members()) {
    if (m.LeftOut(seq)) {
      cx.unsaid_divergences.emplace(std::make_pair(comm, seq), cx.job_of[m.process]);
      return;
    }
  }
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
      not_reached.push_back(cx.Global(m.process, comm, m.comm_rank));
      continue;
    }
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.sig == sig; });
    if (it == groups.end()) {
      groups.push_back({sig, {}, sig == ref ? ref_process : m.process, caller});
      it = std::prev(groups.end());
    }
    it->ranks.push_back(cx.Global(m.process, comm, m.comm_rank));
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
  for (const Group& g : groups) facts.groups.push_back({g.ranks, g.sig, Site(g.process, g.caller)});
  facts.not_reached = not_reached;
  x.facts = std::move(facts);
  c.process = groups[1].process;
  cx.candidates.push_back(c);
}

void DiagnoseCommunicator(DiagnosisContext& cx, uint64_t comm, const CollectiveAlignment& al) {
  const int nranks = cx.job.CommSize(comm);
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
      facts.grow_unjoined = GrowUnjoined(cx, comm);
      n.facts = facts;
      n.job = cx.job_of[anchor_process];
      cx.notes.push_back(n);
    }
  }

  const std::optional<uint64_t> divergence = al.FirstDivergence();
  if (divergence) Mismatch(cx, comm, al, *divergence, nranks);

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
    b.departure = Classify(cx, m, comm, entered_ns);
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
                  CallKey{d.later_call.call, d.later_call.comm, d.later_call.seq, d.later_call.send,
                          d.later_call.peer},
                  Code(cx, d.later_site)};
    Behind& g = groups.try_emplace(key, b).first->second;
    g.ranks.push_back(cx.Global(m.process, comm, m.comm_rank));
    if (g.process < 0) g.process = m.process;
    if (m.any) g.sites.push_back(Site(m.process, m.last.caller));
  }
  for (auto& [key, g] : groups) {
    CollectiveSignature sig;
    al.ReferenceAt(g.next, &sig, nullptr, nullptr);
    std::vector<int> others;
    for (const AlignedMember& m : members)
      if (m.any && m.hi >= g.next) others.push_back(cx.Global(m.process, comm, m.comm_rank));
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
    cx.candidates.push_back(c);
  }
}

}  // namespace

void FindCollectiveProblems(DiagnosisContext& cx) {
  for (const auto& [comm, alignment] : cx.job.alignments()) {
    if (comm == 0) continue;
    DiagnoseCommunicator(cx, comm, alignment);
  }
}

}  // namespace ncclwatch::decoder::diagnosis

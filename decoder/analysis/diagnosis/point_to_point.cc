// Sends and receives that disagree or lack the other side (p2p_mismatch),
// one-sided waits for a signal never sent, and communicators ordered
// differently on one stream (order_inversion).

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"

namespace ncclwatch::decoder::diagnosis {

namespace {

// A p2p_mismatch on `comm`'s #`seq` between the sender and the receiver
// `facts` name: all but its facts (and the field that differs).
void Between(const DiagnosisContext& cx, uint64_t comm, uint64_t seq, int64_t when_ns,
             const P2pMismatchFacts& facts, Finding* x) {
  x->kind = FindingKind::kP2pMismatch;
  x->comm = comm;
  x->seq = seq;
  x->nranks = cx.job.CommSize(comm);
  x->ranks = {facts.sender, facts.receiver};
  x->when_ns = when_ns;
}

// Whether `c` says a rank did not post or enter what others did: a send or
// receive whose other side never came (c.process is the rank that did not
// post it), or a rank missing from a collective.
bool IsBehind(const Candidate& c) {
  if (c.finding.kind == FindingKind::kMissingRank) return true;
  const auto* p2p = std::get_if<P2pMismatchFacts>(&c.finding.facts);
  return p2p != nullptr && !p2p->one_sided && p2p->Unmatched();
}

// A rank that posted one side of a send and receive that disagree (on size,
// datatype or order) waits behind it: what it is behind in afterwards is
// lowered below the disagreement (tier 3), which would otherwise race it
// on the time each was posted (a rank that came late to the disagreement
// can post its side after the others have moved on).
void LowerWhatDisagreementsExplain(DiagnosisContext& cx) {
  std::set<std::pair<int, int>> stuck;  // (job, global rank)
  for (const Candidate& c : cx.candidates) {
    const auto* p2p = std::get_if<P2pMismatchFacts>(&c.finding.facts);
    if (p2p == nullptr || c.process < 0 || p2p->Unmatched()) continue;
    for (int r : c.finding.ranks) stuck.insert({cx.job_of[c.process], r});
  }
  if (stuck.empty()) return;
  for (Candidate& c : cx.candidates) {
    if (c.process < 0 || !IsBehind(c) || c.finding.ranks.empty()) continue;
    const int job = cx.job_of[c.process];
    bool explained = false;
    if (c.finding.kind == FindingKind::kMissingRank) {
      explained = true;
      for (int r : c.finding.ranks) explained &= stuck.count({job, r}) == 1;
    } else {
      const auto& p2p = std::get<P2pMismatchFacts>(c.finding.facts);
      const int behind =
          p2p.problem == P2pMismatchFacts::Problem::kReceiveNotSent ? p2p.sender : p2p.receiver;
      explained = stuck.count({job, behind}) == 1;
    }
    if (explained) c.tier = std::max(c.tier, 3);
  }
}

}  // namespace

void FindP2pMismatches(DiagnosisContext& cx) {
  for (const P2pProblem& pr : cx.job.p2p().problems()) {
    Candidate c;
    Finding& x = c.finding;
    P2pMismatchFacts facts;
    facts.sender = cx.Global(pr.sender_process, pr.comm, pr.sender);
    facts.receiver = cx.Global(pr.receiver_process, pr.comm, pr.receiver);
    auto side = [](const P2pOp& o, int process) {
      return P2pMismatchFacts::Side{o.count, o.datatype, o.collectives_before,
                                    Site(process, o.caller)};
    };
    facts.send = side(pr.send, pr.sender_process);
    facts.receive = side(pr.receive, pr.receiver_process);
    facts.other_side_posted = pr.other_side_posted;
    Between(cx, pr.comm, pr.seq, pr.when_ns, facts, &x);
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
    cx.candidates.push_back(c);
  }
  LowerWhatDisagreementsExplain(cx);
}

void FindUnsentSignals(DiagnosisContext& cx) {
  std::set<int> waiting;
  for (const SignalProblem& pr : cx.job.signals().problems()) {
    Candidate c;
    Finding& x = c.finding;
    P2pMismatchFacts facts;
    facts.problem = P2pMismatchFacts::Problem::kReceiveNotSent;
    facts.one_sided = true;
    facts.sender = cx.Global(pr.sender_process, pr.comm, pr.sender);
    facts.receiver = cx.Global(pr.receiver_process, pr.comm, pr.receiver);
    facts.receive.site = Site(pr.receiver_process, pr.caller);
    facts.other_side_posted = pr.sent;
    facts.awaited = pr.awaited;
    Between(cx, pr.comm, pr.seq, pr.when_ns, facts, &x);
    waiting.insert(facts.receiver);
    x.facts = std::move(facts);
    c.process = pr.sender_process;
    cx.candidates.push_back(c);
  }
  if (waiting.empty()) return;
  for (Candidate& c : cx.candidates) {
    if (c.finding.kind != FindingKind::kMissingRank || c.finding.ranks.empty()) continue;
    bool all = true;
    for (int r : c.finding.ranks) all &= waiting.count(r) == 1;
    if (all) c.tier = std::max(c.tier, 3);
  }
}

void FindOrderInversions(DiagnosisContext& cx) {
  for (const OrderInversionFinding& o : cx.job.order().Findings()) {
    Candidate c;
    Finding& x = c.finding;
    x.kind = FindingKind::kOrderInversion;
    x.comm = o.comm_a;
    x.seq = o.seq_a;
    x.nranks = cx.job.CommSize(o.comm_a);
    OrderInversionFacts facts;
    facts.rank = cx.procs[o.process].rank;
    facts.reference_rank = cx.procs[o.reference_process].rank;
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
      cx.candidates.push_back(c);
    } else {
      x.role = FindingRole::kWarning;
      x.job = cx.job_of[o.process];
      cx.warnings.push_back(x);
    }
  }
}

}  // namespace ncclwatch::decoder::diagnosis

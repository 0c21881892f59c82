#include "analysis/p2p_matching.h"

#include <algorithm>

#include "analysis/nccl_semantics.h"

namespace ncclwatch::decoder {

void P2pMatching::AddProcess(int process, const ProcessTrace& trace) {
  // The collectives each rank had issued on each communicator before each of
  // its point-to-point calls (events of both kinds are in call order).
  std::map<std::pair<uint64_t, int32_t>, int64_t> issued;  // (comm, rank) -> last collective seq + 1
  std::map<std::pair<uint64_t, int32_t>, bool> known;      // whether the count starts from #0
  std::vector<int64_t> before(trace.p2p.size(), -1);
  {
    size_t c = 0;
    for (size_t i = 0; i < trace.p2p.size(); ++i) {
      const P2pEvent& e = trace.p2p[i];
      for (; c < trace.collectives.size() && trace.collectives[c].order < e.order; ++c) {
        const CollectiveEvent& x = trace.collectives[c];
        const auto key = std::make_pair(x.comm, x.rank);
        if (!known.count(key)) known[key] = x.seq == 0;
        if (x.result == 0 || x.result == 7 || x.result == kResultPending) issued[key] = static_cast<int64_t>(x.seq) + 1;
      }
      const auto key = std::make_pair(e.comm, e.rank);
      auto it = issued.find(key);
      // No collective on it yet: 0 before, unless the trace lost the start.
      before[i] = it != issued.end() ? (known[key] ? it->second : -1) : (trace.stats.ring_overwritten == 0 ? 0 : -1);
    }
  }
  std::map<Key, Side> sends, receives;
  for (size_t i = 0; i < trace.p2p.size(); ++i) {
    const P2pEvent& e = trace.p2p[i];
    if (e.comm == 0 || e.rank < 0 || e.peer < 0) continue;
    if (e.result != 0 && e.result != 7 && e.result != kResultPending) continue;  // refused: not numbered
    Side& side = e.send ? sends[Key{e.comm, e.rank, e.peer}] : receives[Key{e.comm, e.peer, e.rank}];
    side.present = true;
    side.process = process;
    side.posted = std::max(side.posted, e.seq + 1);
    side.ops.push_back({e.seq, e.count, e.datatype, trace.RealtimeNs(e.t), e.caller, before[i]});
  }
  auto merge = [this](std::map<Key, Side>& mine, bool are_sends) {
    for (auto& [key, side] : mine) {
      Pair& pair = pairs_[key];
      (are_sends ? pair.sends : pair.receives) = std::move(side);
      if (pair.sends.present && pair.receives.present && !pair.compared) Compare(key, pair);
    }
  };
  merge(sends, true);
  merge(receives, false);
}

void P2pMatching::Finish(const std::function<bool(uint64_t comm, int32_t rank, int* process)>& member) {
  for (auto& [key, pair] : pairs_) {
    if (pair.compared) continue;
    Side& absent = pair.sends.present ? pair.receives : pair.sends;
    const int32_t rank = pair.sends.present ? std::get<2>(key) : std::get<1>(key);
    int process = -1;
    if (!member(std::get<0>(key), rank, &process)) continue;
    absent.present = true;
    absent.process = process;
    absent.posted = 0;
    Compare(key, pair);
  }
}

void P2pMatching::Compare(const Key& key, Pair& pair) {
  pair.compared = true;
  const Side& s = pair.sends;
  const Side& r = pair.receives;
  P2pProblem base;
  base.comm = std::get<0>(key);
  base.sender = std::get<1>(key);
  base.receiver = std::get<2>(key);
  base.sender_process = s.process;
  base.receiver_process = r.process;

  // The first #k both hold where the sizes differ.
  size_t i = 0, j = 0;
  while (i < s.ops.size() && j < r.ops.size()) {
    if (s.ops[i].seq < r.ops[j].seq) {
      ++i;
    } else if (r.ops[j].seq < s.ops[i].seq) {
      ++j;
    } else {
      const P2pOp& a = s.ops[i];
      const P2pOp& b = r.ops[j];
      if (a.count != b.count || a.datatype != b.datatype) {
        P2pProblem p = base;
        p.kind = P2pProblem::kSizeMismatch;
        p.seq = a.seq;
        p.send = a;
        p.receive = b;
        p.when_ns = std::max(a.when_ns, b.when_ns);
        problems_.push_back(p);
        break;
      }
      if (a.collectives_before >= 0 && b.collectives_before >= 0 && a.collectives_before != b.collectives_before) {
        P2pProblem p = base;
        p.kind = P2pProblem::kOrderMismatch;
        p.seq = a.seq;
        p.send = a;
        p.receive = b;
        p.when_ns = std::min(a.when_ns, b.when_ns);  // the first side has waited since
        problems_.push_back(p);
        break;
      }
      ++i;
      ++j;
    }
  }
  // An unmatched tail: the side that posted more than the other.
  if (s.posted > r.posted) {
    P2pProblem p = base;
    p.kind = P2pProblem::kSendNotReceived;
    p.seq = r.posted;
    p.other_side_posted = r.posted;
    for (const P2pOp& op : s.ops)
      if (op.seq == r.posted) p.send = op;
    p.send.seq = r.posted;
    p.when_ns = p.send.when_ns;
    problems_.push_back(p);
  } else if (r.posted > s.posted) {
    P2pProblem p = base;
    p.kind = P2pProblem::kReceiveNotSent;
    p.seq = s.posted;
    p.other_side_posted = s.posted;
    for (const P2pOp& op : r.ops)
      if (op.seq == s.posted) p.receive = op;
    p.receive.seq = s.posted;
    p.when_ns = p.receive.when_ns;
    problems_.push_back(p);
  }
  pair.sends.ops.clear();
  pair.sends.ops.shrink_to_fit();
  pair.receives.ops.clear();
  pair.receives.ops.shrink_to_fit();
}

}  // namespace ncclwatch::decoder

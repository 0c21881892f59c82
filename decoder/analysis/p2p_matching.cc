#include "analysis/p2p_matching.h"

#include <algorithm>

namespace ncclwatch::decoder {

void P2pMatching::AddProcess(int process, const ProcessTrace& trace) {
  std::map<Key, Side> sends, receives;
  for (const CommStream& stream : trace.streams) {
    if (!stream.holds_start) lost_start_.insert({stream.comm, stream.rank});
    for (size_t k = 0; k < stream.p2p.size(); ++k) {
      const P2pEvent& e = trace.p2p[stream.p2p[k]];
      Side& side =
          e.send ? sends[Key{e.comm, e.rank, e.peer}] : receives[Key{e.comm, e.peer, e.rank}];
      side.present = true;
      side.process = process;
      side.posted = std::max(side.posted, e.seq + 1);
      side.ops.push_back({e.seq, e.count, e.datatype, trace.RealtimeNs(e.t), e.caller,
                          stream.collectives_before_p2p[k]});
    }
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

void P2pMatching::Finish(
    const std::function<bool(uint64_t comm, int32_t rank, int* process)>& member) {
  for (auto& [key, pair] : pairs_) {
    if (pair.compared) continue;
    Side& absent = pair.sends.present ? pair.receives : pair.sends;
    const int32_t rank = pair.sends.present ? std::get<2>(key) : std::get<1>(key);
    int process = -1;
    // A side whose trace lost its start may have posted what was lost.
    if (lost_start_.count({std::get<0>(key), rank})) continue;
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
      if (a.collectives_before >= 0 && b.collectives_before >= 0 &&
          a.collectives_before != b.collectives_before) {
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

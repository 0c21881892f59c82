#include "analysis/p2p_matching.h"

#include <algorithm>
#include <map>
#include <optional>

#include "summary/call_digest.h"

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
  for (const LeftOutP2p& l : trace.left_out_p2p) {
    Side& side =
        l.send ? sends[Key{l.comm, l.rank, l.peer}] : receives[Key{l.comm, l.peer, l.rank}];
    side.present = true;
    side.process = process;
    side.posted = std::max(side.posted, l.EndSeq());
    for (size_t b = 0; b < l.Blocks(); ++b) side.left.push_back({l.first_block + b, l.blocks[b]});
  }
  for (auto* mine : {&sends, &receives})
    for (auto& [key, side] : *mine)
      std::stable_sort(side.left.begin(), side.left.end(),
                       [](const LeftBlock& a, const LeftBlock& b) { return a.block < b.block; });
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
  uint64_t problem_at = UINT64_MAX;  // blocks left out past it are not compared
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
        problem_at = a.seq;
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
        problem_at = a.seq;
        break;
      }
      ++i;
      ++j;
    }
  }
  if ((!s.left.empty() || !r.left.empty()) && s.posted > 0 && r.posted > 0)
    CompareLeftOut(base, s, r, std::min({s.posted, r.posted, problem_at}));
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
  for (Side* side : {&pair.sends, &pair.receives}) {
    side->ops.clear();
    side->ops.shrink_to_fit();
    side->left.clear();
    side->left.shrink_to_fit();
  }
}

void P2pMatching::CompareLeftOut(const P2pProblem& base, const Side& s, const Side& r,
                                 uint64_t compared_to) {
  // The blocks either side left out, below `compared_to` (past it: the
  // unmatched tail, or what the traces would not compare after a problem).
  std::vector<uint64_t> blocks;
  for (const Side* side : {&s, &r})
    for (const LeftBlock& l : side->left)
      if (l.block * kLeftOutBlock < compared_to) blocks.push_back(l.block);
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  if (blocks.empty()) return;
  // Each side: its calls in those blocks digested, in one pass; and the
  // lowest number it holds (a trace that lost its start holds none below).
  struct Digested {
    std::map<uint64_t, std::pair<P2pBlockDigest, uint64_t>> kept;  // block -> (digests, calls)
    uint64_t lo = UINT64_MAX;
  };
  auto digest_side = [&](const Side& side) {
    Digested d;
    for (const P2pOp& op : side.ops) {
      d.lo = std::min(d.lo, op.seq);
      const uint64_t block = op.seq / kLeftOutBlock;
      if (!std::binary_search(blocks.begin(), blocks.end(), block)) continue;
      auto& [sums, calls] = d.kept[block];
      AddP2pCall(op.seq, op.count, op.datatype, op.collectives_before, &sums);
      ++calls;
    }
    if (!side.left.empty()) d.lo = std::min(d.lo, side.left.front().block * kLeftOutBlock);
    return d;
  };
  const Digested ds = digest_side(s), dr = digest_side(r);
  // A side's digests of `block`: the ones its summary kept, or its calls'
  // there when it holds every number of the block; nothing otherwise.
  auto digest = [](const Side& side, const Digested& d, uint64_t block,
                   bool* left) -> std::optional<P2pBlockDigest> {
    auto it = std::lower_bound(side.left.begin(), side.left.end(), block,
                               [](const LeftBlock& l, uint64_t b) { return l.block < b; });
    *left = it != side.left.end() && it->block == block;
    if (*left) return it->d;
    auto k = d.kept.find(block);
    if (k == d.kept.end() || k->second.second != kLeftOutBlock) return std::nullopt;
    return k->second.first;
  };
  // Whether two sides' digests of a block agree, as the traces whole would
  // compare its calls (P2pMatching's comment); none: they cannot say.
  auto agree = [](const P2pBlockDigest& a, const P2pBlockDigest& b) -> std::optional<bool> {
    if (a.unknown == b.unknown) return a.digest == b.digest;
    if (a.signature != b.signature) return false;
    if (a.unknown == kLeftOutBlock || b.unknown == kLeftOutBlock) return true;
    return std::nullopt;
  };
  size_t gaps = 0;
  for (uint64_t block : blocks) {
    // A side whose trace begins after the block (its ring lost it) was not
    // compared there from the traces either: no gap of the summary's.
    if (ds.lo >= (block + 1) * kLeftOutBlock || dr.lo >= (block + 1) * kLeftOutBlock) continue;
    bool s_left = false, r_left = false;
    const std::optional<P2pBlockDigest> a = digest(s, ds, block, &s_left);
    const std::optional<P2pBlockDigest> b = digest(r, dr, block, &r_left);
    const std::optional<bool> same = a && b ? agree(*a, *b) : std::nullopt;
    if (same == true) continue;
    // A side not digested whose ring begins inside the block: its trace
    // lost its start, and holds every number from its first to the block's end.
    auto ring_start = [&](const Digested& d, int32_t rank) {
      auto k = d.kept.find(block);
      return lost_start_.count({base.comm, rank}) > 0 && d.lo > block * kLeftOutBlock &&
             k != d.kept.end() && k->second.second == (block + 1) * kLeftOutBlock - d.lo;
    };
    P2pGap g;
    g.kind = same.has_value() ? P2pGap::kDiffer : P2pGap::kNotCompared;
    g.comm = base.comm;
    g.sender = base.sender;
    g.receiver = base.receiver;
    g.sender_process = base.sender_process;
    g.receiver_process = base.receiver_process;
    g.sender_left_out = s_left;
    g.receiver_left_out = r_left;
    g.first_seq = block * kLeftOutBlock;
    g.end_seq = g.first_seq + kLeftOutBlock;
    g.ring_start =
        !(a && b) && (a || ring_start(ds, base.sender)) && (b || ring_start(dr, base.receiver));
    P2pGap* last = gaps == 0 ? nullptr : &gaps_.back();
    if (last != nullptr && last->kind == g.kind && last->end_seq == g.first_seq &&
        last->sender_left_out == g.sender_left_out &&
        last->receiver_left_out == g.receiver_left_out && last->ring_start == g.ring_start) {
      last->end_seq = g.end_seq;
    } else if (gaps < kMaxGapsPerPair) {
      gaps_.push_back(g);
      ++gaps;
    } else {
      ++more_gaps_;
    }
  }
}

}  // namespace ncclwatch::decoder

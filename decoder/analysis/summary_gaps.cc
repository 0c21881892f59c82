#include "analysis/summary_gaps.h"

#include <algorithm>
#include <set>

#include "findings/collective_signature.h"
#include "summary/call_digest.h"

namespace ncclwatch::decoder {

namespace {

// Sorts `v` by block, keeping the order of entries of one block, and folds
// each block's entries into its first with fold(first, next).
template <typename T, typename Fold>
void OneEntryPerBlock(std::vector<T>* v, Fold fold) {
  std::stable_sort(v->begin(), v->end(), [](const T& a, const T& b) { return a.block < b.block; });
  size_t n = 0;
  for (size_t i = 0; i < v->size(); ++i) {
    if (n > 0 && (*v)[n - 1].block == (*v)[i].block) {
      fold((*v)[n - 1], (*v)[i]);
    } else {
      (*v)[n++] = (*v)[i];
    }
  }
  v->resize(n);
}

// The entry of `block` in `v` (sorted by block, one each), or none; `*at`
// a cursor that only moves forward, for blocks asked in rising order: each
// member's entries are passed once over all the blocks of its communicator,
// not searched again for each (131,072 members times tens of blocks).
template <typename Entry>
const Entry* AtBlock(const std::vector<Entry>& v, size_t* at, uint64_t block) {
  while (*at < v.size() && v[*at].block < block) ++*at;
  return *at < v.size() && v[*at].block == block ? &v[*at] : nullptr;
}

}  // namespace

void SummaryGaps::AddProcess(int process, const ProcessTrace& t) {
  const bool summarized = !t.summary.empty() || digest_whole_;
  // A summary's reader digested its kept calls already (on its core).
  const bool predigested = summarized && t.kept_blocks.size() == t.streams.size();
  for (size_t k = 0; k < t.streams.size(); ++k) {
    const CommStream& s = t.streams[k];
    if (!s.any()) continue;
    Member m;
    m.process = process;
    m.rank = s.rank;
    m.digested = summarized;
    m.lost_start = !s.holds_start;
    if (!summarized) {
      // A trace read whole, not digested: its first and last numbers (a
      // stream's rise by one) are all that is kept of it, at no cost.
      const uint64_t first = t.collectives[s.collectives.front()].seq;
      const uint64_t last = t.collectives[s.collectives.back()].seq;
      m.any = true;
      m.lo = std::min(first, last);
      m.hi = std::max(first, last);
    } else {
      const KeptBlocks digested = predigested ? KeptBlocks() : DigestKeptCalls(t, s);
      const KeptBlocks& kept = predigested ? t.kept_blocks[k] : digested;
      m.any = kept.any;
      m.lo = kept.lo;
      m.hi = kept.hi;
      // A block met twice (numbers out of order) is summed into one.
      m.kept = kept.blocks;
      OneEntryPerBlock(&m.kept, [](Member::Kept& into, const Member::Kept& next) {
        into.digest += next.digest;
        into.calls += next.calls;
      });
    }
    for (const LeftOutCalls& l : t.left_out) {
      if (l.comm != s.comm || l.rank != s.rank || l.digests.empty()) continue;
      for (size_t b = 0; b < l.digests.size(); ++b)
        m.left.push_back({l.first_block + b, l.digests[b]});
      if (!m.any) {
        m.any = true;
        m.lo = l.FirstSeq();
        m.hi = l.EndSeq() - 1;
      }
      m.lo = std::min(m.lo, l.FirstSeq());
      m.hi = std::max(m.hi, l.EndSeq() - 1);
      any_left_out_ = true;
    }
    // One digest a block, the last given (as a crafted summary's runs may
    // overlap).
    OneEntryPerBlock(&m.left, [](Member::Left& into, const Member::Left& next) { into = next; });
    m.left.shrink_to_fit();
    comms_[s.comm].push_back(std::move(m));
  }
}

SummaryGaps::Found SummaryGaps::Find(size_t listed_per_comm) const {
  Found found;
  std::vector<SummaryGap>& out = found.gaps;
  if (!any_left_out_) return found;
  for (const auto& [comm, members] : comms_) {
    std::set<uint64_t> blocks;  // every block some member left out
    for (const Member& m : members)
      for (const Member::Left& l : m.left) blocks.insert(l.block);
    std::vector<size_t> left_at(members.size(), 0), kept_at(members.size(), 0);
    size_t gaps[2] = {0, 0};     // listed: only where a ring begins, and the others
    SummaryGap* open = nullptr;  // the gap the previous block extended
    uint64_t open_end_block = 0;
    for (uint64_t b : blocks) {
      SummaryGap g;
      g.comm = comm;
      g.first_seq = b * kLeftOutBlock;
      g.end_seq = g.first_seq + kLeftOutBlock;
      // Each member that reached the block, with the digest it has there
      // (left out, or kept whole), or none (kept in part, or a whole trace).
      std::vector<std::pair<std::pair<int, int32_t>, uint64_t>> digested;
      std::vector<std::pair<int, int32_t>> not_digested;
      bool ring_start = true;  // every one not digested holds the block from its ring's start
      bool any_left = false;
      for (size_t i = 0; i < members.size(); ++i) {
        const Member& m = members[i];
        if (!m.any || m.hi < g.first_seq || m.lo >= g.end_seq) continue;  // never reached it
        if (const Member::Left* l = AtBlock(m.left, &left_at[i], b)) {
          any_left = true;
          g.left_out.emplace_back(m.process, m.rank);
          digested.push_back({{m.process, m.rank}, l->digest});
          continue;
        }
        const Member::Kept* k = AtBlock(m.kept, &kept_at[i], b);
        if (m.digested && k != nullptr && k->calls == kLeftOutBlock) {
          digested.push_back({{m.process, m.rank}, k->digest});
        } else {
          not_digested.emplace_back(m.process, m.rank);
          ring_start &= m.digested && m.lost_start && m.lo > g.first_seq && k != nullptr &&
                        k->calls == g.end_seq - m.lo;
        }
      }
      if (!any_left) continue;
      std::map<uint64_t, size_t> votes;
      for (const auto& [who, digest] : digested) ++votes[digest];
      if (!not_digested.empty() && votes.size() <= 1) {
        g.kind = SummaryGap::kNotCompared;
        g.kept = std::move(not_digested);
        g.ring_start = ring_start;
      } else if (votes.size() > 1) {
        // The ranks that differ from the most common digest (on a tie, the
        // one of the lowest process), and those they differ from.
        g.kind = SummaryGap::kDiffer;
        uint64_t majority = digested.front().second;
        for (const auto& [digest, n] : votes)
          if (n > votes[majority]) majority = digest;
        g.left_out.clear();
        for (const auto& [who, digest] : digested)
          (digest == majority ? g.kept : g.left_out).push_back(who);
      } else {
        open = nullptr;  // compared, and alike
        continue;
      }
      if (open != nullptr && open_end_block == b && open->kind == g.kind &&
          open->left_out == g.left_out && open->kept == g.kept &&
          open->ring_start == g.ring_start) {
        open->end_seq = g.end_seq;
        open_end_block = b + 1;
        continue;
      }
      size_t& listed = gaps[g.kind == SummaryGap::kNotCompared && g.ring_start ? 0 : 1];
      if (listed++ >= listed_per_comm) {
        ++found.more;
        open = nullptr;
        continue;
      }
      out.push_back(std::move(g));
      open = &out.back();
      open_end_block = b + 1;
    }
  }
  return found;
}

}  // namespace ncclwatch::decoder

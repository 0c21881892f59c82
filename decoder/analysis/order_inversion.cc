#include "analysis/order_inversion.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <unordered_map>

namespace ncclwatch::decoder {
namespace {

// Whether the side that issued A#k before B#j (its last A before B#j being
// A#a_before) put the two on one stream: from its mask when A#k is among its
// last 64, else from its last A (the nearest it knows).
bool SameStreamBefore(int64_t a_before, uint64_t mask, bool same_prev, int64_t k) {
  const int64_t back = a_before - k;
  if (back >= 0 && back < 64) return (mask >> back) & 1;
  return same_prev;
}

// A communicator's span in one process's order.
struct Span {
  uint64_t first = 0, last = 0;
};

// The pairs (i, j) of `spans` that overlap, i < j: a sweep in order of
// their first collective, O(n log n + pairs).
std::vector<std::pair<size_t, size_t>> Overlapping(const std::vector<Span>& spans) {
  std::vector<size_t> by_first(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) by_first[i] = i;
  std::sort(by_first.begin(), by_first.end(),
            [&](size_t x, size_t y) { return spans[x].first < spans[y].first; });
  std::vector<std::pair<size_t, size_t>> out;
  std::set<std::pair<uint64_t, size_t>> open;  // (last, index) of spans begun and not ended
  for (size_t i : by_first) {
    while (!open.empty() && open.begin()->first < spans[i].first) open.erase(open.begin());
    for (const auto& [last, j] : open) out.push_back({std::min(i, j), std::max(i, j)});
    open.insert({spans[i].last, i});
  }
  return out;
}

// The pairs (i, j), i < j, that one order (`mine`) has disjoint one way and
// the other (`theirs`) disjoint the other way round: i wholly before j in
// one, j wholly before i in the other. O(n log n + pairs).
std::vector<std::pair<size_t, size_t>> Reversed(const std::vector<Span>& mine,
                                                const std::vector<Span>& theirs) {
  const size_t n = mine.size();
  std::vector<std::pair<size_t, size_t>> out;
  std::vector<size_t> by_first(n), by_last(n);
  for (size_t i = 0; i < n; ++i) by_first[i] = by_last[i] = i;
  std::sort(by_first.begin(), by_first.end(),
            [&](size_t x, size_t y) { return mine[x].first < mine[y].first; });
  std::sort(by_last.begin(), by_last.end(),
            [&](size_t x, size_t y) { return mine[x].last < mine[y].last; });
  // For each i in order of its first collective in `mine`: the ones that
  // ended before it there, kept by where they begin in `theirs`; those that
  // begin there after i ended were issued the other way round.
  std::multimap<uint64_t, size_t> ended;  // their first -> index
  size_t next = 0;
  for (size_t i : by_first) {
    for (; next < n && mine[by_last[next]].last < mine[i].first; ++next)
      ended.insert({theirs[by_last[next]].first, by_last[next]});
    for (auto it = ended.upper_bound(theirs[i].last); it != ended.end(); ++it)
      out.push_back({std::min(i, it->second), std::max(i, it->second)});
  }
  return out;
}

}  // namespace

uint64_t OrderInversion::CommSummary::Stream(uint32_t i) const {
  auto it = std::upper_bound(
      stream_runs.begin(), stream_runs.end(), i,
      [](uint32_t index, const std::pair<uint32_t, uint64_t>& run) { return index < run.first; });
  return it == stream_runs.begin() ? 0 : std::prev(it)->second;
}

OrderInversion::CommSummary OrderInversion::Summarise(int process, const ProcessTrace& trace,
                                                      const CommStream& s) {
  CommSummary c;
  c.process = process;
  c.comm = s.comm;
  c.count = static_cast<uint32_t>(s.collectives.size());
  const CollectiveEvent& first = trace.collectives[s.collectives.front()];
  const CollectiveEvent& last = trace.collectives[s.collectives.back()];
  c.first_order = first.order;
  c.last_order = last.order;
  c.first_seq = first.seq;
  c.last_seq = last.seq;
  c.holds_start = s.holds_start;
  c.first_when_ns = trace.RealtimeNs(first.t);
  c.last_when_ns = trace.RealtimeNs(last.t);
  bool running = true;
  for (uint32_t i = 0; i < c.count; ++i) {
    const CollectiveEvent& e = trace.collectives[s.collectives[i]];
    running &= e.seq == c.first_seq + i;
    if (c.stream_runs.empty() || c.stream_runs.back().second != e.stream)
      c.stream_runs.push_back({i, e.stream});
    if (c.count <= kSummaryTimes) c.when_ns.push_back(trace.RealtimeNs(e.t));
  }
  if (!running) {
    for (uint32_t index : s.collectives) c.seqs.push_back(trace.collectives[index].seq);
  }
  return c;
}

std::vector<OrderInversion::Around> OrderInversion::AroundFrom(const ProcessTrace& trace,
                                                               const CommStream& sa,
                                                               const CommStream& sb,
                                                               int64_t* max_a) {
  // The two streams merged in call order.
  std::vector<Around> around;
  around.reserve(sb.collectives.size());
  int64_t last_a = -1;
  uint64_t last_a_stream = 0;
  uint64_t recent[64];  // the streams of the last 64 A collectives, a circle
  uint64_t seen_a = 0;
  const bool a_complete = sa.holds_start;  // the trace holds this process's A collectives from A#0
  size_t ia = 0;
  for (uint32_t b_index : sb.collectives) {
    const CollectiveEvent& b = trace.collectives[b_index];
    for (; ia < sa.collectives.size() && trace.collectives[sa.collectives[ia]].order < b.order;
         ++ia) {
      const CollectiveEvent& a = trace.collectives[sa.collectives[ia]];
      last_a = static_cast<int64_t>(a.seq);
      last_a_stream = a.stream;
      recent[seen_a++ % 64] = a.stream;
    }
    if (last_a < 0 && !a_complete) continue;
    Around x;
    x.seq_b = b.seq;
    x.a_before = last_a;
    x.same_prev = last_a >= 0 && b.stream == last_a_stream;
    for (uint64_t i = 0; i < 64 && i < seen_a; ++i)
      if (recent[(seen_a - 1 - i) % 64] == b.stream) x.same_mask |= uint64_t{1} << i;
    x.when_ns = trace.RealtimeNs(b.t);
    // The first A collective after B#j, for "next A" streams.
    if (ia < sa.collectives.size())
      x.same_next = b.stream == trace.collectives[sa.collectives[ia]].stream;
    around.push_back(x);
  }
  *max_a = static_cast<int64_t>(trace.collectives[sa.collectives.back()].seq);  // its last A
  return around;
}

std::vector<OrderInversion::Around> OrderInversion::AroundFrom(const CommSummary& a,
                                                               const CommSummary& b,
                                                               int64_t* max_a) {
  // What AroundFrom(trace, ...) gives for a process whose A collectives all
  // came before its B ones, or all after.
  *max_a = static_cast<int64_t>(a.last_seq);
  std::vector<Around> around;
  const bool a_first = a.last_order < b.first_order;
  if (!a_first && !a.holds_start) return around;  // nothing known before any B#j
  around.reserve(b.count);
  for (uint32_t j = 0; j < b.count; ++j) {
    Around x;
    x.seq_b = b.Seq(j);
    const uint64_t stream = b.Stream(j);
    if (a_first) {
      x.a_before = static_cast<int64_t>(a.last_seq);
      x.same_prev = stream == a.Stream(a.count - 1);
      for (uint32_t i = 0; i < 64 && i < a.count; ++i)
        if (a.Stream(a.count - 1 - i) == stream) x.same_mask |= uint64_t{1} << i;
    } else {
      x.same_next = stream == a.Stream(0);
    }
    x.when_ns = !b.when_ns.empty() ? b.when_ns[j]
                : j == 0           ? b.first_when_ns
                : j + 1 == b.count ? b.last_when_ns
                                   : 0;  // not kept: the other side's time stands
    around.push_back(x);
  }
  return around;
}

void OrderInversion::Compare(int process, uint64_t comm_a, uint64_t comm_b,
                             const std::vector<Around>& around, int64_t max_a, PairState* st) {
  for (const Around& x : around) {
    Entry& ref = st->ref.At(x.seq_b);
    if (!ref.set) {
      ref.set = true;
      ref.a_before = x.a_before;
      ref.same_prev = x.same_prev;
      ref.same_next = x.same_next;
      ref.same_mask = x.same_mask;
      ref.provider = process;
      ref.provider_max_a = max_a;
      ref.when_ns = x.when_ns;
      continue;
    }
    if (ref.a_before == x.a_before) continue;
    // Both must have issued the A collective in question: one that never
    // did skipped it (another finding), it did not reorder it.
    const int64_t conflicting_a = std::max(ref.a_before, x.a_before);
    if (max_a < conflicting_a || ref.provider_max_a < conflicting_a) continue;
    if (st->found && st->finding.seq_b <= x.seq_b) break;
    // The earliest A the two ordered differently around B#j: one issued
    // it before B#j, the other as its first A after B#j.
    const int64_t first_a = std::min(ref.a_before, x.a_before) + 1;
    OrderInversionFinding f;
    f.comm_a = comm_a;
    f.comm_b = comm_b;
    f.seq_b = x.seq_b;
    f.seq_a = static_cast<uint64_t>(first_a);
    f.process = process;
    f.reference_process = ref.provider;
    f.process_a_first = x.a_before > ref.a_before;
    const bool mine_same = f.process_a_first
                               ? SameStreamBefore(x.a_before, x.same_mask, x.same_prev, first_a)
                               : x.same_next;
    const bool ref_same =
        f.process_a_first ? ref.same_next
                          : SameStreamBefore(ref.a_before, ref.same_mask, ref.same_prev, first_a);
    f.same_stream = mine_same && ref_same;
    f.when_ns = std::max(ref.when_ns, x.when_ns);
    st->found = true;
    st->finding = f;
    break;
  }
}

OrderInversion::PairState& OrderInversion::StateOf(uint64_t comm_a, uint64_t comm_b) {
  auto [it, fresh] = pairs_.try_emplace({comm_a, comm_b});
  if (!fresh) return it->second;
  partners_[comm_a].push_back(comm_b);
  partners_[comm_b].push_back(comm_a);
  // Every earlier process with both, in the order they were added: each had
  // the pair disjoint (else it would have a state), the same way round
  // (else the second would have made one).
  auto ma = members_.find(comm_a), mb = members_.find(comm_b);
  if (ma == members_.end() || mb == members_.end()) return it->second;
  const std::vector<uint32_t>& as = ma->second;
  const std::vector<uint32_t>& bs = mb->second;
  for (size_t i = 0, j = 0; i < as.size() && j < bs.size();) {
    const CommSummary& a = summaries_[as[i]];
    const CommSummary& b = summaries_[bs[j]];
    if (a.process < b.process) {
      ++i;
    } else if (b.process < a.process) {
      ++j;
    } else {
      int64_t max_a = -1;
      const std::vector<Around> around = AroundFrom(a, b, &max_a);
      Compare(a.process, comm_a, comm_b, around, max_a, &it->second);
      ++i;
      ++j;
    }
  }
  return it->second;
}

void OrderInversion::AddProcess(int process, const ProcessTrace& trace) {
  // One rank per communicator in this process, or no single order to compare.
  std::vector<const CommStream*> streams;
  for (const CommStream& s : trace.streams)
    if (s.any()) streams.push_back(&s);
  if (streams.size() < 2) return;  // no pair
  std::sort(streams.begin(), streams.end(),
            [](const CommStream* x, const CommStream* y) { return x->comm < y->comm; });
  for (size_t i = 1; i < streams.size(); ++i)
    if (streams[i]->comm == streams[i - 1]->comm) return;
  const size_t n = streams.size();
  std::vector<Span> spans(n);
  std::unordered_map<uint64_t, size_t> index_of;
  for (size_t i = 0; i < n; ++i) {
    spans[i] = {trace.collectives[streams[i]->collectives.front()].order,
                trace.collectives[streams[i]->collectives.back()].order};
    index_of[streams[i]->comm] = i;
  }

  // The pairs this process is compared on: those it interleaves, those that
  // have a reference already, and those it orders the other way round from
  // an earlier process that had them disjoint.
  std::vector<std::pair<size_t, size_t>> pairs = Overlapping(spans);
  // Where every pair is interleaved, that is all of them.
  const size_t disjoint = n * (n - 1) / 2 - pairs.size();
  for (size_t i = 0; i < n && disjoint > 0; ++i) {
    auto it = partners_.find(streams[i]->comm);
    if (it == partners_.end()) continue;
    for (uint64_t other : it->second) {
      auto j = index_of.find(other);
      if (j != index_of.end() && i < j->second) pairs.push_back({i, j->second});
    }
  }
  if (disjoint > 0) {
    // The earlier processes sharing two or more of these communicators, in
    // the order they were added, with the summaries of those they share.
    std::map<int, std::vector<std::pair<size_t, uint32_t>>> shared;
    for (size_t i = 0; i < n; ++i) {
      auto it = members_.find(streams[i]->comm);
      if (it == members_.end()) continue;
      for (uint32_t k : it->second) shared[summaries_[k].process].push_back({i, k});
    }
    for (const auto& [other, common] : shared) {
      if (common.size() < 2) continue;
      std::vector<Span> mine, theirs;
      for (const auto& [i, k] : common) {
        mine.push_back(spans[i]);
        theirs.push_back({summaries_[k].first_order, summaries_[k].last_order});
      }
      for (const auto& [x, y] : Reversed(mine, theirs)) {
        const size_t i = common[x].first, j = common[y].first;
        pairs.push_back({std::min(i, j), std::max(i, j)});
      }
      // One that had every one of them answers for every pair: all earlier
      // processes with a pair and no reference for it ordered it alike.
      if (common.size() == n) break;
    }
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  for (const auto& [i, j] : pairs) {
    const CommStream& sa = *streams[i];
    const CommStream& sb = *streams[j];
    int64_t max_a = -1;
    const std::vector<Around> around = AroundFrom(trace, sa, sb, &max_a);
    Compare(process, sa.comm, sb.comm, around, max_a, &StateOf(sa.comm, sb.comm));
  }
  // Then this process's summaries, for the references of pairs made later.
  for (const CommStream* s : streams) {
    members_[s->comm].push_back(static_cast<uint32_t>(summaries_.size()));
    summaries_.push_back(Summarise(process, trace, *s));
  }
}

std::vector<OrderInversionFinding> OrderInversion::Findings() const {
  std::vector<OrderInversionFinding> out;
  for (const auto& [key, st] : pairs_)
    if (st.found) out.push_back(st.finding);
  return out;
}

}  // namespace ncclwatch::decoder

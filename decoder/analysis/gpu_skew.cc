#include "analysis/gpu_skew.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "analysis/lateness_stats.h"

namespace ncclwatch::decoder {

void GpuSkew::AddProcess(int index, const ProcessTrace& t) {
  if (t.gpu_times.empty()) return;
  if (!t.anchors.empty()) {
    // CLOCK_MONOTONIC to realtime, as the trace's first anchor pairs them.
    Ends& ends = gpu_ends_[index];
    // A communicator whose earlier GPU times a summary left out: its
    // finishes are all there only from its first kept one on.
    std::map<uint64_t, int64_t> first_kept;
    for (const GpuTimeEvent& g : t.gpu_times) {
      if (g.end_ns == 0 || g.end_ns >= INT64_MAX / 2) continue;
      const int64_t end = t.RealtimeOfMonotonicNs(g.end_ns);
      ends.at.push_back(end);
      if (t.LeftOutGpuTimesOf(g.comm) == 0) continue;
      auto [it, fresh] = first_kept.try_emplace(g.comm, end);
      if (!fresh) it->second = std::min(it->second, end);
    }
    for (const auto& [comm, end] : first_kept)
      ends.complete_from = std::max(ends.complete_from, end);
    std::sort(ends.at.begin(), ends.at.end());
    if (ends.at.size() > 4 * kWindow) {
      ends.at.erase(ends.at.begin(), ends.at.end() - static_cast<std::ptrdiff_t>(4 * kWindow));
      ends.complete_from = std::max(ends.complete_from, ends.at.front());
    }
  }
  // This process's operations by when its GPU began them (CLOCK_MONOTONIC),
  // each with the latest end of it and every operation begun before it.
  std::vector<std::pair<int64_t, int64_t>> begun;  // (begin, latest end so far)
  for (const GpuTimeEvent& g : t.gpu_times)
    if (g.begin_ns != 0 && g.end_ns != 0 && g.end_ns < INT64_MAX / 2)
      begun.emplace_back(static_cast<int64_t>(g.begin_ns), static_cast<int64_t>(g.end_ns));
  std::sort(begun.begin(), begun.end());
  for (size_t i = 1; i < begun.size(); ++i)
    begun[i].second = std::max(begun[i].second, begun[i - 1].second);
  for (const CommStream& s : t.streams) {
    if (!s.any() || s.rank < 0) continue;
    // A process with two ranks of one communicator: its GPU times do not
    // say which rank's they are.
    int ranks_here = 0;
    for (const CommStream& o : t.streams) ranks_here += o.comm == s.comm && o.rank >= 0;
    if (ranks_here != 1) continue;
    Member m;
    m.process = index;
    m.summary_cut = t.LeftOutGpuTimesOf(s.comm) > 0;
    // The last kWindow collective numbers this rank's GPU timed.
    bool any = false;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const GpuTimeEvent& g : t.gpu_times) {
      if (g.comm != s.comm || !g.OneCollective() || g.gpu_ns == 0) continue;
      any = true;
      lo = std::min(lo, g.collectives - 1);
      hi = std::max(hi, g.collectives - 1);
    }
    if (!any) continue;
    m.first_seq = hi - lo >= kWindow ? hi - kWindow + 1 : lo;
    m.samples.assign(hi - m.first_seq + 1, Sample{});
    for (const GpuTimeEvent& g : t.gpu_times) {
      if (g.comm != s.comm || !g.OneCollective() || g.gpu_ns == 0) continue;
      if (g.collectives - 1 < m.first_seq) continue;
      Sample& x = m.samples[g.collectives - 1 - m.first_seq];
      x.gpu_ns = static_cast<int64_t>(std::min<uint64_t>(g.gpu_ns, INT64_MAX));
      x.enqueue_ns = INT64_MIN;
      x.since_previous_ns = INT64_MIN;
      if (g.begin_ns != 0 && g.begin_ns < INT64_MAX / 2) {
        // The latest end of the operations begun before it (not by ends
        // alone: back to back on the stream, the one's end and the next's
        // begin may come out tens of microseconds swapped, each converted
        // through its own anchor estimate). Overlapping it: no time between.
        const int64_t begin = static_cast<int64_t>(g.begin_ns);
        auto after = std::lower_bound(begun.begin(), begun.end(), std::make_pair(begin, INT64_MIN));
        if (after != begun.begin())
          x.since_previous_ns = std::max<int64_t>(begin - (after - 1)->second, 0);
      }
      x.call = g.call;
    }
    for (uint32_t i : s.collectives) {
      const CollectiveEvent& e = t.collectives[i];
      if (Sample* x = m.At(e.seq)) x->enqueue_ns = t.RealtimeNs(e.t);
    }
    comms_[s.comm][s.rank] = std::move(m);
  }
}

void GpuSkew::AlignClocks(const HostClocks& clocks) {
  for (auto& [comm, members] : comms_) {
    for (auto& [rank, m] : members) {
      const int64_t offset = clocks.OffsetOf(m.process);
      if (offset == 0) continue;
      for (Sample& x : m.samples) x.enqueue_ns = HostClocks::OnReference(x.enqueue_ns, offset);
    }
  }
  for (auto& [process, ends] : gpu_ends_) {
    const int64_t offset = clocks.OffsetOf(process);
    if (offset == 0) continue;
    for (int64_t& e : ends.at) e = HostClocks::OnReference(e, offset);
    if (ends.complete_from != INT64_MIN)
      ends.complete_from = HostClocks::OnReference(ends.complete_from, offset);
  }
}

std::optional<bool> GpuSkew::WaitedOnGpu(uint64_t comm, int32_t rank, uint64_t seq,
                                         int64_t gap_ns) const {
  auto c = comms_.find(comm);
  if (c == comms_.end() || !c->second.count(rank)) return std::nullopt;
  // From the process's GPU's last finish before `enqueue` to it; -1 unknown.
  auto idle = [&](const Member& m) -> int64_t {
    const Sample* s = m.At(seq);
    auto e = gpu_ends_.find(m.process);
    if (s == nullptr || s->enqueue_ns == INT64_MIN || e == gpu_ends_.end()) return -1;
    const int64_t at = s->enqueue_ns;
    const std::vector<int64_t>& ends = e->second.at;
    auto after = std::upper_bound(ends.begin(), ends.end(), at);
    if (after == ends.begin() || *(after - 1) < e->second.complete_from) return -1;
    return at - *(after - 1);
  };
  const int64_t mine = idle(c->second.at(rank));
  if (mine < 0) return std::nullopt;
  int64_t others = -1;
  for (const auto& [r, m] : c->second) {
    if (r == rank) continue;
    const int64_t v = idle(m);
    if (v < 0) return std::nullopt;
    others = std::max(others, v);
  }
  if (others < 0) return std::nullopt;
  return mine - others < gap_ns / 2;
}

bool GpuSkew::ExplainsHostStraggler(const ArrivalStraggler& s,
                                    const std::vector<ArrivalSpan>& spans) const {
  uint64_t known = 0, waited = 0;
  for (const ArrivalSpan& a : spans) {
    if (a.comm != s.comm || a.last != s.rank) continue;
    const std::optional<bool> w = WaitedOnGpu(s.comm, s.rank, a.seq, a.gap);
    if (!w) continue;
    ++known;
    waited += *w;
  }
  return known > 0 && 2 * waited >= known;
}

std::vector<GpuStraggler> GpuSkew::Stragglers() const {
  std::vector<GpuStraggler> out;
  for (const auto& [comm, members] : comms_) {
    const int n = static_cast<int>(members.size());
    if (n < 2) continue;
    // Per collective every member timed: who reached it last on the GPU, by
    // how much, and whether its GPU (not its host) made it late.
    struct Op {
      uint64_t seq;
      int32_t last;       // GPU-late member, -1 none
      int32_t gpu_last;   // the member whose GPU came last by kMinGapNs, -1 none
      int64_t gap;        // its GPU lateness
      int64_t host_late;  // its host's lateness (may be negative: early)
      uint32_t call;
    };
    std::vector<Op> ops;
    const Member& first = members.begin()->second;
    // The members in a vector: a map walked per collective costs its nodes'
    // cache misses.
    std::vector<std::pair<int32_t, const Member*>> list;
    list.reserve(members.size());
    for (const auto& [rank, m] : members) list.push_back({rank, &m});
    for (uint64_t seq = first.first_seq; seq < first.first_seq + first.samples.size(); ++seq) {
      const Sample* sample = first.At(seq);
      if (sample == nullptr) continue;
      int64_t shortest = INT64_MAX, second = INT64_MAX;
      int32_t who = -1;
      const Member* who_m = nullptr;
      bool all = true;
      for (const auto& [rank, m] : list) {
        const Sample* x = m->At(seq);
        if (x == nullptr) {
          all = false;
          break;
        }
        const int64_t d = x->gpu_ns;
        if (d < shortest) {
          second = shortest;
          shortest = d;
          who = rank;
          who_m = m;
        } else if (d < second) {
          second = d;
        }
      }
      if (!all) continue;
      Op op{seq, -1, -1, second - shortest, 0, sample->call};
      if (op.gap >= kMinGapNs) {
        op.gpu_last = who;
        const Sample& mine = *who_m->At(seq);
        int64_t others_latest = INT64_MIN;
        bool hosts_known = mine.enqueue_ns != INT64_MIN;
        for (const auto& [rank, m] : list) {
          if (rank == who) continue;
          const int64_t e = m->At(seq)->enqueue_ns;
          hosts_known &= e != INT64_MIN;
          others_latest = std::max(others_latest, e);
        }
        if (hosts_known) {
          op.host_late = mine.enqueue_ns - others_latest;
          const int64_t excess = op.gap - std::max<int64_t>(op.host_late, 0);
          const bool own_work =
              mine.since_previous_ns == INT64_MIN || 2 * mine.since_previous_ns >= excess;
          if (excess >= kMinGapNs && 4 * excess >= op.gap && own_work) op.last = who;
        }
      }
      ops.push_back(op);
    }
    if (ops.empty()) continue;
    uint64_t gapped = 0;
    std::map<int32_t, uint64_t> times_last;
    for (const Op& op : ops) {
      if (op.gpu_last < 0) continue;
      ++gapped;
      if (op.last >= 0) ++times_last[op.last];
    }
    std::vector<uint8_t> anyone_last(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) anyone_last[i] = ops[i].gpu_last >= 0;
    std::vector<uint8_t> indicator(ops.size());
    for (const auto& [rank, count] : times_last) {
      // Too few to stand out anywhere (most members of a large communicator).
      if (count < lateness::kMinTimesLast) continue;
      for (size_t i = 0; i < ops.size(); ++i) indicator[i] = ops[i].last == rank;
      if (!lateness::StandsOutOrSince(indicator, anyone_last, n)) continue;
      const Member& mine = members.at(rank);
      GpuStraggler x;
      x.comm = comm;
      x.rank = rank;
      x.process = mine.process;
      x.members = n;
      for (const auto& [r, m] : members) x.member_processes.push_back(m.process);
      x.compared = ops.size();
      x.timed = ops.size();
      x.window = kWindow;
      x.summary_kept = lateness::FewestKept(
          members, kWindow, [](const Member& m) { return m.summary_cut; },
          [](const Member& m) {
            return static_cast<uint64_t>(std::count_if(
                m.samples.begin(), m.samples.end(), [](const Sample& y) { return y.gpu_ns != 0; }));
          });
      x.gapped = gapped;
      x.times_last = count;
      std::vector<int64_t> all_gaps(ops.size()), host_late;
      std::vector<uint64_t> seqs(ops.size());
      std::vector<uint32_t> calls(ops.size());
      for (size_t i = 0; i < ops.size(); ++i) {
        all_gaps[i] = ops[i].gap;
        seqs[i] = ops[i].seq;
        calls[i] = ops[i].call;
        if (!indicator[i]) continue;
        host_late.push_back(std::max<int64_t>(ops[i].host_late, 0));
        x.host_on_time += ops[i].host_late < kMinGapNs;
      }
      // GPU times say nothing of whether the window held the first
      // collective beyond its number: from_start is taken as true.
      const lateness::Window w =
          lateness::DescribeWindow(seqs, /*from_start=*/true, indicator, all_gaps, kMinGapNs);
      lateness::SetWindow(w, &x);
      const lateness::CallLast most = lateness::MostOftenLast(calls, indicator);
      x.call = most.call;
      x.call_times_last = most.times_last;
      x.call_compared = most.compared;
      x.host_late_ns = lateness::Quantile(host_late, 0.5);
      std::vector<int64_t> intervals;
      int64_t previous = INT64_MIN;
      for (const Sample& s : mine.samples) {
        if (s.gpu_ns == 0) continue;
        if (s.enqueue_ns != INT64_MIN && previous != INT64_MIN && s.enqueue_ns >= previous)
          intervals.push_back(s.enqueue_ns - previous);
        previous = s.enqueue_ns;
      }
      x.median_interval_ns = lateness::Quantile(intervals, 0.5);
      // Held to its lateness since it began: before, a busy machine's.
      if (w.since_late_ns < kMinLateNs ||
          w.since_late_ns < x.median_interval_ns / ArrivalSkew::kIntervalsPerLate)
        continue;
      if (!w.persists) continue;
      const int64_t began_enqueue = mine.At(x.began_seq)->enqueue_ns;
      x.began_ns = began_enqueue == INT64_MIN ? 0 : began_enqueue;
      out.push_back(x);
    }
  }
  return out;
}

}  // namespace ncclwatch::decoder

#include "analysis/arrival_skew.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "analysis/lateness_stats.h"
#include "summary/summary_format.h"

namespace ncclwatch::decoder {

// A node's summary keeps what this analysis keeps of each member, narrowed
// the same way past 8,192 members (summary/summary_format.h CommWindow).
static_assert(ArrivalSkew::kWindow == kDefaultSummaryWindow &&
                  ArrivalSkew::kMaxKept == kMaxKeptCalls,
              "a summary's window is the straggler analysis's");

using lateness::Quantile;

void ArrivalSkew::AddProcess(int index, const ProcessTrace& t) {
  for (const CommStream& s : t.streams) {
    if (!s.any() || s.rank < 0) continue;
    // The last kWindow numbered collectives, by number (a stream is in call
    // order; its numbers rise by one, less what the ring lost).
    size_t from = s.collectives.size() > window_ ? s.collectives.size() - window_ : 0;
    // A node's summary that left out the middle of the calls: only the run
    // after what it left out (its head and tail are not one series).
    const size_t window_from = from;
    for (const LeftOutCalls& l : t.left_out) {
      if (l.comm != s.comm || l.rank != s.rank || l.digests.empty()) continue;
      while (from < s.collectives.size() && t.collectives[s.collectives[from]].seq < l.EndSeq())
        ++from;
    }
    if (from >= s.collectives.size()) continue;
    const uint64_t first = t.collectives[s.collectives[from]].seq;
    const uint64_t last = t.collectives[s.collectives.back()].seq;
    if (last < first || last - first >= 4 * kWindow) continue;  // numbers not in order: skip
    Series series;
    series.process = index;
    series.first_seq = first;
    series.from_start = from == 0 && s.holds_start && first == 0;
    series.summary_cut = from > window_from;
    series.ns.assign(last - first + 1, INT64_MIN);
    series.call.assign(last - first + 1, 0);
    for (size_t i = from; i < s.collectives.size(); ++i) {
      const CollectiveEvent& e = t.collectives[s.collectives[i]];
      if (e.seq < first || e.seq > last) continue;
      series.ns[e.seq - first] = t.RealtimeNs(e.t);
      series.call[e.seq - first] = e.call;
    }
    // A process with two ranks of one communicator keeps both (keyed by rank).
    auto [at, fresh] = comms_[s.comm].insert_or_assign(s.rank, std::move(series));
    (void)at;
    if (!fresh) continue;
    // One member more: past kMaxKept, every member keeps half as many.
    if (++members_ * window_ <= max_kept_ || window_ == 1) continue;
    while (members_ * window_ > max_kept_ && window_ > 1) window_ /= 2;
    for (auto& [comm, members] : comms_)
      for (auto& [rank, m] : members) Narrow(&m, window_);
  }
}

void ArrivalSkew::Narrow(Series* s, size_t window) {
  size_t kept = 0;
  size_t at = s->ns.size();
  while (at > 0 && kept < window) {
    --at;
    if (s->ns[at] != INT64_MIN) ++kept;
  }
  // `at` is the first of the last `window` recorded (or 0: fewer are).
  while (at < s->ns.size() && s->ns[at] == INT64_MIN) ++at;
  if (at == 0) return;
  s->ns.erase(s->ns.begin(), s->ns.begin() + static_cast<std::ptrdiff_t>(at));
  s->call.erase(s->call.begin(), s->call.begin() + static_cast<std::ptrdiff_t>(at));
  s->ns.shrink_to_fit();
  s->call.shrink_to_fit();
  s->first_seq += at;
  s->from_start = false;
}

std::vector<ArrivalSkew::Op> ArrivalSkew::Compare(const Members& members) {
  std::vector<Op> ops;
  uint64_t lo = 0, hi = UINT64_MAX;
  for (const auto& [rank, s] : members) {
    if (s.ns.empty()) return ops;
    lo = std::max(lo, s.first_seq);
    hi = std::min(hi, s.first_seq + s.ns.size() - 1);
  }
  if (hi == UINT64_MAX || hi < lo) return ops;
  // Member by member, in rank order, over every number at once (each
  // member's series read in a row, not one number of every member at a
  // time): per number the latest, the one before it and the earliest, who
  // was latest and the call of the last member read, as a loop per number
  // over the members in rank order would find them.
  const size_t n = hi - lo + 1;
  struct Acc {
    int64_t latest = INT64_MIN;
    int64_t second = INT64_MIN;
    int64_t earliest = INT64_MAX;
    int32_t who = -1;
    uint32_t call = 0;
    bool all = true;
  };
  std::vector<Acc> acc(n);
  for (const auto& [rank, s] : members) {
    const int64_t* ns = s.ns.data() + (lo - s.first_seq);
    const uint32_t* call = s.call.data() + (lo - s.first_seq);
    for (size_t i = 0; i < n; ++i) {
      Acc& a = acc[i];
      const int64_t v = ns[i];
      if (v == INT64_MIN) a.all = false;
      if (!a.all) continue;
      a.call = call[i];
      a.earliest = std::min(a.earliest, v);
      if (v > a.latest) {
        a.second = a.latest;
        a.latest = v;
        a.who = rank;
      } else if (v > a.second) {
        a.second = v;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const Acc& a = acc[i];
    if (!a.all) continue;
    const int64_t gap = a.latest - a.second;
    ops.push_back(Op{lo + i, gap >= kMinGapNs ? a.who : -1, gap, a.call, a.earliest, a.latest});
  }
  return ops;
}

void ArrivalSkew::AlignClocks(const HostClocks& clocks) {
  for (auto& [comm, members] : comms_) {
    for (auto& [rank, m] : members) {
      const int64_t offset = clocks.OffsetOf(m.process);
      if (offset == 0) continue;
      for (int64_t& ns : m.ns) ns = HostClocks::OnReference(ns, offset);
    }
  }
}

std::vector<ArrivalSpan> ArrivalSkew::Spans() const {
  std::vector<ArrivalSpan> out;
  for (const auto& [comm, members] : comms_) {
    if (members.size() < 2) continue;
    for (const Op& op : Compare(members)) {
      out.push_back(ArrivalSpan{comm, op.seq, op.call, op.first_ns, op.last_ns, op.last, op.gap,
                                static_cast<int>(members.size())});
    }
  }
  return out;
}

std::vector<RecentLateness> ArrivalSkew::Recent(size_t window) const {
  std::vector<RecentLateness> out;
  for (const auto& [comm, members] : comms_) {
    if (members.size() < 2) continue;
    std::vector<Op> ops = Compare(members);
    if (ops.size() > window)
      ops.erase(ops.begin(), ops.end() - static_cast<std::ptrdiff_t>(window));
    for (const auto& [rank, s] : members) {
      RecentLateness r;
      r.comm = comm;
      r.rank = rank;
      r.process = s.process;
      r.compared = ops.size();
      std::vector<int64_t> gaps;
      for (const Op& op : ops)
        if (op.last == rank) gaps.push_back(op.gap);
      r.times_last = gaps.size();
      r.median_late_ns = Quantile(gaps, 0.5);
      out.push_back(r);
    }
  }
  return out;
}

std::vector<ArrivalStraggler> ArrivalSkew::Stragglers(
    const std::map<uint64_t, uint64_t>& stopped) const {
  std::vector<ArrivalStraggler> out;
  for (const auto& [comm, members] : comms_) {
    const int n = static_cast<int>(members.size());
    if (n < 2) continue;
    std::vector<Op> ops = Compare(members);
    if (auto stop = stopped.find(comm); stop != stopped.end()) {
      ops.erase(std::remove_if(ops.begin(), ops.end(),
                               [&](const Op& op) { return op.seq >= stop->second; }),
                ops.end());
    }
    std::map<int32_t, uint64_t> times_last;
    uint64_t gapped = 0;
    for (const Op& op : ops) {
      if (op.last < 0) continue;
      ++gapped;
      ++times_last[op.last];
    }
    if (gapped == 0) continue;

    std::vector<uint8_t> anyone_last(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) anyone_last[i] = ops[i].last >= 0;
    std::vector<uint8_t> indicator(ops.size());
    for (const auto& [rank, count] : times_last) {
      // Too few to stand out anywhere (most members of a large communicator).
      if (count < lateness::kMinTimesLast) continue;
      for (size_t i = 0; i < ops.size(); ++i) indicator[i] = ops[i].last == rank;
      if (!lateness::StandsOutOrSince(indicator, anyone_last, n)) continue;
      const Series& mine = members.at(rank);
      ArrivalStraggler x;
      x.comm = comm;
      x.rank = rank;
      x.process = mine.process;
      x.members = n;
      for (const auto& [r, s] : members) x.member_processes.push_back(s.process);
      x.compared = ops.size();
      x.window = window_;
      x.summary_kept = lateness::FewestKept(
          members, window_, [](const Series& m) { return m.summary_cut; },
          [](const Series& m) {
            return static_cast<uint64_t>(std::count_if(m.ns.begin(), m.ns.end(),
                                                       [](int64_t ns) { return ns != INT64_MIN; }));
          });
      x.gapped = gapped;
      x.times_last = count;
      bool from_start = true;
      for (const auto& [r, s] : members) from_start &= s.from_start;

      std::vector<int64_t> all_gaps(ops.size());
      std::vector<uint64_t> seqs(ops.size());
      std::vector<uint32_t> calls(ops.size());
      for (size_t i = 0; i < ops.size(); ++i) {
        all_gaps[i] = ops[i].gap;
        seqs[i] = ops[i].seq;
        calls[i] = ops[i].call;
      }
      const lateness::CallLast most = lateness::MostOftenLast(calls, indicator);
      x.call = most.call;
      x.call_times_last = most.times_last;
      x.call_compared = most.compared;
      std::vector<int64_t> intervals;
      for (size_t i = 1; i < mine.ns.size(); ++i)
        if (mine.ns[i] != INT64_MIN && mine.ns[i - 1] != INT64_MIN && mine.ns[i] >= mine.ns[i - 1])
          intervals.push_back(mine.ns[i] - mine.ns[i - 1]);
      x.median_interval_ns = Quantile(intervals, 0.5);

      const lateness::Window w =
          lateness::DescribeWindow(seqs, from_start, indicator, all_gaps, kMinGapNs);
      if (!w.persists) continue;
      lateness::SetWindow(w, &x);
      if (w.since_late_ns < x.median_interval_ns / kIntervalsPerLate) continue;
      x.began_ns = mine.ns[x.began_seq - mine.first_seq];
      out.push_back(x);
    }
  }
  return out;
}

}  // namespace ncclwatch::decoder

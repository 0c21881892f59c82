#include "analysis/arrival_skew.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace ncclwatch::decoder {

namespace {

int64_t Quantile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// The change point of a 0/1 series: the index s splitting it into [0, s)
// and [s, n) with the least squared error around each part's mean, where
// the part after is the denser one; 0 when no split beats none.
size_t ChangePoint(const std::vector<uint8_t>& x) {
  const size_t n = x.size();
  if (n < 2) return 0;
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + x[i];
  auto sse = [&](size_t a, size_t b) {  // sum of squared error of x[a, b) (x*x == x)
    const double len = static_cast<double>(b - a);
    if (len == 0) return 0.0;
    const double sum = prefix[b] - prefix[a];
    return sum - sum * sum / len;
  };
  double best = sse(0, n);
  size_t at = 0;
  // Each part at least 5 collectives and a twentieth of them (a split that
  // isolates a handful says nothing), and the rate after at least twice the
  // rate before (a change, not noise around one rate).
  const size_t least = std::max<size_t>(5, n / 20);
  for (size_t s = least; s + least <= n; ++s) {
    const double before = (prefix[s] - prefix[0]) / static_cast<double>(s);
    const double after = (prefix[n] - prefix[s]) / static_cast<double>(n - s);
    if (after < 2 * before || after <= before) continue;
    const double e = sse(0, s) + sse(s, n);
    if (e < best - 1e-9) {
      best = e;
      at = s;
    }
  }
  return at;
}

}  // namespace

void ArrivalSkew::AddProcess(int index, const ProcessTrace& t) {
  for (const CommStream& s : t.streams) {
    if (!s.any() || s.rank < 0) continue;
    // The last kWindow numbered collectives, by number (a stream is in call
    // order; its numbers rise by one, less what the ring lost).
    size_t from = s.collectives.size() > kWindow ? s.collectives.size() - kWindow : 0;
    // A node's summary that left out the middle of the calls: only the run
    // after what it left out (its head and tail are not one series).
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
    series.ns.assign(last - first + 1, INT64_MIN);
    series.call.assign(last - first + 1, 0);
    for (size_t i = from; i < s.collectives.size(); ++i) {
      const CollectiveEvent& e = t.collectives[s.collectives[i]];
      if (e.seq < first || e.seq > last) continue;
      series.ns[e.seq - first] = t.RealtimeNs(e.t);
      series.call[e.seq - first] = e.call;
    }
    // A process with two ranks of one communicator keeps both (keyed by rank).
    comms_[s.comm][s.rank] = std::move(series);
  }
}

std::vector<ArrivalSkew::Op> ArrivalSkew::Compare(const Members& members) {
  std::vector<Op> ops;
  uint64_t lo = 0, hi = UINT64_MAX;
  for (const auto& [rank, s] : members) {
    lo = std::max(lo, s.first_seq);
    hi = std::min(hi, s.first_seq + s.ns.size() - 1);
  }
  for (uint64_t seq = lo; seq <= hi && hi != UINT64_MAX; ++seq) {
    int64_t latest = INT64_MIN, second = INT64_MIN, earliest = INT64_MAX;
    int32_t who = -1;
    uint32_t call = 0;
    bool all = true;
    for (const auto& [rank, s] : members) {
      const int64_t v = s.ns[seq - s.first_seq];
      if (v == INT64_MIN) {
        all = false;
        break;
      }
      call = s.call[seq - s.first_seq];
      earliest = std::min(earliest, v);
      if (v > latest) {
        second = latest;
        latest = v;
        who = rank;
      } else if (v > second) {
        second = v;
      }
    }
    if (!all) continue;
    const int64_t gap = latest - second;
    ops.push_back(Op{seq, gap >= kMinGapNs ? who : -1, gap, call, earliest, latest});
  }
  return ops;
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

std::vector<ArrivalStraggler> ArrivalSkew::Stragglers() const {
  std::vector<ArrivalStraggler> out;
  for (const auto& [comm, members] : comms_) {
    const int n = static_cast<int>(members.size());
    if (n < 2) continue;
    const std::vector<Op> ops = Compare(members);
    std::map<int32_t, uint64_t> times_last;
    uint64_t gapped = 0;
    for (const Op& op : ops) {
      if (op.last < 0) continue;
      ++gapped;
      ++times_last[op.last];
    }
    if (gapped == 0) continue;

    const double p = 1.0 / n;
    const double bar = static_cast<double>(gapped) * p +
                       kSigmas * std::sqrt(static_cast<double>(gapped) * p * (1 - p));
    for (const auto& [rank, count] : times_last) {
      if (count < kMinTimesLast || 2 * count < gapped || static_cast<double>(count) < bar) continue;
      const Series& mine = members.at(rank);
      ArrivalStraggler x;
      x.comm = comm;
      x.rank = rank;
      x.process = mine.process;
      x.members = n;
      for (const auto& [r, s] : members) x.member_processes.push_back(s.process);
      x.compared = ops.size();
      x.gapped = gapped;
      x.times_last = count;
      x.first_seq = ops.front().seq;
      x.last_seq = ops.back().seq;
      bool from_start = true;
      for (const auto& [r, s] : members) from_start &= s.from_start;
      x.window_start = !from_start || x.first_seq != 0;

      std::vector<uint8_t> indicator(ops.size());
      std::vector<int64_t> gaps;
      std::map<uint32_t, std::pair<uint64_t, uint64_t>> by_call;  // call -> (last, compared)
      for (size_t i = 0; i < ops.size(); ++i) {
        indicator[i] = ops[i].last == rank;
        ++by_call[ops[i].call].second;
        if (indicator[i]) {
          gaps.push_back(ops[i].gap);
          ++by_call[ops[i].call].first;
        }
      }
      for (const auto& [call, c] : by_call) {
        if (c.first > x.call_times_last) {
          x.call = call;
          x.call_times_last = c.first;
          x.call_compared = c.second;
        }
      }
      x.median_late_ns = Quantile(gaps, 0.5);
      x.p90_late_ns = Quantile(gaps, 0.9);
      std::vector<int64_t> intervals;
      for (size_t i = 1; i < mine.ns.size(); ++i)
        if (mine.ns[i] != INT64_MIN && mine.ns[i - 1] != INT64_MIN && mine.ns[i] >= mine.ns[i - 1])
          intervals.push_back(mine.ns[i] - mine.ns[i - 1]);
      x.median_interval_ns = Quantile(intervals, 0.5);

      const size_t began = ChangePoint(indicator);
      x.began_later = began > 0;
      x.began_seq = ops[began].seq;
      x.began_ns = mine.ns[x.began_seq - mine.first_seq];
      std::vector<int64_t> early, recent;
      size_t straggling = 0;
      for (size_t i = began; i < ops.size(); ++i) straggling += indicator[i];
      size_t seen = 0;
      for (size_t i = began; i < ops.size(); ++i) {
        if (!indicator[i]) continue;
        (2 * seen < straggling ? early : recent).push_back(ops[i].gap);
        ++seen;
      }
      x.early_late_ns = Quantile(early, 0.5);
      x.recent_late_ns = Quantile(recent, 0.5);
      x.worsening = early.size() >= kMinTimesLast / 2 && recent.size() >= kMinTimesLast / 2 &&
                    x.recent_late_ns >= x.early_late_ns + x.early_late_ns / 2 &&
                    x.recent_late_ns - x.early_late_ns >= kMinGapNs;
      out.push_back(x);
    }
  }
  return out;
}

}  // namespace ncclwatch::decoder

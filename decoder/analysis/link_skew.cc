#include "analysis/link_skew.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <tuple>

#include "analysis/lateness_stats.h"

namespace ncclwatch::decoder {

namespace {

// The others' rate of slow collectives is taken as at least this: a kind
// whose other communicators were never slow still wants a communicator slow
// well above chance.
constexpr double kMinRate = 0.05;

// One communicator's collectives every member timed: each one's tail (the
// shortest member time: from the last arrival to the end).
struct Series {
  uint64_t comm = 0;
  std::vector<int> processes;  // by member rank
  std::vector<int32_t> ranks;
  std::vector<uint64_t> seqs;
  std::vector<int64_t> tails;
  std::vector<uint32_t> calls;
  uint64_t slow = 0;
};

}  // namespace

void LinkSkew::AddProcess(int index, const ProcessTrace& t) {
  if (t.gpu_times.empty()) return;
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
    for (const GpuTimeEvent& g : t.gpu_times) {
      if (g.comm != s.comm || !g.OneCollective() || g.gpu_ns == 0) continue;
      // On CLOCK_REALTIME as the trace's first anchor pairs the clocks (0
      // without an anchor: unknown).
      const bool begun = !t.anchors.empty() && g.begin_ns != 0 && g.begin_ns < INT64_MAX / 2;
      m.by_seq[g.collectives - 1] =
          Sample{static_cast<int64_t>(std::min<uint64_t>(g.gpu_ns, INT64_MAX)),
                 begun ? t.RealtimeOfMonotonicNs(g.begin_ns) : 0, g.call};
      if (m.by_seq.size() > kWindow) m.by_seq.erase(m.by_seq.begin());
    }
    if (!m.by_seq.empty()) comms_[s.comm][s.rank] = std::move(m);
  }
}

std::vector<LinkStraggler> LinkSkew::Stragglers() const {
  // Per kind (members), the series of its communicators.
  std::map<int, std::vector<Series>> kinds;
  for (const auto& [comm, members] : comms_) {
    const int n = static_cast<int>(members.size());
    if (n < 2) continue;
    Series s;
    s.comm = comm;
    for (const auto& [rank, m] : members) {
      s.processes.push_back(m.process);
      s.ranks.push_back(rank);
    }
    for (const auto& [seq, sample] : members.begin()->second.by_seq) {
      int64_t tail = INT64_MAX;
      for (const auto& [rank, m] : members) {
        auto it = m.by_seq.find(seq);
        if (it == m.by_seq.end()) {
          tail = -1;
          break;
        }
        tail = std::min(tail, it->second.gpu_ns);
      }
      if (tail < 0) continue;
      s.seqs.push_back(seq);
      s.tails.push_back(tail);
      s.calls.push_back(sample.call);
    }
    if (s.seqs.size() >= lateness::kMinTimesLast) kinds[n].push_back(std::move(s));
  }

  std::vector<SlowComm> slow;
  for (auto& [n, series] : kinds) {
    if (static_cast<int>(series.size()) < kMinComms) continue;
    std::vector<int64_t> medians;
    for (const Series& s : series) medians.push_back(lateness::Quantile(s.tails, 0.5));
    const int64_t usual = lateness::Quantile(medians, 0.5);
    const int64_t threshold = std::max(kMinExtraNs, usual);
    uint64_t all_slow = 0, all_ops = 0;
    for (Series& s : series) {
      for (int64_t tail : s.tails) s.slow += tail - usual >= threshold;
      all_slow += s.slow;
      all_ops += s.tails.size();
    }
    for (const Series& s : series) {
      const uint64_t ops = s.tails.size();
      const uint64_t other_ops = all_ops - ops;
      double p = other_ops == 0
                     ? 0
                     : static_cast<double>(all_slow - s.slow) / static_cast<double>(other_ops);
      p = std::min(std::max(p, kMinRate), 1.0);
      if (s.slow < lateness::kMinTimesLast || 2 * s.slow < ops ||
          !lateness::BeyondChance(s.slow, ops, p))
        continue;
      SlowComm x;
      x.comm = s.comm;
      x.members = n;
      x.member_processes = s.processes;
      x.member_ranks = s.ranks;
      x.compared = ops;
      x.gapped = ops;
      x.window = kWindow;
      x.times_last = s.slow;
      x.kind_comms = static_cast<int>(series.size());
      x.usual_ns = usual;
      std::vector<uint8_t> indicator(ops);
      std::vector<int64_t> extras(ops);
      for (size_t i = 0; i < ops; ++i) {
        extras[i] = s.tails[i] - usual;
        indicator[i] = extras[i] >= threshold;
      }
      // A slow communicator is named on its count alone (above): whether
      // its slowness persists is not asked here.
      const lateness::Window w =
          lateness::DescribeWindow(s.seqs, /*from_start=*/true, indicator, extras, threshold);
      lateness::SetWindow(w, &x);
      const lateness::CallLast most = lateness::MostOftenLast(s.calls, indicator);
      x.call = most.call;
      x.call_times_last = most.times_last;
      x.call_compared = most.compared;
      for (const auto& [rank, m] : comms_.at(s.comm)) {
        const int64_t at = m.by_seq.at(x.began_seq).begin_ns;
        if (at != 0 && (x.began_ns == 0 || at < x.began_ns)) x.began_ns = at;
      }
      x.summary_kept = lateness::FewestKept(
          comms_.at(s.comm), kWindow, [](const Member& m) { return m.summary_cut; },
          [](const Member& m) { return static_cast<uint64_t>(m.by_seq.size()); });
      slow.push_back(std::move(x));
    }
  }

  // Intersect: the process in the most slow communicators, alone in that
  // many, is the slow link; otherwise the members a slow communicator shares
  // with the most others are named together.
  std::vector<LinkStraggler> out;
  std::sort(slow.begin(), slow.end(), [](const SlowComm& a, const SlowComm& b) {
    return std::make_pair(a.times_last, b.comm) > std::make_pair(b.times_last, a.comm);
  });
  while (!slow.empty()) {
    std::map<int, int> count;
    for (const SlowComm& c : slow)
      for (int p : c.member_processes) ++count[p];
    int best = 0;
    for (const auto& [p, k] : count) best = std::max(best, k);
    std::vector<int> named;
    for (const auto& [p, k] : count)
      if (k == best) named.push_back(p);
    if (named.size() != 1 || best < 2) {
      // Among the first slow communicator's members, those in the most.
      int most = 0;
      for (int p : slow.front().member_processes) most = std::max(most, count[p]);
      named.clear();
      for (int p : slow.front().member_processes)
        if (count[p] == most) named.push_back(p);
      std::sort(named.begin(), named.end());
    }
    LinkStraggler link;
    link.processes = named;
    std::vector<SlowComm> left;
    for (SlowComm& c : slow) {
      bool all = true;
      for (int p : named)
        all &= std::find(c.member_processes.begin(), c.member_processes.end(), p) !=
               c.member_processes.end();
      (all ? link.comms : left).push_back(std::move(c));
    }
    std::sort(link.comms.begin(), link.comms.end(), [](const SlowComm& a, const SlowComm& b) {
      return std::make_tuple(a.members, a.times_last, b.comm) >
             std::make_tuple(b.members, b.times_last, a.comm);
    });
    out.push_back(std::move(link));
    slow = std::move(left);
  }
  std::stable_sort(out.begin(), out.end(), [](const LinkStraggler& a, const LinkStraggler& b) {
    return a.comms.size() > b.comms.size();
  });
  return out;
}

}  // namespace ncclwatch::decoder

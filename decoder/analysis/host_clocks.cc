#include "analysis/host_clocks.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <queue>
#include <set>
#include <utility>

#include "analysis/lateness_stats.h"

namespace ncclwatch::decoder {

void HostClocks::AddProcess(int index, const ProcessTrace& t) {
  host_of_[index] = t.host;
  auto& comms = ends_[t.host];
  for (const GpuTimeEvent& g : t.gpu_times) {
    if (!g.OneCollective() || g.end_ns == 0 || g.end_ns >= INT64_MAX / 2) continue;
    const int64_t end = t.RealtimeOfMonotonicNs(g.end_ns);
    if (end == 0 || end == INT64_MAX || end == INT64_MIN) continue;
    std::map<uint64_t, int64_t>& by_seq = comms[g.comm];
    by_seq.emplace(g.collectives - 1, end);  // the first member's: they share the clock
    if (by_seq.size() > kPerComm) by_seq.erase(by_seq.begin());
  }
}

void HostClocks::Solve() {
  hosts_.clear();
  index_.clear();
  for (const auto& [index, host] : host_of_) index_.emplace(host, 0);
  for (auto& [host, i] : index_) {
    i = hosts_.size();
    hosts_.push_back(Host{host});
  }
  for (const auto& [index, host] : host_of_) ++hosts_[index_.at(host)].processes;
  if (hosts_.empty()) return;
  hosts_.front().aligned = true;

  // Per collective, the hosts that finished it, lowest-named first.
  std::map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<size_t, int64_t>>> by_op;
  for (const auto& [host, comms] : ends_) {
    const size_t h = index_.at(host);
    for (const auto& [comm, by_seq] : comms)
      for (const auto& [seq, end] : by_seq) by_op[{comm, seq}].push_back({h, end});
  }
  // Samples of each pair (a, b), a < b: b's end - a's end.
  std::map<std::pair<size_t, size_t>, std::vector<int64_t>> samples;
  for (const auto& [op, ends] : by_op) {
    if (ends.size() < 2) continue;
    const auto& [a, a_end] = ends.front();
    for (size_t i = 1; i < ends.size(); ++i) {
      const int64_t d = ends[i].second - a_end;  // both within [0, INT64_MAX / 2)
      if (std::llabs(d) <= kMaxOffsetNs) samples[{a, ends[i].first}].push_back(d);
    }
  }
  struct Edge {
    size_t to;
    int64_t offset_ns;  // to's clock ahead of from's
    int64_t residual_ns;
  };
  std::vector<std::vector<Edge>> edges(hosts_.size());
  for (auto& [pair, d] : samples) {
    if (d.size() < kMinSamples) continue;
    const int64_t median = lateness::Quantile(d, 0.5);
    std::vector<int64_t> spread;
    spread.reserve(d.size());
    for (int64_t x : d) spread.push_back(std::llabs(x - median));
    const int64_t residual = lateness::Quantile(std::move(spread), 0.9);
    edges[pair.first].push_back({pair.second, median, residual});
    edges[pair.second].push_back({pair.first, -median, residual});
  }
  // From the reference, lowest-named first (a deterministic spanning tree).
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> next;
  next.push(0);
  while (!next.empty()) {
    const size_t from = next.top();
    next.pop();
    for (const Edge& e : edges[from]) {
      Host& to = hosts_[e.to];
      if (to.aligned) continue;
      to.aligned = true;
      to.offset_ns = hosts_[from].offset_ns + e.offset_ns;
      to.residual_ns = hosts_[from].residual_ns + e.residual_ns;
      next.push(e.to);
    }
  }
}

int64_t HostClocks::OffsetOf(int index) const {
  auto p = host_of_.find(index);
  if (p == host_of_.end()) return 0;
  auto h = index_.find(p->second);
  return h == index_.end() ? 0 : hosts_[h->second].offset_ns;
}

HostClocks::Among HostClocks::Of(const std::vector<int>& processes) const {
  Among out;
  std::set<size_t> seen;
  int64_t top[2] = {0, 0};  // the two largest residuals: two hosts' times differ by up to both
  for (int q : processes) {
    auto p = host_of_.find(q);
    if (p == host_of_.end()) continue;
    auto h = index_.find(p->second);
    if (h == index_.end() || !seen.insert(h->second).second) continue;
    const Host& host = hosts_[h->second];
    out.aligned = out.aligned && host.aligned;
    if (host.residual_ns > top[0]) {
      top[1] = top[0];
      top[0] = host.residual_ns;
    } else {
      top[1] = std::max(top[1], host.residual_ns);
    }
  }
  out.hosts = static_cast<int>(seen.size());
  out.residual_ns = top[0] + top[1];
  return out;
}

}  // namespace ncclwatch::decoder

#include "analysis/concurrent_ranks.h"

#include <algorithm>
#include <map>
#include <queue>
#include <utility>

namespace ncclwatch::decoder {

void JoinConcurrentRanks(const std::vector<RankSpan>& spans,
                         const std::function<void(size_t, size_t)>& join) {
  auto overlap = [](const RankSpan& a, const RankSpan& b) {
    return a.first_ns <= b.last_ns && b.first_ns <= a.last_ns;
  };
  std::vector<size_t> order;
  for (size_t q = 0; q < spans.size(); ++q) {
    if (spans[q].last_ns >= spans[q].first_ns) {
      order.push_back(q);
      continue;
    }
    for (size_t r = 0; r < spans.size(); ++r)
      if (r != q && overlap(spans[q], spans[r]) && spans[q].rank != spans[r].rank) join(q, r);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return spans[a].first_ns < spans[b].first_ns; });
  // The running ones, by when they end; how many of each rank; those
  // joined into one job (`joined` is one of it), and those not (pending).
  std::priority_queue<std::pair<int64_t, size_t>, std::vector<std::pair<int64_t, size_t>>,
                      std::greater<>>
      running;
  std::map<int32_t, size_t> ranks;
  std::vector<char> in_joined(spans.size(), 0), ended(spans.size(), 0);
  size_t joined_running = 0;
  size_t joined = SIZE_MAX;
  std::vector<size_t> pending;
  for (size_t q : order) {
    const RankSpan& b = spans[q];
    while (!running.empty() && running.top().first < b.first_ns) {
      const size_t e = running.top().second;
      running.pop();
      ended[e] = 1;
      if (--ranks[spans[e].rank] == 0) ranks.erase(spans[e].rank);
      if (in_joined[e] && --joined_running == 0) joined = SIZE_MAX;
    }
    const auto same = ranks.find(b.rank);
    const bool other_rank = ranks.size() > (same == ranks.end() ? 0u : 1u);
    running.emplace(b.last_ns, q);
    ++ranks[b.rank];
    if (!other_rank) {
      pending.push_back(q);
      continue;
    }
    if (joined != SIZE_MAX) join(joined, q);
    for (size_t p : pending) {
      if (ended[p]) continue;
      join(q, p);
      in_joined[p] = 1;
      ++joined_running;
    }
    pending.clear();
    in_joined[q] = 1;
    ++joined_running;
    joined = q;
  }
}

}  // namespace ncclwatch::decoder

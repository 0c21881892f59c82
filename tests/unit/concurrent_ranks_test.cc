// JoinConcurrentRanks (analysis/concurrent_ranks.h): the sweep in time makes
// the same jobs as joining every two processes that overlap as different
// ranks, on random spans (ties, nested spans, one rank many times, spans
// that run backwards), and takes n log n, not n squared.

#include "analysis/concurrent_ranks.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace {

using ncclwatch::decoder::JoinConcurrentRanks;
using ncclwatch::decoder::RankSpan;

struct Groups {
  std::vector<size_t> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t Find(size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Join(size_t a, size_t b) { parent[Find(a)] = Find(b); }
  // Each one's group, named by its first member.
  std::vector<size_t> Canonical() {
    std::vector<size_t> first(parent.size(), SIZE_MAX), out(parent.size());
    for (size_t i = 0; i < parent.size(); ++i) {
      const size_t r = Find(i);
      if (first[r] == SIZE_MAX) first[r] = i;
      out[i] = first[r];
    }
    return out;
  }
};

}  // namespace

TEST_CASE("the sweep makes the jobs every pair would", "[jobs]") {
  std::mt19937_64 rng(25);
  for (int round = 0; round < 2000; ++round) {
    const size_t n = 1 + rng() % 24;
    const int64_t horizon = 1 + static_cast<int64_t>(rng() % 60);
    const int32_t ranks = 1 + static_cast<int32_t>(rng() % 4);
    std::vector<RankSpan> spans(n);
    for (RankSpan& s : spans) {
      s.first_ns = static_cast<int64_t>(rng() % static_cast<uint64_t>(horizon));
      s.last_ns = s.first_ns + static_cast<int64_t>(rng() % 20);
      if (rng() % 16 == 0) s.last_ns = s.first_ns - 1 - static_cast<int64_t>(rng() % 5);
      s.rank = static_cast<int32_t>(rng() % static_cast<uint64_t>(ranks));
    }
    Groups pairs(n), sweep(n);
    for (size_t a = 0; a < n; ++a)
      for (size_t b = a + 1; b < n; ++b)
        if (spans[a].first_ns <= spans[b].last_ns && spans[b].first_ns <= spans[a].last_ns &&
            spans[a].rank != spans[b].rank)
          pairs.Join(a, b);
    JoinConcurrentRanks(spans, [&](size_t a, size_t b) { sweep.Join(a, b); });
    INFO("round " << round << ", " << n << " spans");
    REQUIRE(sweep.Canonical() == pairs.Canonical());
  }
}

TEST_CASE("131,072 ranks of one job at the same time: one job, in few joins", "[jobs]") {
  const size_t n = 131072;
  std::vector<RankSpan> spans(n);
  for (size_t i = 0; i < n; ++i)
    spans[i] = {static_cast<int64_t>(i % 97), 1000 + static_cast<int64_t>(i % 89),
                static_cast<int32_t>(i)};
  Groups g(n);
  size_t joins = 0;
  JoinConcurrentRanks(spans, [&](size_t a, size_t b) {
    ++joins;
    g.Join(a, b);
  });
  CHECK(joins < 2 * n);
  for (size_t i = 1; i < n; ++i) REQUIRE(g.Find(i) == g.Find(0));
}

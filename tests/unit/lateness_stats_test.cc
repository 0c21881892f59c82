// The window of evidence every skew analysis describes a straggler by
// (analysis/lateness_stats.h, DescribeWindow): its numbers, when its
// straggling began, how late it was then and whether it worsens.

#include "analysis/lateness_stats.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "findings/straggler_evidence.h"

namespace {

using ncclwatch::decoder::StragglerEvidence;
using ncclwatch::decoder::lateness::DescribeWindow;
using ncclwatch::decoder::lateness::SetWindow;
using ncclwatch::decoder::lateness::Window;

constexpr int64_t kMs = 1000 * 1000;

std::vector<uint64_t> Numbers(uint64_t from, size_t n) {
  std::vector<uint64_t> seqs(n);
  for (size_t i = 0; i < n; ++i) seqs[i] = from + i;
  return seqs;
}

TEST_CASE("a straggling that begins later and worsens is dated and measured", "[lateness]") {
  // 100 collectives numbered 200 on; late in every one from the 40th, by
  // 1 ms in the first half of that and 3 ms in the second.
  const std::vector<uint64_t> seqs = Numbers(200, 100);
  std::vector<uint8_t> last(100, 0);
  std::vector<int64_t> gap(100, 0);
  for (size_t i = 40; i < 100; ++i) {
    last[i] = 1;
    gap[i] = i < 70 ? 1 * kMs : 3 * kMs;
  }
  const Window w = DescribeWindow(seqs, /*from_start=*/true, last, gap, kMs / 10);
  CHECK(w.first_seq == 200);
  CHECK(w.last_seq == 299);
  CHECK(w.window_start);  // the first collective compared is not the communicator's first
  CHECK(w.began == 40);
  CHECK(w.began_seq == 240);
  CHECK(w.began_later);
  CHECK(w.early_late_ns == 1 * kMs);
  CHECK(w.recent_late_ns == 3 * kMs);
  CHECK(w.worsening);
  CHECK(w.median_late_ns == 3 * kMs);  // the upper median of 30 at 1 ms and 30 at 3 ms
  CHECK(w.p90_late_ns == 3 * kMs);
  CHECK(w.persists);

  // What arrival, GPU and link skew report of it.
  StragglerEvidence x;
  SetWindow(w, &x);
  CHECK(x.first_seq == 200);
  CHECK(x.last_seq == 299);
  CHECK(x.window_start);
  CHECK(x.began_seq == 240);
  CHECK(x.began_later);
  CHECK(x.early_late_ns == 1 * kMs);
  CHECK(x.recent_late_ns == 3 * kMs);
  CHECK(x.worsening);
  CHECK(x.median_late_ns == 3 * kMs);
  CHECK(x.p90_late_ns == 3 * kMs);
  CHECK(x.began_ns == 0);  // each analysis dates it by its own times
}

TEST_CASE("a window from the first collective starts there only when every series did",
          "[lateness]") {
  const std::vector<uint64_t> seqs = Numbers(0, 20);
  const std::vector<uint8_t> last(20, 1);
  const std::vector<int64_t> gap(20, 2 * kMs);
  const Window w = DescribeWindow(seqs, /*from_start=*/true, last, gap, kMs / 10);
  CHECK_FALSE(w.window_start);
  CHECK(w.began == 0);
  CHECK(w.began_seq == 0);
  CHECK_FALSE(w.began_later);
  CHECK_FALSE(w.worsening);  // as late at the end as at the start
  CHECK(w.median_late_ns == 2 * kMs);
  CHECK(w.persists);
  // A member whose series left out the communicator's first collectives.
  CHECK(DescribeWindow(seqs, /*from_start=*/false, last, gap, kMs / 10).window_start);
}

TEST_CASE("a short burst of lateness does not persist", "[lateness]") {
  const std::vector<uint64_t> seqs = Numbers(7, 20);
  std::vector<uint8_t> last(20, 0);
  std::vector<int64_t> gap(20, 0);
  for (size_t i = 0; i < 3; ++i) {
    last[i] = 1;
    gap[i] = 5 * kMs;
  }
  const Window w = DescribeWindow(seqs, /*from_start=*/true, last, gap, kMs / 10);
  CHECK(w.began == 0);
  CHECK(w.median_late_ns == 5 * kMs);
  CHECK_FALSE(w.persists);  // late in 3: fewer than kMinTimesLast
}

}  // namespace

TEST_CASE("a straggling that began late stands out over its collectives since, not before",
          "[lateness]") {
  using ncclwatch::decoder::lateness::StandsOut;
  using ncclwatch::decoder::lateness::StandsOutOrSince;
  // 8 members, 875 collectives; a busy machine: someone is last by a gap in
  // every one. Before #625 the member is last in every 8th, as any is by
  // chance; from #625 in 9 of every 10.
  const size_t n = 875, began = 625;
  std::vector<uint8_t> last(n), gapped(n, 1);
  for (size_t i = 0; i < n; ++i) last[i] = i < began ? i % 8 == 3 : i % 10 != 0;
  uint64_t count = 0;
  for (uint8_t x : last) count += x;
  // Over the whole window it is last in fewer than half of the gapped ones.
  CHECK_FALSE(StandsOut(count, n, 8));
  CHECK(StandsOutOrSince(last, gapped, 8));

  // Chance alone, the same rate throughout: no one.
  std::vector<uint8_t> chance(n);
  for (size_t i = 0; i < n; ++i) chance[i] = i % 8 == 3;
  CHECK_FALSE(StandsOutOrSince(chance, gapped, 8));
  // Two members taking turns at random-looking runs: no one either.
  std::vector<uint8_t> turns(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    turns[i] = (x >> 16) & 1;
  }
  CHECK_FALSE(StandsOutOrSince(turns, gapped, 2));
  // A burst at the end is not a straggling since: ChangePoint's parts are
  // each a twentieth of the series at least (43), and 12 is not half of it.
  std::vector<uint8_t> burst(n, 0);
  for (size_t i = n - 12; i < n; ++i) burst[i] = 1;
  CHECK_FALSE(StandsOutOrSince(burst, gapped, 8));
  // Nor in a young job: last in its final 10 of 200 collectives, every one
  // of which someone came last in. ChangePoint's least part is 10 there;
  // the part since must hold kMinSince (40).
  std::vector<uint8_t> young(200, 0), young_gapped(200, 1);
  for (size_t i = 190; i < 200; ++i) young[i] = 1;
  CHECK_FALSE(StandsOutOrSince(young, young_gapped, 8));
  // Last in its final 40 of 200: a straggling since, long enough to judge.
  for (size_t i = 160; i < 200; ++i) young[i] = 1;
  CHECK(StandsOutOrSince(young, young_gapped, 8));
}

TEST_CASE("lateness stands out by the binomial's exact tail, not the normal's", "[lateness]") {
  using ncclwatch::decoder::lateness::BeyondChance;
  using ncclwatch::decoder::lateness::LogChanceAtLeast;
  using ncclwatch::decoder::lateness::StandsOut;
  // 44 or more of 50 fair coin flips: 1.6219e-8 (the sum of C(50, j) / 2^50).
  CHECK(std::exp(LogChanceAtLeast(44, 50, 0.5)) == Approx(1.62187e-8).epsilon(1e-4));
  CHECK(LogChanceAtLeast(0, 50, 0.5) == 0);
  CHECK(LogChanceAtLeast(51, 50, 0.5) == 0);  // nothing to judge: names no one
  CHECK_FALSE(BeyondChance(51, 50, 0.5));
  CHECK(LogChanceAtLeast(3, 50, 0.0) == -INFINITY);
  CHECK(LogChanceAtLeast(3, 50, 1.0) == 0);
  // Below the mean the tail holds nearly all: 10 or more of 40 at 1/2.
  CHECK(std::exp(LogChanceAtLeast(10, 40, 0.5)) == Approx(0.99966).epsilon(1e-4));
  // 4 members, 40 collectives someone came last in: 24 is 5 normal
  // deviations above the 10 chance gives (23.7), but its exact chance is
  // 2.8e-6, ten times 5 sigma's 2.9e-7; 25 is 5.9e-7; 26 is 1.1e-7.
  CHECK_FALSE(StandsOut(24, 40, 4));
  CHECK_FALSE(StandsOut(25, 40, 4));
  CHECK(StandsOut(26, 40, 4));
  // A 2-member pair, 40 of 40: 9e-13.
  CHECK(StandsOut(40, 40, 2));
  // A slow link's rate estimated from the other communicators (p above 1/2).
  CHECK_FALSE(BeyondChance(36, 40, 0.8));
  // Below its peak (32) the terms rise first: 28 or more of 40 at 0.8.
  CHECK(std::exp(LogChanceAtLeast(28, 40, 0.8)) == Approx(0.956758).epsilon(1e-4));
  CHECK(BeyondChance(40, 40, 0.4));
  // A full window of a pair: the exact bar is 2,209 of 4,096 (2.6e-7;
  // 2,208 is 3.1e-7), where the normal's was 2,208.
  CHECK_FALSE(StandsOut(2208, 4096, 2));
  CHECK(StandsOut(2209, 4096, 2));
}

TEST_CASE("BeyondChance's bounds decide as the exact tail does", "[lateness]") {
  using ncclwatch::decoder::lateness::BeyondChance;
  using ncclwatch::decoder::lateness::LogChanceAtLeast;
  const double chance = std::log(0.5 * std::erfc(5.0 / std::sqrt(2.0)));
  for (uint64_t n : {10, 40, 50, 75, 256, 4096}) {
    for (double p : {0.5, 0.25, 0.125, 0.05, 0.8}) {
      const uint64_t step = n > 256 ? 7 : 1;
      for (uint64_t k = 1; k <= n; k += step) {
        INFO("k " << k << " of " << n << ", p " << p);
        CHECK(BeyondChance(k, n, p) == (LogChanceAtLeast(k, n, p) <= chance));
      }
    }
  }
}

TEST_CASE("the part since is held to a bar raised for its chosen split", "[lateness]") {
  using ncclwatch::decoder::lateness::ChangePoint;
  using ncclwatch::decoder::lateness::kSigmas;
  using ncclwatch::decoder::lateness::SinceSigmas;
  using ncclwatch::decoder::lateness::StandsOut;
  using ncclwatch::decoder::lateness::StandsOutOrSince;
  CHECK(SinceSigmas(1) == kSigmas);
  CHECK(SinceSigmas(75) == Approx(5.80).margin(0.01));
  CHECK(SinceSigmas(1000) == Approx(6.23).margin(0.01));
  CHECK(SinceSigmas(10000) == Approx(6.59).margin(0.01));
  // A 2-member communicator (a tensor-parallel pair) of 75 collectives,
  // someone last by a gap in each: this member last in 10 of the first 25,
  // then in 44 of 50. 44 of 50 is 5.4 sigma above chance: enough for a
  // whole series, not for the densest part of 75 ways to split it (5.8).
  std::vector<uint8_t> last(75), gapped(75, 1);
  for (size_t i = 0; i < 25; ++i) last[i] = i % 5 == 0 || i % 5 == 2;
  for (size_t i = 25; i < 75; ++i) last[i] = (i - 25) % 8 != 7;
  REQUIRE(ChangePoint(last) == 25);
  CHECK(StandsOut(44, 50, 2));
  CHECK_FALSE(StandsOut(44, 50, 2, SinceSigmas(75)));
  CHECK_FALSE(StandsOutOrSince(last, gapped, 2));
  // Last in 5 of the first 25 and every one of the 50 since: named, by the
  // part since (the whole series, 55 of 75, is not enough).
  for (size_t i = 0; i < 25; ++i) last[i] = i % 5 == 0;
  for (size_t i = 25; i < 75; ++i) last[i] = 1;
  REQUIRE(ChangePoint(last) == 25);
  CHECK_FALSE(StandsOut(55, 75, 2));
  CHECK(StandsOutOrSince(last, gapped, 2));
}

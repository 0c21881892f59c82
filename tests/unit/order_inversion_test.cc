// Order inversion on synthetic traces: two communicators whose collectives
// two ranks issued in different orders, on one stream (each waits for the
// other) or on two; processes with no single order, and rings that lost
// the start of one communicator.

#include "analysis/order_inversion.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "order_inversion_reference.h"
#include "synthetic_process.h"

namespace {

using ncclwatch::decoder::OrderInversion;
using ncclwatch::decoder::OrderInversionFinding;
using ncclwatch::decoder::ProcessTrace;
using namespace ncclwatch::testing;

// A's identity sorts before B's: the pair is (A, B).
constexpr uint64_t kA = 0xa000;
constexpr uint64_t kB = 0xb000;
constexpr uint64_t kStream = 0x5100;
constexpr uint64_t kOtherStream = 0x5200;

// Process r holds rank r of A and of B (two ranks each).
SyntheticProcess Rank(int32_t r) {
  SyntheticProcess p(r);
  p.Init(kA, r, 2).Init(kB, r, 2);
  return p;
}

std::vector<OrderInversionFinding> Findings(const std::vector<SyntheticProcess>& ps) {
  OrderInversion o;
  for (size_t i = 0; i < ps.size(); ++i) o.AddProcess(static_cast<int>(i), ps[i].Build());
  return o.Findings();
}

}  // namespace

TEST_CASE("two communicators issued in the same order: nothing", "[order]") {
  std::vector<SyntheticProcess> ps = {Rank(0), Rank(1), Rank(2)};
  for (SyntheticProcess& p : ps) {
    p.Collective(kA, 0).Collective(kB, 0).Collective(kA, 1).Collective(kA, 2).Collective(kB, 1);
  }
  CHECK(Findings(ps).empty());
  // On different streams too, as long as the order agrees.
  ps[1].Collective(kA, 3, AllReduce().Stream(kOtherStream)).Collective(kB, 2);
  ps[0].Collective(kA, 3).Collective(kB, 2, AllReduce().Stream(kOtherStream));
  CHECK(Findings(ps).empty());
}

TEST_CASE("inverted on one stream: each waits for the other", "[order]") {
  std::vector<SyntheticProcess> ps = {Rank(0), Rank(1)};
  ps[0].Collective(kA, 0).Collective(kA, 1).Collective(kB, 0).Collective(kA, 2);
  ps[1].Collective(kA, 0).Collective(kB, 0).Collective(kA, 1).Collective(kA, 2);
  const std::vector<OrderInversionFinding> f = Findings(ps);
  REQUIRE(f.size() == 1);
  CHECK(f[0].comm_a == kA);
  CHECK(f[0].comm_b == kB);
  CHECK(f[0].seq_a == 1);
  CHECK(f[0].seq_b == 0);
  CHECK(f[0].process == 1);
  CHECK(f[0].reference_process == 0);
  CHECK_FALSE(f[0].process_a_first);  // process 1 issued B#0 before A#1
  CHECK(f[0].same_stream);
}

TEST_CASE("inverted on different streams: the GPU may still complete both", "[order]") {
  std::vector<SyntheticProcess> ps = {Rank(0), Rank(1)};
  ps[0].Collective(kB, 0, AllReduce().Stream(kOtherStream)).Collective(kA, 0);
  ps[1].Collective(kA, 0).Collective(kB, 0, AllReduce().Stream(kOtherStream));
  const std::vector<OrderInversionFinding> f = Findings(ps);
  REQUIRE(f.size() == 1);
  CHECK(f[0].seq_a == 0);
  CHECK(f[0].seq_b == 0);
  CHECK(f[0].process == 1);
  CHECK(f[0].process_a_first);
  CHECK_FALSE(f[0].same_stream);
}

TEST_CASE("only the earliest inversion of a pair is kept", "[order]") {
  std::vector<SyntheticProcess> ps = {Rank(0), Rank(1), Rank(2)};
  ps[0].Collective(kA, 0).Collective(kB, 0).Collective(kA, 1).Collective(kB, 1);
  ps[1].Collective(kA, 0).Collective(kB, 0).Collective(kB, 1).Collective(kA, 1);  // inverts at B#1
  ps[2].Collective(kB, 0).Collective(kA, 0).Collective(kA, 1).Collective(kB, 1);  // inverts at B#0
  const std::vector<OrderInversionFinding> f = Findings(ps);
  REQUIRE(f.size() == 1);
  CHECK(f[0].seq_b == 0);
  CHECK(f[0].seq_a == 0);
  CHECK(f[0].process == 2);
}

TEST_CASE("a rank that never issued the A collective skipped it, it did not reorder it",
          "[order]") {
  std::vector<SyntheticProcess> ps = {Rank(0), Rank(1)};
  ps[0].Collective(kA, 0).Collective(kA, 1).Collective(kB, 0);
  ps[1].Collective(kA, 0).Collective(kB, 0);  // stopped before A#1
  CHECK(Findings(ps).empty());
}

TEST_CASE("a process with two ranks of one communicator has no single order, and is skipped",
          "[order]") {
  // Process 0 holds ranks 0 and 1 of A (ncclCommInitAll) and rank 0 of B.
  SyntheticProcess all(-1);
  all.Init(kA, 0, 3).Init(kA, 1, 3).Init(kB, 0, 2);
  all.Collective(kB, 0)
      .Collective(kA, 0, AllReduce().Rank(0))
      .Collective(kA, 0, AllReduce().Rank(1));
  SyntheticProcess other(2);
  other.Init(kA, 2, 3).Init(kB, 1, 2).Collective(kA, 0).Collective(kB, 0);
  const ProcessTrace t = all.Build();
  REQUIRE(t.streams.size() == 3);
  CHECK(Findings({all, other}).empty());
  CHECK(Findings({other, all}).empty());
}

TEST_CASE("a wrapped A stream: B calls before its first A collective are not compared", "[order]") {
  // Process 0 holds everything; process 1's ring wrapped and kept A only
  // from #8, so for B#0, issued before A#8 there, what came before is unknown.
  SyntheticProcess whole = Rank(0);
  whole.Collectives(kA, 0, 9).Collective(kB, 0).Collective(kA, 10).Collective(kB, 1);
  SECTION("the same order where it is known: nothing") {
    SyntheticProcess wrapped = Rank(1);
    wrapped.Wrapped().Collective(kB, 0).Collectives(kA, 8, 10).Collective(kB, 1);
    const ProcessTrace t = wrapped.Build();
    REQUIRE_FALSE(StreamOf(t, kA, 1).holds_start);
    CHECK(Findings({whole, wrapped}).empty());
    CHECK(Findings({wrapped, whole}).empty());
  }
  SECTION("an inversion after its first A collective is still found") {
    SyntheticProcess wrapped = Rank(1);
    wrapped.Wrapped().Collectives(kA, 8, 9).Collective(kB, 0).Collective(kB, 1).Collective(kA, 10);
    const std::vector<OrderInversionFinding> f = Findings({whole, wrapped});
    REQUIRE(f.size() == 1);
    CHECK(f[0].seq_b == 1);
    CHECK(f[0].seq_a == 10);
    CHECK(f[0].process == 1);
    CHECK_FALSE(f[0].process_a_first);
    CHECK(f[0].same_stream);
  }
}

// When the two ranks disagree by more than one A collective around B#j, the
// inversion to judge is the earliest A they ordered differently (A#0 here),
// with both ranks' streams for that A: both put A#0 and B#0 on one stream in
// opposite orders, a certain deadlock, although A#1 is on another stream.
TEST_CASE("an inversion on one stream hidden behind a later A collective on another", "[order]") {
  std::vector<SyntheticProcess> ps = {Rank(0), Rank(1)};
  ps[0].Collective(kB, 0).Collective(kA, 0).Collective(kA, 1, AllReduce().Stream(kOtherStream));
  ps[1].Collective(kA, 0).Collective(kA, 1, AllReduce().Stream(kOtherStream)).Collective(kB, 0);
  const std::vector<OrderInversionFinding> f = Findings(ps);
  REQUIRE(f.size() == 1);
  CHECK(f[0].seq_b == 0);
  CHECK(f[0].seq_a == 0);
  CHECK(f[0].same_stream);
}

// --- the same answers as the analysis that kept a reference for every pair
// (order_inversion_reference.h), on random small jobs: ranks that share some
// of five communicators, issue their collectives in one order with a few
// neighbours swapped, on one of two streams, some rings wrapped (a stream
// that starts late), some numbers skipped.

namespace {

using ncclwatch::testing::OrderInversionReference;

struct Job {
  std::vector<SyntheticProcess> processes;
};

Job RandomJob(std::mt19937* rng) {
  auto pick = [&](int n) { return static_cast<int>((*rng)() % static_cast<unsigned>(n)); };
  const int nprocs = 2 + pick(3);
  const int ncomms = 2 + pick(4);
  // One order for the whole job: per communicator its collectives, merged at random.
  std::vector<int> left(ncomms);
  for (int& n : left) n = 1 + pick(4);
  std::vector<int> order;
  for (int total = std::accumulate(left.begin(), left.end(), 0); total > 0; --total) {
    int c = pick(ncomms);
    while (left[c] == 0) c = (c + 1) % ncomms;
    --left[c];
    order.push_back(c);
  }
  Job job;
  for (int r = 0; r < nprocs; ++r) {
    SyntheticProcess p(r);
    std::vector<bool> member(ncomms);
    for (int c = 0; c < ncomms; ++c) member[c] = pick(4) != 0;
    for (int c = 0; c < ncomms; ++c)
      if (member[c]) p.Init(0xa000 + static_cast<uint64_t>(c) * 0x1000, r, nprocs);
    std::vector<int> mine;
    for (int c : order)
      if (member[c]) mine.push_back(c);
    // A few neighbours swapped: the inversions to find.
    for (int swaps = pick(3); swaps > 0 && mine.size() > 1; --swaps) {
      const size_t i = static_cast<size_t>(pick(static_cast<int>(mine.size()) - 1));
      std::swap(mine[i], mine[i + 1]);
    }
    // Some ranks lost the start of their streams, or stopped early.
    const bool wrapped = pick(5) == 0;
    if (wrapped) p.Wrapped();
    std::vector<uint64_t> seq(ncomms, 0);
    const size_t stop = pick(4) == 0 ? mine.size() - static_cast<size_t>(pick(3)) : mine.size();
    for (size_t i = 0; i < mine.size(); ++i) {
      const int c = mine[i];
      const uint64_t s = seq[c]++;
      if (i >= stop || (wrapped && i < 2) || pick(20) == 0) continue;  // lost, or skipped
      p.Collective(0xa000 + static_cast<uint64_t>(c) * 0x1000, s,
                   AllReduce().Stream(pick(3) == 0 ? kOtherStream : kStream));
    }
    job.processes.push_back(p);
  }
  return job;
}

bool Same(const OrderInversionFinding& a, const OrderInversionFinding& b) {
  return a.comm_a == b.comm_a && a.comm_b == b.comm_b && a.seq_a == b.seq_a && a.seq_b == b.seq_b &&
         a.process == b.process && a.reference_process == b.reference_process &&
         a.process_a_first == b.process_a_first && a.same_stream == b.same_stream &&
         a.when_ns == b.when_ns;
}

}  // namespace

TEST_CASE("the same findings as a reference for every pair, on random small jobs", "[order]") {
  std::mt19937 rng(26015);
  int with_findings = 0;
  for (int round = 0; round < 3000; ++round) {
    const Job job = RandomJob(&rng);
    OrderInversion now;
    OrderInversionReference before;
    for (size_t i = 0; i < job.processes.size(); ++i) {
      const ProcessTrace t = job.processes[i].Build();
      now.AddProcess(static_cast<int>(i), t);
      before.AddProcess(static_cast<int>(i), t);
    }
    const std::vector<OrderInversionFinding> a = now.Findings(), b = before.Findings();
    INFO("round " << round);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(Same(a[i], b[i]));
    with_findings += !b.empty();
  }
  // The jobs are not all alike: many have inversions, many none.
  CHECK(with_findings > 300);
  CHECK(with_findings < 2700);
}

// 10,000 communicators made, used once and destroyed one after another, in
// two processes, one of which issued two of them the other way round: one
// finding, and a summary per communicator and process rather than a
// reference per pair (50 million of them). Judged by what is found and
// kept, not by time (tests/bench/order_inversion_bench.cc measures that).
TEST_CASE("10,000 communicators one after another: near-linear, and the inversion found",
          "[order]") {
  constexpr uint64_t kComms = 10000;
  std::vector<SyntheticProcess> ps = {SyntheticProcess(0), SyntheticProcess(1)};
  for (int r = 0; r < 2; ++r) {
    for (uint64_t c = 0; c < kComms; ++c) ps[r].Init(0x10000 + c, r, 2);
    for (uint64_t c = 0; c < kComms; ++c) {
      const uint64_t comm = 0x10000 + (r == 1 && c == 5000 ? 5001 : r == 1 && c == 5001 ? 5000 : c);
      ps[r].Collective(comm, 0).Destroy(comm);
    }
  }
  OrderInversion o;
  for (int r = 0; r < 2; ++r) o.AddProcess(r, ps[r].Build());
  const std::vector<OrderInversionFinding> f = o.Findings();
  REQUIRE(f.size() == 1);
  CHECK(f[0].comm_a == 0x10000 + 5000);
  CHECK(f[0].comm_b == 0x10000 + 5001);
  CHECK(f[0].process == 1);
  CHECK(f[0].same_stream);
  CHECK(o.PairsKept() == 1);
}

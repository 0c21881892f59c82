// Order inversion on synthetic traces: two communicators whose collectives
// two ranks issued in different orders, on one stream (each waits for the
// other) or on two; processes with no single order, and rings that lost
// the start of one communicator.

#include "analysis/order_inversion.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

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

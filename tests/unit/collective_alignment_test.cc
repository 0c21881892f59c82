// Collective alignment on synthetic traces: one communicator's ranks lined
// up by sequence number, the first number any of them departs at, the
// field it departs in, and the frontier; wrapped rings, refused and pending
// calls, and sequence numbers no honest trace holds.

#include "analysis/collective_alignment.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "synthetic_process.h"

namespace {

using ncclwatch::decoder::AlignedMember;
using ncclwatch::decoder::CollectiveAlignment;
using ncclwatch::decoder::CollectiveSignature;
using ncclwatch::decoder::MismatchField;
using ncclwatch::decoder::ProcessTrace;
using namespace ncclwatch::testing;

constexpr uint64_t kComm = 0xc0ffee;

// Each process's stream of kComm, added in order; process i holds rank i.
CollectiveAlignment Align(const std::vector<ProcessTrace>& traces) {
  CollectiveAlignment al;
  for (size_t i = 0; i < traces.size(); ++i) {
    const int32_t rank = static_cast<int32_t>(i);
    al.AddMember(rank, StreamOf(traces[i], kComm, rank), traces[i]);
  }
  return al;
}

// Ranks 0..n-1 that all issue #0..#last of kComm alike.
std::vector<SyntheticProcess> Agreeing(int n, uint64_t last) {
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < n; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, n).Collectives(kComm, 0, last);
  }
  return ps;
}

std::vector<ProcessTrace> Build(const std::vector<SyntheticProcess>& ps) {
  std::vector<ProcessTrace> out;
  for (const SyntheticProcess& p : ps) out.push_back(p.Build());
  return out;
}

}  // namespace

TEST_CASE("ranks that agree: no divergence, the frontier is the last number entered",
          "[alignment]") {
  const CollectiveAlignment al = Align(Build(Agreeing(4, 9)));
  CHECK_FALSE(al.FirstDivergence());
  REQUIRE(al.Frontier());
  CHECK(*al.Frontier() == 9);
  REQUIRE(al.members().size() == 4);
  for (const AlignedMember& m : al.members()) {
    CHECK(m.any);
    CHECK(m.holds_start);
    CHECK(m.lo == 0);
    CHECK(m.hi == 9);
    CHECK_FALSE(m.diverges);
    CHECK(m.last.seq == 9);
  }
  CollectiveSignature sig;
  int provider = -1;
  REQUIRE(al.ReferenceAt(5, &sig, nullptr, &provider));
  CHECK(sig.call == pb::ALL_REDUCE);
  CHECK(sig.count == 1024);
  CHECK(sig.datatype == kFloat32);
  CHECK(sig.redop == kSum);
  CHECK(sig.root == -1);
  CHECK(provider == 0);  // the first member added provides every number it holds
  CHECK_FALSE(al.ReferenceAt(10, &sig, nullptr, &provider));
}

TEST_CASE(
    "a rank that calls something else at #k: the first divergence is k, on that rank, in that "
    "field",
    "[alignment]") {
  struct Case {
    const char* name;
    Op expected;
    Op deviant;
    MismatchField field;
  };
  const std::vector<Case> cases = {
      {"op", AllReduce(1024), AllGather(1024), MismatchField::kOp},
      {"count", AllReduce(1024), AllReduce(1000), MismatchField::kCount},
      {"datatype", AllReduce(1024), AllReduce(1024).Datatype(kFloat16), MismatchField::kDatatype},
      {"redop", AllReduce(1024), AllReduce(1024).Redop(kMax), MismatchField::kRedop},
      {"root", Broadcast(64, 0), Broadcast(64, 1), MismatchField::kRoot},
      {"op before count", AllReduce(1024), Broadcast(10, 0), MismatchField::kOp},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<SyntheticProcess> ps;
    for (int r = 0; r < 3; ++r) {
      ps.emplace_back(r);
      ps.back().Init(kComm, r, 3).Collectives(kComm, 0, 3);
      ps.back().Collective(kComm, 4, r == 2 ? c.deviant : c.expected);
      ps.back().Collectives(kComm, 5, 6);
    }
    const CollectiveAlignment al = Align(Build(ps));
    REQUIRE(al.FirstDivergence());
    CHECK(*al.FirstDivergence() == 4);
    CHECK_FALSE(al.members()[0].diverges);
    CHECK_FALSE(al.members()[1].diverges);
    const AlignedMember& m = al.members()[2];
    REQUIRE(m.diverges);
    CHECK(m.first_divergence == 4);
    CHECK(m.comm_rank == 2);
    CHECK(m.at_divergence.seq == 4);
    CollectiveSignature ref;
    REQUIRE(al.ReferenceAt(4, &ref, nullptr, nullptr));
    CHECK(CollectiveSignature::DifferingField(ref, CollectiveSignature::Of(m.at_divergence)) ==
          c.field);
    CHECK(*al.Frontier() == 6);
  }
}

TEST_CASE("the deviant rank added first: the others diverge from it, at the same number",
          "[alignment]") {
  std::vector<SyntheticProcess> ps = Agreeing(3, 1);
  ps[0].Collective(kComm, 2, AllReduce(7));
  ps[1].Collective(kComm, 2);
  ps[2].Collective(kComm, 2);
  const CollectiveAlignment al = Align(Build(ps));
  REQUIRE(al.FirstDivergence());
  CHECK(*al.FirstDivergence() == 2);
  CHECK_FALSE(al.members()[0].diverges);  // it is the reference
  CHECK(al.members()[1].diverges);
  CHECK(al.members()[2].diverges);
}

TEST_CASE("what NCCL does not compare is not a divergence", "[alignment]") {
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < 2; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, 2);
  }
  // ncclBcast is a Broadcast; an AllGather's reduction operator and an
  // AllReduce's root are not arguments NCCL matches.
  ps[0].Collective(kComm, 0, Broadcast(64, 1));
  ps[1].Collective(kComm, 0, Bcast(64, 1));
  ps[0].Collective(kComm, 1, AllGather().Redop(kSum));
  ps[1].Collective(kComm, 1, AllGather().Redop(kMax));
  ps[0].Collective(kComm, 2, AllReduce().Root(0));
  ps[1].Collective(kComm, 2, AllReduce().Root(1));
  const CollectiveAlignment al = Align(Build(ps));
  CHECK_FALSE(al.FirstDivergence());
  CHECK(*al.Frontier() == 2);
}

TEST_CASE("a rank behind: a lower last number, no divergence", "[alignment]") {
  std::vector<SyntheticProcess> ps = Agreeing(3, 2);
  ps[0].Collectives(kComm, 3, 5);
  ps[2].Collectives(kComm, 3, 5);
  const CollectiveAlignment al = Align(Build(ps));
  CHECK_FALSE(al.FirstDivergence());
  CHECK(*al.Frontier() == 5);
  CHECK(al.members()[1].hi == 2);
  CHECK(al.members()[1].last.seq == 2);
  CHECK(al.members()[0].hi == 5);
}

TEST_CASE("a member with no collective takes part, with nothing to compare", "[alignment]") {
  std::vector<SyntheticProcess> ps = Agreeing(2, 3);
  ps.emplace_back(2);
  ps.back().Init(kComm, 2, 3);
  const CollectiveAlignment al = Align(Build(ps));
  CHECK_FALSE(al.FirstDivergence());
  REQUIRE(al.members().size() == 3);
  CHECK_FALSE(al.members()[2].any);
  CHECK(al.members()[2].holds_start);
  CHECK(*al.Frontier() == 3);
}

TEST_CASE("rings wrapped at different points are compared only where both hold the number",
          "[alignment]") {
  // Rank 0 holds #0..#9; rank 1's ring wrapped and holds #6..#12; rank 2's
  // holds #11..#12. What only one of them holds is compared with nobody.
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < 3; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, 3);
  }
  ps[0].Collectives(kComm, 0, 5, AllGather()).Collectives(kComm, 6, 9);
  ps[1]
      .Wrapped()
      .Collectives(kComm, 6, 10)
      .Collective(kComm, 11, Broadcast(8, 0))
      .Collective(kComm, 12);
  ps[2].Wrapped().Collective(kComm, 11, Broadcast(8, 0)).Collective(kComm, 12);
  const std::vector<ProcessTrace> traces = Build(ps);
  {
    const CollectiveAlignment al = Align(traces);
    CHECK_FALSE(al.FirstDivergence());
    CHECK(*al.Frontier() == 12);
    CHECK(al.members()[0].holds_start);
    CHECK_FALSE(al.members()[1].holds_start);
    CHECK(al.members()[1].lo == 6);
    CHECK(al.members()[2].lo == 11);
    int provider = -1;
    REQUIRE(al.ReferenceAt(11, nullptr, nullptr, &provider));
    CHECK(provider == 1);
  }
  // The same traces added the other way round: still nothing.
  CollectiveAlignment reversed;
  for (int i = 2; i >= 0; --i) reversed.AddMember(i, StreamOf(traces[i], kComm, i), traces[i]);
  CHECK_FALSE(reversed.FirstDivergence());
  CHECK(*reversed.Frontier() == 12);

  // A fourth rank, from #0, disagreeing at #11 with the wrapped ranks only.
  SyntheticProcess late(3);
  late.Init(kComm, 3, 4).Collectives(kComm, 0, 5, AllGather()).Collectives(kComm, 6, 12);
  const ProcessTrace t = late.Build();
  CollectiveAlignment al = Align(traces);
  al.AddMember(3, StreamOf(t, kComm, 3), t);
  REQUIRE(al.FirstDivergence());
  CHECK(*al.FirstDivergence() == 11);
  CHECK(al.members()[3].diverges);
  CHECK(al.members()[3].first_divergence == 11);
}

TEST_CASE("a refused call is not numbered, a pending call counts", "[alignment]") {
  std::vector<SyntheticProcess> ps = Agreeing(2, 1);
  // Rank 1's ncclBroadcast was refused (invalid argument): it carries the
  // number the next accepted call takes, and is no collective of the stream.
  ps[1].Collective(kComm, 2, Broadcast(8, 5).Result(kInvalidArgument));
  ps[0].Collective(kComm, 2);
  ps[1].Collective(kComm, 2);
  // #3: rank 0 returned, rank 1 is still inside; #4: a non-blocking
  // communicator's call still being enqueued (ncclInProgress) counts too.
  ps[0].Collective(kComm, 3);
  ps[1].Collective(kComm, 3, AllReduce().Pending());
  ps[0].Collective(kComm, 4, AllReduce().Result(kInProgress));
  const std::vector<ProcessTrace> traces = Build(ps);
  CHECK(StreamOf(traces[1], kComm, 1).collectives.size() == 4);
  CHECK(StreamOf(traces[0], kComm, 0).collectives.size() == 5);
  {
    const CollectiveAlignment al = Align(traces);
    CHECK_FALSE(al.FirstDivergence());
    CHECK(al.members()[0].hi == 4);
    CHECK(al.members()[1].hi == 3);
    CHECK(al.members()[1].last.result == NCCLWATCH_RESULT_PENDING);
  }
  // A pending call that differs is a divergence like any other.
  SyntheticProcess deviant(2);
  deviant.Init(kComm, 2, 3).Collectives(kComm, 0, 2).Collective(kComm, 3, AllReduce(5).Pending());
  const ProcessTrace t = deviant.Build();
  CollectiveAlignment al = Align(traces);
  al.AddMember(2, StreamOf(t, kComm, 2), t);
  REQUIRE(al.FirstDivergence());
  CHECK(*al.FirstDivergence() == 3);
  CHECK(al.members()[2].at_divergence.result == NCCLWATCH_RESULT_PENDING);
}

TEST_CASE("crafted sequence numbers neither allocate the span between them nor crash",
          "[alignment][hostile]") {
  const uint64_t huge = uint64_t{1} << 40;
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < 4; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, 4);
  }
  ps[0].Collective(kComm, 0);
  ps[1].Collective(kComm, huge);
  ps[2].Collective(kComm, UINT64_MAX - 1).Collective(kComm, UINT64_MAX);
  ps[3]
      .Collective(kComm, 0)
      .Collective(kComm, huge, AllReduce(3))
      .Collective(kComm, UINT64_MAX, AllGather());
  const CollectiveAlignment al = Align(Build(ps));
  REQUIRE(al.Frontier());
  CHECK(*al.Frontier() == UINT64_MAX);
  CHECK(al.members()[0].hi == 0);
  CHECK(al.members()[1].lo == huge);
  CHECK(al.members()[2].lo == UINT64_MAX - 1);
  CHECK(al.members()[2].hi == UINT64_MAX);
  REQUIRE(al.FirstDivergence());
  CHECK(*al.FirstDivergence() == huge);
  CHECK(al.members()[3].first_divergence == huge);
  CollectiveSignature sig;
  CHECK(al.ReferenceAt(UINT64_MAX, &sig, nullptr, nullptr));
  CHECK(al.ReferenceAt(huge, &sig, nullptr, nullptr));
  CHECK_FALSE(al.ReferenceAt(1, &sig, nullptr, nullptr));
  CHECK_FALSE(al.ReferenceAt(huge - 1, &sig, nullptr, nullptr));
}

// A crafted #2^63-1: a stream's progress (last seq + 1) must not overflow
// (a UBSan build would abort on it).
TEST_CASE("a crafted #2^63-1 is held like any other number", "[alignment][hostile]") {
  SyntheticProcess p(0);
  p.Init(kComm, 0, 2).Collective(kComm, INT64_MAX);
  const ProcessTrace t = p.Build();
  CollectiveAlignment al;
  al.AddMember(0, StreamOf(t, kComm, 0), t);
  CHECK(*al.Frontier() == static_cast<uint64_t>(INT64_MAX));
}

TEST_CASE(
    "a reference gives back its number's signature, call site and time, from the member that "
    "provided it, on that member's clock",
    "[alignment]") {
  // Two call sites and two signatures, interleaved: the interned kinds
  // must keep them apart.
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < 2; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, 2);
    for (uint64_t s = 0; s < 40; ++s)
      ps.back().Collective(kComm, s, s % 3 == 0 ? AllGather(8) : AllReduce(1024));
  }
  ps[0].ClockAhead(5000);  // the provider's host reads 5 us ahead
  std::vector<ProcessTrace> traces = Build(ps);
  for (ProcessTrace& t : traces)
    for (ncclwatch::decoder::CollectiveEvent& e : t.collectives)
      e.caller = (e.seq / 4) % 2 == 0 ? 0x1000 : 0x2000;  // runs of one call site
  const CollectiveAlignment al = Align(traces);
  CHECK_FALSE(al.FirstDivergence());
  for (uint64_t s = 0; s < 40; ++s) {
    INFO("#" << s);
    CollectiveSignature sig;
    int64_t entered_ns = 0;
    int provider = -1;
    uint64_t caller = 0;
    REQUIRE(al.ReferenceAt(s, &sig, &entered_ns, &provider, &caller));
    const ncclwatch::decoder::CollectiveEvent& e = traces[0].collectives[s];
    CHECK(sig == CollectiveSignature::Of(e));
    CHECK(caller == ((s / 4) % 2 == 0 ? 0x1000u : 0x2000u));
    CHECK(provider == 0);
    CHECK(entered_ns == traces[0].RealtimeNs(e.t));
    CHECK(entered_ns == traces[1].RealtimeNs(traces[1].collectives[s].t) + 5000);
  }
}

TEST_CASE("more distinct call sites than are interned: every reference still holds its own",
          "[alignment]") {
  // The synthetic call site is 0x400000 + seq: every number a kind of its
  // own, past what is interned (an eighth of them).
  constexpr uint64_t kLast = 70'000;
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < 2; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, 2).Collectives(kComm, 0, kLast - 1);
    ps.back().Collective(kComm, kLast, r == 1 ? AllReduce(1000) : AllReduce(1024));
  }
  const std::vector<ProcessTrace> traces = Build(ps);
  const CollectiveAlignment al = Align(traces);
  REQUIRE(al.FirstDivergence());
  CHECK(*al.FirstDivergence() == kLast);
  // The first 1,024 kinds are interned, and then one in eight numbers'.
  for (uint64_t s : {uint64_t{0}, uint64_t{1'023}, uint64_t{1'024}, uint64_t{1'025},
                     uint64_t{40'000}, uint64_t{69'999}, kLast}) {
    INFO("#" << s);
    CollectiveSignature sig;
    uint64_t caller = 0;
    int64_t entered_ns = 0;
    int provider = -1;
    REQUIRE(al.ReferenceAt(s, &sig, &entered_ns, &provider, &caller));
    CHECK(caller == 0x400000 + s);
    CHECK(sig.count == 1024);
    CHECK(provider == 0);
    CHECK(entered_ns == traces[0].RealtimeNs(traces[0].collectives[s].t));
  }
}

TEST_CASE("numbers only a later member reached are timed on that member's clock", "[alignment]") {
  // Rank 0 provides #0-#9, rank 1 (its host 3 us behind) nothing new, rank 2
  // (1 us ahead) #10-#19.
  std::vector<SyntheticProcess> ps;
  ps.emplace_back(0);
  ps.back().Init(kComm, 0, 3).Collectives(kComm, 0, 9);
  ps.emplace_back(1);
  ps.back().Init(kComm, 1, 3).Collectives(kComm, 0, 4);
  ps.emplace_back(2);
  ps.back().Init(kComm, 2, 3).Collectives(kComm, 0, 19);
  ps[1].ClockAhead(-3000);
  ps[2].ClockAhead(1000);
  const std::vector<ProcessTrace> traces = Build(ps);
  const CollectiveAlignment al = Align(traces);
  for (uint64_t s : {uint64_t{2}, uint64_t{5}, uint64_t{10}, uint64_t{19}}) {
    INFO("#" << s);
    int64_t entered_ns = 0;
    int provider = -1;
    REQUIRE(al.ReferenceAt(s, nullptr, &entered_ns, &provider));
    const size_t p = s < 10 ? 0 : 2;
    CHECK(provider == static_cast<int>(p));
    CHECK(entered_ns == traces[p].RealtimeNs(traces[p].collectives[s].t));
  }
}

TEST_CASE("RealtimeClock converts as RealtimeNs does, in any order", "[alignment][clock]") {
  // A TSC clock with anchors at uneven rates, asked in ascending order, then
  // backwards, then at and between anchors.
  ProcessTrace t;
  t.clock = NCCLWATCH_CLOCK_TSC;
  t.anchors = {{1000, 5'000, 1'700'000'000'000'000'000}, {3000, 6'100, 0}, {9000, 9'000, 0}};
  ncclwatch::decoder::RealtimeClock clock(t);
  std::vector<uint64_t> times;
  for (uint64_t x = 0; x <= 12'000; x += 250) times.push_back(x);
  for (int64_t x = 12'000; x > 0; x -= 333) times.push_back(static_cast<uint64_t>(x));
  times.insert(times.end(), {1000, 2000, 2001, 1999, 3000, 6000, 6001, UINT64_MAX, 0});
  for (uint64_t x : times) {
    INFO("t " << x);
    CHECK(clock(x) == t.RealtimeNs(x));
  }
  t.clock = NCCLWATCH_CLOCK_MONOTONIC_NS;
  ncclwatch::decoder::RealtimeClock monotonic(t);
  for (uint64_t x : times) CHECK(monotonic(x) == t.RealtimeNs(x));
  t.anchors.clear();
  ncclwatch::decoder::RealtimeClock none(t);
  CHECK(none(5) == 0);
}

// Point-to-point matching on synthetic traces: every send #k from s to d
// against receive #k at d from s, for size, for the collectives posted
// before each side, and for a tail only one side posted; a peer whose trace
// is missing proves nothing.

#include "analysis/p2p_matching.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "report/finding_text.h"
#include "summary/call_digest.h"
#include "synthetic_process.h"

namespace {

using ncclwatch::decoder::P2pMatching;
using ncclwatch::decoder::P2pProblem;
using ncclwatch::decoder::ProcessTrace;
using namespace ncclwatch::testing;

constexpr uint64_t kComm = 0xbeef;

// Two ranks of kComm, rank 0 in process 0 and rank 1 in process 1.
struct Pair {
  SyntheticProcess r0{0}, r1{1};
  Pair() {
    r0.Init(kComm, 0, 2);
    r1.Init(kComm, 1, 2);
  }
};

// Matches the processes (added in the order given) and finishes with every
// rank of kComm present: rank r is process r.
std::vector<P2pProblem> Match(const std::vector<ProcessTrace>& traces) {
  P2pMatching m;
  for (size_t i = 0; i < traces.size(); ++i) m.AddProcess(static_cast<int>(i), traces[i]);
  m.Finish([&](uint64_t comm, int32_t rank, int* process) {
    if (comm != kComm || rank < 0 || rank >= static_cast<int32_t>(traces.size())) return false;
    *process = rank;
    return true;
  });
  return m.problems();
}

std::vector<P2pProblem> Match(const Pair& p) { return Match({p.r0.Build(), p.r1.Build()}); }

}  // namespace

TEST_CASE("sends and receives that match: no problem", "[p2p]") {
  Pair p;
  p.r0.Collective(kComm, 0)
      .Send(kComm, 0, 1)
      .Recv(kComm, 0, 1)
      .Send(kComm, 1, 1, Sized(100, kInt32));
  p.r1.Collective(kComm, 0)
      .Recv(kComm, 0, 0)
      .Send(kComm, 0, 0)
      .Recv(kComm, 1, 0, Sized(100, kInt32));
  CHECK(Match(p).empty());
  // Whichever side is added first.
  P2pMatching m;
  m.AddProcess(1, p.r1.Build());
  m.AddProcess(0, p.r0.Build());
  m.Finish([](uint64_t, int32_t rank, int* process) {
    *process = rank;
    return true;
  });
  CHECK(m.problems().empty());
}

TEST_CASE("a receive for another size: the first #k they differ at, count or datatype", "[p2p]") {
  SECTION("count") {
    Pair p;
    p.r0.Send(kComm, 0, 1).Send(kComm, 1, 1, Sized(64)).Send(kComm, 2, 1, Sized(5));
    p.r1.Recv(kComm, 0, 0).Recv(kComm, 1, 0, Sized(32)).Recv(kComm, 2, 0, Sized(6));
    const std::vector<P2pProblem> problems = Match(p);
    REQUIRE(problems.size() == 1);
    const P2pProblem& x = problems[0];
    CHECK(x.kind == P2pProblem::kSizeMismatch);
    CHECK(x.comm == kComm);
    CHECK(x.seq == 1);
    CHECK(x.sender == 0);
    CHECK(x.receiver == 1);
    CHECK(x.sender_process == 0);
    CHECK(x.receiver_process == 1);
    CHECK(x.send.count == 64);
    CHECK(x.receive.count == 32);
  }
  SECTION("datatype") {
    Pair p;
    p.r1.Send(kComm, 0, 0, Sized(8, kFloat16));
    p.r0.Recv(kComm, 0, 1, Sized(8, kFloat32));
    const std::vector<P2pProblem> problems = Match(p);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == P2pProblem::kSizeMismatch);
    CHECK(problems[0].seq == 0);
    CHECK(problems[0].sender == 1);
    CHECK(problems[0].receiver == 0);
    CHECK(problems[0].send.datatype == kFloat16);
    CHECK(problems[0].receive.datatype == kFloat32);
  }
}

TEST_CASE("a send never received: the first number the receiver did not post", "[p2p]") {
  SECTION("the receiver posted fewer") {
    Pair p;
    p.r0.Send(kComm, 0, 1).Send(kComm, 1, 1).Send(kComm, 2, 1, Sized(77));
    p.r1.Recv(kComm, 0, 0).Recv(kComm, 1, 0);
    const std::vector<P2pProblem> problems = Match(p);
    REQUIRE(problems.size() == 1);
    const P2pProblem& x = problems[0];
    CHECK(x.kind == P2pProblem::kSendNotReceived);
    CHECK(x.seq == 2);
    CHECK(x.other_side_posted == 2);
    CHECK(x.send.seq == 2);
    CHECK(x.send.count == 77);
    CHECK(x.sender == 0);
    CHECK(x.receiver == 1);
  }
  SECTION("the receiver, whose trace is here, posted none") {
    Pair p;
    p.r0.Send(kComm, 0, 1, Sized(9));
    p.r1.Collective(kComm, 0);
    const std::vector<P2pProblem> problems = Match(p);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == P2pProblem::kSendNotReceived);
    CHECK(problems[0].seq == 0);
    CHECK(problems[0].other_side_posted == 0);
    CHECK(problems[0].send.count == 9);
    CHECK(problems[0].receiver_process == 1);
  }
}

TEST_CASE("a receive never sent: the first number the sender did not post", "[p2p]") {
  Pair p;
  p.r0.Send(kComm, 0, 1);
  p.r1.Recv(kComm, 0, 0).Recv(kComm, 1, 0, Sized(3));
  const std::vector<P2pProblem> problems = Match(p);
  REQUIRE(problems.size() == 1);
  const P2pProblem& x = problems[0];
  CHECK(x.kind == P2pProblem::kReceiveNotSent);
  CHECK(x.seq == 1);
  CHECK(x.other_side_posted == 1);
  CHECK(x.receive.seq == 1);
  CHECK(x.receive.count == 3);
  CHECK(x.sender == 0);
  CHECK(x.receiver == 1);
}

TEST_CASE("two sides posted between different collectives: an order mismatch", "[p2p]") {
  // Rank 0 sends after collective #1; rank 1 receives before it. On the
  // communicator's one stream each waits for the other.
  Pair p;
  p.r0.Collective(kComm, 0).Collective(kComm, 1).Send(kComm, 0, 1);
  p.r1.Collective(kComm, 0).Recv(kComm, 0, 0).Collective(kComm, 1);
  const std::vector<P2pProblem> problems = Match(p);
  REQUIRE(problems.size() == 1);
  const P2pProblem& x = problems[0];
  CHECK(x.kind == P2pProblem::kOrderMismatch);
  CHECK(x.seq == 0);
  CHECK(x.send.collectives_before == 2);
  CHECK(x.receive.collectives_before == 1);
  CHECK(x.sender == 0);
  CHECK(x.receiver == 1);
}

// A ring that wrapped lost its first collectives but not their numbers
// (the shim numbers a communicator's from #0): a call after the first kept
// one knows how many came before it; one before any kept does not.
TEST_CASE("a side whose trace lost its start counts by the collectives' numbers", "[p2p]") {
  SECTION("the same place: no problem") {
    Pair p;
    p.r0.Collectives(kComm, 0, 6).Send(kComm, 0, 1);
    p.r1.Wrapped().Collectives(kComm, 5, 6).Recv(kComm, 0, 0);
    const std::vector<ProcessTrace> traces = {p.r0.Build(), p.r1.Build()};
    CHECK(StreamOf(traces[1], kComm, 1).collectives_before_p2p == std::vector<int64_t>{7});
    CHECK(Match(traces).empty());
  }
  SECTION("posted after another collective: an order mismatch") {
    Pair p;
    p.r0.Collectives(kComm, 0, 6).Send(kComm, 0, 1).Collective(kComm, 7);
    p.r1.Wrapped().Collectives(kComm, 5, 7).Recv(kComm, 0, 0);
    const std::vector<P2pProblem> problems = Match({p.r0.Build(), p.r1.Build()});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == P2pProblem::kOrderMismatch);
    CHECK(problems[0].send.collectives_before == 7);
    CHECK(problems[0].receive.collectives_before == 8);
  }
  SECTION("posted before the first collective the ring kept: not known, not compared") {
    Pair p;
    p.r0.Collectives(kComm, 0, 6).Send(kComm, 0, 1);
    p.r1.Wrapped().Recv(kComm, 0, 0).Collectives(kComm, 5, 6);
    const std::vector<ProcessTrace> traces = {p.r0.Build(), p.r1.Build()};
    CHECK(StreamOf(traces[1], kComm, 1).collectives_before_p2p == std::vector<int64_t>{-1});
    CHECK(Match(traces).empty());
  }
}

TEST_CASE("a peer whose trace is missing proves nothing", "[p2p]") {
  Pair p;
  p.r0.Send(kComm, 0, 1).Send(kComm, 1, 1).Recv(kComm, 0, 1);
  P2pMatching m;
  m.AddProcess(0, p.r0.Build());
  m.Finish([](uint64_t, int32_t rank, int* process) {
    if (rank != 0) return false;  // rank 1's trace was not collected
    *process = 0;
    return true;
  });
  CHECK(m.problems().empty());
}

// A pair whose one side posted nothing in the traces is compared with an
// empty other side only if that side's trace holds its start: rank 0 here
// kept only collectives #100 and #101, so the sends it made long before are
// gone. A wrapped trace proves no more than a missing one.
TEST_CASE("a peer whose ring wrapped past its sends proves nothing either", "[p2p]") {
  Pair p;
  p.r1.Recv(kComm, 0, 0).Collectives(kComm, 0, 101);
  p.r0.Wrapped().Collectives(kComm, 100, 101);
  const std::vector<ProcessTrace> traces = {p.r0.Build(), p.r1.Build()};
  REQUIRE_FALSE(StreamOf(traces[0], kComm, 0).holds_start);
  const std::vector<P2pProblem> problems = Match(traces);
  INFO("problems: " << problems.size() << ", the first of kind "
                    << (problems.empty() ? -1 : problems[0].kind) << " (2: receive never sent)");
  CHECK(problems.empty());
}

namespace {

using ncclwatch::decoder::AddP2pCall;
using ncclwatch::decoder::BuildStreams;
using ncclwatch::decoder::kLeftOutBlock;
using ncclwatch::decoder::LeftOutP2p;
using ncclwatch::decoder::P2pGap;

// Rank 0 sends #0-#999 to rank 1 (100 x int32, but #k in `odd` 99), rank 1
// receives them (100 x int32).
Pair Sends(const std::vector<uint64_t>& odd = {}) {
  Pair p;
  for (uint64_t k = 0; k < 1000; ++k) {
    const bool other = std::find(odd.begin(), odd.end(), k) != odd.end();
    p.r0.Send(kComm, k, 1, Sized(other ? 99 : 100, kInt32));
    p.r1.Recv(kComm, k, 0, Sized(100, kInt32));
  }
  return p;
}

// `t` as a summary leaves blocks [first, end) of its sends or receives out:
// their calls gone, a digest each.
ProcessTrace LeaveOut(ProcessTrace t, bool send, uint64_t first, uint64_t end) {
  LeftOutP2p l;
  l.comm = kComm;
  l.rank = send ? 0 : 1;
  l.peer = send ? 1 : 0;
  l.send = send;
  l.first_block = first;
  l.blocks.assign(end - first, {});
  // Each call's count of collectives before it, as the trace whole has it.
  BuildStreams(&t);
  std::vector<int64_t> before(t.p2p.size(), -1);
  for (const auto& s : t.streams)
    for (size_t k = 0; k < s.p2p.size(); ++k) before[s.p2p[k]] = s.collectives_before_p2p[k];
  std::vector<ncclwatch::decoder::P2pEvent> kept;
  for (size_t i = 0; i < t.p2p.size(); ++i) {
    const auto& e = t.p2p[i];
    const uint64_t b = e.seq / kLeftOutBlock;
    if (e.send == send && b >= first && b < end) {
      AddP2pCall(e.seq, e.count, e.datatype, before[i], &l.blocks[b - first]);
      ++l.calls;
    } else {
      kept.push_back(e);
    }
  }
  t.p2p = kept;
  t.left_out_p2p.push_back(l);
  BuildStreams(&t);
  return t;
}

std::vector<P2pGap> Gaps(const std::vector<ProcessTrace>& traces,
                         std::vector<P2pProblem>* problems = nullptr) {
  P2pMatching m;
  for (size_t i = 0; i < traces.size(); ++i) m.AddProcess(static_cast<int>(i), traces[i]);
  m.Finish([](uint64_t, int32_t rank, int* process) {
    *process = rank;
    return true;
  });
  if (problems != nullptr) *problems = m.problems();
  return m.gaps();
}

}  // namespace

// A node's summary left out the middle of a long run of sends (or of the
// receives): compared by digest with the other side, left out too or held
// whole; a block whose calls differ is a gap that says so, and one the other
// side cannot digest (it lost part of the block) a gap not compared.
TEST_CASE("sends a summary left out are compared by digest", "[p2p][summary]") {
  const Pair same = Sends();
  std::vector<P2pProblem> problems;
  SECTION("left out of the sender's summary, the receiver's trace whole: compared, equal") {
    CHECK(Gaps({LeaveOut(same.r0.Build(), true, 1, 3), same.r1.Build()}, &problems).empty());
    CHECK(problems.empty());
  }
  SECTION("left out of both summaries: compared by their digests") {
    CHECK(Gaps({LeaveOut(same.r0.Build(), true, 1, 3), LeaveOut(same.r1.Build(), false, 1, 2)})
              .empty());
  }
  SECTION("a receive posted before another collective inside what was left out: they differ") {
    // Each side posts #k after collective #k; rank 1 posts receive #600
    // before its collective #600 (an order mismatch the traces whole show).
    Pair order;
    for (uint64_t k = 0; k < 1000; ++k) {
      order.r0.Collective(kComm, k).Send(kComm, k, 1, Sized(100, kInt32));
      if (k == 600)
        order.r1.Recv(kComm, k, 0, Sized(100, kInt32)).Collective(kComm, k);
      else
        order.r1.Collective(kComm, k).Recv(kComm, k, 0, Sized(100, kInt32));
    }
    std::vector<P2pProblem> whole;
    CHECK(Gaps({order.r0.Build(), order.r1.Build()}, &whole).empty());
    REQUIRE(whole.size() == 1);
    CHECK(whole[0].kind == P2pProblem::kOrderMismatch);
    CHECK(whole[0].seq == 600);
    const std::vector<P2pGap> gaps =
        Gaps({LeaveOut(order.r0.Build(), true, 1, 3), LeaveOut(order.r1.Build(), false, 1, 3)},
             &problems);
    CHECK(problems.empty());    // #600 left out of both...
    REQUIRE(gaps.size() == 1);  // ...and its block's digests say they differ
    CHECK(gaps[0].kind == P2pGap::kDiffer);
    CHECK(gaps[0].sender_left_out);
    CHECK(gaps[0].receiver_left_out);
    CHECK(gaps[0].first_seq == 2 * kLeftOutBlock);
    CHECK(gaps[0].end_seq == 3 * kLeftOutBlock);
  }
  SECTION("a send of another size inside what was left out: the digests differ") {
    const Pair odd = Sends({600});
    const std::vector<P2pGap> gaps =
        Gaps({LeaveOut(odd.r0.Build(), true, 1, 3), odd.r1.Build()}, &problems);
    CHECK(problems.empty());    // no send #600 to compare: the trace's mismatch is not seen...
    REQUIRE(gaps.size() == 1);  // ...and the verdict says so
    CHECK(gaps[0].kind == P2pGap::kDiffer);
    CHECK(gaps[0].sender == 0);
    CHECK(gaps[0].receiver == 1);
    CHECK(gaps[0].sender_left_out);
    CHECK_FALSE(gaps[0].receiver_left_out);
    CHECK(gaps[0].first_seq == 2 * kLeftOutBlock);
    CHECK(gaps[0].end_seq == 3 * kLeftOutBlock);
  }
  SECTION("the receiver's calls in a left-out block not all there: not compared") {
    ProcessTrace r1 = same.r1.Build();
    r1.p2p.erase(std::remove_if(r1.p2p.begin(), r1.p2p.end(),
                                [](const auto& e) { return e.seq == 300 || e.seq == 301; }),
                 r1.p2p.end());
    BuildStreams(&r1);
    const std::vector<P2pGap> gaps = Gaps({LeaveOut(same.r0.Build(), true, 1, 3), r1});
    REQUIRE(gaps.size() == 1);
    CHECK(gaps[0].kind == P2pGap::kNotCompared);
    CHECK_FALSE(gaps[0].ring_start);  // its trace holds its start: a hole
    CHECK(gaps[0].first_seq == kLeftOutBlock);
    CHECK(gaps[0].end_seq == 2 * kLeftOutBlock);
  }
  SECTION("the receiver's ring begins inside a left-out block: not compared, its ring's start") {
    Pair p;
    p.r1.Wrapped();
    for (uint64_t k = 0; k < 1000; ++k) {
      p.r0.Send(kComm, k, 1, Sized(100, kInt32));
      if (k >= 300) p.r1.Recv(kComm, k, 0, Sized(100, kInt32));
    }
    const std::vector<P2pGap> gaps = Gaps({LeaveOut(p.r0.Build(), true, 1, 3), p.r1.Build()});
    REQUIRE(gaps.size() == 1);
    CHECK(gaps[0].kind == P2pGap::kNotCompared);
    CHECK(gaps[0].ring_start);
    CHECK(gaps[0].first_seq == kLeftOutBlock);
    CHECK(gaps[0].end_seq == 2 * kLeftOutBlock);
    // Not where it lacks a number after its first as well.
    ProcessTrace r1 = p.r1.Build();
    r1.p2p.erase(
        std::remove_if(r1.p2p.begin(), r1.p2p.end(), [](const auto& e) { return e.seq == 400; }),
        r1.p2p.end());
    BuildStreams(&r1);
    const std::vector<P2pGap> holed = Gaps({LeaveOut(same.r0.Build(), true, 1, 3), r1});
    REQUIRE(holed.size() == 1);
    CHECK(holed[0].kind == P2pGap::kNotCompared);
    CHECK_FALSE(holed[0].ring_start);
  }
}

// A side whose ring lost the communicator's collectives before its sends
// knows none of their counts (-1): the traces whole compare the sends'
// numbers and sizes there, not their counts, and so do the summaries'
// digests. Where one side knows some of a block's counts and the other
// all (or another number of them), the digests cannot say: a gap not
// compared; where both know the same ones, they are compared.
TEST_CASE("sends left out whose counts of collectives one side does not know", "[p2p][summary]") {
  std::vector<P2pProblem> problems;
  SECTION("the receiver lost the only collective before them: compared on their sizes") {
    Pair p;
    p.r0.Collective(kComm, 0);
    p.r1.Wrapped();
    for (uint64_t k = 0; k < 1000; ++k) {
      p.r0.Send(kComm, k, 1, Sized(100, kInt32));
      p.r1.Recv(kComm, k, 0, Sized(100, kInt32));
    }
    const ProcessTrace r0 = p.r0.Build(), r1 = p.r1.Build();
    REQUIRE(StreamOf(r1, kComm, 1).collectives_before_p2p.front() == -1);
    REQUIRE(StreamOf(r0, kComm, 0).collectives_before_p2p.front() == 1);
    CHECK(Gaps({r0, r1}, &problems).empty());
    CHECK(problems.empty());
    // Left out of both summaries, or of either: no gap where the traces
    // whole find nothing (the digests with counts differ: 1 against none).
    CHECK(Gaps({LeaveOut(r0, true, 1, 3), LeaveOut(r1, false, 1, 3)}, &problems).empty());
    CHECK(problems.empty());
    CHECK(Gaps({LeaveOut(r0, true, 1, 3), r1}).empty());
    CHECK(Gaps({r0, LeaveOut(r1, false, 1, 3)}).empty());
    // A send of another size there is still told apart.
    Pair odd;
    odd.r0.Collective(kComm, 0);
    odd.r1.Wrapped();
    for (uint64_t k = 0; k < 1000; ++k) {
      odd.r0.Send(kComm, k, 1, Sized(k == 600 ? 99 : 100, kInt32));
      odd.r1.Recv(kComm, k, 0, Sized(100, kInt32));
    }
    const std::vector<P2pGap> gaps =
        Gaps({LeaveOut(odd.r0.Build(), true, 1, 3), LeaveOut(odd.r1.Build(), false, 1, 3)});
    REQUIRE(gaps.size() == 1);
    CHECK(gaps[0].kind == P2pGap::kDiffer);
    CHECK(gaps[0].first_seq == 2 * kLeftOutBlock);
    CHECK(gaps[0].end_seq == 3 * kLeftOutBlock);
  }
  // Rank 0 and rank 1 each post collective #0 (unless its ring lost it),
  // then #1 before send (receive) #300, then #2: rank 0 before #`third`,
  // rank 1 before #450. Whole, and with blocks 1-2 left out of both.
  struct Traces {
    std::vector<ProcessTrace> whole, summarized;
  };
  auto build = [](uint64_t third, bool r0_lost, bool r1_lost) {
    Pair p;
    if (r0_lost) p.r0.Wrapped();
    if (r1_lost) p.r1.Wrapped();
    if (!r0_lost) p.r0.Collective(kComm, 0);
    if (!r1_lost) p.r1.Collective(kComm, 0);
    for (uint64_t k = 0; k < 1000; ++k) {
      if (k == 300) p.r0.Collective(kComm, 1);
      if (k == 300) p.r1.Collective(kComm, 1);
      if (k == third) p.r0.Collective(kComm, 2);
      if (k == 450) p.r1.Collective(kComm, 2);
      p.r0.Send(kComm, k, 1, Sized(100, kInt32));
      p.r1.Recv(kComm, k, 0, Sized(100, kInt32));
    }
    Traces t;
    t.whole = {p.r0.Build(), p.r1.Build()};
    t.summarized = {LeaveOut(t.whole[0], true, 1, 3), LeaveOut(t.whole[1], false, 1, 3)};
    return t;
  };
  SECTION("one side knows part of a block's counts, the other all: not compared") {
    // The traces whole compare #300- and find them alike; the summaries
    // cannot tell #256-#299 (rank 1's not known) from the rest of block 1.
    const Traces t = build(450, false, true);
    CHECK(Gaps(t.whole, &problems).empty());
    CHECK(problems.empty());
    const std::vector<P2pGap> gaps = Gaps(t.summarized, &problems);
    CHECK(problems.empty());
    REQUIRE(gaps.size() == 1);
    CHECK(gaps[0].kind == P2pGap::kNotCompared);
    CHECK(gaps[0].first_seq == kLeftOutBlock);
    CHECK(gaps[0].end_seq == 2 * kLeftOutBlock);
  }
  SECTION("both lost the same collective: the counts they know compared") {
    CHECK(Gaps(build(450, true, true).summarized, &problems).empty());
    CHECK(problems.empty());
    // Rank 0 posts #400-#449 after its collective #2, rank 1 before: the
    // traces whole find it at #400, the summaries' block 1 differs.
    const Traces t = build(400, true, true);
    CHECK(Gaps(t.whole, &problems).empty());
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == P2pProblem::kOrderMismatch);
    CHECK(problems[0].seq == 400);
    const std::vector<P2pGap> gaps = Gaps(t.summarized, &problems);
    CHECK(problems.empty());
    REQUIRE(gaps.size() == 1);
    CHECK(gaps[0].kind == P2pGap::kDiffer);
    CHECK(gaps[0].first_seq == kLeftOutBlock);
    CHECK(gaps[0].end_seq == 2 * kLeftOutBlock);
  }
}

// What the traces would not have compared either is no gap: a block the
// receiver's trace begins after (its ring lost it), or blocks after a size
// mismatch both sides hold (the traces stop comparing there).
TEST_CASE("sends left out that the traces would not have compared either are no gap",
          "[p2p][summary]") {
  const Pair same = Sends();
  SECTION("the receiver's trace begins after the blocks left out") {
    ProcessTrace r1 = same.r1.Build();
    r1.p2p.erase(std::remove_if(r1.p2p.begin(), r1.p2p.end(),
                                [](const auto& e) { return e.seq < 3 * kLeftOutBlock; }),
                 r1.p2p.end());
    BuildStreams(&r1);
    CHECK(Gaps({LeaveOut(same.r0.Build(), true, 1, 3), r1}).empty());
  }
  SECTION("a size mismatch before the blocks left out") {
    const Pair odd = Sends({100, 600});
    std::vector<P2pProblem> problems;
    CHECK(Gaps({LeaveOut(odd.r0.Build(), true, 1, 3), odd.r1.Build()}, &problems).empty());
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == P2pProblem::kSizeMismatch);
    CHECK(problems[0].seq == 100);
  }
}

// The diagnosis says it: a summary_gap note naming the sends, the two
// ranks and which one's summary left them out; the job is not called
// healthy over it.
TEST_CASE("sends a summary left out that differ are a summary_gap note on the sends",
          "[p2p][summary]") {
  Pair odd = Sends({600});
  odd.r0.Destroy(kComm).Exit(0);
  odd.r1.Destroy(kComm).Exit(0);
  ProcessTrace r0 = LeaveOut(odd.r0.Build(), true, 1, 3);
  r0.summary = "node-a.ncws";
  r0.summary_host = "node-a";
  ncclwatch::decoder::JobAnalysis job;
  job.AddProcess(r0);
  job.AddProcess(odd.r1.Build());
  job.Finish();
  const ncclwatch::decoder::Diagnosis d = ncclwatch::decoder::Diagnose(job);
  CHECK(d.problem);
  const ncclwatch::decoder::Finding* gap = nullptr;
  for (const auto& f : d.findings)
    if (f.kind == ncclwatch::decoder::FindingKind::kSummaryGap) gap = &f;
  REQUIRE(gap != nullptr);
  CHECK(gap->ranks == std::vector<int>{0});
  const auto text = ncclwatch::decoder::RenderFinding(*gap, ncclwatch::decoder::NoCallSites());
  INFO(text.detail);
  CHECK(text.detail.find("sends #512-#767 from rank 0 to rank 1 of ") != std::string::npos);
  CHECK(text.detail.find("rank 0's sends and rank 1's receives differ somewhere in that range") !=
        std::string::npos);
  CHECK(text.fix.find("node-a (node-a.ncws)") != std::string::npos);
}

// The gaps node summaries leave in what the collective alignment compares
// (analysis/summary_gaps.h), on synthetic processes: blocks left out by
// some ranks, compared by digest with the others' (left out too, or kept
// whole), and where they cannot be, why.

#include "analysis/summary_gaps.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "findings/collective_signature.h"
#include "report/finding_text.h"
#include "summary/call_digest.h"
#include "synthetic_process.h"

namespace {

using ncclwatch::decoder::BuildStreams;
using ncclwatch::decoder::CallDigest;
using ncclwatch::decoder::CollectiveSignature;
using ncclwatch::decoder::kLeftOutBlock;
using ncclwatch::decoder::LeftOutCalls;
using ncclwatch::decoder::ProcessTrace;
using ncclwatch::decoder::SummaryGap;
using ncclwatch::decoder::SummaryGaps;
using ncclwatch::testing::SyntheticProcess;

constexpr uint64_t kComm = 0xfeed;
constexpr int kRanks = 20;

// Rank `rank` of kComm with collectives #first-#last, its ring wrapped
// when `wrapped` (it lost what came before #first).
ProcessTrace Rank(int rank, uint64_t first, uint64_t last, bool wrapped = false,
                  int nranks = kRanks) {
  SyntheticProcess p(rank);
  p.Init(kComm, rank, nranks);
  if (wrapped) p.Wrapped();
  p.Collectives(kComm, first, last).Destroy(kComm).Exit(0);
  ProcessTrace t = p.Build();
  t.summary = "node-" + std::to_string(rank) + ".ncws";
  return t;
}

// `t` as its summary leaves blocks [first, end) out: their calls gone, a
// digest each (`digest` instead of block `odd`'s own, where given).
ProcessTrace LeaveOut(ProcessTrace t, uint64_t first, uint64_t end, uint64_t odd = UINT64_MAX,
                      uint64_t digest = 0) {
  LeftOutCalls l;
  l.comm = kComm;
  l.rank = t.streams.front().rank;
  l.first_block = first;
  l.digests.assign(end - first, 0);
  std::vector<ncclwatch::decoder::CollectiveEvent> kept;
  for (const auto& e : t.collectives) {
    const uint64_t b = e.seq / kLeftOutBlock;
    if (b >= first && b < end) {
      l.digests[b - first] += CallDigest(e.seq, CollectiveSignature::Of(e));
      ++l.calls;
    } else {
      kept.push_back(e);
    }
  }
  if (odd != UINT64_MAX) l.digests[odd - first] = digest;
  t.collectives = kept;
  t.left_out.push_back(l);
  BuildStreams(&t);
  return t;
}

}  // namespace

// Rank 0 left out blocks 1-21; ranks 1-18 each lost the start of their
// rings inside one of them (rank r holds #256r+100 on, to the end of
// block r); rank 19 left out block 20 too, with another digest. Past the
// 16 gaps listed only where a ring begins (notes alone), block 20 is
// still compared, and listed: the ranks differ there.
TEST_CASE("gaps past those listed are still found, and said to be of another kind", "[summary]") {
  constexpr uint64_t kEnd = 22 * kLeftOutBlock + 10;
  SummaryGaps gaps;
  gaps.AddProcess(0, LeaveOut(Rank(0, 0, kEnd), 1, 22));
  for (int r = 1; r <= 18; ++r) {
    const uint64_t first = r * kLeftOutBlock + 100;
    gaps.AddProcess(r, Rank(r, first, (r + 1) * kLeftOutBlock - 1, true));
  }
  gaps.AddProcess(19, LeaveOut(Rank(19, 0, kEnd), 20, 21, 20, 12345));
  const SummaryGaps::Found found = gaps.Find();
  REQUIRE(found.gaps.size() == SummaryGaps::kMaxGapsPerComm + 1);
  for (size_t i = 0; i < SummaryGaps::kMaxGapsPerComm; ++i) {
    const SummaryGap& g = found.gaps[i];
    CHECK(g.kind == SummaryGap::kNotCompared);
    CHECK(g.ring_start);
    CHECK(g.first_seq == (i + 1) * kLeftOutBlock);
    REQUIRE(g.kept.size() == 1);
    CHECK(g.kept[0].second == static_cast<int32_t>(i + 1));
  }
  const SummaryGap& differ = found.gaps.back();
  CHECK(differ.kind == SummaryGap::kDiffer);
  CHECK(differ.first_seq == 20 * kLeftOutBlock);
  CHECK(found.more == 2);  // blocks 17 and 18 (ring starts)

  SECTION("without the difference, all are ring starts") {
    SummaryGaps alike;
    alike.AddProcess(0, LeaveOut(Rank(0, 0, kEnd), 1, 22));
    for (int r = 1; r <= 18; ++r) {
      const uint64_t first = r * kLeftOutBlock + 100;
      alike.AddProcess(r, Rank(r, first, (r + 1) * kLeftOutBlock - 1, true));
    }
    alike.AddProcess(19, LeaveOut(Rank(19, 0, kEnd), 20, 21));
    const SummaryGaps::Found f = alike.Find();
    CHECK(f.gaps.size() == SummaryGaps::kMaxGapsPerComm);
    CHECK(f.more == 2);
  }
}

// A rank whose trace holds its start but lacks calls inside a block
// another left out (a hole: a hold kept an older call while the ring
// wrapped) is not a ring start: a gap the job is not called healthy over.
TEST_CASE("a block a rank holds in part from its start is not a ring start", "[summary]") {
  SummaryGaps gaps;
  gaps.AddProcess(0, LeaveOut(Rank(0, 0, 4 * kLeftOutBlock), 1, 3));
  // Rank 1 holds #0-#5, then #300 on.
  ProcessTrace r1 = Rank(1, 0, 4 * kLeftOutBlock);
  r1.collectives.erase(std::remove_if(r1.collectives.begin(), r1.collectives.end(),
                                      [](const auto& e) { return e.seq >= 6 && e.seq < 300; }),
                       r1.collectives.end());
  BuildStreams(&r1);
  gaps.AddProcess(1, r1);
  const SummaryGaps::Found found = gaps.Find();
  REQUIRE(found.gaps.size() == 1);
  CHECK(found.gaps[0].kind == SummaryGap::kNotCompared);
  CHECK_FALSE(found.gaps[0].ring_start);
  CHECK(found.gaps[0].first_seq == kLeftOutBlock);
  CHECK(found.more == 0);
}

// Rank 1's ring begins at #300, inside block 1 (#256-#511), which rank 0's
// summary left out and rank 2's kept whole; rank 1's #400 differs from
// rank 2's. The alignment sees the two differ but blames no one (rank 0's
// call there is a digest); the gap is where a ring begins, yet the job is
// a problem: never healthy over ranks seen to differ.
TEST_CASE("a gap where a ring begins and ranks were seen to differ is a root cause", "[summary]") {
  constexpr uint64_t kEnd = 4 * kLeftOutBlock;
  auto job_of = [&](bool odd) {
    SyntheticProcess r1(1);
    r1.Init(kComm, 1, 3).Wrapped();
    ncclwatch::testing::Op other;
    other.count = 7;
    r1.Collectives(kComm, 300, 399).Collective(kComm, 400, odd ? other : ncclwatch::testing::Op());
    r1.Collectives(kComm, 401, kEnd).Destroy(kComm).Exit(0);
    ProcessTrace t1 = r1.Build();
    t1.summary = "node-1.ncws";
    ncclwatch::decoder::JobAnalysis job;
    job.AddProcess(LeaveOut(Rank(0, 0, kEnd, false, 3), 1, 3));
    job.AddProcess(t1);
    job.AddProcess(Rank(2, 0, kEnd, false, 3));
    job.Finish();
    return ncclwatch::decoder::Diagnose(job);
  };
  const ncclwatch::decoder::Diagnosis alike = job_of(false);
  std::string kinds;
  for (const auto& f : alike.findings)
    kinds += std::string(ncclwatch::decoder::KindName(f.kind)) + " ";
  INFO(kinds);
  CHECK_FALSE(alike.problem);
  const ncclwatch::decoder::Diagnosis odd = job_of(true);
  CHECK(odd.problem);
  const ncclwatch::decoder::Finding* gap = nullptr;
  for (const auto& f : odd.findings)
    if (f.kind == ncclwatch::decoder::FindingKind::kSummaryGap) gap = &f;
  REQUIRE(gap != nullptr);
  CHECK(gap->role == ncclwatch::decoder::FindingRole::kRootCause);
  const auto& x = std::get<ncclwatch::decoder::SummaryGapFacts>(gap->facts);
  CHECK_FALSE(x.ring_starts_only);
  REQUIRE_FALSE(x.gaps.empty());
  CHECK_FALSE(x.gaps[0].ring_start);
  CHECK(x.gaps[0].first_seq == kLeftOutBlock);
}

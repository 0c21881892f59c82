// Arrival skew (analysis/arrival_skew.h) and the straggler warning it makes:
// a rank whose host enqueues a communicator's collectives last is named with
// its figures and since when; random lateness names no one.

#include "analysis/arrival_skew.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "findings/finding.h"
#include "report/finding_text.h"
#include "synthetic_process.h"

namespace {

using ncclwatch::decoder::ArrivalSkew;
using ncclwatch::decoder::ArrivalStraggler;
using ncclwatch::decoder::Diagnose;
using ncclwatch::decoder::Diagnosis;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::FindingKind;
using ncclwatch::decoder::FindingRole;
using ncclwatch::decoder::JobAnalysis;
using ncclwatch::decoder::StragglerFacts;
using namespace ncclwatch::testing;

constexpr uint64_t kComm = 0x3fa9c1d2e5b60718;
constexpr uint64_t kMs = 1'000'000;  // ticks are nanoseconds

// `n` ranks, `steps` AllReduces `every` ticks apart (20 ms); rank r
// enqueues step s `late(r, s)` ticks after the step begins. Every rank
// destroys and exits 0.
template <typename Late>
std::vector<SyntheticProcess> Job(int n, uint64_t steps, Late late, uint64_t every = 20 * kMs) {
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < n; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, n).Tracked(kComm);
  }
  for (int r = 0; r < n; ++r) {
    for (uint64_t s = 0; s < steps; ++s)
      ps[r].At(1000 * kMs + s * every + late(r, s)).Collective(kComm, s);
    ps[r].Progress(kComm, steps).Destroy(kComm).Exit(0);
  }
  return ps;
}

std::vector<ArrivalStraggler> Stragglers(const std::vector<SyntheticProcess>& ps) {
  ArrivalSkew skew;
  for (size_t i = 0; i < ps.size(); ++i) skew.AddProcess(static_cast<int>(i), ps[i].Build());
  return skew.Stragglers();
}

// The words of a straggler warning on kComm with these facts.
std::string Words(const StragglerFacts& facts) {
  Finding f;
  f.kind = FindingKind::kStraggler;
  f.comm = kComm;
  f.facts = facts;
  return ncclwatch::decoder::RenderFinding(f, ncclwatch::decoder::NoCallSites()).detail;
}

Diagnosis DiagnoseJob(const std::vector<SyntheticProcess>& ps) {
  JobAnalysis job;
  for (const SyntheticProcess& p : ps) job.AddProcess(p.Build());
  job.Finish();
  return Diagnose(job);
}

}  // namespace

TEST_CASE("a rank whose host enqueues last every step is a straggler, with its figures",
          "[straggler]") {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);  // 0-300 us
  const auto ps = Job(4, 100, [&](int r, uint64_t) { return noise(rng) + (r == 2 ? 5 * kMs : 0); });
  const auto found = Stragglers(ps);
  REQUIRE(found.size() == 1);
  const ArrivalStraggler& x = found[0];
  CHECK(x.comm == kComm);
  CHECK(x.rank == 2);
  CHECK(x.members == 4);
  CHECK(x.compared == 100);
  CHECK(x.times_last == 100);
  CHECK(x.gapped == 100);
  CHECK(x.median_late_ns > int64_t{4'600'000});
  CHECK(x.median_late_ns < int64_t{5'400'000});
  CHECK(x.median_interval_ns > int64_t{19 * kMs});
  CHECK(x.median_interval_ns < int64_t{21 * kMs});
  CHECK_FALSE(x.began_later);
  CHECK(x.began_seq == 0);
  CHECK_FALSE(x.window_start);
  CHECK_FALSE(x.worsening);

  // The diagnosis: a warning, and the job stays healthy.
  const Diagnosis d = DiagnoseJob(ps);
  CHECK_FALSE(d.problem);
  REQUIRE(d.findings.size() == 1);
  const Finding& f = d.findings[0];
  CHECK(f.kind == FindingKind::kStraggler);
  CHECK(f.role == FindingRole::kWarning);
  CHECK(f.comm == kComm);
  CHECK(f.ranks == std::vector<int>{2});
  const auto t = ncclwatch::decoder::RenderFinding(f, ncclwatch::decoder::NoCallSites());
  INFO(t.detail);
  CHECK(t.detail.find("rank 2 enqueued last in 100 of 100 AllReduces of communicator 3fa9c1 "
                      "(4 ranks compared), ") == 0);
  CHECK(t.detail.find("its collectives come every 20 ms") != std::string::npos);
  CHECK(t.detail.find("it straggled from the communicator's first collective") !=
        std::string::npos);
  CHECK(t.fix.find("py-spy dump") != std::string::npos);
}

TEST_CASE("a host last by a little at every collective of a long interval is no straggler",
          "[straggler]") {
  // Rank 2 enqueues 1.5 ms after the others every time (the gap counts as
  // last: over 1 ms). At a collective every 20 ms that is 7.5 % of the
  // interval, a straggler; at one every 100 ms, 1.5 %: it holds no one back
  // enough to name it.
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);  // 0-300 us
  auto late = [&](int r, uint64_t) { return noise(rng) + (r == 2 ? 1'500'000 : 0); };
  const auto every_20 = Stragglers(Job(4, 100, late));
  REQUIRE(every_20.size() == 1);
  CHECK(every_20[0].rank == 2);
  CHECK(every_20[0].times_last == 100);
  const auto every_100 = Job(4, 100, late, 100 * kMs);
  CHECK(Stragglers(every_100).empty());
  const Diagnosis d = DiagnoseJob(every_100);
  CHECK_FALSE(d.problem);
  CHECK(d.findings.empty());
}

TEST_CASE("a straggling that began late in a full window is held to its lateness since",
          "[straggler]") {
  // 4 ranks, 4,096 collectives 100 ms apart, every rank 0-6 ms late at
  // random (a busy machine: rank 1 is last by a gap by chance in some 400
  // of the first 3,846); from #3846 rank 1 is 20 ms late every time. Over
  // the window its median gap is the chance ones', about 2.6 ms, under a
  // twentieth of 100 ms; since it began, about 18.5 ms: named.
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<uint64_t> noise(0, 6 * kMs);
  const auto found = Stragglers(Job(
      4, 4096, [&](int r, uint64_t s) { return noise(rng) + (r == 1 && s >= 3846 ? 20 * kMs : 0); },
      100 * kMs));
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 1);
  CHECK(found[0].began_later);
  CHECK(found[0].began_seq >= 3836);
  CHECK(found[0].began_seq <= 3850);
  CHECK(found[0].median_late_ns < int64_t{5 * kMs});
}

TEST_CASE("random lateness on every rank names no straggler, in 2 to 8 ranks", "[straggler]") {
  // Each rank late by 0-4 ms at random each step (a +-20 % jitter on a 10 ms
  // host step), 20 jobs of each size.
  for (int n : {2, 4, 8}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      std::mt19937_64 rng(seed * 1000 + static_cast<uint64_t>(n));
      std::uniform_int_distribution<uint64_t> jitter(0, 4 * kMs);
      const auto ps = Job(n, 200, [&](int, uint64_t) { return jitter(rng); });
      INFO("ranks " << n << ", seed " << seed);
      CHECK(Stragglers(ps).empty());
    }
  }
}

TEST_CASE("a straggler that starts late is dated, and one that worsens says so", "[straggler]") {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> noise(0, 2 * kMs);
  SECTION("from collective #500 of 700 on") {
    const auto ps = Job(
        8, 700, [&](int r, uint64_t s) { return noise(rng) + (r == 5 && s >= 500 ? 8 * kMs : 0); });
    const auto found = Stragglers(ps);
    REQUIRE(found.size() == 1);
    CHECK(found[0].rank == 5);
    CHECK(found[0].began_later);
    CHECK(found[0].began_seq >= 498);
    CHECK(found[0].began_seq <= 502);
    CHECK(found[0].began_ns > 0);
    CHECK_FALSE(found[0].worsening);
    const Diagnosis d = DiagnoseJob(ps);
    REQUIRE(d.findings.size() == 1);
    const auto t =
        ncclwatch::decoder::RenderFinding(d.findings[0], ncclwatch::decoder::NoCallSites());
    INFO(t.detail);
    CHECK(t.detail.find("it began at collective #") != std::string::npos);
  }
  SECTION("later by more and more") {
    const auto ps = Job(4, 200, [&](int r, uint64_t s) {
      return noise(rng) / 4 + (r == 1 ? 2 * kMs + s * 50'000 : 0);  // 2 ms, then 12 ms
    });
    const auto found = Stragglers(ps);
    REQUIRE(found.size() == 1);
    CHECK(found[0].rank == 1);
    CHECK(found[0].worsening);
    CHECK(found[0].recent_late_ns > found[0].early_late_ns);
  }
}

TEST_CASE("a straggler among collectives its ranks reach together, across hosts, said so",
          "[straggler]") {
  // Every 4th collective comes right after the one before on every rank (a
  // broadcast after the AllReduce): nobody is last there.
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint64_t> noise(0, 200'000);
  auto ps = Job(
      2, 120, [&](int r, uint64_t s) { return noise(rng) + (r == 0 && s % 4 != 3 ? 3 * kMs : 0); });
  ps[1].OnHost("node1");
  const auto found = Stragglers(ps);
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 0);
  CHECK(found[0].times_last == 90);
  CHECK(found[0].gapped == 90);
  const Diagnosis d = DiagnoseJob(ps);
  REQUIRE(d.findings.size() == 1);
  const auto& facts = std::get<StragglerFacts>(d.findings[0].facts);
  CHECK(facts.hosts == 2);
  const auto t =
      ncclwatch::decoder::RenderFinding(d.findings[0], ncclwatch::decoder::NoCallSites());
  CHECK(t.detail.find("2 hosts, whose clocks were compared as they were") != std::string::npos);
}

TEST_CASE("a rank held back for a few steps at the end, or now and then, is no straggler",
          "[straggler]") {
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  // 8 ranks, 75 collectives. A busy machine holds rank 3 back 5 ms in the
  // last 8 (a burst the change point dates), and in 3 earlier ones: last,
  // by a gap, in 11 of the 11 collectives anyone came last in, far above
  // 1/8, yet no straggler.
  const auto burst = Job(8, 75, [&](int r, uint64_t s) {
    return noise(rng) + (r == 3 && (s >= 67 || s == 10 || s == 30 || s == 50) ? 5 * kMs : 0);
  });
  CHECK(Stragglers(burst).empty());
  // Rank 3 last by a gap in every 7th collective, over 75 where no one else
  // ever is: 11 of 11 gapped, but a seventh of the collectives.
  const auto now_and_then = Job(
      8, 75, [&](int r, uint64_t s) { return noise(rng) + (r == 3 && s % 7 == 0 ? 5 * kMs : 0); });
  CHECK(Stragglers(now_and_then).empty());
  // The same rank late in the last 30: a straggler, dated.
  const auto late =
      Job(8, 75, [&](int r, uint64_t s) { return noise(rng) + (r == 3 && s >= 45 ? 5 * kMs : 0); });
  const auto found = Stragglers(late);
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 3);
  CHECK(found[0].began_later);
  CHECK(found[0].began_seq >= 40);
  CHECK(found[0].began_seq <= 46);
}

TEST_CASE("too few collectives name no one", "[straggler]") {
  const auto ps = Job(2, 12, [&](int r, uint64_t) { return r == 1 ? 5 * kMs : 0; });
  CHECK(Stragglers(ps).empty());
}

TEST_CASE(
    "past the members x window the analysis keeps, each member keeps fewer, the same "
    "whatever the order, and the straggler's figures say how many",
    "[straggler]") {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  // 8 ranks of 400 collectives; rank 3 is last in every one.
  const auto ps = Job(8, 400, [&](int r, uint64_t) { return noise(rng) + (r == 3 ? 5 * kMs : 0); });
  auto stragglers = [&](const std::vector<int>& order, size_t max_kept) {
    ArrivalSkew skew(max_kept);
    for (int i : order) skew.AddProcess(i, ps[static_cast<size_t>(i)].Build());
    return std::make_pair(skew.window(), skew.Stragglers());
  };
  // 8 x 4,096 within the budget: every collective compared.
  auto [wide, all] = stragglers({0, 1, 2, 3, 4, 5, 6, 7}, size_t{8} * ArrivalSkew::kWindow);
  CHECK(wide == ArrivalSkew::kWindow);
  REQUIRE(all.size() == 1);
  CHECK(all[0].compared == 400);
  CHECK(all[0].window == ArrivalSkew::kWindow);
  // A budget of 8 x 100: 4,096 halved to 64 (8 x 128 is past it).
  for (const std::vector<int>& order :
       {std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, std::vector<int>{7, 3, 5, 0, 6, 2, 1, 4}}) {
    auto [narrow, few] = stragglers(order, 800);
    CHECK(narrow == 64);
    REQUIRE(few.size() == 1);
    CHECK(few[0].rank == 3);
    CHECK(few[0].window == 64);
    CHECK(few[0].compared == 64);  // the last 64 of every member: #336-#399
    CHECK(few[0].first_seq == 336);
    CHECK(few[0].last_seq == 399);
    CHECK(few[0].window_start);
  }
  // And the text says so.
  StragglerFacts facts;
  facts.rank = 3;
  facts.members = 8;
  facts.window = 64;
  facts.compared = 64;
  const std::string text = Words(facts);
  CHECK(text.find("compared over each rank's last 64 collectives, not 4096 (8 ranks") !=
        std::string::npos);
}

// A node's summary made with --window 128 keeps of each rank's 1,000
// collectives #0-#255 and #768-#999 (its window rounded out to the grid of
// 256) and leaves out the blocks between: the straggler is judged on the
// 232 after them, and its figures say the summaries kept no more.
TEST_CASE("a straggler judged on what a summary with a small window kept says so",
          "[straggler][summary]") {
  std::mt19937_64 rng(13);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  const auto ps =
      Job(4, 1000, [&](int r, uint64_t) { return noise(rng) + (r == 1 ? 5 * kMs : 0); });
  auto summarized = [&](size_t i) {
    ncclwatch::decoder::ProcessTrace t = ps[i].Build();
    std::vector<ncclwatch::decoder::CollectiveEvent> kept;
    for (const auto& e : t.collectives)
      if (e.seq < 256 || e.seq >= 768) kept.push_back(e);
    t.collectives.assign(kept.begin(), kept.end());
    for (auto& s : t.streams) {
      s.collectives.clear();
      for (uint32_t k = 0; k < t.collectives.size(); ++k)
        if (t.collectives[k].comm == s.comm) s.collectives.push_back(k);
    }
    ncclwatch::decoder::LeftOutCalls l;
    l.comm = kComm;
    l.rank = static_cast<int32_t>(i);
    l.first_block = 1;
    l.digests = {0x1111, 0x2222};
    l.calls = 512;
    t.left_out.push_back(l);
    return t;
  };
  ArrivalSkew skew;
  for (size_t i = 0; i < ps.size(); ++i) skew.AddProcess(static_cast<int>(i), summarized(i));
  const auto found = skew.Stragglers();
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 1);
  CHECK(found[0].compared == 232);
  CHECK(found[0].first_seq == 768);
  CHECK(found[0].window == ArrivalSkew::kWindow);
  CHECK(found[0].summary_kept == 232);
  // From the traces themselves, nothing is said.
  const auto whole = Stragglers(ps);
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].compared == 1000);
  CHECK(whole[0].summary_kept == 0);

  StragglerFacts facts;
  static_cast<ncclwatch::decoder::StragglerEvidence&>(facts) = found[0];
  const std::string text = Words(facts);
  INFO(text);
  CHECK(text.find("; compared over the last 232 collectives of a rank that its node's summary "
                  "kept, not 4096 (the summaries' window was narrower: the traces hold more; "
                  "read them, or summarize again with a larger --window, to compare as many)") !=
        std::string::npos);
}

TEST_CASE("a host's lateness counts only before where its communicator stopped", "[straggler]") {
  // Rank 3 calls #150 with another count: the GPUs wait there for ever, and
  // the hosts (no synchronize) go on enqueuing. Rank 0's host comes last,
  // 5 ms behind, from `slow_from` on: past #150 it held no one back.
  constexpr uint64_t kStop = 150;
  auto job = [](uint64_t slow_from, uint64_t completed) {
    constexpr int kRanks = 4;
    constexpr uint64_t kSteps = 300;
    std::vector<SyntheticProcess> ps;
    for (int r = 0; r < kRanks; ++r) {
      ps.emplace_back(r);
      ps.back().Init(kComm, r, kRanks).Tracked(kComm);
    }
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<uint64_t> noise(0, 300'000);
    for (int r = 0; r < kRanks; ++r) {
      for (uint64_t s = 0; s < kSteps; ++s) {
        const uint64_t late = noise(rng) + (r == 0 && s >= slow_from ? 5 * kMs : 0);
        ps[r]
            .At(1000 * kMs + s * 20 * kMs + late)
            .Collective(kComm, s, AllReduce(r == 3 && s == kStop ? 1000 : 1024));
      }
      ps[r].Progress(kComm, completed).Signal(SIGTERM);
    }
    return DiagnoseJob(ps);
  };
  auto straggler = [](const Diagnosis& d) {
    for (const Finding& f : d.findings)
      if (f.kind == FindingKind::kStraggler && f.ranks == std::vector<int>{0}) return true;
    return false;
  };
  SECTION("late from #160, past the mismatch at #150: the mismatch alone") {
    const Diagnosis d = job(160, kStop);
    REQUIRE_FALSE(d.findings.empty());
    CHECK(d.findings[0].kind == FindingKind::kCollectiveMismatch);
    CHECK(d.findings[0].seq == kStop);
    CHECK_FALSE(straggler(d));
  }
  SECTION("late from the first collective: a straggler, on the collectives before the stop") {
    const Diagnosis d = job(0, kStop);
    REQUIRE_FALSE(d.findings.empty());
    CHECK(d.findings[0].kind == FindingKind::kCollectiveMismatch);
    CHECK(straggler(d));
    for (const Finding& f : d.findings) {
      if (f.kind != FindingKind::kStraggler) continue;
      const auto& facts = std::get<StragglerFacts>(f.facts);
      CHECK(facts.compared == kStop);  // #0-#149
    }
  }
  SECTION("the GPUs completed past the mismatch (it did not stop them): every collective counts") {
    CHECK(straggler(job(160, 300)));
  }
}

// GPU skew (analysis/gpu_skew.h) and the straggler warning with cause gpu it
// makes: a rank whose GPU reaches a communicator's collectives last while
// its host enqueued them in time is named with its figures and since when;
// a host straggler stays cause host; random lateness names no one.

#include "analysis/gpu_skew.h"

#include <algorithm>
#include <catch2/catch.hpp>
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

using ncclwatch::decoder::Diagnose;
using ncclwatch::decoder::Diagnosis;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::FindingKind;
using ncclwatch::decoder::GpuSkew;
using ncclwatch::decoder::GpuStraggler;
using ncclwatch::decoder::JobAnalysis;
using ncclwatch::decoder::StragglerFacts;
using namespace ncclwatch::testing;

constexpr uint64_t kComm = 0x3fa9c1d2e5b60718;
constexpr uint64_t kMs = 1'000'000;  // ticks are nanoseconds

// `n` ranks, `steps` AllReduces 20 ms apart. Rank r's host enqueues step s
// `host(r, s)` after the step begins; its GPU is busy with earlier work until
// `gpu(r, s)` after it, and reaches the AllReduce at the later of the two;
// every member finishes it 1 ms after the last one reached it (plus up to
// 100 us each).
template <typename Host, typename Gpu>
std::vector<SyntheticProcess> Job(int n, uint64_t steps, Host host, Gpu gpu) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> finish(0, 100'000);
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < n; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, n).Tracked(kComm);
  }
  for (uint64_t s = 0; s < steps; ++s) {
    const uint64_t base = 1000 * kMs + s * 20 * kMs;
    std::vector<uint64_t> begin(n);
    uint64_t last = 0;
    for (int r = 0; r < n; ++r) {
      begin[r] = base + std::max<uint64_t>(host(r, s), gpu(r, s));
      last = std::max(last, begin[r]);
    }
    for (int r = 0; r < n; ++r) {
      ps[r].At(base + host(r, s)).Collective(kComm, s);
      ps[r].GpuTime(kComm, s, begin[r], last + kMs + finish(rng));
    }
  }
  for (int r = 0; r < n; ++r) ps[r].Progress(kComm, steps).Destroy(kComm).Exit(0);
  return ps;
}

std::vector<GpuStraggler> Stragglers(const std::vector<SyntheticProcess>& ps) {
  GpuSkew skew;
  for (size_t i = 0; i < ps.size(); ++i) skew.AddProcess(static_cast<int>(i), ps[i].Build());
  return skew.Stragglers();
}

Diagnosis DiagnoseJob(const std::vector<SyntheticProcess>& ps) {
  JobAnalysis job;
  for (const SyntheticProcess& p : ps) job.AddProcess(p.Build());
  job.Finish();
  return Diagnose(job);
}

std::vector<const Finding*> StragglerFindings(const Diagnosis& d) {
  std::vector<const Finding*> out;
  for (const Finding& f : d.findings)
    if (f.kind == FindingKind::kStraggler) out.push_back(&f);
  return out;
}

}  // namespace

TEST_CASE("a rank whose GPU reaches every collective last, its host on time, is a slow GPU",
          "[straggler]") {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);  // 0-300 us
  const auto ps = Job(
      4, 100, [&](int, uint64_t) { return noise(rng); },
      [&](int r, uint64_t) { return r == 2 ? 6 * kMs : 0; });
  const auto found = Stragglers(ps);
  REQUIRE(found.size() == 1);
  const GpuStraggler& x = found[0];
  CHECK(x.comm == kComm);
  CHECK(x.rank == 2);
  CHECK(x.members == 4);
  CHECK(x.compared == 100);
  CHECK(x.times_last == 100);
  CHECK(x.host_on_time == 100);
  CHECK(x.host_late_ns == 0);
  CHECK(x.median_late_ns >= int64_t{5'000'000});
  CHECK(x.median_late_ns <= int64_t{6'400'000});
  CHECK_FALSE(x.began_later);

  const Diagnosis d = DiagnoseJob(ps);
  const auto findings = StragglerFindings(d);
  REQUIRE(findings.size() == 1);
  const Finding& f = *findings[0];
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.comm == kComm);
  const auto& facts = std::get<StragglerFacts>(f.facts);
  CHECK(facts.cause == StragglerFacts::Cause::kGpu);
  const auto text = ncclwatch::decoder::RenderFinding(f, ncclwatch::decoder::NoCallSites());
  CHECK(text.detail.rfind("rank 2 reached the GPU last in 100 of 100 AllReduces", 0) == 0);
  CHECK(text.detail.find("its host enqueued on time (100 of 100)") != std::string::npos);
  CHECK(text.fix.find("nvidia-smi -q -d PERFORMANCE,CLOCK") != std::string::npos);
}

TEST_CASE("a host straggler's GPU comes last too, and it stays cause host", "[straggler]") {
  std::mt19937_64 rng(8);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  const auto ps = Job(
      4, 100, [&](int r, uint64_t) { return noise(rng) + (r == 1 ? 6 * kMs : 0); },
      [&](int, uint64_t) { return 0; });
  CHECK(Stragglers(ps).empty());
  const Diagnosis d = DiagnoseJob(ps);
  const auto findings = StragglerFindings(d);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0]->ranks == std::vector<int>{1});
  CHECK(std::get<StragglerFacts>(findings[0]->facts).cause == StragglerFacts::Cause::kHost);
}

TEST_CASE("a slow GPU whose host waits on it is the GPU, not the host", "[straggler]") {
  // Its host 3 ms late (waiting on its GPU), its GPU 9 ms.
  const auto ps = Job(
      4, 100, [&](int r, uint64_t) { return r == 3 ? 3 * kMs : 0; },
      [&](int r, uint64_t) { return r == 3 ? 9 * kMs : 0; });
  const Diagnosis d = DiagnoseJob(ps);
  const auto findings = StragglerFindings(d);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0]->ranks == std::vector<int>{3});
  const auto& facts = std::get<StragglerFacts>(findings[0]->facts);
  CHECK(facts.cause == StragglerFacts::Cause::kGpu);
  CHECK(facts.host_late_ns == int64_t{3'000'000});
}

TEST_CASE("random GPU lateness on every rank names no slow GPU, in 2 to 8 ranks", "[straggler]") {
  for (int n = 2; n <= 8; ++n) {
    std::mt19937_64 rng(100 + n);
    std::uniform_int_distribution<uint64_t> late(0, 8 * kMs);
    const auto ps = Job(
        n, 200, [&](int, uint64_t) { return 0; }, [&](int, uint64_t) { return late(rng); });
    INFO(n << " ranks");
    CHECK(Stragglers(ps).empty());
    CHECK(StragglerFindings(DiagnoseJob(ps)).empty());
  }
}

TEST_CASE("a GPU that turns slow mid-job is dated", "[straggler]") {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  const auto ps = Job(
      4, 200, [&](int, uint64_t) { return noise(rng); },
      [&](int r, uint64_t s) { return r == 0 && s >= 120 ? 5 * kMs : 0; });
  const auto found = Stragglers(ps);
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 0);
  CHECK(found[0].began_later);
  CHECK(found[0].began_seq == 120);
}

TEST_CASE("a trace without GPU times names no slow GPU", "[straggler]") {
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < 4; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, 4).Tracked(kComm);
    ps.back().Collectives(kComm, 0, 99).Progress(kComm, 100).Destroy(kComm).Exit(0);
  }
  CHECK(Stragglers(ps).empty());
}

// A node's summary keeps each communicator's last 64 GPU times and counts
// those it left out: a slow GPU judged on them says how many it was judged
// on; from the traces themselves, nothing is said.
TEST_CASE("a slow GPU judged on the GPU times a summary kept says so", "[straggler][summary]") {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  const auto ps = Job(
      4, 300, [&](int, uint64_t) { return noise(rng); },
      [&](int r, uint64_t) { return r == 2 ? 6 * kMs : 0; });
  const auto whole = Stragglers(ps);
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].compared == 300);
  CHECK(whole[0].summary_kept == 0);

  std::vector<ncclwatch::decoder::ProcessTrace> summarized;
  for (const SyntheticProcess& p : ps) {
    ncclwatch::decoder::ProcessTrace t = p.Build();
    const size_t before = t.gpu_times.size();
    t.gpu_times.erase(std::remove_if(t.gpu_times.begin(), t.gpu_times.end(),
                                     [](const auto& g) { return g.collectives <= 236; }),
                      t.gpu_times.end());
    t.left_out_gpu_times.push_back({kComm, before - t.gpu_times.size()});
    CHECK(t.LeftOutGpuTimesOf(kComm) == 236);
    summarized.push_back(std::move(t));
  }
  GpuSkew skew;
  for (size_t i = 0; i < summarized.size(); ++i)
    skew.AddProcess(static_cast<int>(i), summarized[i]);
  const auto found = skew.Stragglers();
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 2);
  CHECK(found[0].compared == 64);
  CHECK(found[0].summary_kept == 64);

  JobAnalysis job;
  for (const auto& t : summarized) job.AddProcess(t);
  job.Finish();
  const Diagnosis d = Diagnose(job);
  const auto findings = StragglerFindings(d);
  REQUIRE(findings.size() == 1);
  const auto& facts = std::get<StragglerFacts>(findings[0]->facts);
  CHECK(facts.cause == StragglerFacts::Cause::kGpu);
  CHECK(facts.summary_kept == 64);
  const auto text =
      ncclwatch::decoder::RenderFinding(*findings[0], ncclwatch::decoder::NoCallSites());
  INFO(text.detail);
  CHECK(text.detail.find("; compared over the last 64 collectives of a rank that its node's "
                         "summary kept, not 4096 (a summary keeps a communicator's last 64 GPU "
                         "times: the traces hold more; read them to compare as many)") !=
        std::string::npos);
}

// A rank whose host enqueues late because it waited on its own GPU (its
// GPU finished another communicator's operation late, and its host issued
// the next collective right after): WaitedOnGpu says so from the whole
// trace. From a summary that kept only that other communicator's last GPU
// times, the finishes before an early collective may be missing, so it says
// nothing of those (it said "not waited", and the rank was named a host
// straggler from the summaries only), and still says so of the late ones.
TEST_CASE("waited on its GPU: said where the GPU times are whole, nothing where a summary cut",
          "[straggler][summary]") {
  constexpr uint64_t kOther = 0x51c0ffee00000002;
  constexpr uint64_t kSteps = 100;
  constexpr uint64_t kCut = 60;  // kOther's GPU times of steps 0-59 left out
  auto build = [&](bool cut) {
    std::vector<ncclwatch::decoder::ProcessTrace> out;
    for (int r = 0; r < 2; ++r) {
      SyntheticProcess p(r);
      p.Init(kComm, r, 2).Tracked(kComm).Init(kOther, r, 2).Tracked(kOther);
      for (uint64_t s = 0; s < kSteps; ++s) {
        const uint64_t base = 1000 * kMs + s * 20 * kMs;
        const uint64_t other_end = base + (r == 1 ? 8 : 1) * kMs;  // rank 1's GPU waited
        p.GpuTime(kOther, s, base, other_end);
        p.At(other_end + kMs).Collective(kComm, s);  // 1 ms after its GPU: both alike
        p.GpuTime(kComm, s, base + 9 * kMs, base + 10 * kMs);
      }
      p.Exit(0);
      ncclwatch::decoder::ProcessTrace t = p.Build();
      if (cut) {
        const size_t before = t.gpu_times.size();
        t.gpu_times.erase(std::remove_if(t.gpu_times.begin(), t.gpu_times.end(),
                                         [&](const auto& g) {
                                           return g.comm == kOther && g.collectives <= kCut;
                                         }),
                          t.gpu_times.end());
        t.left_out_gpu_times.push_back({kOther, before - t.gpu_times.size()});
      }
      out.push_back(std::move(t));
    }
    return out;
  };
  for (const bool cut : {false, true}) {
    INFO((cut ? "from a summary" : "from the traces"));
    const auto ts = build(cut);
    GpuSkew skew;
    for (size_t i = 0; i < ts.size(); ++i) skew.AddProcess(static_cast<int>(i), ts[i]);
    for (uint64_t seq : {uint64_t{10}, uint64_t{59}, uint64_t{61}, uint64_t{99}}) {
      INFO("collective #" << seq);
      const std::optional<bool> waited = skew.WaitedOnGpu(kComm, 1, seq, 7 * kMs);
      if (cut && seq <= kCut) {
        CHECK_FALSE(waited.has_value());
      } else {
        REQUIRE(waited.has_value());
        CHECK(*waited);
      }
    }
  }
}

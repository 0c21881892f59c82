// Host clocks (analysis/host_clocks.h): each host's clock offset measured by
// the job's own collectives (they finish together on every member), with
// the residual stated; and what it spares the straggler analyses: a host
// whose clock runs ahead no longer makes its ranks come "last".

#include "analysis/host_clocks.h"

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

using ncclwatch::decoder::ArrivalSkew;
using ncclwatch::decoder::Diagnose;
using ncclwatch::decoder::Diagnosis;
using ncclwatch::decoder::FindingKind;
using ncclwatch::decoder::HostClocks;
using ncclwatch::decoder::JobAnalysis;
using ncclwatch::decoder::StragglerFacts;
using namespace ncclwatch::testing;

constexpr uint64_t kComm = 0x7c1f00d2e5b60718;
constexpr int64_t kMs = 1'000'000;  // ticks are nanoseconds

// A job of `hosts.size()` ranks, rank r on host "node<hosts[r]>" whose clock
// reads `ahead[hosts[r]]` ahead of the true time, `steps` AllReduces 20 ms
// apart. Rank r's host enqueues step s `late(r, s)` after the step begins,
// its GPU begins it then, and every member's GPU finishes it 1 ms after the
// last began (plus up to 50 us each, the hop it is from the last).
template <typename Late>
std::vector<SyntheticProcess> Job(const std::vector<int>& hosts, const std::vector<int64_t>& ahead,
                                  uint64_t steps, Late late, bool gpu_times = true) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> hop(0, 50'000);
  const int n = static_cast<int>(hosts.size());
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < n; ++r) {
    ps.emplace_back(r);
    ps.back()
        .OnHost("node" + std::to_string(hosts[r]))
        .ClockAhead(ahead[hosts[r]])
        .Init(kComm, r, n)
        .Tracked(kComm);
  }
  for (uint64_t s = 0; s < steps; ++s) {
    const int64_t base = 1000 * kMs + static_cast<int64_t>(s) * 20 * kMs;
    std::vector<int64_t> begin(n);
    int64_t last = 0;
    for (int r = 0; r < n; ++r) {
      begin[r] = base + late(r, s);
      last = std::max(last, begin[r]);
    }
    for (int r = 0; r < n; ++r) {
      ps[r].At(static_cast<uint64_t>(begin[r])).Collective(kComm, s);
      if (gpu_times)
        ps[r].GpuTime(kComm, s, static_cast<uint64_t>(begin[r]),
                      static_cast<uint64_t>(last + kMs + hop(rng)));
    }
  }
  for (int r = 0; r < n; ++r) ps[r].Progress(kComm, steps).Destroy(kComm).Exit(0);
  return ps;
}

HostClocks Solve(const std::vector<SyntheticProcess>& ps) {
  HostClocks clocks;
  for (size_t i = 0; i < ps.size(); ++i) clocks.AddProcess(static_cast<int>(i), ps[i].Build());
  clocks.Solve();
  return clocks;
}

Diagnosis DiagnoseJob(const std::vector<SyntheticProcess>& ps) {
  JobAnalysis job;
  for (const SyntheticProcess& p : ps) job.AddProcess(p.Build());
  job.Finish();
  return Diagnose(job);
}

std::vector<StragglerFacts> Stragglers(const Diagnosis& d) {
  std::vector<StragglerFacts> out;
  for (const auto& f : d.findings)
    if (f.kind == FindingKind::kStraggler) out.push_back(std::get<StragglerFacts>(f.facts));
  return out;
}

}  // namespace

TEST_CASE("each host's clock offset is measured by the collectives, with its residual",
          "[straggler]") {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> noise(0, 300'000);
  // node1 reads 30 ms ahead, node2 12 ms behind; two ranks each.
  const auto ps = Job({0, 0, 1, 1, 2, 2}, {0, 30 * kMs, -12 * kMs}, 200,
                      [&](int, uint64_t) { return noise(rng); });
  const HostClocks clocks = Solve(ps);
  REQUIRE(clocks.hosts().size() == 3);
  CHECK(clocks.hosts()[0].name == "node0");
  CHECK(clocks.hosts()[0].offset_ns == 0);
  CHECK(clocks.hosts()[1].name == "node1");
  CHECK(clocks.hosts()[2].name == "node2");
  for (const auto& h : clocks.hosts()) {
    INFO(h.name);
    CHECK(h.aligned);
    CHECK(h.processes == 2);
    CHECK(h.residual_ns < 100'000);  // the finishing hop: up to 50 us each way
  }
  CHECK(std::llabs(clocks.hosts()[1].offset_ns - 30 * kMs) < 50'000);
  CHECK(std::llabs(clocks.hosts()[2].offset_ns + 12 * kMs) < 50'000);
  CHECK(clocks.OffsetOf(0) == 0);
  CHECK(clocks.OffsetOf(2) == clocks.hosts()[1].offset_ns);
  CHECK(clocks.OffsetOf(5) == clocks.hosts()[2].offset_ns);
  const HostClocks::Among among = clocks.Of({0, 1, 2, 3, 4, 5});
  CHECK(among.hosts == 3);
  CHECK(among.aligned);
  CHECK(among.residual_ns == clocks.hosts()[1].residual_ns + clocks.hosts()[2].residual_ns);
}

TEST_CASE("a host whose clock runs ahead has none of its ranks named a straggler", "[straggler]") {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int64_t> noise(0, 300'000);
  // Random lateness on every rank; rank 3 alone on node1, whose clock reads
  // 30 ms ahead. Compared as they read, rank 3 comes "last" by ~30 ms in
  // every collective: named.
  const auto ps = Job({0, 0, 0, 1}, {0, 30 * kMs}, 200, [&](int, uint64_t) { return noise(rng); });
  ArrivalSkew as_read;
  for (size_t i = 0; i < ps.size(); ++i) as_read.AddProcess(static_cast<int>(i), ps[i].Build());
  const auto blamed = as_read.Stragglers();
  REQUIRE(blamed.size() == 1);
  CHECK(blamed[0].rank == 3);
  // Aligned first, as the diagnosis does: no one.
  const Diagnosis d = DiagnoseJob(ps);
  CHECK(Stragglers(d).empty());
}

TEST_CASE("a straggler on a host with a true clock is named over one whose clock runs ahead",
          "[straggler]") {
  std::mt19937_64 rng(13);
  std::uniform_int_distribution<int64_t> noise(0, 200'000);
  // Rank 1 (node0) enqueues 3 ms late every step; node1 reads 30 ms ahead.
  const auto ps = Job({0, 0, 1, 1}, {0, 30 * kMs}, 200,
                      [&](int r, uint64_t) { return noise(rng) + (r == 1 ? 3 * kMs : 0); });
  const Diagnosis d = DiagnoseJob(ps);
  const auto found = Stragglers(d);
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 1);
  CHECK(found[0].cause == StragglerFacts::Cause::kHost);
  CHECK(found[0].times_last == 200);
  CHECK(found[0].median_late_ns > 2 * kMs);
  CHECK(found[0].median_late_ns < 4 * kMs);
  CHECK(found[0].hosts == 2);
  CHECK(found[0].clocks_aligned);
  CHECK(found[0].clock_residual_ns > 0);
  CHECK(found[0].clock_residual_ns < 100'000);
  for (const auto& f : d.findings) {
    if (f.kind != FindingKind::kStraggler) continue;
    const auto t = ncclwatch::decoder::RenderFinding(f, ncclwatch::decoder::NoCallSites());
    CHECK(t.detail.find("2 hosts, whose clocks were aligned by the job's own collectives") !=
          std::string::npos);
  }
}

TEST_CASE("without GPU times the hosts' clocks are not aligned, and the finding says so",
          "[straggler]") {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int64_t> noise(0, 200'000);
  const auto ps = Job(
      {0, 0, 1, 1}, {0, 0}, 200,
      [&](int r, uint64_t) { return noise(rng) + (r == 2 ? 3 * kMs : 0); }, /*gpu_times=*/false);
  const HostClocks clocks = Solve(ps);
  REQUIRE(clocks.hosts().size() == 2);
  CHECK(clocks.hosts()[0].aligned);  // the reference
  CHECK_FALSE(clocks.hosts()[1].aligned);
  CHECK(clocks.OffsetOf(2) == 0);
  const auto found = Stragglers(DiagnoseJob(ps));
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 2);
  CHECK(found[0].hosts == 2);
  CHECK_FALSE(found[0].clocks_aligned);
  CHECK(found[0].clock_residual_ns == 0);
}

TEST_CASE("clocks a crafted trace puts days apart, or at the ends of the range, align nothing",
          "[straggler]") {
  const int64_t days = 3LL * 24 * 3600 * 1'000'000'000;
  const auto ps = Job({0, 1}, {0, days}, 20, [&](int, uint64_t) { return int64_t{0}; });
  const HostClocks clocks = Solve(ps);
  REQUIRE(clocks.hosts().size() == 2);
  CHECK_FALSE(clocks.hosts()[1].aligned);
  CHECK(clocks.OffsetOf(1) == 0);
  CHECK(HostClocks::OnReference(INT64_MIN, 5) == INT64_MIN);
  CHECK(HostClocks::OnReference(INT64_MIN + 2, 5) == INT64_MIN + 1);
  CHECK(HostClocks::OnReference(INT64_MAX - 2, -5) == INT64_MAX);
  CHECK(HostClocks::OnReference(100, 30) == 70);
}

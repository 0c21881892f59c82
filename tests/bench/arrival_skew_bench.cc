// The straggler analysis (analysis/arrival_skew.h) against the job's size:
// `ranks` ranks of one communicator, 2,000 collectives each (the analysis
// keeps the last 4,096 per member), 20 ms apart with up to 0.3 ms of noise,
// one rank 5 ms late. Each iteration adds every rank's trace (built once,
// outside the timing) to a fresh analysis and asks for the stragglers (one)
// and, as status does, every rank's recent lateness.
//
// BM_SlowGpus: the slow-GPU analysis (analysis/gpu_skew.h) over the same
// job with every collective's GPU times (GpuTime), rank 3's GPU 5 ms late
// (its host on time): adding every rank and asking for the slow GPUs (one).
//
// BM_HostClocks: the hosts' clock alignment (analysis/host_clocks.h) over
// that job on 8 ranks a host, host h's clock h x 1.7 ms ahead: adding every
// rank and solving; each offset found within 0.2 ms.
//
//   build/bin/arrival_skew_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "analysis/arrival_skew.h"
#include "analysis/gpu_skew.h"
#include "analysis/host_clocks.h"
#include "ncclwatch/ring_format.h"

namespace {

using ncclwatch::decoder::ArrivalSkew;
using ncclwatch::decoder::GpuSkew;
using ncclwatch::decoder::GpuTimeEvent;
using ncclwatch::decoder::HostClocks;
using ncclwatch::decoder::ProcessTrace;

constexpr uint64_t kComm = 0x3fa9c1d2e5b60718;
constexpr uint64_t kCollectives = 2000;

std::vector<ProcessTrace> Job(int ranks, bool slow_gpu = false) {
  std::vector<ProcessTrace> job(static_cast<size_t>(ranks));
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  for (int r = 0; r < ranks; ++r) {
    ProcessTrace& t = job[static_cast<size_t>(r)];
    t.clock = NCCLWATCH_CLOCK_MONOTONIC_NS;
    t.anchors.push_back({0, 0, 1'700'000'000'000'000'000ULL});
    t.streams.resize(1);
    t.streams[0].comm = kComm;
    t.streams[0].rank = r;
    t.streams[0].holds_start = true;
    for (uint64_t s = 0; s < kCollectives; ++s) {
      const uint64_t base = 1'000'000'000 + s * 20'000'000;
      const uint64_t when = base + noise(rng) + (!slow_gpu && r == 3 ? 5'000'000 : 0);
      t.streams[0].collectives.push_back(static_cast<uint32_t>(t.collectives.size()));
      t.collectives.emplace_back(s, when, kComm, s, 1024, 1, 7, 0, -1, 0, r, 0x5100, 0, 0x400000,
                                 0);
      if (!slow_gpu) continue;
      GpuTimeEvent g;
      g.comm = kComm;
      g.call = 1;
      g.seq = s;
      g.collectives = s + 1;
      g.begin_ns = r == 3 ? base + 5'000'000 : when;
      g.end_ns = base + 6'000'000 + noise(rng) / 3;
      g.gpu_ns = g.end_ns - g.begin_ns;
      t.gpu_times.push_back(g);
    }
  }
  return job;
}

void BM_Stragglers(benchmark::State& state) {
  const std::vector<ProcessTrace> job = Job(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    ArrivalSkew skew;
    for (size_t i = 0; i < job.size(); ++i) skew.AddProcess(static_cast<int>(i), job[i]);
    const auto found = skew.Stragglers();
    const auto recent = skew.Recent(200);
    if (found.size() != 1 || recent.size() != job.size()) state.SkipWithError("wrong answer");
    benchmark::DoNotOptimize(found.data());
  }
  state.counters["collectives"] = benchmark::Counter(static_cast<double>(job.size() * kCollectives),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Stragglers)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_SlowGpus(benchmark::State& state) {
  const std::vector<ProcessTrace> job = Job(static_cast<int>(state.range(0)), true);
  for (auto _ : state) {
    GpuSkew skew;
    for (size_t i = 0; i < job.size(); ++i) skew.AddProcess(static_cast<int>(i), job[i]);
    const auto found = skew.Stragglers();
    if (found.size() != 1 || found[0].rank != 3) state.SkipWithError("wrong answer");
    benchmark::DoNotOptimize(found.data());
  }
  state.counters["collectives"] = benchmark::Counter(static_cast<double>(job.size() * kCollectives),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SlowGpus)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_HostClocks(benchmark::State& state) {
  std::vector<ProcessTrace> job = Job(static_cast<int>(state.range(0)), true);
  constexpr int kPerHost = 8;
  constexpr int64_t kStepNs = 1'700'000;
  for (size_t r = 0; r < job.size(); ++r) {
    const int host = static_cast<int>(r) / kPerHost;
    job[r].host = "host" + std::to_string(1000 + host);  // names sort as numbers
    job[r].anchors.front().realtime_ns += static_cast<uint64_t>(host * kStepNs);
  }
  for (auto _ : state) {
    HostClocks clocks;
    for (size_t i = 0; i < job.size(); ++i) clocks.AddProcess(static_cast<int>(i), job[i]);
    clocks.Solve();
    for (size_t h = 0; h < clocks.hosts().size(); ++h) {
      const HostClocks::Host& x = clocks.hosts()[h];
      if (!x.aligned || std::llabs(x.offset_ns - static_cast<int64_t>(h) * kStepNs) > 200'000)
        state.SkipWithError("wrong answer");
    }
    benchmark::DoNotOptimize(clocks.hosts().data());
  }
  state.counters["hosts"] = static_cast<double>(job.size() / kPerHost);
}
BENCHMARK(BM_HostClocks)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

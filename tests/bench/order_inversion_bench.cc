// Order inversion against the number of communicators a process holds
// (issue 26): the analysis now (OrderInversion) beside the one that kept a
// reference for every pair of communicators (OrderInversionReference, as it
// was), in one run.
//
//   sequential/N   two ranks make N communicators, one after another, each
//                  used for one AllReduce and destroyed (a job that makes a
//                  communicator per step or per evaluation)
//   interleaved/N  two ranks hold N communicators at once, and issue one
//                  collective on each in turn, three rounds (every pair
//                  interleaved: quadratic for both, by what it must compare)
//
// Each iteration adds the two ranks' traces (built once, outside the timing)
// to a fresh analysis and asks for its findings (none: the ranks agree).
//
//   build/bin/order_inversion_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one line)

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "analysis/order_inversion.h"
#include "unit/order_inversion_reference.h"

namespace {

using ncclwatch::decoder::CollectiveEvent;
using ncclwatch::decoder::CommStream;
using ncclwatch::decoder::OrderInversion;
using ncclwatch::decoder::ProcessTrace;
using ncclwatch::testing::OrderInversionReference;

// One rank's trace: its collectives on `comms` communicators, `rounds` on
// each, either each communicator's all at once (sequential) or one on each
// in turn (interleaved).
ProcessTrace Rank(int rank, uint64_t comms, int rounds, bool interleaved) {
  ProcessTrace t;
  t.streams.resize(comms);
  for (uint64_t c = 0; c < comms; ++c) {
    t.streams[c].comm = 0x100000 + c;
    t.streams[c].rank = rank;
    t.streams[c].holds_start = true;
  }
  uint64_t order = 0;
  auto add = [&](uint64_t c, uint64_t seq) {
    t.streams[c].collectives.push_back(static_cast<uint32_t>(t.collectives.size()));
    t.collectives.emplace_back(order, order * 10, 0x100000 + c, seq, 1024, 1, 7, 0, -1, 0, rank,
                               0x5100, 0, 0x400000, 0);
    ++order;
  };
  if (interleaved) {
    for (int r = 0; r < rounds; ++r)
      for (uint64_t c = 0; c < comms; ++c) add(c, static_cast<uint64_t>(r));
  } else {
    for (uint64_t c = 0; c < comms; ++c)
      for (int r = 0; r < rounds; ++r) add(c, static_cast<uint64_t>(r));
  }
  return t;
}

template <typename Analysis>
void Run(benchmark::State& state, bool interleaved) {
  const uint64_t comms = static_cast<uint64_t>(state.range(0));
  const int rounds = interleaved ? 3 : 1;
  const ProcessTrace a = Rank(0, comms, rounds, interleaved);
  const ProcessTrace b = Rank(1, comms, rounds, interleaved);
  size_t findings = 0;
  for (auto _ : state) {
    Analysis o;
    o.AddProcess(0, a);
    o.AddProcess(1, b);
    findings += o.Findings().size();
    benchmark::DoNotOptimize(findings);
  }
  state.counters["findings"] = static_cast<double>(findings);
}

void BM_Now_Sequential(benchmark::State& s) { Run<OrderInversion>(s, false); }
void BM_Before_Sequential(benchmark::State& s) { Run<OrderInversionReference>(s, false); }
void BM_Now_Interleaved(benchmark::State& s) { Run<OrderInversion>(s, true); }
void BM_Before_Interleaved(benchmark::State& s) { Run<OrderInversionReference>(s, true); }

BENCHMARK(BM_Now_Sequential)
    ->Arg(300)
    ->Arg(1000)
    ->Arg(3000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Before_Sequential)->Arg(300)->Arg(1000)->Arg(3000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Now_Interleaved)->Arg(100)->Arg(300)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Before_Interleaved)->Arg(100)->Arg(300)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

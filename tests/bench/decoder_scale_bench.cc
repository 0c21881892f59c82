// How the decoder scales: `ncclwatch diagnose --json` over synthetic jobs of
// growing size (ranks x collectives per rank), run as the user runs it, as a
// separate process. Reports records decoded per second and the decoder's
// peak resident memory (ru_maxrss of the child), so linear time and bounded
// memory show side by side:
//
//   decoder_scale_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Each job has one rank that changes the count of its last collective, so
// the decoder must read every record to reach the verdict. Traces are written
// once per size under $TMPDIR (17 GB free needed for the largest) and
// removed when the next size starts and at exit. Run one size with e.g.
// --benchmark_filter='ranks:64/calls:100000'.

#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include "synthetic_trace.h"

namespace {

namespace fs = std::filesystem;

std::string Cli() {
  const char* cli = getenv("NCCLWATCH_CLI");
  return cli ? cli : NCCLWATCH_CLI_DEFAULT;
}

// Trace folders, one per (ranks, calls), written on first use.
class Jobs {
 public:
  ~Jobs() {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  // Keeps only the latest job on disk (1,024 x 100,000 is 17 GB).
  const std::string& Get(int ranks, uint64_t calls) {
    auto key = std::make_pair(ranks, calls);
    auto it = dirs_.find(key);
    if (it != dirs_.end()) return it->second;
    std::error_code ec;
    for (const auto& [k, d] : dirs_) fs::remove_all(d, ec);
    dirs_.clear();
    if (root_.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "ncclwatch-bench-XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr) Die("cannot create a folder under " + fs::temp_directory_path().string());
      root_ = tmpl;
    }
    std::string dir = root_ + "/" + std::to_string(ranks) + "x" + std::to_string(calls);
    fs::create_directory(dir);
    ncclwatch::bench::SyntheticJob job;
    job.ranks = ranks;
    job.calls = calls;
    job.diverging_rank = ranks / 2;
    job.diverging_seq = calls - 1;
    std::string error;
    if (!ncclwatch::bench::WriteSyntheticJob(dir, job, &error)) Die(error);
    return dirs_[key] = dir;
  }

 private:
  [[noreturn]] static void Die(const std::string& why) {
    std::fprintf(stderr, "decoder_scale_bench: %s\n", why.c_str());
    std::exit(2);
  }
  std::string root_;
  std::map<std::pair<int, uint64_t>, std::string> dirs_;
};

Jobs g_jobs;

// Runs the CLI on `dir`; returns its peak RSS in KiB, or -1 if it did not
// end with "problem found" (exit 1), the verdict these jobs must produce.
long Diagnose(const std::string& dir) {
  const std::string cli = Cli();
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout)) _exit(127);
    execl(cli.c_str(), cli.c_str(), "diagnose", "--json", dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 1) return -1;
  return usage.ru_maxrss;
}

void BM_Diagnose(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const uint64_t calls = static_cast<uint64_t>(state.range(1));
  const std::string& dir = g_jobs.Get(ranks, calls);
  long rss_kib = 0;
  for (auto _ : state) {
    long r = Diagnose(dir);
    if (r < 0) {
      state.SkipWithError("ncclwatch diagnose did not report the divergence (exit != 1)");
      return;
    }
    rss_kib = r;
  }
  const double records = static_cast<double>(ranks) * static_cast<double>(calls);
  state.SetItemsProcessed(static_cast<int64_t>(records) * state.iterations());
  state.counters["records"] = records;
  state.counters["peak_rss_MiB"] = static_cast<double>(rss_kib) / 1024.0;
}

}  // namespace

// Growth in ranks at 100,000 records each, up to the 1,024 x 100,000 job,
// and growth in records per rank at 64 ranks.
BENCHMARK(BM_Diagnose)
    ->ArgNames({"ranks", "calls"})
    ->Args({64, 10000})
    ->Args({64, 30000})
    ->Args({8, 100000})
    ->Args({64, 100000})
    ->Args({256, 100000})
    ->Args({1024, 100000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

BENCHMARK_MAIN();

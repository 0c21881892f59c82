// Node summaries (issue 25): `ncclwatch summarize` on one node's traces, and
// `ncclwatch diagnose` over a job's summaries against over its traces, each
// run as the user runs it, as a separate process.
//
//   summary_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// The jobs are synthetic (tests/bench/synthetic_trace.h, the shim's own ring
// writer): `ranks` ranks of one world communicator, `calls` AllReduces
// each, in nodes of 8 ranks; one rank changes the count of its last
// collective, so both diagnoses must read to the end and name it.
//
// BM_SummarizeNode: one node's 8 traces summarized with the default window
//   (4,096): wall and CPU time, peak memory, the summary's size beside the
//   traces' (the slots they hold).
// BM_DiagnoseJob: every node summarized (the per-node figures, median and
//   largest, come from these runs), then `diagnose` over the summaries and,
//   where the traces fit on this disk (traces:1), over the traces: wall and
//   CPU time, peak memory, and whether both name the same root cause (their
//   headlines, same_verdict 1). traces:0 deletes each node's traces once
//   summarized (an 8,192-rank job's 21 GB do not fit here).
//
// Folders under $TMPDIR, removed at exit (kept with NCCLWATCH_BENCH_KEEP set,
// to measure by hand afterwards).

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "synthetic_trace.h"

namespace {

namespace fs = std::filesystem;

constexpr int kNodeRanks = 8;

std::string Cli() {
  const char* cli = getenv("NCCLWATCH_CLI");
  return cli ? cli : NCCLWATCH_CLI_DEFAULT;
}

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "summary_bench: %s\n", why.c_str());
  std::exit(2);
}

class Root {
 public:
  ~Root() {
    std::error_code ec;
    if (Keep()) {  // for measuring by hand afterwards
      std::fprintf(stderr, "summary_bench: kept %s\n", path_.c_str());
      return;
    }
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  static bool Keep() { return getenv("NCCLWATCH_BENCH_KEEP") != nullptr; }
  const std::string& path() {
    if (path_.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "ncclwatch-summary-bench-XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr) Die("cannot create a folder under /tmp");
      path_ = tmpl;
    }
    return path_;
  }

 private:
  std::string path_;
};
Root g_root;

struct ChildCost {
  bool ok = false;
  double cpu_s = 0;
  double wall_s = 0;
  long peak_rss_kib = 0;
};

double Seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

double WallNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Runs the CLI with `args` in a fresh process, its output into `out`, and
// measures it the way `time` would.
ChildCost Run(const std::vector<std::string>& args, const std::string& out, int want_exit) {
  ChildCost c;
  const double start = WallNow();
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout)) _exit(127);
    std::vector<char*> argv;
    const std::string cli = Cli();
    argv.push_back(const_cast<char*>(cli.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(cli.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return c;
  c.wall_s = WallNow() - start;
  c.ok = WIFEXITED(status) && WEXITSTATUS(status) == want_exit;
  c.cpu_s = Seconds(usage.ru_utime) + Seconds(usage.ru_stime);
  c.peak_rss_kib = usage.ru_maxrss;
  return c;
}

std::string FirstLine(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

uint64_t FolderBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

// Node `node` of a job (its 8 ranks) written into `dir`.
void WriteNode(const std::string& dir, int ranks, uint64_t calls, int node) {
  fs::create_directories(dir);
  ncclwatch::bench::SyntheticJob job;
  job.ranks = ranks;
  job.calls = calls;
  job.diverging_rank = ranks / 2;
  job.diverging_seq = calls - 1;
  job.first_rank = node * kNodeRanks;
  job.end_rank = (node + 1) * kNodeRanks;
  std::string error;
  if (!ncclwatch::bench::WriteSyntheticJob(dir, job, &error)) Die(error);
}

struct Summarized {
  ChildCost cost;
  uint64_t bytes = 0;
};

Summarized SummarizeNode(const std::string& traces, const std::string& out) {
  Summarized s;
  s.cost = Run({"summarize", traces, "-o", out}, g_root.path() + "/summarize.out", 0);
  if (!s.cost.ok) Die("ncclwatch summarize " + traces + " failed");
  s.bytes = fs::file_size(out);
  return s;
}

void BM_SummarizeNode(benchmark::State& state) {
  const uint64_t calls = static_cast<uint64_t>(state.range(0));
  const std::string dir = g_root.path() + "/node-" + std::to_string(calls);
  const std::string out = dir + ".ncws";
  WriteNode(dir, 64, calls, 0);
  uint64_t slot_bytes = calls * kNodeRanks * 128;  // the collectives' slots the traces hold
  Summarized s;
  for (auto _ : state) {
    s = SummarizeNode(dir, out);
    state.SetIterationTime(s.cost.wall_s);
  }
  state.counters["cpu_s"] = s.cost.cpu_s;
  state.counters["peak_rss_MiB"] = static_cast<double>(s.cost.peak_rss_kib) / 1024.0;
  state.counters["summary_KiB"] = static_cast<double>(s.bytes) / 1024.0;
  state.counters["traces_MiB"] = static_cast<double>(slot_bytes) / 1048576.0;
  state.counters["x_smaller"] = static_cast<double>(slot_bytes) / static_cast<double>(s.bytes);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::remove(out, ec);
}

void BM_DiagnoseJob(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const uint64_t calls = static_cast<uint64_t>(state.range(1));
  const bool keep_traces = state.range(2) != 0;
  const std::string job = g_root.path() + "/job-" + std::to_string(ranks);
  const std::string traces = job + "/traces";
  const std::string summaries = job + "/summaries";
  fs::create_directories(summaries);
  // Every node summarized, as each node's launcher task would.
  std::vector<double> node_s;
  uint64_t largest = 0;
  for (int node = 0; node < ranks / kNodeRanks; ++node) {
    const std::string dir = traces + "/node" + std::to_string(node);
    WriteNode(dir, ranks, calls, node);
    const Summarized s = SummarizeNode(dir, summaries + "/node" + std::to_string(node) + ".ncws");
    node_s.push_back(s.cost.wall_s);
    largest = std::max(largest, s.bytes);
    if (!keep_traces) fs::remove_all(dir);
  }
  std::sort(node_s.begin(), node_s.end());
  ChildCost from_summaries, from_traces;
  bool same = true;
  for (auto _ : state) {
    const std::string a = job + "/from-summaries.out", b = job + "/from-traces.out";
    from_summaries = Run({"diagnose", summaries}, a, 1);
    if (!from_summaries.ok) {
      state.SkipWithError("diagnose over the summaries did not find the divergence");
      return;
    }
    if (keep_traces) {
      from_traces = Run({"diagnose", traces}, b, 1);
      if (!from_traces.ok) {
        state.SkipWithError("diagnose over the traces did not find the divergence");
        return;
      }
      same = FirstLine(a) == FirstLine(b) &&
             FirstLine(a).rfind("PROBLEM: collective_mismatch", 0) == 0;
    } else {
      same = FirstLine(a).rfind("PROBLEM: collective_mismatch", 0) == 0 &&
             FirstLine(a).find("(rank " + std::to_string(ranks / 2) + ")") != std::string::npos;
    }
    state.SetIterationTime(from_summaries.wall_s);
  }
  state.counters["summarize_node_median_s"] = node_s[node_s.size() / 2];
  state.counters["summarize_node_max_s"] = node_s.back();
  state.counters["summary_node_max_KiB"] = static_cast<double>(largest) / 1024.0;
  state.counters["summaries_MiB"] = static_cast<double>(FolderBytes(summaries)) / 1048576.0;
  state.counters["sum_cpu_s"] = from_summaries.cpu_s;
  state.counters["sum_rss_MiB"] = static_cast<double>(from_summaries.peak_rss_kib) / 1024.0;
  state.counters["same_verdict"] = same ? 1 : 0;
  if (keep_traces) {
    state.counters["traces_wall_s"] = from_traces.wall_s;
    state.counters["traces_cpu_s"] = from_traces.cpu_s;
    state.counters["traces_rss_MiB"] = static_cast<double>(from_traces.peak_rss_kib) / 1024.0;
    state.counters["x_faster"] = from_traces.wall_s / from_summaries.wall_s;
  }
  std::error_code ec;
  if (!Root::Keep()) fs::remove_all(job, ec);
}

}  // namespace

// One node of 8 ranks: 20,000 and 100,000 collectives per rank.
BENCHMARK(BM_SummarizeNode)
    ->ArgNames({"calls"})
    ->Arg(20000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(1);

// 1,024 ranks (128 nodes) with the traces kept, 8,192 (1,024 nodes) from
// summaries only; 20,000 collectives per rank.
BENCHMARK(BM_DiagnoseJob)
    ->ArgNames({"ranks", "calls", "traces"})
    ->Args({1024, 20000, 1})
    ->Args({8192, 20000, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(1);

BENCHMARK_MAIN();

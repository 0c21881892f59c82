// How the decoder scales: `ncclwatch diagnose --json` over synthetic jobs of
// growing size (ranks x collectives per rank), run as the user runs it, as a
// separate process. Reports, for each job: records per second of the
// decoder's CPU time (user + system: per core, whatever the threads),
// beside the CPU time of only reading the same files' bytes (read_cpu_s,
// and x_read, the ratio), and the decoder's peak resident memory (ru_maxrss
// of the child), so linear time and bounded memory show side by side:
//
//   decoder_scale_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Set NCCLWATCH_CLI_BASELINE to another build's ncclwatch (e.g. main's) to
// run it too, right after, on the same files: base_cpu_s, base_M_rec_per_cpu_s
// and x_base (this CPU time over the baseline's) compare the two side by
// side, under the same load.
//
// Each job has one rank that changes the count of its last collective, so
// the decoder must read every record to reach the verdict. Traces are written
// once per size under $TMPDIR (17 GB free needed for the largest) and
// removed when the next size starts and at exit. Run one size with e.g.
// --benchmark_filter='ranks:64/calls:100000'.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
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
    if (getenv("NCCLWATCH_BENCH_KEEP") != nullptr) {  // for measuring by hand afterwards
      std::fprintf(stderr, "decoder_scale_bench: kept %s\n", root_.c_str());
      return;
    }
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  // Keeps only the latest job on disk (1,024 x 100,000 is 17 GB).
  const std::string& Get(int ranks, uint64_t calls, bool call_slots) {
    auto key = std::make_tuple(ranks, calls, call_slots);
    auto it = dirs_.find(key);
    if (it != dirs_.end()) return it->second;
    std::error_code ec;
    for (const auto& [k, d] : dirs_) fs::remove_all(d, ec);
    dirs_.clear();
    if (root_.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "ncclwatch-bench-XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr)
        Die("cannot create a folder under " + fs::temp_directory_path().string());
      root_ = tmpl;
    }
    std::string dir = root_ + "/" + std::to_string(ranks) + "x" + std::to_string(calls) +
                      (call_slots ? "" : "-protobuf");
    fs::create_directory(dir);
    ncclwatch::bench::SyntheticJob job;
    job.ranks = ranks;
    job.calls = calls;
    job.diverging_rank = ranks / 2;
    job.diverging_seq = calls - 1;
    job.call_slots = call_slots;
    std::string error;
    if (!ncclwatch::bench::WriteSyntheticJob(dir, job, &error)) Die(error);
    // The traces were written through shared mappings: their pages are
    // dirty, and the kernel's writeback would flush them while the runs
    // below are timed, beside them on the same cores. Flushed first (their
    // file system only).
    const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (dir_fd < 0 || syncfs(dir_fd) != 0) Die("cannot flush the traces in " + dir);
    close(dir_fd);
    return dirs_[key] = dir;
  }

 private:
  [[noreturn]] static void Die(const std::string& why) {
    std::fprintf(stderr, "decoder_scale_bench: %s\n", why.c_str());
    std::exit(2);
  }
  std::string root_;
  std::map<std::tuple<int, uint64_t, bool>, std::string> dirs_;
};

Jobs g_jobs;

struct ChildCost {
  bool ok = false;
  double cpu_s = 0;  // user + system time of the child
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

// Runs `child` in a fresh process and measures it the way `time` would.
template <typename Child>
ChildCost Measure(Child child, int want_exit) {
  ChildCost c;
  const double start = WallNow();
  pid_t pid = fork();
  if (pid == 0) _exit(child());
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return c;
  c.wall_s = WallNow() - start;
  c.ok = WIFEXITED(status) && WEXITSTATUS(status) == want_exit;
  c.cpu_s = Seconds(usage.ru_utime) + Seconds(usage.ru_stime);
  c.peak_rss_kib = usage.ru_maxrss;
  return c;
}

// `ncclwatch diagnose --json DIR`: must end with "problem found" (exit 1),
// the verdict these jobs must produce.
ChildCost Diagnose(const std::string& dir, const std::string& cli) {
  return Measure(
      [&] {
        if (!freopen("/dev/null", "w", stdout)) return 127;
        execl(cli.c_str(), cli.c_str(), "diagnose", "--json", dir.c_str(),
              static_cast<char*>(nullptr));
        return 127;
      },
      1);
}

// The floor: reading the same files' bytes with read(2), nothing else.
ChildCost ReadBytes(const std::string& dir) {
  return Measure(
      [&] {
        static char buf[1 << 20];
        for (const auto& e : fs::directory_iterator(dir)) {
          const int fd = open(e.path().c_str(), O_RDONLY);
          if (fd < 0) return 2;
          while (read(fd, buf, sizeof(buf)) > 0) {
          }
          close(fd);
        }
        return 0;
      },
      0);
}

void BM_Diagnose(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const uint64_t calls = static_cast<uint64_t>(state.range(1));
  const bool call_slots = state.range(2) != 0;
  const std::string& dir = g_jobs.Get(ranks, calls, call_slots);
  const char* baseline_cli = getenv("NCCLWATCH_CLI_BASELINE");
  ChildCost diagnose, read_bytes, baseline;
  for (auto _ : state) {
    // Side by side: the files are in the page cache for all.
    read_bytes = ReadBytes(dir);
    diagnose = Diagnose(dir, Cli());
    if (baseline_cli != nullptr) baseline = Diagnose(dir, baseline_cli);
    if (!diagnose.ok || !read_bytes.ok || (baseline_cli != nullptr && !baseline.ok)) {
      state.SkipWithError(
          "ncclwatch diagnose did not report the divergence (exit != 1), or the files could not be "
          "read");
      return;
    }
    state.SetIterationTime(diagnose.wall_s);
  }
  const double records = static_cast<double>(ranks) * static_cast<double>(calls);
  state.SetItemsProcessed(static_cast<int64_t>(records) * state.iterations());
  state.counters["records"] = records;
  state.counters["cpu_s"] = diagnose.cpu_s;
  state.counters["M_rec_per_cpu_s"] = records / diagnose.cpu_s / 1e6;
  state.counters["read_cpu_s"] = read_bytes.cpu_s;
  state.counters["x_read"] = diagnose.cpu_s / read_bytes.cpu_s;
  state.counters["peak_rss_MiB"] = static_cast<double>(diagnose.peak_rss_kib) / 1024.0;
  if (baseline_cli != nullptr) {
    state.counters["base_cpu_s"] = baseline.cpu_s;
    state.counters["base_M_rec_per_cpu_s"] = records / baseline.cpu_s / 1e6;
    state.counters["x_base"] = diagnose.cpu_s / baseline.cpu_s;
  }
}

}  // namespace

// Growth in ranks at 100,000 records each, up to the 1,024 x 100,000 job,
// and growth in records per rank at 64 ranks. slots:1 writes collectives as
// call slots (format 2, today's shim), slots:0 as protobuf Records (format
// 1's shim), side by side at 64 x 100,000.
BENCHMARK(BM_Diagnose)
    ->ArgNames({"ranks", "calls", "slots"})
    ->Args({64, 10000, 1})
    ->Args({64, 30000, 1})
    ->Args({8, 100000, 1})
    ->Args({64, 100000, 1})
    ->Args({64, 100000, 0})
    ->Args({256, 100000, 1})
    ->Args({1024, 100000, 1})
    ->Args({1024, 10000, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(1);

BENCHMARK_MAIN();

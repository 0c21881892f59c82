// Node summaries (issue 25): `ncclwatch summarize` on one node's traces, and
// `ncclwatch diagnose` over a job's summaries against over its traces, each
// run as the user runs it, as a separate process.
//
//   summary_bench
//   NCCLWATCH_BASE_CLI=/path/to/main/build/bin/ncclwatch summary_bench   # beside another build
//   NCCLWATCH_BENCH_LARGE=1 summary_bench --benchmark_filter=ranks:32768  # the large jobs too
//
// The jobs are synthetic (tests/bench/synthetic_trace.h, the shim's own ring
// writer): `ranks` ranks of one world communicator, `calls` AllReduces
// each, in nodes of 8 ranks, the ranks' clocks started together; healthy,
// a mismatch (one rank changes the count of its last collective, so every
// diagnosis must read to the end and name it), a dead rank (SIGKILLed
// halfway, the others waiting in the next collective) or a straggler (one
// rank's host 5 ms late in every collective). Each verdict is checked: the
// headline, the rank it names, and the straggler's warning alone.
//
// BM_SummarizeNode: one node's 8 traces summarized with the default window
//   (4,096): wall and CPU time, peak memory, the summary's size beside the
//   traces' (the slots they hold); and the other build's.
// BM_DiagnoseJob: every node summarized (the per-node figures, median and
//   largest, come from these runs), then `diagnose` over the summaries and,
//   where the traces fit on this disk (traces:1), over the traces: wall and
//   CPU time, peak memory, and whether both give the same headline
//   (same_verdict 1); with NCCLWATCH_BASE_CLI, the other build summarizes
//   every node too (into its own folder: its summaries are its format's)
//   and diagnoses them (base_*, x_faster_than_base, same_as_base). traces:0
//   deletes each node's traces once summarized (an 8,192-rank job's 21 GB
//   do not fit here).
// BM_ReadTrace: one rank's trace whose ring of `ring_MiB` is full (it
//   wrapped), read by `cat`, by `ncclwatch summarize` and by `ncclwatch
//   diagnose` (which judges a trace over 64 MiB from its summary made in
//   memory first), each run 9 times in turn, medians: the seconds of each,
//   their ratios to `cat`'s (x_cat_*; the aim is 2 at most), and the peak
//   memory; and each one's fastest run and its ratio (x_cat_min_*: what a
//   shared machine's load adds least to, all of them CPU-bound); with
//   NCCLWATCH_BASE_CLI, the other build's too. Shapes: the collectives
//   alone (calls:0); each with its GPU time, and a Progress record every
//   64 (gpu:1, a data-parallel rank on a GPU); and a send and a receive
//   too (p2p:1, a pipeline rank: judged from its summary as well, which
//   carries each send's count of the collectives before it). Where there
//   are GPU times, the same job is written a second time as format 3 wrote
//   them (protobuf): the other build reads that one (a build from before
//   format 4 refuses the first), and this build's `summarize` too
//   (summarize_format3).
// BM_DiagnoseWrapped: a job of 4 ranks whose full rings wrapped at
//   different places (ranks 0 and 1 of `ring_MiB`, 2 and 3 of twice that),
//   judged by `diagnose` (every trace over 64 MiB from its summary made in
//   memory): each of ranks 0 and 1 begins inside the middle its peers'
//   summaries leave out, which a second reading compares, keeping those
//   blocks whole (it used to read every ring whole). Run 5 times
//   (and the other build's, in turn): medians of wall and CPU time, peak
//   memory, and whether each said HEALTHY.
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
#include <iterator>
#include <string>
#include <vector>

#include "ncclwatch/ring_format.h"
#include "synthetic_trace.h"

namespace {

namespace fs = std::filesystem;

constexpr int kNodeRanks = 8;

std::string Cli() {
  const char* cli = getenv("NCCLWATCH_CLI");
  return cli ? cli : NCCLWATCH_CLI_DEFAULT;
}

// Another build to measure beside this one (main's, say), or "".
std::string BaseCli() {
  const char* cli = getenv("NCCLWATCH_BASE_CLI");
  return cli ? cli : "";
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

// Runs `argv` (a program by path, then its arguments) in a fresh process,
// its output into `out` (its errors too where `quiet`), and measures it the
// way `time` would; `exit_code` its exit status (-1: it did not exit).
ChildCost Spawn(const std::vector<std::string>& argv, const std::string& out, bool quiet,
                int* exit_code) {
  ChildCost c;
  *exit_code = -1;
  const double start = WallNow();
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout)) _exit(127);
    if (quiet && !freopen("/dev/null", "w", stderr)) _exit(127);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return c;
  c.wall_s = WallNow() - start;
  if (WIFEXITED(status)) *exit_code = WEXITSTATUS(status);
  c.cpu_s = Seconds(usage.ru_utime) + Seconds(usage.ru_stime);
  c.peak_rss_kib = usage.ru_maxrss;
  return c;
}

// The CLI (or `which`) with `args`, its output into `out`: ok where it
// exits with `want_exit`.
ChildCost Run(const std::vector<std::string>& args, const std::string& out, int want_exit,
              const std::string& which = Cli()) {
  std::vector<std::string> argv{which};
  argv.insert(argv.end(), args.begin(), args.end());
  int exit_code;
  ChildCost c = Spawn(argv, out, false, &exit_code);
  c.ok = exit_code == want_exit;
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

// The jobs: healthy; one rank changes the count of its last collective
// (mismatch); one rank SIGKILLed halfway, the others waiting for it in the
// next collective (dead); one rank's host 5 ms late in every collective
// (straggler). All ranks' clocks start together, each rank's enqueues a
// few hundred microseconds off at random, so only the straggler is late.
enum Variant { kHealthy = 0, kMismatch = 1, kDead = 2, kStraggler = 3 };
const char* VariantName(int v) {
  static const char* const names[] = {"healthy", "mismatch", "dead", "straggler"};
  return names[v];
}
// What the headline of each must begin with (the dead rank's is
// missing_rank: its host, "synth", is not this one, so no one can say how
// it ended), and the rank it names.
std::string Expected(int variant) {
  static const char* const heads[] = {"HEALTHY", "PROBLEM: collective_mismatch",
                                      "PROBLEM: missing_rank", "HEALTHY"};
  return heads[variant];
}
int ExpectedExit(int variant) { return variant == kHealthy || variant == kStraggler ? 0 : 1; }

uint64_t g_start_ns = 0, g_start_realtime_ns = 0;

// Node `node` of a job (its 8 ranks) written into `dir`.
void WriteNode(const std::string& dir, int ranks, uint64_t calls, int node,
               int variant = kMismatch) {
  fs::create_directories(dir);
  if (g_start_ns == 0) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    g_start_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
    clock_gettime(CLOCK_REALTIME, &ts);
    g_start_realtime_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
  }
  ncclwatch::bench::SyntheticJob job;
  job.ranks = ranks;
  job.calls = calls;
  job.start_ns = g_start_ns;
  job.start_realtime_ns = g_start_realtime_ns;
  if (variant == kMismatch) {
    job.diverging_rank = ranks / 2;
    job.diverging_seq = calls - 1;
  } else if (variant == kDead) {
    job.short_rank = ranks / 2;
    job.short_calls = calls / 2;
    job.killed = true;
  } else if (variant == kStraggler) {
    job.slow_rank = ranks / 2;
    job.slow_ns = 5000000;
  }
  job.first_rank = node * kNodeRanks;
  job.end_rank = (node + 1) * kNodeRanks;
  std::string error;
  if (!ncclwatch::bench::WriteSyntheticJob(dir, job, &error)) Die(error);
}

struct Summarized {
  ChildCost cost;
  uint64_t bytes = 0;
};

Summarized SummarizeNode(const std::string& traces, const std::string& out,
                         const std::string& which = Cli()) {
  Summarized s;
  s.cost = Run({"summarize", traces, "-o", out}, g_root.path() + "/summarize.out", 0, which);
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
  Summarized s, b;
  const std::string base = BaseCli();
  for (auto _ : state) {
    s = SummarizeNode(dir, out);
    state.SetIterationTime(s.cost.wall_s);
    if (!base.empty()) b = SummarizeNode(dir, out + ".base", base);
  }
  if (!base.empty()) {
    state.counters["base_wall_s"] = b.cost.wall_s;
    state.counters["base_cpu_s"] = b.cost.cpu_s;
    state.counters["base_summary_KiB"] = static_cast<double>(b.bytes) / 1024.0;
  }
  state.counters["cpu_s"] = s.cost.cpu_s;
  state.counters["peak_rss_MiB"] = static_cast<double>(s.cost.peak_rss_kib) / 1024.0;
  state.counters["summary_KiB"] = static_cast<double>(s.bytes) / 1024.0;
  state.counters["traces_MiB"] = static_cast<double>(slot_bytes) / 1048576.0;
  state.counters["x_smaller"] = static_cast<double>(slot_bytes) / static_cast<double>(s.bytes);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::remove(out, ec);
  fs::remove(out + ".base", ec);
}

void BM_DiagnoseJob(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const uint64_t calls = static_cast<uint64_t>(state.range(1));
  const bool keep_traces = state.range(2) != 0;
  const int variant = static_cast<int>(state.range(3));
  state.SetLabel(VariantName(variant));
  const std::string base = BaseCli();
  const std::string job =
      g_root.path() + "/job-" + std::to_string(ranks) + "-" + VariantName(variant);
  const std::string traces = job + "/traces";
  const std::string summaries = job + "/summaries";
  const std::string base_summaries = job + "/base-summaries";
  fs::create_directories(summaries);
  if (!base.empty()) fs::create_directories(base_summaries);
  // Every node summarized, as each node's launcher task would (and by the
  // other build, into its own folder: its summaries are its format's).
  std::vector<double> node_s;
  uint64_t largest = 0;
  for (int node = 0; node < ranks / kNodeRanks; ++node) {
    const std::string dir = traces + "/node" + std::to_string(node);
    const std::string name = "/node" + std::to_string(node) + ".ncws";
    WriteNode(dir, ranks, calls, node, variant);
    const Summarized s = SummarizeNode(dir, summaries + name);
    if (!base.empty()) SummarizeNode(dir, base_summaries + name, base);
    node_s.push_back(s.cost.wall_s);
    largest = std::max(largest, s.bytes);
    if (!keep_traces) fs::remove_all(dir);
  }
  std::sort(node_s.begin(), node_s.end());
  const int want = ExpectedExit(variant);
  const std::string named = "(rank " + std::to_string(ranks / 2) + ")";
  // The headline, and the straggler's warning in the report.
  auto verdict_ok = [&](const std::string& file) {
    const std::string line = FirstLine(file);
    if (line.rfind(Expected(variant), 0) != 0) return false;
    if (want != 0) return line.find(named) != std::string::npos;
    std::ifstream in(file);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // One straggler warning, naming that rank, or none at all.
    size_t warnings = 0;
    for (size_t at = all.find("enqueued last"); at != std::string::npos;
         at = all.find("enqueued last", at + 1))
      ++warnings;
    if (variant != kStraggler) return warnings == 0;
    return warnings == 1 &&
           all.find("rank " + std::to_string(ranks / 2) + " enqueued last") != std::string::npos;
  };
  ChildCost from_summaries, from_traces, from_base;
  bool same = true, same_as_base = true;
  for (auto _ : state) {
    const std::string a = job + "/from-summaries.out", b = job + "/from-traces.out",
                      c = job + "/from-base.out";
    from_summaries = Run({"diagnose", summaries}, a, want);
    if (!from_summaries.ok || !verdict_ok(a)) {
      state.SkipWithError(("diagnose over the summaries said: " + FirstLine(a)).c_str());
      return;
    }
    same = true;
    if (keep_traces) {
      from_traces = Run({"diagnose", traces}, b, want);
      same = from_traces.ok && FirstLine(a) == FirstLine(b);
    }
    if (!base.empty()) {
      from_base = Run({"diagnose", base_summaries}, c, want, base);
      same_as_base = from_base.ok && FirstLine(a) == FirstLine(c);
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
  if (!base.empty()) {
    state.counters["base_summaries_MiB"] =
        static_cast<double>(FolderBytes(base_summaries)) / 1048576.0;
    state.counters["base_wall_s"] = from_base.wall_s;
    state.counters["base_cpu_s"] = from_base.cpu_s;
    state.counters["base_rss_MiB"] = static_cast<double>(from_base.peak_rss_kib) / 1024.0;
    state.counters["x_faster_than_base"] = from_base.wall_s / from_summaries.wall_s;
    state.counters["same_as_base"] = same_as_base ? 1 : 0;
  }
  std::error_code ec;
  if (!Root::Keep()) fs::remove_all(job, ec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// `argv` (a program by path) with its output to /dev/null: ok where it ran
// and did not refuse its input (exit 2).
ChildCost RunProgram(const std::vector<std::string>& argv) {
  int exit_code;
  ChildCost c = Spawn(argv, "/dev/null", true, &exit_code);
  c.ok = exit_code >= 0 && exit_code != 127 && exit_code != 2;
  return c;
}

void BM_ReadTrace(benchmark::State& state) {
  const uint64_t ring_mib = static_cast<uint64_t>(state.range(0));
  const bool gpu = state.range(1) != 0;
  const bool p2p = state.range(2) != 0;
  const std::string dir = g_root.path() + "/rank-" + std::to_string(ring_mib) + "-" +
                          std::to_string(gpu) + std::to_string(p2p);
  fs::create_directories(dir);
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 8;  // rank 0's trace alone
  job.end_rank = 1;
  job.gpu_times = gpu || p2p;
  job.progress = gpu || p2p;
  job.sends = p2p;
  job.ring_bytes = ring_mib << 20;
  // Enough calls to wrap the ring once more than a quarter.
  const uint64_t per_call = (p2p ? 3 : 1) * (job.gpu_times ? 2 : 1);
  job.calls = job.ring_bytes / NCCLWATCH_SLOT_BYTES * 5 / 4 / per_call;
  std::string error;
  if (!ncclwatch::bench::WriteSyntheticJob(dir, job, &error)) Die(error);
  std::string trace;
  for (const auto& e : fs::directory_iterator(dir)) trace = e.path().string();
  const std::string base = BaseCli();
  const std::string out = dir + ".ncws";
  // GPU times as format 3 wrote them (protobuf), the same job: what a build
  // from before format 4 reads (it refuses format 4), and this build too.
  std::string format3 = dir;  // the same file where there are none
  if (job.gpu_times) {
    format3 = dir + "-format3";
    fs::create_directories(format3);
    job.gpu_time_slots = false;
    if (!ncclwatch::bench::WriteSyntheticJob(format3, job, &error)) Die(error);
  }
  struct Tool {
    const char* name;
    std::vector<std::string> args;
    std::vector<double> wall;
    long rss = 0;
  };
  std::vector<Tool> tools = {{"cat", {"/bin/cat", trace}},
                             {"summarize", {Cli(), "summarize", dir, "-o", out}},
                             {"diagnose", {Cli(), "diagnose", dir}}};
  if (format3 != dir)
    tools.push_back({"summarize_format3", {Cli(), "summarize", format3, "-o", out + ".f3"}});
  if (!base.empty()) {
    tools.push_back({"base_summarize", {base, "summarize", format3, "-o", out + ".base"}});
    tools.push_back({"base_diagnose", {base, "diagnose", format3}});
  }
  for (auto _ : state) {
    for (int round = 0; round < 9; ++round) {
      for (Tool& t : tools) {
        const ChildCost c = RunProgram(t.args);
        if (!c.ok) {
          state.SkipWithError((std::string(t.name) + " failed").c_str());
          return;
        }
        t.wall.push_back(c.wall_s);
        t.rss = std::max(t.rss, c.peak_rss_kib);
      }
    }
    state.SetIterationTime(Median(tools[2].wall));
  }
  const double cat = Median(tools[0].wall);
  const double cat_min = *std::min_element(tools[0].wall.begin(), tools[0].wall.end());
  state.counters["trace_MiB"] = static_cast<double>(fs::file_size(trace)) / 1048576.0;
  for (const Tool& t : tools) {
    // The fastest run too: on a machine shared with others, what the
    // neighbours' load added least to (both programs are CPU-bound).
    const double fastest = *std::min_element(t.wall.begin(), t.wall.end());
    state.counters[std::string(t.name) + "_s"] = Median(t.wall);
    state.counters[std::string(t.name) + "_min_s"] = fastest;
    if (t.name != std::string("cat")) {
      state.counters[std::string("x_cat_") + t.name] = Median(t.wall) / cat;
      state.counters[std::string("x_cat_min_") + t.name] = fastest / cat_min;
      state.counters[std::string(t.name) + "_rss_MiB"] = static_cast<double>(t.rss) / 1024.0;
    }
  }
  std::error_code ec;
  if (Root::Keep()) return;
  fs::remove_all(dir, ec);
  fs::remove(out, ec);
  fs::remove(out + ".base", ec);
}

void BM_DiagnoseWrapped(benchmark::State& state) {
  const uint64_t ring_mib = static_cast<uint64_t>(state.range(0));
  const std::string dir = g_root.path() + "/wrapped-" + std::to_string(ring_mib);
  fs::create_directories(dir);
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 4;
  job.start_ns = 1000000000000ull;  // one step a millisecond, no rank late
  job.start_realtime_ns = 1790000000000000000ull;
  // Enough calls to wrap the larger ring once more than a quarter, and
  // 100 more: the rings begin inside a block, not at its edge.
  job.calls = (2 * ring_mib << 20) / NCCLWATCH_SLOT_BYTES * 5 / 4 + 100;
  std::string error;
  job.end_rank = 2;
  job.ring_bytes = ring_mib << 20;
  if (!ncclwatch::bench::WriteSyntheticJob(dir, job, &error)) Die(error);
  job.first_rank = 2;
  job.end_rank = -1;
  job.ring_bytes = 2 * ring_mib << 20;
  if (!ncclwatch::bench::WriteSyntheticJob(dir, job, &error)) Die(error);
  struct Tool {
    std::string name;
    std::string cli;
    std::vector<double> wall, cpu;
    long rss = 0;
    bool healthy = true;
  };
  std::vector<Tool> tools = {{"diagnose", Cli()}};
  if (!BaseCli().empty()) tools.push_back({"base_diagnose", BaseCli()});
  const std::string out = dir + ".out";
  for (auto _ : state) {
    for (int round = 0; round < 5; ++round) {
      for (Tool& t : tools) {
        const ChildCost c = Run({"diagnose", dir}, out, 0, t.cli);
        if (!c.ok) {
          state.SkipWithError((t.name + " failed: " + FirstLine(out)).c_str());
          return;
        }
        t.healthy &= FirstLine(out).rfind("HEALTHY", 0) == 0;
        t.wall.push_back(c.wall_s);
        t.cpu.push_back(c.cpu_s);
        t.rss = std::max(t.rss, c.peak_rss_kib);
      }
    }
    state.SetIterationTime(Median(tools[0].wall));
  }
  state.counters["traces_MiB"] = static_cast<double>(FolderBytes(dir)) / 1048576.0;
  for (const Tool& t : tools) {
    state.counters[t.name + "_s"] = Median(t.wall);
    state.counters[t.name + "_cpu_s"] = Median(t.cpu);
    state.counters[t.name + "_rss_MiB"] = static_cast<double>(t.rss) / 1024.0;
    state.counters[t.name + "_healthy"] = t.healthy ? 1 : 0;
  }
  if (tools.size() > 1) {
    state.counters["x_faster_than_base"] = Median(tools[1].wall) / Median(tools[0].wall);
    state.counters["x_less_memory_than_base"] =
        static_cast<double>(tools[1].rss) / static_cast<double>(std::max(1L, tools[0].rss));
  }
  std::error_code ec;
  fs::remove(out, ec);
  if (!Root::Keep()) fs::remove_all(dir, ec);
}

}  // namespace

// Four ranks' rings of 128 and 256 MiB, wrapped at different places.
BENCHMARK(BM_DiagnoseWrapped)
    ->ArgNames({"ring_MiB"})
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(1);

// One rank's full ring of 64 and 512 MiB (4 GiB with NCCLWATCH_BENCH_LARGE),
// each shape.
BENCHMARK(BM_ReadTrace)
    ->ArgNames({"ring_MiB", "gpu", "p2p"})
    ->Args({64, 0, 0})
    ->Args({512, 0, 0})
    ->Args({512, 1, 0})
    ->Args({512, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(1);

// One node of 8 ranks: 20,000 and 100,000 collectives per rank.
BENCHMARK(BM_SummarizeNode)
    ->ArgNames({"calls"})
    ->Arg(20000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(1);

// 1,024 ranks (128 nodes) with the traces kept, each variant; 8,192 (1,024
// nodes) from summaries only (the traces deleted once
// summarized); 20,000 collectives per rank.
BENCHMARK(BM_DiagnoseJob)
    ->ArgNames({"ranks", "calls", "traces", "variant"})
    ->Args({1024, 20000, 1, kHealthy})
    ->Args({1024, 20000, 1, kMismatch})
    ->Args({1024, 20000, 1, kDead})
    ->Args({1024, 20000, 1, kStraggler})
    ->Args({8192, 20000, 0, kMismatch})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(1);

// 32,768 and 131,072 ranks, with NCCLWATCH_BENCH_LARGE set (tens of minutes
// and gigabytes of summaries here): the mismatch and the straggler (judged
// over fewer collectives per rank: analysis/arrival_skew.h) at 32,768, the
// mismatch at 131,072, from summaries only.
int main(int argc, char** argv) {
  if (getenv("NCCLWATCH_BENCH_LARGE") != nullptr) {
    benchmark::RegisterBenchmark("BM_DiagnoseJobLarge", BM_DiagnoseJob)
        ->ArgNames({"ranks", "calls", "traces", "variant"})
        ->Args({32768, 20000, 0, kMismatch})
        ->Args({32768, 20000, 0, kStraggler})
        ->Args({131072, 20000, 0, kMismatch})
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
    benchmark::RegisterBenchmark("BM_ReadTraceLarge", BM_ReadTrace)
        ->ArgNames({"ring_MiB", "gpu", "p2p"})
        ->Args({4096, 0, 0})
        ->Args({4096, 1, 0})
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}

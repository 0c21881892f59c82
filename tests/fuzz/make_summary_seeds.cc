// make_summary_seeds TRACE_SEEDS OUT_DIR: writes the summary_file_fuzzer's
// seeds, node summaries made by the decoder's own writer: of each trace
// seed alone and of them all (make_trace_seeds' wrapped rings, records
// over several slots, call slots), and of small synthetic jobs whose
// summaries leave calls out (window 64: digested blocks, GPU times counted)
// and list what the node could not read; one with sends and receives left
// out, GPU progress and inventories kept as differences. Each is written in both of the
// fuzzer's modes: its body after an even byte (the fuzzer gives it a
// well-formed header), and the whole file after an odd one. They are made
// when the fuzzers run, never checked in.

#include <stdio.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "summary/summary_format.h"
#include "summary/summary_writer.h"
#include "synthetic_trace.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::bench::SyntheticJob;
using namespace ncclwatch::decoder;

std::vector<std::string> Traces(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool Write(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

// `name`'s two seeds: the body (mode byte 0) and the whole file (mode 1).
bool Seed(const std::string& out, const std::string& name, const std::vector<std::string>& traces,
          const SummaryOptions& options) {
  absl::StatusOr<std::string> s = BuildSummary(traces, options);
  if (!s.ok()) {
    fprintf(stderr, "make_summary_seeds: %s: %s\n", name.c_str(),
            std::string(s.status().message()).c_str());
    return false;
  }
  return Write(out + "/" + name + ".body", std::string(1, '\0') + s->substr(kSummaryHeaderBytes)) &&
         Write(out + "/" + name + ".file", std::string(1, '\1') + *s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: make_summary_seeds TRACE_SEEDS OUT_DIR\n");
    return 2;
  }
  const std::string seeds = argv[1];
  const std::string out = argv[2];
  std::error_code ec;
  fs::create_directories(out, ec);
  const std::string scratch = out + "/.traces";
  fs::remove_all(scratch, ec);
  SummaryOptions options;
  options.host = "node0";
  bool ok = true;
  const std::vector<std::string> traces = Traces(seeds);
  for (size_t i = 0; i < traces.size(); ++i)
    ok &= Seed(out, "trace" + std::to_string(i), {traces[i]}, options);
  ok &= Seed(out, "all", traces, options);

  // Jobs whose summaries leave calls and GPU times out, one with a rank
  // that stopped early and was killed, and a link the node did not follow.
  struct Job {
    const char* name;
    SyntheticJob job;
  };
  std::vector<Job> jobs(2);
  jobs[0].name = "left_out";
  jobs[0].job.ranks = 2;
  jobs[0].job.calls = 800;
  jobs[0].job.gpu_times = true;
  jobs[0].job.sends = true;  // sends and receives left out as digests (format 5)
  jobs[0].job.progress = true;
  jobs[0].job.inventory = true;  // inventories as the node's plus what differs (format 6)
  jobs[1].name = "killed";
  jobs[1].job.ranks = 2;
  jobs[1].job.calls = 700;
  jobs[1].job.short_rank = 1;
  jobs[1].job.short_calls = 650;
  jobs[1].job.killed = true;
  options.window = 64;
  options.not_read.emplace_back("/tmp/ncclwatch/elsewhere.trace", "a link: not followed");
  for (const Job& j : jobs) {
    const std::string dir = scratch + "/" + j.name;
    fs::create_directories(dir, ec);
    std::string error;
    if (!ncclwatch::bench::WriteSyntheticJob(dir, j.job, &error)) {
      fprintf(stderr, "make_summary_seeds: %s: %s\n", j.name, error.c_str());
      ok = false;
      continue;
    }
    ok &= Seed(out, j.name, Traces(dir), options);
  }
  fs::remove_all(scratch, ec);
  return ok ? 0 : 1;
}

// The ncclwatch command line: every command's --help, the version from
// CMake, and explain's headline and exit codes (0 healthy, 1 a problem, 2
// input that cannot be used).

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "ncclwatch_version.h"
#include "support/traced_job.h"

namespace {

jobs::RankResult Run(const std::vector<std::string>& args) {
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout_s = 60;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  return r.ranks[0];
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("every command answers --help and -h with its usage, exit 0", "[cli]") {
  for (const std::string command :
       {"diagnose", "explain", "dump", "version", "timeline", "run", "status", "probe"}) {
    for (const std::string flag : {"--help", "-h"}) {
      INFO(command << " " << flag);
      const jobs::RankResult r = Run({command, flag});
      CHECK(r.exit_code == 0);
      CHECK(StartsWith(r.output, "usage: ncclwatch " + command));
    }
  }
  const jobs::RankResult top = Run({"--help"});
  CHECK(top.exit_code == 0);
  CHECK(top.output.find("Exit codes: 0 healthy") != std::string::npos);
  CHECK(StartsWith(Run({"help", "explain"}).output, "usage: ncclwatch explain"));
}

TEST_CASE("the version comes from CMake's project()", "[cli]") {
  const jobs::RankResult r = Run({"version"});
  CHECK(r.exit_code == 0);
  CHECK(StartsWith(r.output,
                   std::string("ncclwatch ") + ncclwatch::decoder::kNcclwatchVersion + " "));
}

TEST_CASE("unusable input and unknown options: exit 2", "[cli]") {
  CHECK(Run({"diagnose", "--frobnicate", "x"}).exit_code == 2);
  CHECK(Run({"frobnicate"}).exit_code == 2);
  CHECK(Run({"diagnose", "/nonexistent/ncclwatch-traces"}).exit_code == 2);
  jobs::TempDir empty;
  CHECK(Run({"timeline", empty.path()}).exit_code == 2);  // no -o
  const jobs::RankResult no_traces =
      Run({"timeline", empty.path(), "-o", empty.path() + "/t.pftrace"});
  CHECK(no_traces.exit_code == 2);
  CHECK(no_traces.output == "ncclwatch: no trace files (*.trace) under " + empty.path() + "\n");
  CHECK(Run({"status"}).exit_code == 2);
  CHECK(Run({"status", "/nonexistent/ncclwatch-traces"}).exit_code == 2);
  CHECK(Run({"run"}).exit_code == 2);
  CHECK(Run({"probe", "--nnodes", "2"}).exit_code == 2);  // no --master
  CHECK(Run({"probe", "-n", "zero"}).exit_code == 2);
  // `run`'s own options end at "--": the command's --help is the command's.
  CHECK(StartsWith(
      Run({"run", "--dir", empty.path() + "/t", "--", "sh", "-c", "echo ran --help"}).output,
      "ncclwatch: tracing into"));
}

TEST_CASE("explain: the headline first, exit 0 healthy and 1 a problem", "[cli]") {
  jobs::TempDir dir;
  const std::string clean = dir.path() + "/clean.log";
  std::ofstream(clean)
      << "h:1:1 [0] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>\n"
         "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId "
         "18000 commId 0x1 - Init COMPLETE\n";
  const jobs::RankResult healthy = Run({"explain", clean});
  INFO(healthy.output);
  CHECK(healthy.exit_code == 0);
  CHECK(StartsWith(healthy.output, "HEALTHY\n"));

  const std::string xid = dir.path() + "/dmesg.txt";
  std::ofstream(xid)
      << "node7:300:300 [5] NCCL INFO ncclCommInitRank comm 0x1 rank 5 nranks 8 cudaDev 5 nvmlDev "
         "5 "
         "busId 3b000 commId 0x1 - Init COMPLETE\n"
         "[123456.789012] NVRM: Xid (PCI:0000:3b:00): 79, pid=300, name=python, GPU has fallen off "
         "the bus.\n";
  const jobs::RankResult problem = Run({"explain", xid});
  INFO(problem.output);
  CHECK(problem.exit_code == 1);
  CHECK(StartsWith(problem.output, "PROBLEM: gpu_fault (rank 5)\n"));
  CHECK(problem.output.find("Root cause: GPU fault") != std::string::npos);
}

// Multi-process jobs on the simulator: real processes, real TCP bootstrap,
// real /dev/shm, checked end to end.

#include <catch2/catch.hpp>
#include <string>

#include "support/job_launcher.h"
#include "support/sim_release.h"

namespace {

jobs::JobSpec SimJob(int nranks, const std::string& program, std::vector<std::string> args = {}) {
  jobs::JobSpec spec;
  spec.nranks = nranks;
  spec.argv.push_back(jobs::BinDir() + "/" + program);
  for (auto& a : args) spec.argv.push_back(a);
  spec.env.push_back("LD_LIBRARY_PATH=" + jobs::SimLibDir());
  spec.env.push_back("NCCL_DEBUG=WARN");
  spec.timeout_s = 240;
  return spec;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The last "step K done" a rank printed, or -1.
int LastStepDone(const std::string& out) {
  int last = -1;
  size_t pos = 0;
  while ((pos = out.find("step ", pos)) != std::string::npos) {
    int k = -1;
    char tail[8] = {0};
    if (std::sscanf(out.c_str() + pos, "step %d %4s", &k, tail) == 2 && std::string(tail) == "done")
      last = k;
    pos += 5;
  }
  return last;
}

void RequireAllPassed(const jobs::JobResult& r, const std::string& done_line) {
  REQUIRE(r.error.empty());
  REQUIRE_FALSE(r.timed_out);
  for (const jobs::RankResult& rr : r.ranks) {
    INFO("rank " << rr.rank << " output:\n" << rr.output);
    CHECK(rr.exited);
    CHECK(rr.exit_code == 0);
    CHECK(Contains(rr.output, done_line));
    CHECK_FALSE(Contains(rr.output, "FAIL"));
  }
}

}  // namespace

TEST_CASE("8 ranks: every collective computes the right numbers", "[sim][jobs]") {
  jobs::JobResult r = jobs::RunJob(SimJob(8, "collectives_check"));
  RequireAllPassed(r, " failed");
  for (const jobs::RankResult& rr : r.ranks) {
    CHECK(Contains(rr.output, "rank " + std::to_string(rr.rank) + ": "));
    CHECK(Contains(rr.output, " checks, 0 failed"));
  }
}

TEST_CASE("4 ranks: every collective computes the right numbers", "[sim][jobs]") {
  jobs::JobResult r = jobs::RunJob(SimJob(4, "collectives_check"));
  RequireAllPassed(r, " checks, 0 failed");
}

TEST_CASE("3 ranks: collectives on a rank count that is not a power of two", "[sim][jobs]") {
  jobs::JobResult r = jobs::RunJob(SimJob(3, "collectives_check"));
  RequireAllPassed(r, " checks, 0 failed");
}

TEST_CASE("8 ranks: a training loop with pipeline and tensor-parallel groups", "[sim][jobs]") {
  jobs::JobResult r = jobs::RunJob(SimJob(
      8, "train_loop", {"--steps", "12", "--pipeline", "--tensor-parallel", "--size", "20000"}));
  RequireAllPassed(r, "train_loop: done");
  for (const jobs::RankResult& rr : r.ranks) CHECK(LastStepDone(rr.output) == 11);
}

TEST_CASE("the same job runs over CUDA IPC buffers when NCCL_SHM_DISABLE=1", "[sim][jobs]") {
  jobs::JobSpec spec = SimJob(4, "train_loop", {"--steps", "6", "--pipeline"});
  spec.env.push_back("NCCL_SHM_DISABLE=1");
  RequireAllPassed(jobs::RunJob(spec), "train_loop: done");
}

TEST_CASE("a rank that calls a different collective makes the job hang", "[sim][jobs][hang]") {
  // Rank 5 calls Broadcast at step 3 where everyone else calls AllReduce.
  jobs::JobSpec spec = SimJob(8, "train_loop", {"--steps", "8", "--bug", "op:5:3"});
  spec.timeout_s = 6;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  REQUIRE(r.timed_out);
  for (const jobs::RankResult& rr : r.ranks) {
    INFO("rank " << rr.rank << " output:\n" << rr.output);
    CHECK(rr.killed_at_timeout);          // still blocked when the bound came
    CHECK(LastStepDone(rr.output) == 2);  // steps 0-2 completed, step 3 never did
  }
}

TEST_CASE("a /dev/shm too small fails init with ncclSystemError and the ENOSPC WARN",
          "[sim][jobs][shm]") {
  jobs::JobSpec spec = SimJob(4, "train_loop", {"--steps", "1"});
  spec.shm_size = "16m";  // 4 ranks need 12 connections of 9637892 bytes
  spec.timeout_s = 60;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  REQUIRE_FALSE(r.timed_out);
  int enospc = 0;
  for (const jobs::RankResult& rr : r.ranks) {
    INFO("rank " << rr.rank << " output:\n" << rr.output);
    CHECK(rr.exit_code == 3);  // ncclCommInitRank failed
    if (Contains(rr.output, "No space left on device (28)")) {
      ++enospc;
      CHECK(Contains(rr.output, "NCCL WARN Error: failed to extend /dev/shm/nccl-"));
      CHECK(Contains(rr.output, " to 9637892 bytes"));
      CHECK(
          Contains(rr.output, "unhandled system error (run with NCCL_DEBUG=INFO for details) (2)"));
    }
  }
  CHECK(enospc >= 1);
}

TEST_CASE("NCCL_SOCKET_IFNAME=nosuchif: no socket interface found", "[sim][jobs][net]") {
  jobs::JobSpec spec = SimJob(4, "train_loop", {"--steps", "1"});
  spec.env.push_back("NCCL_SOCKET_IFNAME=nosuchif");
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  REQUIRE_FALSE(r.timed_out);
  const jobs::RankResult& root = r.ranks[0];
  INFO(root.output);
  CHECK(root.exit_code == 3);
  CHECK(Contains(root.output, "NCCL WARN Bootstrap : no socket interface found"));
  CHECK(
      Contains(root.output,
               "ncclGetUniqueId failed: invalid usage (run with NCCL_DEBUG=WARN for details) (5)"));
  for (int i = 1; i < 4; ++i) CHECK(r.ranks[i].exit_code == 3);
}

TEST_CASE("two ranks on one GPU fail init with Duplicate GPU detected", "[sim][jobs]") {
  jobs::JobSpec spec = SimJob(4, "train_loop", {"--steps", "1"});
  spec.ranks[0].env.push_back("JOB_DEVICE=0");
  spec.ranks[1].env.push_back("JOB_DEVICE=0");
  spec.timeout_s = 60;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE_FALSE(r.timed_out);
  CHECK(Contains(r.ranks[0].output,
                 "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 18000"));
  CHECK(Contains(r.ranks[1].output,
                 "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 18000"));
  for (const jobs::RankResult& rr : r.ranks) {
    INFO("rank " << rr.rank << " output:\n" << rr.output);
    CHECK(rr.exit_code == 3);
  }
  CHECK(Contains(r.ranks[0].output, "invalid usage"));
  // The others lose their peers mid-bootstrap.
  CHECK(Contains(r.ranks[2].output + r.ranks[3].output,
                 "remote process exited or there was a network error"));
}

TEST_CASE("a rank reporting another NCCL version fails everyone's init", "[sim][jobs]") {
  jobs::JobSpec spec = SimJob(4, "train_loop", {"--steps", "1"});
  spec.ranks[2].env.push_back("NCCLSIM_NCCL_VERSION=2.27.3");
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE_FALSE(r.timed_out);
  for (const jobs::RankResult& rr : r.ranks) {
    INFO("rank " << rr.rank << " output:\n" << rr.output);
    CHECK(rr.exit_code == 3);
    CHECK(Contains(rr.output, "Mismatched NCCL version detected : rank "));
  }
  CHECK(Contains(r.ranks[0].output,
                 "rank 2 version 22703 rank 0 version " + std::to_string(jobs::SimNcclVersion())));
}

TEST_CASE("a GPU fault: the faulting rank sees the error, its peers hang", "[sim][jobs]") {
  jobs::JobSpec spec = SimJob(4, "train_loop", {"--steps", "6"});
  spec.ranks[1].env.push_back("NCCLSIM_GPU_FAULT=2:ecc");  // its third collective
  spec.timeout_s = 6;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.timed_out);
  const jobs::RankResult& bad = r.ranks[1];
  INFO("rank 1 output:\n" << bad.output);
  CHECK(bad.exit_code == 2);
  CHECK(Contains(bad.output, "uncorrectable ECC error encountered"));
  CHECK(LastStepDone(bad.output) == 1);
  for (int i : {0, 2, 3}) {
    INFO("rank " << i << " output:\n" << r.ranks[i].output);
    CHECK(r.ranks[i].killed_at_timeout);
    CHECK(LastStepDone(r.ranks[i].output) == 1);
  }
}

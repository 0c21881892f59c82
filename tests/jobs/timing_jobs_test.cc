// The right rank under real timing: failures whose diagnosis used to depend on
// how the launcher, the machine's load or the ring's size happened to fall.
// Each is reproduced for real on the simulator under the preloaded shim and
// must give the same exact verdict every run (scripts/soak-timing.sh repeats
// them on a busy machine).
//
// In train_loop, step k's world AllReduce is collective #(k + k/4) of the
// world communicator (a Broadcast follows every 4th step's AllReduce); with
// --no-sync there is no Broadcast, and step k's AllReduce is #k.

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "model/process_trace.h"
#include "support/traced_job.h"

namespace {

struct Scenario {
  jobs::TempDir dir;
  jobs::JobResult job;
  jobs::DiagnosisView diagnosis;
  std::string world;
};

jobs::JobSpec Spec(const Scenario& s, int nranks, const std::vector<std::string>& args,
                   double bound) {
  jobs::JobSpec spec = jobs::TracedJobSpec(nranks, "train_loop", args, s.dir.path());
  spec.timeout_s = bound;
  return spec;
}

void Finish(Scenario* s) {
  REQUIRE(s->job.error.empty());
  s->diagnosis = jobs::Diagnose({s->dir.path()});
  s->world = jobs::CommId(s->dir.path(), 0, "ncclCommInitRank");
  INFO("diagnosis:\n" << s->diagnosis.output);
  REQUIRE(s->diagnosis.parsed);
  REQUIRE_FALSE(s->world.empty());
}

const jobs::FindingView& RequireRoot(const jobs::DiagnosisView& d, const std::string& kind) {
  INFO("diagnosis:\n" << d.output);
  CHECK(d.exit_code == 1);
  CHECK(d.verdict == "problem");
  const jobs::FindingView* root = d.Root();
  REQUIRE(root != nullptr);
  REQUIRE(root->kind == kind);
  CHECK(&d.findings.front() == root);
  CHECK_FALSE(root->detail.empty());
  CHECK_FALSE(root->fix.empty());
  return *root;
}

// No finding but the root cause may blame a rank.
void OnlyRootBlames(const jobs::DiagnosisView& d) {
  for (const auto& other : d.findings)
    if (&other != d.Root()) CHECK(other.role != "root_cause");
}

bool Mentions(const jobs::FindingView& f, const std::string& words) {
  return f.detail.find(words) != std::string::npos || f.fix.find(words) != std::string::npos;
}

uint64_t StepSeq(int step) { return static_cast<uint64_t>(step + step / 4); }

}  // namespace

// torchrun's way: when a worker dies, the others get SIGTERM at once. Rank 2
// is killed (SIGKILL, as the OOM killer does) inside step 16's AllReduce
// (#20) while rank 0 is 2 s into a checkpoint outside NCCL; 0.3 s later the
// launcher SIGTERMs ranks 0, 1 and 3. The dead rank is the one without a
// recorded SIGTERM, however short the gap; rank 0 did nothing wrong.
TEST_CASE("OOM kill inside a collective, the rest torn down 0.3 s later: the dead rank is named",
          "[timing]") {
  Scenario s;
  jobs::JobSpec spec = Spec(s, 4,
                            {"--steps", "40", "--bug", "kill-in:2:16", "--bug", "checkpoint:0:16",
                             "--checkpoint-ms", "3000"},
                            30);
  spec.teardown_after_failure_s = 0.3;
  s.job = jobs::RunJob(spec);
  Finish(&s);
  CHECK(s.job.ranks[2].signal == SIGKILL);
  CHECK(s.job.ranks[0].signal == SIGTERM);
  const auto& f = RequireRoot(s.diagnosis, "rank_died");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(16));
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.raw.fields().at("signal").has_null_value());
  OnlyRootBlames(s.diagnosis);
  for (const auto& other : s.diagnosis.findings) {
    if (&other == s.diagnosis.Root()) continue;
    INFO(other.kind << " " << other.detail);
    CHECK(other.ranks != std::vector<int>{0});
  }
}

// A walltime: SIGTERM to every rank at once while the job progresses. The job
// did not finish, so it is not healthy; but nothing was stuck: no rank is
// blamed, and no hardware is suspected.
TEST_CASE("a healthy job killed at its walltime: killed while running, no rank blamed",
          "[timing]") {
  Scenario s;
  jobs::JobSpec spec =
      Spec(s, 4, {"--steps", "1000000", "--size", "64", "--pipeline", "--step-ms", "20"}, 4);
  s.job = jobs::RunJob(spec);
  Finish(&s);
  for (const auto& r : s.job.ranks) CHECK(r.signal == SIGTERM);
  const auto& f = RequireRoot(s.diagnosis, "killed_while_running");
  CHECK(f.ranks.empty());
  CHECK(f.String("signal") == "SIGTERM");
  CHECK_FALSE(Mentions(f, "GPU"));
  CHECK_FALSE(Mentions(f, "NIC"));
  REQUIRE(f.raw.fields().count("last_progress"));
  CHECK(f.raw.fields().at("last_progress").list_value().values_size() == 4);
  INFO("diagnosis:\n" << s.diagnosis.output);  // what else was found, when a run finds more
  // Nothing else, but for one thing a busy machine really does to this job:
  // four ranks share two CPUs here, and when the scheduler keeps one of them
  // late for a hundred steps, its trace shows a host straggler, truly (seen
  // beside two busy loops and a build: 3.9 ms late at a 28 ms interval, for
  // the last 98 of 159 collectives). That is a warning about the ranks'
  // pace, never a rank blamed for the kill.
  for (const auto& other : s.diagnosis.findings) {
    if (&other == &f) continue;
    INFO(other.kind << " (" << other.role << "): " << other.detail);
    CHECK(other.kind == "straggler");
    CHECK(other.role == "warning");
    CHECK(other.String("cause") == "host");
  }
}

// Rank 3 never calls ncclCommSplit and goes on to the world's first
// AllReduce; ranks 0-2 wait inside the split. The rank that went elsewhere is
// the root cause, with what it did instead.
TEST_CASE("one rank skips ncclCommSplit: that rank is named, with what it did instead",
          "[timing]") {
  Scenario s;
  s.job =
      jobs::RunJob(Spec(s, 4, {"--steps", "8", "--tensor-parallel", "--bug", "skip-split:3:0"}, 6));
  Finish(&s);
  const auto& f = RequireRoot(s.diagnosis, "missing_rank");
  CHECK(f.comm == s.world);
  CHECK(f.ranks == std::vector<int>{3});
  CHECK(f.String("call") == "ncclCommSplit");
  CHECK(f.String("did_instead").find("AllReduce #0") != std::string::npos);
  CHECK(f.String("phase") == "startup");
  CHECK_FALSE(Mentions(f, "ncclCommInitRank"));
  OnlyRootBlames(s.diagnosis);
}

// A GPU fault (ECC) under a send/receive, not a collective: the fault must be
// in the faulting rank's trace before it can exit.
TEST_CASE("a GPU fault under a send/receive: the fault reaches the trace and is the root cause",
          "[timing]") {
  Scenario s;
  jobs::JobSpec spec = Spec(s, 8, {"--steps", "30", "--size", "256", "--pipeline"}, 6);
  // Operations: step k's AllReduce, then its send/receive group; NCCL
  // operation #12 of rank 2 is step 5's exchange (a Broadcast after step 3).
  spec.ranks[2].env.push_back("NCCLSIM_GPU_FAULT=12:ecc");
  s.job = jobs::RunJob(spec);
  Finish(&s);
  const auto trace = [&] {
    auto t = ncclwatch::decoder::LoadProcessTrace(jobs::TraceOf(s.dir.path(), 2));
    REQUIRE(t.ok());
    return *std::move(t);
  }();
  REQUIRE_FALSE(trace.cuda_errors.empty());
  CHECK(trace.cuda_errors[0].name == "CUDA_ERROR_ECC_UNCORRECTABLE");
  const auto& f = RequireRoot(s.diagnosis, "gpu_fault");
  CHECK(f.comm == s.world);
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.String("cuda_error") == "CUDA_ERROR_ECC_UNCORRECTABLE");
  OnlyRootBlames(s.diagnosis);
}

// The same fault, on a rank that aborts at once when its next CUDA call
// fails (PyTorch's watchdog ends a process with abort()), or leaves through
// _exit: the last poll happens in the dying process, so the fault is in its
// trace however soon after it came.
TEST_CASE("a GPU fault, then an immediate abort or _exit: the fault still reaches the trace",
          "[timing]") {
  const std::string how = GENERATE(std::string("abort"), std::string("_exit"));
  Scenario s;
  jobs::JobSpec spec = Spec(s, 4, {"--steps", "30", "--size", "256", "--pipeline"}, 6);
  spec.ranks[2].env.push_back("NCCLSIM_GPU_FAULT=12:ecc");
  spec.ranks[2].env.push_back("JOB_ON_ERROR=" + how);
  s.job = jobs::RunJob(spec);
  Finish(&s);
  INFO(how);
  if (how == "abort") CHECK(s.job.ranks[2].signal == SIGABRT);
  auto t = ncclwatch::decoder::LoadProcessTrace(jobs::TraceOf(s.dir.path(), 2));
  REQUIRE(t.ok());
  REQUIRE_FALSE(t->cuda_errors.empty());
  CHECK(t->cuda_errors[0].name == "CUDA_ERROR_ECC_UNCORRECTABLE");
  const auto& f = RequireRoot(s.diagnosis, "gpu_fault");
  CHECK(f.ranks == std::vector<int>{2});
  OnlyRootBlames(s.diagnosis);
}

// A receive of N-1 elements against a send of N, and the step's collectives
// after it: the mismatch is the earliest evidence, whichever rank reached the
// next collective first.
TEST_CASE("a receive one element short, then a collective: the count mismatch, every run",
          "[timing]") {
  Scenario s;
  s.job =
      jobs::RunJob(Spec(s, 8, {"--steps", "8", "--pipeline", "--bug", "p2p-recv-count:3:1"}, 6));
  Finish(&s);
  const auto& f = RequireRoot(s.diagnosis, "p2p_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == 1);
  CHECK(f.ranks == std::vector<int>{2, 3});
  CHECK(f.field == "count");
  OnlyRootBlames(s.diagnosis);
}

// The ring laps while the GPUs stall at a count mismatch and the hosts go on
// enqueuing: the operation the hang is about is kept where the ring cannot
// lap it, so the mismatch is still named with its arguments.
TEST_CASE("history overwritten past a stalled mismatch: the hung operation is kept", "[timing]") {
  Scenario s;
  jobs::JobSpec spec =
      Spec(s, 4, {"--steps", "1000", "--size", "64", "--no-sync", "--bug", "count:2:5"}, 6);
  spec.env.push_back("NCCLWATCH_RING_SIZE=64K");
  s.job = jobs::RunJob(spec);
  Finish(&s);
  const auto& f = RequireRoot(s.diagnosis, "collective_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == 5);
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.field == "count");
  CHECK_FALSE(Mentions(f, "NIC"));
}

// 6 s into a hang (three ranks in #12, rank 1 idle outside NCCL): not stuck
// yet by the live rule (10 s), but never "healthy": running, with what is
// pending, for how long, and who has not entered.
TEST_CASE("a live diagnosis early in a hang says running, with who has not entered", "[timing]") {
  Scenario s;
  // The job hangs until the live diagnosis is taken, however slow the
  // machine; the bound is a backstop.
  jobs::LiveJob job(Spec(s, 4, {"--steps", "30", "--bug", "hang:1:10"}, 300));
  // Wait until rank 0 has entered #12 (so rank 1 has stopped before it),
  // then 6 s more.
  const auto start = std::chrono::steady_clock::now();
  bool entered = false;
  while (!entered && std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string trace = jobs::TraceOf(s.dir.path(), 0);
    if (trace.empty()) continue;
    auto t = ncclwatch::decoder::LoadProcessTrace(trace);
    entered = t.ok() && !t->collectives.empty() && t->collectives.back().seq == StepSeq(10);
  }
  REQUIRE(entered);
  std::this_thread::sleep_for(std::chrono::seconds(6));
  const jobs::DiagnosisView live = jobs::Diagnose({s.dir.path()});
  s.job = job.End();
  INFO("live diagnosis:\n" << live.output);
  CHECK(live.verdict == "running");
  CHECK(live.exit_code == 0);
  REQUIRE(live.raw.fields().count("pending"));
  const auto& pending = live.raw.fields().at("pending").list_value();
  REQUIRE(pending.values_size() >= 1);
  const auto& p = pending.values(0).struct_value().fields();
  CHECK(p.at("seq").number_value() == StepSeq(10));
  CHECK(p.at("not_entered").list_value().values_size() == 1);
  CHECK(p.at("not_entered").list_value().values(0).number_value() == 1);
  CHECK(p.at("pending_s").number_value() >= 5.0);
}

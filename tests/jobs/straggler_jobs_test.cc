// Fail-slow, for real on the simulator under the preloaded shim: a rank
// whose host is slow (train_loop --slow-host: it spends time in host code
// before each step, as a slow data loader does) is named the straggler, with
// the communicator, how often and by how much, and since when; the job stays
// healthy (a warning). A rank whose GPU is slow (NCCLSIM_SLOW_GPU: its
// device's work takes longer on the stream while its host enqueues at once)
// is named with cause gpu, never host. A rank whose link is slow
// (NCCLSIM_SLOW_LINK: every operation that moves its data is held, so its
// communicators' collectives finish late on every member while every host
// and GPU arrive in time) is named with cause link, found by intersecting
// the pairs whose collectives took long; never host or GPU. A job whose
// every rank is slowed at random (--jitter) names no one.
//
// In train_loop, step k's world AllReduce is collective #(k + k/4) of the
// world communicator (a Broadcast follows every 4th step's AllReduce).

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/traced_job.h"

namespace {

struct Scenario {
  jobs::TempDir dir;
  jobs::JobResult job;
  jobs::DiagnosisView diagnosis;
  std::string world;
};

void Run(Scenario* s, int nranks, const std::vector<std::string>& args,
         const std::vector<std::string>& env = {}) {
  jobs::JobSpec spec = jobs::TracedJobSpec(nranks, "train_loop", args, s->dir.path());
  for (const std::string& e : env) spec.env.push_back(e);
  spec.timeout_s = 60;
  s->job = jobs::RunJob(spec);
  REQUIRE(s->job.error.empty());
  for (const auto& r : s->job.ranks) CHECK(r.exit_code == 0);
  s->diagnosis = jobs::Diagnose({s->dir.path()});
  s->world = jobs::CommId(s->dir.path(), 0, "ncclCommInitRank");
  INFO("diagnosis:\n" << s->diagnosis.output);
  REQUIRE(s->diagnosis.parsed);
  REQUIRE_FALSE(s->world.empty());
  // Slow or not, the job itself is healthy.
  CHECK(s->diagnosis.verdict == "healthy");
  CHECK(s->diagnosis.exit_code == 0);
}

std::vector<const jobs::FindingView*> Stragglers(const jobs::DiagnosisView& d) {
  std::vector<const jobs::FindingView*> out;
  for (const auto& f : d.findings)
    if (f.kind == "straggler") out.push_back(&f);
  return out;
}

std::vector<std::string> Strings(const jobs::FindingView& f, const std::string& key) {
  std::vector<std::string> out;
  const auto& fields = f.raw.fields();
  auto it = fields.find(key);
  if (it == fields.end()) return out;
  for (const auto& v : it->second.list_value().values()) out.push_back(v.string_value());
  return out;
}

double Number(const jobs::FindingView& f, const std::string& key) {
  const auto& fields = f.raw.fields();
  auto it = fields.find(key);
  return it == fields.end() ? -1 : it->second.number_value();
}

}  // namespace

// 8 ranks: data parallel over all, tensor-parallel pairs, a pipeline of
// sends and receives; rank 5's host takes 40 ms more per step (far above
// what a busy machine's scheduling adds to any rank).
TEST_CASE("a slow host is named the straggler with its figures, and the job stays healthy",
          "[straggler]") {
  Scenario s;
  Run(&s, 8,
      {"--steps", "80", "--tensor-parallel", "--pipeline", "--step-ms", "10", "--slow-host",
       "5:0:40"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  const auto found = Stragglers(s.diagnosis);
  REQUIRE(found.size() == 1);
  const jobs::FindingView& f = *found[0];
  CHECK(f.role == "warning");
  CHECK(f.comm == s.world);
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(f.String("cause") == "host");
  CHECK(f.String("call") == "AllReduce");
  CHECK(Number(f, "times_last") >= 40);  // of 80 AllReduces
  CHECK(Number(f, "median_late_s") >= 0.020);
  // Slow from step 0; the first few collectives may still be dominated by
  // the ranks' start-up skew (connections made at a communicator's first
  // collectives), and the straggling dated a little after.
  CHECK(Number(f, "began_seq") <= 15);
  CHECK(f.detail.find("rank 5 enqueued last in ") == 0);
  CHECK(f.fix.find("py-spy dump") != std::string::npos);
}

// Two nodes (each rank pair in a UTS namespace of its own host name, as a
// rank on another machine has): the hosts' clocks are aligned by the job's
// own collectives before the arrivals are compared, and the finding says to
// within how much. (The two hosts here share one clock, so what is asserted
// is that the alignment names the same straggler, and says it aligned. The
// simulator has no inter-node transport: NCCL_HOSTID, NCCL's own setting,
// makes its NCCL take the two for one node, as their names differ.)
TEST_CASE("across two hosts, their clocks aligned by the collectives, the slow host is named",
          "[straggler]") {
  Scenario s;
  jobs::JobSpec spec = jobs::TracedJobSpec(
      4, "train_loop", {"--steps", "80", "--step-ms", "10", "--slow-host", "2:0:40"}, s.dir.path());
  for (int r = 0; r < 4; ++r) spec.ranks[r].hostname = r < 2 ? "node-a" : "node-b";
  spec.env.push_back("NCCL_HOSTID=straggler-two-hosts");
  spec.timeout_s = 60;
  s.job = jobs::RunJob(spec);
  REQUIRE(s.job.error.empty());
  for (const auto& r : s.job.ranks) CHECK(r.exit_code == 0);
  s.diagnosis = jobs::Diagnose({s.dir.path()});
  s.world = jobs::CommId(s.dir.path(), 0, "ncclCommInitRank");
  INFO("diagnosis:\n" << s.diagnosis.output);
  REQUIRE(s.diagnosis.parsed);
  CHECK(s.diagnosis.verdict == "healthy");
  const auto found = Stragglers(s.diagnosis);
  REQUIRE(found.size() == 1);
  const jobs::FindingView& f = *found[0];
  CHECK(f.comm == s.world);
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.String("cause") == "host");
  CHECK(Number(f, "hosts") == 2);
  CHECK(f.Bool("clocks_aligned"));
  // One clock in truth: what is left after aligning is the collectives'
  // spread in finishing (a busy machine spreads it), under the 40 ms the
  // slow host adds.
  CHECK(Number(f, "clock_residual_s") >= 0);
  CHECK(Number(f, "clock_residual_s") < 0.040);
  CHECK(f.detail.find("2 hosts, whose clocks were aligned by the job's own collectives") !=
        std::string::npos);
}

// From step 40 on, rank 1's host is slow: dated at that step's AllReduce.
TEST_CASE("a straggler that starts mid-job is dated", "[straggler]") {
  Scenario s;
  Run(&s, 4, {"--steps", "100", "--step-ms", "10", "--slow-host", "1:40:40"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  const auto found = Stragglers(s.diagnosis);
  REQUIRE(found.size() == 1);
  const jobs::FindingView& f = *found[0];
  CHECK(f.comm == s.world);
  CHECK(f.ranks == std::vector<int>{1});
  CHECK(f.raw.fields().at("began_later").bool_value());
  // Step 40's AllReduce is #50 (the broadcasts in between mostly arrive
  // together); on a busy machine a rank is sometimes last by chance just
  // before, and the change point may fall a collective or two late, or
  // early by as many as the machine held it back: under the ASan suite with
  // two more jobs beside it, rank 1 came last in most of #39-#49 and the
  // change point fell at #39 (the least part ChangePoint splits off is 6).
  CHECK(Number(f, "began_seq") >= 36);
  CHECK(Number(f, "began_seq") <= 53);
  CHECK(f.detail.find("it began at collective #") != std::string::npos);
}

// The issue's bar: 8 ranks (data parallel, tensor-parallel pairs, a
// pipeline), rank 5's host slow from step 500 of 700: named within the 200
// steps it straggles, and dated at step 500's AllReduce, world collective
// #625 (a Broadcast follows every 4th step's AllReduce).
TEST_CASE("a straggler that starts at step 500 of 700 is named within 200 steps and dated",
          "[straggler]") {
  Scenario s;
  Run(&s, 8,
      {"--steps", "700", "--tensor-parallel", "--pipeline", "--step-ms", "10", "--slow-host",
       "5:500:30"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  const auto found = Stragglers(s.diagnosis);
  const jobs::FindingView* world = nullptr;
  for (const jobs::FindingView* x : found)
    if (x->comm == s.world) world = x;
  REQUIRE(world != nullptr);
  const jobs::FindingView& f = *world;
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(f.String("cause") == "host");
  CHECK(f.raw.fields().at("began_later").bool_value());
  // Within 8 steps of it: on a busy machine (the suite beside a build) the
  // ranks before step 500 are sometimes last by chance in a run, and the
  // change point moves by a few (619 seen).
  CHECK(Number(f, "began_seq") >= 615);
  CHECK(Number(f, "began_seq") <= 635);
  CHECK(Number(f, "times_last") >= 100);  // of the 200 AllReduces since
  // Rank 5's other communicators are named in the same finding, never
  // apart. On a busy machine (ctest -j2 beside a build) one rank of a
  // tensor-parallel pair can, for real, come last in most of its pair's
  // AllReduces: the scheduler holds its process back by a few
  // milliseconds after each step. That is a straggler by the rule, and
  // the machine's, not the test's; it may be named beside rank 5, but never
  // with a lateness of rank 5's size (30 ms a step).
  for (const jobs::FindingView* x : found) {
    if (x == world) continue;
    CHECK(x->ranks != std::vector<int>{5});
    CHECK(Number(*x, "members") == 2);
    CHECK(Number(*x, "median_late_s") < Number(f, "median_late_s") / 4);
  }
}

// Every rank's step varies by +-40 % of 50 ms: nobody is a straggler. (The
// jitter is wide against what a busy machine's scheduling adds: on 2 cores
// under load, one process can be descheduled by 10 ms again and again, and
// then it is, for real, the rank the others wait for.)
TEST_CASE("random jitter on every rank names no straggler", "[straggler]") {
  Scenario s;
  Run(&s, 4, {"--steps", "80", "--step-ms", "50", "--jitter", "40"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(Stragglers(s.diagnosis).empty());
  CHECK(s.diagnosis.findings.empty());
}

// The issue's bar: an 8-rank job (data parallel, tensor-parallel pairs, a
// pipeline) whose every rank's step varies at random within +-20 % names no
// straggler in 20 runs of 20. Each run's ranks draw their own jitter (seeded
// by pid), and a busy machine adds its own: five runs per test case, four
// cases, so that ctest can run them side by side.
void JitterRuns(int first) {
  for (int run = first; run < first + 5; ++run) {
    Scenario s;
    Run(&s, 8,
        {"--steps", "60", "--tensor-parallel", "--pipeline", "--step-ms", "20", "--jitter", "20"});
    INFO("run " << run << " of 20, diagnosis:\n" << s.diagnosis.output);
    CHECK(Stragglers(s.diagnosis).empty());
    CHECK(s.diagnosis.findings.empty());
  }
}
TEST_CASE("jitter of 20 percent on every rank of 8 names no straggler, runs 1-5", "[straggler]") {
  JitterRuns(1);
}
TEST_CASE("jitter of 20 percent on every rank of 8 names no straggler, runs 6-10", "[straggler]") {
  JitterRuns(6);
}
TEST_CASE("jitter of 20 percent on every rank of 8 names no straggler, runs 11-15", "[straggler]") {
  JitterRuns(11);
}
TEST_CASE("jitter of 20 percent on every rank of 8 names no straggler, runs 16-20", "[straggler]") {
  JitterRuns(16);
}

// 8 ranks as above; GPU 5 (rank 5's: train_loop takes the device of its
// local rank) is slow: each copy on it takes 20 ms more, so its stream
// reaches each step's AllReduce 20 ms late while its host enqueues at once.
// Its host waits on its GPU at the end of each step, so it enqueues the next
// step's collectives late too: its GPU still comes later than that, which
// names the GPU, and the host is not named as well.
TEST_CASE("a slow GPU is named the straggler with cause gpu, and the job stays healthy",
          "[straggler]") {
  Scenario s;
  Run(&s, 8, {"--steps", "80", "--tensor-parallel", "--pipeline", "--step-ms", "10"},
      {"NCCLSIM_SLOW_GPU=5:0:20"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  const auto found = Stragglers(s.diagnosis);
  REQUIRE(found.size() == 1);
  const jobs::FindingView& f = *found[0];
  CHECK(f.role == "warning");
  CHECK(f.comm == s.world);
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(f.String("cause") == "gpu");
  CHECK(f.String("call") == "AllReduce");
  CHECK(Number(f, "times_last") >= 40);  // of 80 AllReduces
  CHECK(Number(f, "median_late_s") >= 0.015);
  CHECK(Number(f, "began_seq") <= 15);
  CHECK(f.detail.find("rank 5 reached the GPU last in ") == 0);
  CHECK(f.detail.find("its GPU reaches them late") != std::string::npos);
  CHECK(f.fix.find("nvidia-smi -q -d PERFORMANCE,CLOCK") != std::string::npos);
}

// A slow GPU from its 124th copy on: step 50 of train_loop without the
// pipeline (2 copies a step, 2 more every 4th), whose AllReduce is
// collective #62: dated.
TEST_CASE("a slow GPU that starts mid-job is dated", "[straggler]") {
  Scenario s;
  Run(&s, 4, {"--steps", "100", "--step-ms", "10"}, {"NCCLSIM_SLOW_GPU=2:124:20"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  const auto found = Stragglers(s.diagnosis);
  REQUIRE(found.size() == 1);
  const jobs::FindingView& f = *found[0];
  CHECK(f.comm == s.world);
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.String("cause") == "gpu");
  CHECK(f.raw.fields().at("began_later").bool_value());
  CHECK(Number(f, "began_seq") >= 58);
  CHECK(Number(f, "began_seq") <= 66);
}

// 8 ranks in a grid (train_loop --3d): tensor-parallel pairs (4, 5),
// data-parallel pairs (5, 7), stage pairs (1, 5), all AllReducing each step,
// and the pipeline's sends. GPU 5's link is slow: each of its operations
// holds its data 30 ms. Its three pairs are slow against the other nine, and
// rank 5 is the one member they share. The ranks that waited on its
// collectives enqueue their next step late, and are not named for it.
TEST_CASE("a slow link is named with cause link, at the rank its slow pairs share", "[straggler]") {
  Scenario s;
  Run(&s, 8, {"--steps", "40", "--3d", "--pipeline", "--step-ms", "10"},
      {"NCCLSIM_SLOW_LINK=5:0:30"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  const auto found = Stragglers(s.diagnosis);
  REQUIRE(found.size() == 1);
  const jobs::FindingView& f = *found[0];
  CHECK(f.role == "warning");
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(f.String("cause") == "link");
  CHECK(f.String("call") == "AllReduce");
  // Its tensor-parallel, data-parallel and stage pairs: the first it named,
  // the others after.
  std::vector<std::string> pairs;
  for (int i = 0; i < 3; ++i) pairs.push_back(jobs::CommId(s.dir.path(), 5, "ncclCommSplit", i));
  std::vector<std::string> named = Strings(f, "also_comms");
  named.push_back(f.comm);
  std::sort(pairs.begin(), pairs.end());
  std::sort(named.begin(), named.end());
  CHECK(named == pairs);
  CHECK(Number(f, "times_last") >= 20);  // of 40 AllReduces
  CHECK(Number(f, "median_late_s") >= 0.020);
  CHECK(Number(f, "kind_comms") == 12);
  CHECK(f.detail.find("the link of rank 5 is slow: ") == 0);
  CHECK(f.fix.find("ibstat") != std::string::npos);
}

// The same grid with GPU 5 slow instead: named for its GPU, no link.
TEST_CASE("a slow GPU in a grid of pairs is not taken for a slow link", "[straggler]") {
  Scenario s;
  Run(&s, 8, {"--steps", "60", "--3d", "--step-ms", "10"}, {"NCCLSIM_SLOW_GPU=5:0:30"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  const auto found = Stragglers(s.diagnosis);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->ranks == std::vector<int>{5});
  CHECK(found[0]->String("cause") == "gpu");
}

// The same grid with rank 5's host slow: named for its host, no link.
TEST_CASE("a slow host in a grid of pairs is not taken for a slow link", "[straggler]") {
  Scenario s;
  Run(&s, 8, {"--steps", "60", "--3d", "--step-ms", "10", "--slow-host", "5:0:40"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  const auto found = Stragglers(s.diagnosis);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->ranks == std::vector<int>{5});
  CHECK(found[0]->String("cause") == "host");
  CHECK(found[0]->comm == s.world);
}

// And with every rank's step varied at random: no one, no link.
TEST_CASE("random jitter in a grid of pairs names no slow link", "[straggler]") {
  Scenario s;
  Run(&s, 8, {"--steps", "60", "--3d", "--step-ms", "50", "--jitter", "40"});
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(Stragglers(s.diagnosis).empty());
}

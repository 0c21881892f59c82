// Every failure class ncclwatch claims, reproduced for real: an 8-rank job on
// the simulator with libncclwatch.so preloaded goes wrong as a real one would
// (hangs are ended by the launcher with SIGTERM, then SIGKILL, as a
// scheduler would), and `ncclwatch diagnose --json` must name exactly the
// kind, communicator, sequence number, ranks and field.
//
// In train_loop, step k's world AllReduce is collective #(k + k/4) of the
// world communicator (a Broadcast follows every 4th step's AllReduce).

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/traced_job.h"

namespace {

struct Scenario {
  jobs::TempDir dir;
  jobs::JobResult job;
  jobs::DiagnosisView diagnosis;
  std::string world;  // the world communicator's identity
};

// Runs train_loop on 8 ranks with `args`; a job expected to hang gets `bound` seconds.
void Run(Scenario* s, const std::vector<std::string>& args, double bound = 6) {
  jobs::JobSpec spec = jobs::TracedJobSpec(8, "train_loop", args, s->dir.path());
  spec.timeout_s = bound;
  s->job = jobs::RunJob(spec);
  REQUIRE(s->job.error.empty());
  s->diagnosis = jobs::Diagnose({s->dir.path()});
  s->world = jobs::CommId(s->dir.path(), 0, "ncclCommInitRank");
  INFO("diagnosis:\n" << s->diagnosis.output);
  REQUIRE(s->diagnosis.parsed);
  REQUIRE_FALSE(s->world.empty());
}

const jobs::FindingView& RequireRoot(const Scenario& s, const std::string& kind) {
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 1);
  CHECK(s.diagnosis.verdict == "problem");
  const jobs::FindingView* root = s.diagnosis.Root();
  REQUIRE(root != nullptr);
  REQUIRE(root->kind == kind);
  CHECK(&s.diagnosis.findings.front() == root);  // the root cause comes first
  CHECK_FALSE(root->detail.empty());
  CHECK_FALSE(root->fix.empty());
  return *root;
}

uint64_t StepSeq(int step) { return static_cast<uint64_t>(step + step / 4); }

}  // namespace

TEST_CASE("healthy: a clean job with splits, groups and P2P gives no finding at all",
          "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "12", "--pipeline", "--tensor-parallel"}, 120);
  for (const auto& r : s.job.ranks) REQUIRE(r.exit_code == 0);
  INFO(s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 0);
  CHECK(s.diagnosis.verdict == "healthy");
  CHECK(s.diagnosis.findings.empty());
}

TEST_CASE("collective_mismatch, field op: one rank calls Broadcast where the others AllReduce",
          "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "op:5:3"});
  const auto& f = RequireRoot(s, "collective_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(3));
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(f.field == "op");
  CHECK(f.detail.find("rank 5 called Broadcast(count=4096, float32, root=0) as collective #3") !=
        std::string::npos);
  CHECK(f.detail.find("where ranks 0-4,6-7 called AllReduce(count=4096, float32, avg)") !=
        std::string::npos);

  // The human report opens with the headline: the root cause's kind, where, and who.
  const jobs::DiagnosisView human = jobs::Diagnose({s.dir.path()}, false);
  CHECK(human.exit_code == 1);
  CHECK(human.output.rfind("PROBLEM: collective_mismatch on communicator " + s.world.substr(0, 6) +
                               " #3 (rank 5)\n",
                           0) == 0);
}

TEST_CASE("collective_mismatch, field count", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "count:2:1"});
  const auto& f = RequireRoot(s, "collective_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(1));
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.field == "count");
}

TEST_CASE("collective_mismatch, field datatype", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "dtype:3:1"});
  const auto& f = RequireRoot(s, "collective_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(1));
  CHECK(f.ranks == std::vector<int>{3});
  CHECK(f.field == "datatype");
}

TEST_CASE("collective_mismatch, field redop", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "redop:1:2"});
  const auto& f = RequireRoot(s, "collective_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(2));
  CHECK(f.ranks == std::vector<int>{1});
  CHECK(f.field == "redop");
}

TEST_CASE("collective_mismatch, field root", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "root:6:3"});
  const auto& f = RequireRoot(s, "collective_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(3) + 1);  // the Broadcast right after step 3's AllReduce
  CHECK(f.ranks == std::vector<int>{6});
  CHECK(f.field == "root");
}

TEST_CASE("missing_rank: uneven iteration counts, the short rank destroys and exits",
          "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--rank-steps", "3:5"});
  const auto& f = RequireRoot(s, "missing_rank");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(5));
  CHECK(f.ranks == std::vector<int>{3});
  CHECK(f.String("did_instead") == "destroyed the communicator");
}

TEST_CASE("missing_rank: a rank exits cleanly without destroying its communicator", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "exit:1:2"});
  const auto& f = RequireRoot(s, "missing_rank");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(2));
  CHECK(f.ranks == std::vector<int>{1});
  CHECK(f.String("did_instead") == "exited (code 0)");
}

TEST_CASE("missing_rank: a rank aborts its communicator", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "abort:2:3"});
  const auto& f = RequireRoot(s, "missing_rank");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(3));
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.String("did_instead") == "aborted the communicator");
}

TEST_CASE("missing_rank: a rank alive but stuck outside NCCL", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "hang:2:4"});
  const auto& f = RequireRoot(s, "missing_rank");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(4));
  CHECK(f.ranks == std::vector<int>{2});
  // Its heartbeat went on until the launcher's SIGTERM, with no NCCL call pending.
  CHECK(f.String("did_instead") ==
        "alive, idle outside NCCL until SIGTERM ended it with the rest of the job");
}

TEST_CASE("missing_rank: a rank that kept calling another communicator", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--tensor-parallel", "--bug", "skip:5:2"});
  const auto& f = RequireRoot(s, "missing_rank");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(2));
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(f.String("did_instead").find("kept calling other communicators") == 0);
}

TEST_CASE("rank_died: SIGKILL, and the others killed later are consequences", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "kill:4:3"});
  const auto& f = RequireRoot(s, "rank_died");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(3));
  CHECK(f.ranks == std::vector<int>{4});
  CHECK(f.raw.fields().at("signal").has_null_value());
  for (const auto& other : s.diagnosis.findings) {
    if (&other == s.diagnosis.Root()) continue;
    CHECK(other.role != "root_cause");
  }
}

TEST_CASE("rank_died: a crash, with its signal", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--bug", "segv:4:3"});
  const auto& f = RequireRoot(s, "rank_died");
  CHECK(f.comm == s.world);
  CHECK(f.seq == StepSeq(3));
  CHECK(f.ranks == std::vector<int>{4});
  CHECK(f.String("signal") == "SIGSEGV");
}

TEST_CASE("p2p_mismatch: a send of the wrong size", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--pipeline", "--bug", "p2p-count:2:1"});
  const auto& f = RequireRoot(s, "p2p_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == 1);
  CHECK(f.ranks == std::vector<int>{2, 3});
  CHECK(f.field == "count");
  CHECK(f.detail.find("rank 2 sent 4095 x float32 to rank 3 as its send #1") != std::string::npos);
}

TEST_CASE("p2p_mismatch: a receive whose send never came in its place", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--pipeline", "--bug", "p2p-drop:2:1"});
  const auto& f = RequireRoot(s, "p2p_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == 1);
  CHECK(f.ranks == std::vector<int>{2, 3});
  CHECK(f.field == "order");
}

TEST_CASE("order_inversion: two communicators in different orders on one stream", "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--tensor-parallel", "--bug", "inversion:1:2"});
  const auto& f = RequireRoot(s, "order_inversion");
  const std::string tp = jobs::CommId(s.dir.path(), 0, "ncclCommSplit");
  const std::string other = f.String("other_comm");
  CHECK(((f.comm == s.world && other == tp) || (f.comm == tp && other == s.world)));
  CHECK(f.seq == 2);
  CHECK(f.raw.fields().at("other_seq").number_value() == 2);
  CHECK(f.ranks == std::vector<int>{0, 1});
  CHECK(f.raw.fields().at("same_stream").bool_value());
}

TEST_CASE("order_inversion on separate streams: a warning, and the job stays healthy",
          "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "8", "--tensor-parallel", "--tp-stream", "--bug", "inversion:1:2"}, 120);
  for (const auto& r : s.job.ranks)
    REQUIRE(r.exit_code == 0);  // no deadlock: the streams never wait on each other
  INFO(s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 0);
  CHECK(s.diagnosis.verdict == "healthy");
  REQUIRE(s.diagnosis.findings.size() == 1);
  const jobs::FindingView& w = s.diagnosis.findings.front();
  CHECK(w.kind == "order_inversion");
  CHECK(w.role == "warning");
  CHECK(w.seq == 2);
  CHECK(w.ranks == std::vector<int>{0, 1});
  CHECK_FALSE(w.raw.fields().at("same_stream").bool_value());
  CHECK(w.detail.find("on different streams") != std::string::npos);
  const jobs::DiagnosisView human = jobs::Diagnose({s.dir.path()}, false);
  INFO(human.output);
  CHECK(human.exit_code == 0);
  CHECK(human.output.rfind("HEALTHY, 1 warning\n", 0) == 0);
}

TEST_CASE("missing traces are named from the communicator's size, and the rest is diagnosed",
          "[diagnose]") {
  Scenario s;
  Run(&s, {"--steps", "6"}, 120);
  std::filesystem::remove(jobs::TraceOf(s.dir.path(), 6));
  std::filesystem::remove(jobs::TraceOf(s.dir.path(), 7));
  jobs::DiagnosisView d = jobs::Diagnose({s.dir.path()});
  INFO(d.output);
  REQUIRE(d.parsed);
  // Nothing else is wrong, but without ranks 6 and 7 the job cannot be
  // called healthy: the missing traces are the root cause, saying what to collect.
  CHECK(d.exit_code == 1);
  CHECK(d.verdict == "problem");
  const jobs::FindingView* n = d.First("missing_traces");
  REQUIRE(n != nullptr);
  CHECK(n->role == "root_cause");
  CHECK(n->comm == s.world);
  CHECK(n->ranks == std::vector<int>{6, 7});
}

TEST_CASE("a mismatch is still found after every rank's ring has wrapped", "[diagnose]") {
  Scenario s;
  // A 64 KiB ring holds 512 slots; 200 steps with a pipeline exchange write
  // about 1200 records.
  jobs::JobSpec spec = jobs::TracedJobSpec(
      4, "train_loop", {"--steps", "220", "--size", "64", "--pipeline", "--bug", "op:2:200"},
      s.dir.path());
  spec.env.push_back("NCCLWATCH_RING_SIZE=64K");
  spec.timeout_s = 8;
  s.job = jobs::RunJob(spec);
  jobs::DiagnosisView d = jobs::Diagnose({s.dir.path()});
  INFO(d.output);
  REQUIRE(d.parsed);
  const jobs::FindingView* f = d.Root();
  REQUIRE(f != nullptr);
  CHECK(f->kind == "collective_mismatch");
  CHECK(f->comm == jobs::CommId(s.dir.path(), 0, "ncclCommInitRank"));
  CHECK(f->seq == StepSeq(200));
  CHECK(f->ranks == std::vector<int>{2});
  bool wrapped = false;
  for (const auto& p : d.raw.fields().at("processes").list_value().values()) {
    wrapped |= p.struct_value().fields().at("overwritten_slots").number_value() > 0;
  }
  CHECK(wrapped);
}

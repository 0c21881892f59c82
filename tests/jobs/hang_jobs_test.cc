// Hangs where every rank called the same thing, reproduced for real on the
// simulator under the preloaded shim: a GPU fault, a dead receive path, a rank
// killed first, a frozen rank, a rank alive in host code, a dead bootstrap
// root, and early records overwritten. Each must name its cause (never
// "healthy"), and the shim's stall line must come within the configured time.
//
// 4-rank train_loop jobs; step k's AllReduce is collective #(k + k/4) of the
// world communicator (a Broadcast follows every 4th step's AllReduce), and the
// simulator counts NCCL operations the same way (NCCLSIM_GPU_FAULT and
// NCCLSIM_NET_STALL at N hit collective #N).

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "model/process_trace.h"
#include "support/traced_job.h"

namespace {

constexpr int kRanks = 4;

struct Scenario {
  jobs::TempDir dir;
  jobs::JobResult job;
  jobs::DiagnosisView diagnosis;
  std::string world;
};

jobs::JobSpec Spec(const Scenario& s, const std::vector<std::string>& args, double bound) {
  jobs::JobSpec spec = jobs::TracedJobSpec(kRanks, "train_loop", args, s.dir.path());
  spec.timeout_s = bound;
  return spec;
}

void Finish(Scenario* s) {
  REQUIRE(s->job.error.empty());
  s->diagnosis = jobs::Diagnose({s->dir.path()});
  s->world = jobs::CommId(s->dir.path(), 0, "ncclCommInitRank");
  INFO("diagnosis:\n" << s->diagnosis.output);
  REQUIRE(s->diagnosis.parsed);
}

std::string Output(const jobs::JobResult& job) {
  std::string all;
  for (const auto& r : job.ranks) all += r.output;
  return all;
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

ncclwatch::decoder::ProcessTrace Load(const std::string& path) {
  auto t = ncclwatch::decoder::LoadProcessTrace(path);
  REQUIRE(t.ok());
  return *std::move(t);
}

}  // namespace

TEST_CASE("the stall line comes on stderr within the configured time, with the operation",
          "[hang]") {
  Scenario s;
  jobs::JobSpec spec = Spec(s, {"--steps", "30", "--size", "256"}, 6);
  spec.env.push_back("NCCLWATCH_STALL=2");
  spec.ranks[1].env.push_back("NCCLSIM_NET_STALL=10");
  s.job = jobs::RunJob(spec);
  REQUIRE(s.job.error.empty());
  const std::string out = Output(s.job);
  INFO(out);
  // Rank 1 stopped taking data in during collective #10: it waits there; its
  // peers finished #10 and wait in #11.
  CHECK(s.job.ranks[1].output.find("ncclwatch: STALL pid " + std::to_string(s.job.ranks[1].pid) +
                                   " rank 1: AllReduce #10 on communicator ") != std::string::npos);
  CHECK(s.job.ranks[0].output.find("rank 0: AllReduce #11 on communicator ") != std::string::npos);
  CHECK(out.find("it waits for the other 3 ranks of the communicator") != std::string::npos);
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto trace = Load(jobs::TraceOf(s.dir.path(), rank));
    INFO("rank " << rank);
    REQUIRE(trace.stalls.size() == 1);
    const auto& stall = trace.stalls[0];
    CHECK(stall.seq == (rank == 1 ? 10u : 11u));
    CHECK(stall.completed == (rank == 1 ? 10u : 11u));
    // Reported once the stall time passed, at the next heartbeat (1 s).
    CHECK(stall.waited_ms >= 2000);
    CHECK(stall.waited_ms < 3500);
    REQUIRE(trace.tracking.size() == 1);
    CHECK(trace.tracking[0].Tracked());
    CHECK(trace.liveness.beats >= 4);
  }
  Finish(&s);
  const auto& f = RequireRoot(s.diagnosis, "never_completed");
  CHECK(f.comm == s.world);
  CHECK(f.seq == 10);
  CHECK(f.ranks == std::vector<int>{1});
  CHECK(f.String("stopped_first_by") == "completed");
  CHECK(f.String("phase") == "step");
}

TEST_CASE("completion is recorded: a clean job's traces say every collective completed", "[hang]") {
  Scenario s;
  s.job = jobs::RunJob(Spec(s, {"--steps", "9", "--pipeline"}, 60));
  Finish(&s);
  for (const auto& r : s.job.ranks) REQUIRE(r.exit_code == 0);
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto trace = Load(jobs::TraceOf(s.dir.path(), rank));
    const auto* membership = trace.Membership(std::stoull(s.world, nullptr, 16));
    REQUIRE(membership != nullptr);
    const auto* progress = trace.LastProgress(membership->comm);
    REQUIRE(progress != nullptr);
    // 9 AllReduces and 2 Broadcasts, all done before the destroy returned.
    CHECK(progress->collectives == 11);
    CHECK(progress->pending == 0);
    CHECK(trace.cuda_errors.empty());
    CHECK(trace.stalls.empty());
  }
  CHECK(s.diagnosis.verdict == "healthy");
  CHECK(s.diagnosis.exit_code == 0);
}

TEST_CASE("a GPU fault: the faulting rank's CUDA error is in its trace", "[hang]") {
  Scenario s;
  jobs::JobSpec spec = Spec(s, {"--steps", "30", "--size", "256"}, 5);
  spec.ranks[2].env.push_back("NCCLSIM_GPU_FAULT=10:ecc");
  s.job = jobs::RunJob(spec);
  Finish(&s);
  const auto trace = Load(jobs::TraceOf(s.dir.path(), 2));
  REQUIRE_FALSE(trace.cuda_errors.empty());
  CHECK(trace.cuda_errors[0].name == "CUDA_ERROR_ECC_UNCORRECTABLE");
  // Completed collectives the watcher had seen before the fault (after it
  // every query returns the sticky error, as CUDA's do): at most #0..#9.
  CHECK(trace.cuda_errors[0].seq <= 10);
  const auto& f = RequireRoot(s.diagnosis, "gpu_fault");
  CHECK(f.comm == s.world);
  CHECK(f.seq == 10);
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.String("cuda_error") == "CUDA_ERROR_ECC_UNCORRECTABLE");
  for (const auto& other : s.diagnosis.findings)
    if (&other != s.diagnosis.Root()) CHECK(other.role != "root_cause");
}

TEST_CASE("a rank SIGKILLed first, the rest SIGKILLed later: the heartbeats order the deaths",
          "[hang]") {
  Scenario s;
  jobs::JobSpec spec = Spec(s, {"--steps", "30", "--bug", "kill:3:3"}, 4);
  spec.kill_at_timeout = true;  // no trace ends cleanly
  s.job = jobs::RunJob(spec);
  Finish(&s);
  const auto dead = Load(jobs::TraceOf(s.dir.path(), 3));
  const auto alive = Load(jobs::TraceOf(s.dir.path(), 0));
  CHECK_FALSE(dead.end.has_value());
  CHECK_FALSE(alive.end.has_value());
  CHECK(alive.signals.empty());
  // The others kept beating for seconds after rank 3's last heartbeat.
  REQUIRE(dead.liveness.beats >= 1);
  REQUIRE(alive.liveness.beats >= 3);
  CHECK(alive.RealtimeNs(alive.liveness.last_t) - dead.RealtimeNs(dead.liveness.last_t) >
        2000000000LL);
  const auto& f = RequireRoot(s.diagnosis, "rank_died");
  CHECK(f.comm == s.world);
  CHECK(f.seq == 3);
  CHECK(f.ranks == std::vector<int>{3});
  CHECK(f.String("did_instead").find("died first") == 0);
  for (const auto& other : s.diagnosis.findings)
    if (&other != s.diagnosis.Root()) CHECK(other.role != "root_cause");
}

TEST_CASE("a frozen rank (SIGSTOP): its heartbeat stops while the others beat", "[hang]") {
  Scenario s;
  // Ended once the live diagnosis is taken, however long that takes; the
  // bound is a backstop.
  jobs::LiveJob job(Spec(s, {"--steps", "30", "--bug", "stop:1:3"}, 300));
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  const jobs::DiagnosisView live = jobs::Diagnose({s.dir.path()});
  s.job = job.End();
  Finish(&s);
  const auto& f = RequireRoot(live, "rank_frozen");
  CHECK(f.seq == 3);
  CHECK(f.ranks == std::vector<int>{1});
  CHECK(f.String("state") == "stopped");
  const auto frozen = Load(jobs::TraceOf(s.dir.path(), 1));
  const auto peer = Load(jobs::TraceOf(s.dir.path(), 0));
  CHECK(peer.RealtimeNs(peer.liveness.last_t) - frozen.RealtimeNs(frozen.liveness.last_t) >
        2000000000LL);
  // After the fact a stopped rank that was killed cannot be told from a dead one.
  const auto& after = RequireRoot(s.diagnosis, "rank_died");
  CHECK(after.ranks == std::vector<int>{1});
}

TEST_CASE("a small ring overwrote an early mismatch: the watcher's hold still names it", "[hang]") {
  Scenario s;
  jobs::JobSpec spec = Spec(s, {"--steps", "30", "--bug", "count:2:1"}, 8);
  spec.env.push_back("NCCLWATCH_RING_SIZE=64K");
  spec.env.push_back("NCCLWATCH_HEARTBEAT_MS=10");  // 100 records a second laps 512 slots
  s.job = jobs::RunJob(spec);
  Finish(&s);
  const auto trace = Load(jobs::TraceOf(s.dir.path(), 0));
  CHECK(trace.stats.ring_overwritten > 0);
  // The ring lost the call's own record; the held copy in the pinned region
  // is what remains of it, restored as the table's only row.
  REQUIRE(trace.held.size() == 1);
  CHECK(trace.held[0].seq == 1);
  REQUIRE(trace.collectives.size() == 1);
  CHECK(trace.collectives[0].seq == 1);
  const auto& f = RequireRoot(s.diagnosis, "collective_mismatch");
  CHECK(f.comm == s.world);
  CHECK(f.seq == 1);
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.field == "count");
}

TEST_CASE("a rank alive in host code: its heartbeat says alive", "[hang]") {
  Scenario s;
  s.job = jobs::RunJob(Spec(s, {"--steps", "30", "--bug", "hang:2:4"}, 4));
  Finish(&s);
  const auto idle = Load(jobs::TraceOf(s.dir.path(), 2));
  const auto peer = Load(jobs::TraceOf(s.dir.path(), 0));
  // It beat until the launcher ended the job, as its peers did.
  CHECK(std::llabs(peer.RealtimeNs(peer.liveness.last_t) - idle.RealtimeNs(idle.liveness.last_t)) <
        1500000000LL);
  const auto& f = RequireRoot(s.diagnosis, "missing_rank");
  CHECK(f.comm == s.world);
  CHECK(f.seq == 4 + 4 / 4);
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.String("did_instead").find("alive, idle outside NCCL") == 0);
}

TEST_CASE("the bootstrap root exits before init: the others cannot connect", "[hang]") {
  Scenario s;
  s.job = jobs::RunJob(Spec(s, {"--steps", "4", "--bug", "exit-before-init:0:0"}, 6));
  Finish(&s);
  CHECK(s.job.ranks[0].exit_code == 1);
  const auto& f = RequireRoot(s.diagnosis, "init_failure");
  CHECK(f.String("subsystem") == "bootstrap");
  CHECK(f.ranks == std::vector<int>{0});
  CHECK(f.raw.fields().at("exit_code").number_value() == 1);
}

// Live, a job is never "healthy": it is running (exit 0), and a rank that is
// merely behind is never a finding, however loaded the machine.
TEST_CASE("a live healthy job is running in every snapshot, ranks at different steps", "[hang]") {
  Scenario s;
  // The job runs until the snapshots are taken, however long a diagnosis
  // takes (seconds under a sanitizer on a busy machine): each is taken while
  // the job certainly lives. The bound is a backstop.
  jobs::LiveJob job(Spec(s, {"--steps", "1000000", "--pipeline", "--size", "64"}, 300));
  std::vector<jobs::DiagnosisView> snapshots;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  for (int i = 0; i < 3; ++i) {
    snapshots.push_back(jobs::Diagnose({s.dir.path()}));
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  s.job = job.End();
  REQUIRE(s.job.ranks.size() == static_cast<size_t>(kRanks));
  for (const auto& r : s.job.ranks) CHECK(r.killed_at_timeout);  // alive through every snapshot
  for (const auto& d : snapshots) {
    INFO("live diagnosis:\n" << d.output);
    CHECK(d.verdict == "running");
    CHECK(d.exit_code == 0);
    CHECK(d.Root() == nullptr);
  }
}

TEST_CASE("healthy: two threads driving two communicators, traced to the end", "[hang]") {
  Scenario s;
  s.job = jobs::RunJob(Spec(s, {"--steps", "12", "--tp-thread", "--pipeline"}, 60));
  Finish(&s);
  for (const auto& r : s.job.ranks) REQUIRE(r.exit_code == 0);
  INFO(s.diagnosis.output);
  CHECK(s.diagnosis.verdict == "healthy");
  CHECK(s.diagnosis.exit_code == 0);
  const auto trace = Load(jobs::TraceOf(s.dir.path(), 1));
  CHECK(trace.tracking.size() == 2);  // both communicators' completion followed
  for (const auto& t : trace.tracking) {
    const auto* p = trace.LastProgress(t.comm);
    REQUIRE(p != nullptr);
    CHECK(p->collectives == p->issued);
  }
}

// A rank that is pid 1 in a pid namespace of its own (a container's init),
// SIGKILLed from outside (its own SIGKILL would not reach an init) while the
// others wait for it, until the job is ended. This host's pid 1 is another
// process, older than the trace: taken for the rank, it kept the dead rank
// "alive", and the diagnosis said it froze while the others were alive. Seen
// from the host, the rank is looked for in its own namespace only; gone from
// there, its heartbeat says it died first.
TEST_CASE("a rank that was pid 1 in its container, SIGKILLed: dead, not the host's pid 1",
          "[hang]") {
  Scenario s;
  // The others are ended because rank 1 died, as a launcher does (torchrun
  // SIGTERMs the rest when one worker fails), not by a wall-clock bound that
  // a slow start (a sanitizer build on a busy machine) could reach first.
  jobs::JobSpec spec = Spec(s, {"--steps", "1000000"}, 120);
  spec.teardown_after_failure_s = 0.5;
  spec.env.push_back("NCCLWATCH_HEARTBEAT_MS=100");
  const std::string script =
      "if [ \"$RANK\" = 1 ]; then\n"
      "  out=\"$NCCLWATCH_DIR/rank1.stdout.txt\"\n"
      "  unshare --pid --fork --kill-child \"$@\" >\"$out\" 2>&1 & u=$!\n"
      // Killed once it is in its steps (not at a time a loaded machine may
      // find it still setting up), while the others wait in a collective.
      "  until grep -q 'step 3 done' \"$out\" 2>/dev/null; do sleep 0.1; done\n"
      "  kill -9 $(pgrep -P $u); wait $u; exit 137\n"
      "fi\n"
      "exec \"$@\"\n";
  std::vector<std::string> argv = {"/bin/sh", "-c", script, "sh"};
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  spec.argv = argv;
  s.job = jobs::RunJob(spec);
  CHECK(s.job.ranks[1].exit_code == 137);  // its script killed it, the launcher ended the rest
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // every heartbeat stale
  Finish(&s);
  const auto t = Load(jobs::TraceOf(s.dir.path(), 1));
  CHECK(t.pid == 1);
  CHECK(t.pid_namespace != 0);
  CHECK_FALSE(t.end.has_value());
  INFO("diagnosis:\n" << s.diagnosis.output);
  const auto& f = RequireRoot(s.diagnosis, "rank_died");
  CHECK(f.comm == s.world);
  CHECK(f.ranks == std::vector<int>{1});
  // It stopped living first (the others' heartbeats went on until the
  // teardown): whether the others were already waiting in the next
  // collective (did_instead "died first") or still between two (a death
  // under no collective) is the machine's timing.
  const auto stopped = f.raw.fields().find("stopped_before_others_s");
  REQUIRE(stopped != f.raw.fields().end());
  CHECK(stopped->second.number_value() > 0.1);
}

// The most common real failure, seen from both sides: the OOM killer
// SIGKILLs a rank inside an AllReduce (its trace just stops: no exit, no
// signal) and the launcher ends the rest. The traces alone say it died
// first, without a word of why; the node's kernel log, given beside them
// (named, or in the traces' folder as *.log), says why: one verdict, the
// OOM kill first, the death it caused after it.
TEST_CASE("an OOM kill inside a collective, with the node's dmesg: out_of_memory, then the death",
          "[hang][logs]") {
  Scenario s;
  jobs::JobSpec spec = Spec(s, {"--steps", "1000", "--bug", "kill-in:2:5"}, 120);
  spec.teardown_after_failure_s = 0.5;
  spec.env.push_back("NCCLWATCH_HEARTBEAT_MS=100");
  s.job = jobs::RunJob(spec);
  REQUIRE(s.job.error.empty());
  REQUIRE(s.job.ranks[2].signal == SIGKILL);
  const int pid = s.job.ranks[2].pid;
  // The kernel's words (mm/oom_kill.c), as dmesg -T prints them on that node.
  jobs::TempDir logs;
  const std::string dmesg = logs.path() + "/dmesg-node1.txt";
  std::ofstream(dmesg) << "[Fri Dec  4 10:00:00 2026] train_loop invoked oom-killer: "
                          "gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0\n"
                          "[Fri Dec  4 10:00:00 2026] Out of memory: Killed process "
                       << pid
                       << " (train_loop) total-vm:4123456kB, anon-rss:3987654kB, file-rss:0kB, "
                          "shmem-rss:0kB, UID:0 pgtables:8000kB oom_score_adj:0\n";
  {
    const jobs::DiagnosisView alone = jobs::Diagnose({s.dir.path()});
    const auto& f = RequireRoot(alone, "rank_died");
    CHECK(f.ranks == std::vector<int>{2});
  }
  Finish(&s);  // the traces alone, for the communicator's identity
  for (const bool in_folder : {false, true}) {
    INFO("the log " << (in_folder ? "in the traces' folder" : "named beside the folder"));
    std::vector<std::string> paths = {s.dir.path()};
    if (in_folder) {
      std::ofstream(s.dir.path() + "/dmesg-node1.log") << std::ifstream(dmesg).rdbuf();
    } else {
      paths.push_back(dmesg);
    }
    const jobs::DiagnosisView d = jobs::Diagnose(paths);
    INFO(d.output);
    REQUIRE(d.parsed);
    // The victim's pid is the host's number of a traced process: its rank.
    // In a container of its own the job's numbers are not the host's: the
    // kernel log's pid names no rank, and the OOM kill is a note beside the
    // death the traces name.
    std::error_code ec;
    const bool host_numbers =
        std::filesystem::read_symlink("/proc/self/ns/pid", ec).string() == "pid:[4026531836]";
    const auto& root = RequireRoot(d, host_numbers ? "out_of_memory" : "rank_died");
    const jobs::FindingView* oom = d.First("out_of_memory");
    REQUIRE(oom != nullptr);
    CHECK(oom->String("memory") == "host");
    CHECK(oom->detail.find("Killed process " + std::to_string(pid)) != std::string::npos);
    CHECK(oom->ranks == (host_numbers ? std::vector<int>{2} : std::vector<int>{}));
    CHECK(oom->role == (host_numbers ? "root_cause" : "note"));
    const jobs::FindingView* death = d.First("rank_died");
    REQUIRE(death != nullptr);
    CHECK(death->role == (host_numbers ? "consequence" : "root_cause"));
    CHECK((death == &root) != host_numbers);
    CHECK(death->ranks == std::vector<int>{2});
    CHECK(death->comm == s.world);
    CHECK(death->seq == 6);  // step 5's AllReduce (a Broadcast after every 4 steps)
  }
}

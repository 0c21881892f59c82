// `ncclwatch status` on live jobs: a job on the simulator, under the shim
// with a short stall time (NCCLWATCH_STALL=2), looked at while it runs.

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "report/status_report.h"
#include "summary/job_inputs.h"
#include "support/traced_job.h"

namespace {

namespace nd = ::ncclwatch::decoder;

struct Look {
  std::string output;  // the job's, then what status printed
  std::string status;  // status's output alone
  int status_exit = -1;
};

// Starts `jobrun -n N --timeout T -- train_loop ARGS` in the background, runs
// `ncclwatch status` once the job's output has `lines` lines matching
// `pattern` (or after T seconds), then waits for the job to end.
// `status_env`: variables for status's run alone.
Look LookAtLiveJob(const std::string& dir, int nranks, const std::vector<std::string>& args,
                   const std::string& pattern, int lines, int timeout_s,
                   const std::string& env = "", const std::string& status_env = "") {
  std::string job = env + " LD_PRELOAD=\"$2\" NCCLWATCH_DIR=\"$1\"/traces \"$0\"/jobrun -n " +
                    std::to_string(nranks) + " --timeout " + std::to_string(timeout_s) +
                    " -- \"$0\"/train_loop";
  for (const std::string& a : args) job += " " + a;
  const std::string script = job + " > \"$1\"/job.out 2>&1 & i=0; until [ \"$(grep -c '" + pattern +
                             "' \"$1\"/job.out)\" -ge " + std::to_string(lines) +
                             " ] || [ $i -ge " + std::to_string(timeout_s * 10) +
                             " ]; do sleep 0.1; i=$((i+1)); done; sleep 0.5; echo STATUS; " +
                             status_env +
                             " \"$0\"/ncclwatch status \"$1\"/traces; echo \"EXIT $?\"; wait";
  jobs::JobSpec spec;
  spec.argv = {"sh", "-c", script, jobs::BinDir(), dir, jobs::ShimPath()};
  spec.env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir(), "NCCLWATCH_STALL=2"};
  spec.timeout_s = timeout_s + 60;
  jobs::JobResult r = jobs::RunJob(spec);
  Look l;
  if (r.ranks.empty()) return l;
  l.output = r.ranks[0].output;
  const size_t from = l.output.find("STATUS\n");
  const size_t to = l.output.find("EXIT ");
  if (from != std::string::npos && to != std::string::npos && to > from) {
    l.status = l.output.substr(from + 7, to - from - 7);
    l.status_exit = std::atoi(l.output.c_str() + to + 5);
  }
  return l;
}

// The status table of the traces in `dir` as of `now` (no process looked
// at: the traces alone), each trace read whole, or (summarize_over 0)
// through its summary made in memory, as status reads a trace over 64 MiB.
std::string TableOf(const std::string& dir, int64_t now, uint64_t summarize_over) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  nd::JobStatusBuilder builder(now, int64_t{60} * 1'000'000'000);
  const absl::Status read = nd::LoadJobInputs(
      files, 0,
      [&](const nd::JobInput& in) {
        REQUIRE(in.status.ok());
        if (summarize_over == 0) CHECK(in.trace.summary == in.trace.path);
        builder.AddProcess(in.trace);
      },
      summarize_over);
  REQUIRE(read.ok());
  std::ostringstream out;
  nd::WriteStatus(builder.Finish(), out);
  return out.str();
}

// The job's table is the same from summaries made in memory as from the
// traces whole (status reads a trace over 64 MiB so), at one moment.
void CheckSameTableFromSummaries(const std::string& traces) {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string whole = TableOf(traces, now, UINT64_MAX);
  INFO("whole:\n" << whole);
  CHECK(TableOf(traces, now, 0) == whole);
}

// The table line of communicator rank `rank`.
std::string RowOf(const std::string& status, int rank) {
  std::smatch m;
  const std::regex row("\\n  " + std::to_string(rank) + " +vm[^\\n]*|\\n  " + std::to_string(rank) +
                       " +[^ ]+:[0-9]+[^\\n]*");
  return std::regex_search(status, m, row) ? m.str().substr(1) : "";
}

}  // namespace

TEST_CASE("status on a live hung job: every rank listed, the stuck ones and the laggard named",
          "[status]") {
  jobs::TempDir dir;
  // Rank 2 stops calling NCCL before step 3's AllReduce (#3) and sleeps; the
  // others wait in it, and the shim reports their stall after 2 s.
  const Look l =
      LookAtLiveJob(dir.path(), 4, {"--steps", "8", "--bug", "hang:2:3"}, "STALL pid", 3, 15);
  INFO(l.output);
  CHECK(l.status_exit == 1);
  CHECK(l.status.rfind("STUCK: communicator ", 0) == 0);
  CHECK(l.status.find("ranks 0-1,3 stuck in AllReduce #3, waiting for rank 2 (behind)") !=
        std::string::npos);
  for (int rank : {0, 1, 3}) {
    const std::string row = RowOf(l.status, rank);
    INFO("rank " << rank << ": " << row);
    CHECK(row.find("#3       #2") != std::string::npos);  // entered #3, completed #2
    CHECK(row.find("STUCK in AllReduce #3 (stall reported after") != std::string::npos);
  }
  const std::string row2 = RowOf(l.status, 2);
  INFO(row2);
  CHECK(row2.find("#2       #2") != std::string::npos);
  CHECK(row2.find("idle (nothing pending); lags behind the others") != std::string::npos);
  CHECK(row2.find("s ago") != std::string::npos);  // its heartbeat
  CheckSameTableFromSummaries(dir.path() + "/traces");
}

TEST_CASE(
    "status on a live job with a stopped rank: frozen at once, before its heartbeat is missed",
    "[status]") {
  jobs::TempDir dir;
  // Rank 1 stops itself (SIGSTOP) before step 3's AllReduce (#3); the others
  // wait in it, and the shim reports their stall after 2 s: status looks
  // then, before 5 s without a heartbeat would say it. Each trace read
  // through its summary made in memory, as a ring over 64 MiB is: a trace
  // of this host still, its process looked at (not a node summary's,
  // which the heartbeat alone judges).
  const Look l = LookAtLiveJob(dir.path(), 4, {"--steps", "8", "--bug", "stop:1:3"}, "STALL pid", 3,
                               15, "", "NCCLWATCH_SUMMARIZE_OVER=0");
  INFO(l.output);
  CHECK(l.status_exit == 1);
  CHECK(l.status.rfind("STUCK: communicator ", 0) == 0);
  CHECK(l.status.find(": rank 1 stopped (frozen)\n") != std::string::npos);
  CHECK(l.status.find("ranks 0,2-3 stuck in AllReduce #3, waiting for rank 1 (behind)") !=
        std::string::npos);
  const std::string row1 = RowOf(l.status, 1);
  INFO(row1);
  // Entered #2; how far its watcher counted completions before it stopped
  // is the machine's timing.
  CHECK(std::regex_search(row1, std::regex("^  1 +[^ ]+:[0-9]+ +#2 +(#[0-2]|-) ")));
  CHECK(row1.find("STOPPED (state T): frozen by a signal or a debugger; lags behind the others") !=
        std::string::npos);
}

TEST_CASE("status on a live healthy job: progressing and exit 0", "[status]") {
  jobs::TempDir dir;
  // A long job, looked at once both ranks are past step 20, and ended by its
  // launcher at 6 s.
  const Look l =
      LookAtLiveJob(dir.path(), 2, {"--steps", "10000000", "--size", "64"}, "step 20 done", 2, 6);
  INFO(l.output);
  CHECK(l.status_exit == 0);
  CHECK(l.status.rfind("PROGRESSING\n", 0) == 0);
  // Each rank is somewhere past step 20: running a step's AllReduce (or the
  // Broadcast every 4th step adds), or between two.
  for (int rank : {0, 1}) {
    const std::string row = RowOf(l.status, rank);
    INFO(row);
    CHECK((row.find("running AllReduce #") != std::string::npos ||
           row.find("running Broadcast #") != std::string::npos ||
           row.find("idle (nothing pending)") != std::string::npos));
    CHECK(row.find("STUCK") == std::string::npos);
  }

  // Once the launcher has killed it: ended badly, exit 1.
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(), "status", dir.path() + "/traces"};
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  INFO(r.ranks[0].output);
  CHECK(r.ranks[0].exit_code == 1);
  CHECK(r.ranks[0].output.rfind("ENDED BADLY: every process has ended", 0) == 0);
  CHECK(r.ranks[0].output.find("died of SIGTERM") != std::string::npos);
  CheckSameTableFromSummaries(dir.path() + "/traces");
}

TEST_CASE("status on a job that ended well: ENDED and exit 0", "[status]") {
  jobs::TempDir dir;
  jobs::JobResult job =
      jobs::RunJob(jobs::TracedJobSpec(2, "train_loop", {"--steps", "3"}, dir.path()));
  REQUIRE(job.error.empty());
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(), "status", dir.path()};
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  INFO(r.ranks[0].output);
  CHECK(r.ranks[0].exit_code == 0);
  CHECK(r.ranks[0].output.rfind("ENDED: every process has ended\n", 0) == 0);
  CHECK(r.ranks[0].output.find("exited (code 0)") != std::string::npos);

  // --watch: redrawn every interval until interrupted; the last look's exit code.
  spec.argv = {"timeout", "--preserve-status", "-s",      "INT",        "2",  jobs::NcclwatchPath(),
               "status",  dir.path(),          "--watch", "--interval", "0.5"};
  r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  INFO(r.ranks[0].output);
  CHECK(r.ranks[0].exit_code == 0);
  size_t frames = 0;
  for (size_t at = 0;
       (at = r.ranks[0].output.find("ENDED: every process", at)) != std::string::npos; ++at)
    ++frames;
  CHECK(frames >= 2);
}

// A link another user planted to root's trace is not followed, and may
// hold a rank's trace: status lists it, as diagnose does (and counts it in
// the metrics' unreadable traces).
TEST_CASE("status lists a link it did not follow, which may hold a rank's trace", "[status]") {
  jobs::TempDir dir, elsewhere;
  jobs::JobResult job =
      jobs::RunJob(jobs::TracedJobSpec(2, "train_loop", {"--steps", "3"}, dir.path()));
  REQUIRE(job.error.empty());
  const std::string trace = jobs::TraceOf(dir.path(), 1);
  REQUIRE_FALSE(trace.empty());
  const std::string moved = elsewhere.path() + "/rank1.trace";
  REQUIRE(std::rename(trace.c_str(), moved.c_str()) == 0);
  const std::string link = dir.path() + "/rank1.trace";
  REQUIRE(symlink(moved.c_str(), link.c_str()) == 0);
  REQUIRE(lchown(link.c_str(), 65534, 65534) == 0);
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(), "status", dir.path()};
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  const std::string& out = r.ranks[0].output;
  INFO(out);
  CHECK(out.find("(2 ranks, 1 traced)") != std::string::npos);
  CHECK(out.find("not read, may hold a rank's trace: " + link +
                 ": a symbolic link of uid 65534 to a file of uid 0: not followed") !=
        std::string::npos);
  spec.argv = {jobs::NcclwatchPath(), "status", dir.path(), "--metrics", "-"};
  r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  INFO(r.ranks[0].output);
  CHECK(r.ranks[0].output.find("ncclwatch_job_unreadable_traces{job=") != std::string::npos);
  CHECK(r.ranks[0].output.find("} 1\n") != std::string::npos);

  // From the node's summary, as from the folder: the summary lists the link.
  const std::string summary = elsewhere.path() + "/node-a.ncws";
  spec.argv = {jobs::NcclwatchPath(), "summarize", dir.path(), "-o", summary, "--host", "node-a"};
  r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  INFO(r.ranks[0].output);
  REQUIRE(r.ranks[0].exit_code == 0);
  CHECK(r.ranks[0].output.find("first: " + link + ": a symbolic link of uid 65534") !=
        std::string::npos);
  spec.argv = {jobs::NcclwatchPath(), "status", summary};
  r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  INFO(r.ranks[0].output);
  CHECK(r.ranks[0].output.find("not read, may hold a rank's trace: node-a:" + link + " (" + link +
                               ": a symbolic link of uid 65534 to a file of uid 0: not "
                               "followed") != std::string::npos);
}

TEST_CASE("status: bad input is one line and exit 2", "[status]") {
  jobs::TempDir dir;
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(), "status", dir.path()};
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  CHECK(r.ranks[0].exit_code == 2);
  CHECK(r.ranks[0].output == "ncclwatch: no trace files (*.trace) under " + dir.path() + "\n");
  spec.argv = {jobs::NcclwatchPath(), "status", dir.path() + "/none"};
  r = jobs::RunJob(spec);
  CHECK(r.ranks[0].exit_code == 2);
}

// Slow is not stuck: rank 2's host takes 40 ms more per step. Live, status
// says PROGRESSING (exit 0), names the straggler under the headline, marks
// its row, and shows how often each rank came last and by how much.
TEST_CASE("status on a live job with a slow host: progressing, the straggler named", "[status]") {
  jobs::TempDir dir;
  const Look l =
      LookAtLiveJob(dir.path(), 4, {"--steps", "120", "--step-ms", "5", "--slow-host", "2:0:40"},
                    "step 60 done", 4, 40);
  INFO(l.output);
  CHECK(l.status_exit == 0);
  CHECK(l.status.rfind("PROGRESSING\nSLOW: rank 2 of communicator ", 0) == 0);
  CHECK(l.status.find("enqueued last in ") != std::string::npos);
  const std::string row2 = RowOf(l.status, 2);
  INFO(row2);
  CHECK(row2.find("; STRAGGLER") != std::string::npos);
  CHECK(std::regex_search(row2, std::regex(" [0-9]+/[0-9]+ \\([0-9.]+ ms\\) ")));
  for (int rank : {0, 1, 3}) {
    const std::string row = RowOf(l.status, rank);
    INFO("rank " << rank << ": " << row);
    CHECK(row.find("STRAGGLER") == std::string::npos);
  }
  CheckSameTableFromSummaries(dir.path() + "/traces");
}

// A slow GPU (NCCLSIM_SLOW_GPU: GPU 1's copies take 20 ms more, its host
// enqueues at once): status names it live, under the headline, for its GPU,
// and marks its row; no other rank is a straggler.
TEST_CASE("status on a live job with a slow GPU: progressing, the slow GPU named", "[status]") {
  jobs::TempDir dir;
  const Look l = LookAtLiveJob(dir.path(), 4, {"--steps", "120", "--step-ms", "5"}, "step 60 done",
                               4, 40, "NCCLSIM_SLOW_GPU=1:0:20");
  INFO(l.output);
  CHECK(l.status_exit == 0);
  CHECK(l.status.rfind("PROGRESSING\nSLOW: rank 1 of communicator ", 0) == 0);
  CHECK(l.status.find("reached the GPU last in ") != std::string::npos);
  CHECK(l.status.find("its GPU is slow") != std::string::npos);
  CHECK(l.status.find("enqueued last in ") == std::string::npos);
  CHECK(RowOf(l.status, 1).find("; STRAGGLER") != std::string::npos);
  for (int rank : {0, 2, 3}) {
    const std::string row = RowOf(l.status, rank);
    INFO("rank " << rank << ": " << row);
    CHECK(row.find("STRAGGLER") == std::string::npos);
  }
  CheckSameTableFromSummaries(dir.path() + "/traces");
}

// A slow link (NCCLSIM_SLOW_LINK: GPU 5's operations hold their data 30 ms)
// in a grid of pairs (train_loop --3d): status names the link of rank 5,
// under the headline, and no rank's host or GPU.
TEST_CASE("status on a live job with a slow link: progressing, the link named", "[status]") {
  jobs::TempDir dir;
  const Look l = LookAtLiveJob(dir.path(), 8, {"--steps", "60", "--3d", "--step-ms", "5"},
                               "step 20 done", 8, 60, "NCCLSIM_SLOW_LINK=5:0:30");
  INFO(l.output);
  CHECK(l.status_exit == 0);
  CHECK(l.status.rfind("PROGRESSING\nSLOW: the link of rank 5 is slow: ", 0) == 0);
  CHECK(l.status.find("longer than usual on median") != std::string::npos);
  CHECK(l.status.find("enqueued last in ") == std::string::npos);
  CHECK(l.status.find("reached the GPU last in ") == std::string::npos);
  CheckSameTableFromSummaries(dir.path() + "/traces");
}

// The logs beside the traces (a node's kernel log, the job's output) are
// judged with them, as diagnose judges them: status says what they show
// under its headline, exits 1 for it, and says it in the metrics. A job
// that ended well, with its output beside it, stays ENDED and exit 0.
TEST_CASE("status with the logs beside the traces: the OOM kill the kernel log shows is said",
          "[status][logs]") {
  jobs::TempDir dir, logs;
  jobs::JobSpec job =
      jobs::TracedJobSpec(4, "train_loop", {"--steps", "1000", "--bug", "kill-in:2:5"}, dir.path());
  job.timeout_s = 120;
  job.teardown_after_failure_s = 0.5;
  const jobs::JobResult ran = jobs::RunJob(job);
  REQUIRE(ran.error.empty());
  REQUIRE(ran.ranks[2].signal == SIGKILL);
  // The kernel's words (mm/oom_kill.c), as dmesg -T prints them on that node.
  const std::string dmesg = logs.path() + "/dmesg-node1.txt";
  std::ofstream(dmesg) << "[Fri Dec  4 10:00:00 2026] Out of memory: Killed process "
                       << ran.ranks[2].pid
                       << " (train_loop) total-vm:4123456kB, anon-rss:3987654kB, file-rss:0kB, "
                          "shmem-rss:0kB, UID:0 pgtables:8000kB oom_score_adj:0\n";
  std::error_code ec;
  const bool host_numbers =
      std::filesystem::read_symlink("/proc/self/ns/pid", ec).string() == "pid:[4026531836]";
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(), "status", dir.path(), dmesg};
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  std::string out = r.ranks[0].output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 1);
  // The table knows rank 2 killed at once: its process is gone, and its
  // trace holds no end (no heartbeat need be missed for 5 s first).
  CHECK(out.rfind("ENDED BADLY: every process has ended", 0) == 0);
  CHECK(RowOf(out, 2).find("gone with no end recorded (killed: SIGKILL, the OOM killer)") !=
        std::string::npos);
  // In a container of its own the kernel log's pid names no rank: the death
  // the traces show is the root cause, the OOM kill a note beside it.
  CHECK(out.find("\nDIAGNOSIS of the traces with the 1 log beside them: PROBLEM: " +
                 std::string(host_numbers ? "out_of_memory" : "rank_died")) != std::string::npos);
  CHECK(out.find(", 1 log; ") != std::string::npos);

  spec.argv = {jobs::NcclwatchPath(), "status", dir.path(), dmesg, "--metrics", "-"};
  r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  out = r.ranks[0].output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 1);
  CHECK(out.find("\nncclwatch_job_problem_in_logs{job=\"") != std::string::npos);
  CHECK(out.find("\"} 1\n") != std::string::npos);

  // A job that ended well, its output beside its traces: nothing to say.
  jobs::TempDir well;
  const jobs::JobResult fine =
      jobs::RunJob(jobs::TracedJobSpec(2, "train_loop", {"--steps", "3"}, well.path()));
  REQUIRE(fine.error.empty());
  std::ofstream(well.path() + "/job-output.log") << fine.ranks[0].output;
  spec.argv = {jobs::NcclwatchPath(), "status", well.path()};
  r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  out = r.ranks[0].output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 0);
  CHECK(out.rfind("ENDED: every process has ended\n", 0) == 0);
  CHECK(out.find("DIAGNOSIS") == std::string::npos);
  CHECK(out.find(", 1 log; ") != std::string::npos);

  // Logs alone are explain's.
  spec.argv = {jobs::NcclwatchPath(), "status", dmesg};
  r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  CHECK(r.ranks[0].exit_code == 2);
  CHECK(r.ranks[0].output ==
        "ncclwatch: status needs the job's traces; for logs alone, ncclwatch explain\n");
}

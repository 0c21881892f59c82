// `ncclwatch run`: real launchers and jobs on the simulator, run through the
// command exactly as a user would (nothing preloaded or set by the test but
// the simulator's library path): the shim must reach every rank, the
// launcher's exit status must come back unchanged, and a failure must be
// diagnosed on the spot.

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "support/traced_job.h"

namespace {

struct Outcome {
  int exit_code = -1;
  int signal = 0;
  std::string output;
};

// `ncclwatch run ARGS...`, from `cwd` when given.
Outcome Run(const std::vector<std::string>& args, double timeout_s = 60) {
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(), "run"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir(),
              "LD_PRELOAD",
              "NCCLWATCH_DIR",
              "RANK",
              "WORLD_SIZE",
              "LOCAL_RANK",
              "LOCAL_WORLD_SIZE"};
  spec.timeout_s = timeout_s;
  jobs::JobResult r = jobs::RunJob(spec);
  Outcome o;
  if (r.ranks.empty()) return o;
  o.exit_code = r.ranks[0].exit_code;
  o.signal = r.ranks[0].signal;
  o.output = r.ranks[0].output;
  return o;
}

size_t Traces(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".trace") ++n;
  return n;
}

}  // namespace

TEST_CASE(
    "run: a rank segfaults, the launcher stops the rest: its exit code kept, rank and "
    "SIGSEGV named",
    "[run]") {
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/traces";
  const Outcome o =
      Run({"--dir", traces, "--", jobs::BinDir() + "/jobrun", "-n", "4", "--timeout", "5", "--",
           jobs::BinDir() + "/train_loop", "--steps", "8", "--bug", "segv:2:3"});
  INFO(o.output);
  // jobrun ends the ranks still waiting at its timeout, and exits 124.
  CHECK(o.exit_code == 124);
  CHECK(o.output.find("jobrun: rank 2 died of signal 11") != std::string::npos);
  CHECK(o.output.find("ncclwatch: tracing into " + traces) != std::string::npos);
  CHECK(o.output.find("exited with status 124; the diagnosis of " + traces) != std::string::npos);
  CHECK(o.output.find("PROBLEM: rank_died on communicator") != std::string::npos);
  CHECK(o.output.find("(rank 2)") != std::string::npos);
  CHECK(o.output.find("died of SIGSEGV") != std::string::npos);
  // Every rank was traced, with nothing set by hand (the launcher, which
  // never loads NCCL, makes no trace).
  CHECK(Traces(traces) == 4);
}

TEST_CASE(
    "run --on-stall: a hung job is diagnosed when the shim reports the stall, while it "
    "still runs",
    "[run]") {
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/traces";
  // Rank 2 stops calling NCCL before step 3 and sleeps; the others wait in
  // AllReduce #3. The shim reports the stall after 2 s; jobrun gives up at 12 s.
  jobs::JobSpec spec;
  spec.argv = {
      jobs::NcclwatchPath(),          "run",     "--on-stall", "--dir",     traces,    "--",
      jobs::BinDir() + "/jobrun",     "-n",      "4",          "--timeout", "12",      "--",
      jobs::BinDir() + "/train_loop", "--steps", "8",          "--bug",     "hang:2:3"};
  spec.env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir(),
              "NCCLWATCH_STALL=2",
              "LD_PRELOAD",
              "NCCLWATCH_DIR",
              "RANK",
              "WORLD_SIZE",
              "LOCAL_RANK",
              "LOCAL_WORLD_SIZE"};
  spec.timeout_s = 60;
  const jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  const std::string& out = r.ranks[0].output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 124);
  // The shim's own line, streamed as it happened.
  CHECK(out.find("ncclwatch: STALL pid ") != std::string::npos);
  CHECK(out.find("AllReduce #3 on communicator") != std::string::npos);
  // ncclwatch's reading of the stall records, and the diagnosis, before the
  // launcher ended the job.
  const size_t stalled = out.find(") stalled in AllReduce #3 of communicator ");
  const size_t diagnosis = out.find("ncclwatch: a stall was reported; the diagnosis of " + traces);
  const size_t killed = out.find("jobrun: rank 0 still running after 12 s: killed");
  CHECK(stalled != std::string::npos);
  REQUIRE(diagnosis != std::string::npos);
  REQUIRE(killed != std::string::npos);
  CHECK(diagnosis < killed);
  CHECK(out.find("PROBLEM: missing_rank", diagnosis) < killed);
  CHECK(out.find("(rank 2)", diagnosis) < killed);
  // And when the launcher has failed, the diagnosis of how the job ended.
  CHECK(out.find("jobrun exited with status 124; the diagnosis of", killed) != std::string::npos);
}

TEST_CASE("run: a healthy job exits 0 with no diagnosis, every process traced", "[run]") {
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/t";
  const Outcome o = Run({"--dir", traces, "--", jobs::BinDir() + "/jobrun", "-n", "2", "--",
                         jobs::BinDir() + "/train_loop", "--steps", "3"});
  INFO(o.output);
  CHECK(o.exit_code == 0);
  CHECK(o.output.find("PROBLEM") == std::string::npos);
  CHECK(o.output.find("exited with status 0; traces in " + traces) != std::string::npos);
  CHECK(Traces(traces) == 2);
}

TEST_CASE("run: without --dir, a fresh folder per run in the working folder", "[run]") {
  jobs::TempDir dir;
  jobs::JobSpec spec;
  // Twice a one-rank job, from the temporary folder.
  spec.argv = {"sh",
               "-c",
               "cd \"$1\" && \"$0\" run -- \"$2\" --steps 1 && \"$0\" run -- \"$2\" --steps 1",
               jobs::NcclwatchPath(),
               dir.path(),
               jobs::BinDir() + "/train_loop"};
  spec.env = jobs::LauncherEnv();
  const jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  INFO(r.ranks[0].output);
  CHECK(r.ranks[0].exit_code == 0);
  std::vector<std::string> folders;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = e.path().filename().string();
    CHECK(name.rfind("ncclwatch-run-", 0) == 0);
    CHECK(Traces(e.path().string()) == 1);
    folders.push_back(name);
  }
  CHECK(folders.size() == 2);
}

TEST_CASE("run: exit codes as a shell gives them", "[run]") {
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/t";
  CHECK(Run({"--dir", traces, "--", "sh", "-c", "exit 3"}).exit_code == 3);
  CHECK(Run({"--dir", traces, "--", "sh", "-c", "kill -SEGV $$"}).exit_code == 128 + 11);
  const Outcome missing = Run({"--dir", traces, "--", dir.path() + "/no-such-program"});
  CHECK(missing.exit_code == 127);
  CHECK(missing.output.find("cannot run " + dir.path() + "/no-such-program") != std::string::npos);
}

TEST_CASE("run: a signal sent to ncclwatch is diagnosed first, then passed on to the job",
          "[run]") {
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/t";
  // A one-rank job that stops calling NCCL and sleeps; `timeout` plays the
  // user who gives up, sending SIGTERM to ncclwatch alone (--foreground).
  jobs::JobSpec spec;
  spec.argv = {"timeout",
               "--foreground",
               "--preserve-status",
               "5",
               jobs::NcclwatchPath(),
               "run",
               "--dir",
               traces,
               "--",
               jobs::BinDir() + "/train_loop",
               "--steps",
               "8",
               "--bug",
               "hang:0:2"};
  spec.env = jobs::LauncherEnv();
  spec.timeout_s = 60;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  const std::string& out = r.ranks[0].output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 128 + 15);  // the job died of the SIGTERM passed on
  CHECK(out.find("ncclwatch: interrupted by SIGTERM; the diagnosis of " + traces) !=
        std::string::npos);
  CHECK(out.find("ncclwatch: 1 process on 1 host") != std::string::npos);
}

TEST_CASE("run: bad usage is one line and exit 2", "[run]") {
  jobs::TempDir dir;
  Outcome o = Run({"--dir", dir.path()});
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("run needs a command") != std::string::npos);
  o = Run({"--bogus", "--", "true"});
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("unknown option --bogus") != std::string::npos);
  o = Run({"--shim", dir.path() + "/nope.so", "--dir", dir.path(), "--", "true"});
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("nope.so: no such file") != std::string::npos);
}

TEST_CASE(
    "run under umask 0777: the fresh trace folder is usable, and no trace is never "
    "announced as traces",
    "[run][umask]") {
  // The fresh folder was made 0000: a user's job ran untraced, and `run`
  // still said "traces in ...". As user nobody (root writes anywhere).
  if (Run({"--", "/bin/sh", "-c", "command -v setpriv"}).exit_code != 0) {
    std::cout << "NCCLWATCH-SKIP: no setpriv\n";
    return;
  }
  jobs::TempDir dir;
  REQUIRE(chmod(dir.path().c_str(), 0777) == 0);
  auto as_nobody = [&](const std::string& command) {
    jobs::JobSpec spec;
    spec.argv = {"/bin/sh", "-c",
                 "cd '" + dir.path() +
                     "' && umask 0777 && exec setpriv --reuid=65534 --regid=65534 --clear-groups " +
                     jobs::NcclwatchPath() + " run -- " + command};
    spec.env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir(),
                "LD_PRELOAD",
                "NCCLWATCH_DIR",
                "RANK",
                "WORLD_SIZE",
                "LOCAL_RANK",
                "LOCAL_WORLD_SIZE"};
    jobs::JobResult r = jobs::RunJob(spec);
    REQUIRE(r.ranks.size() == 1);
    return r.ranks[0];
  };
  const jobs::RankResult traced = as_nobody(jobs::BinDir() + "/uniqueid_probe");
  INFO(traced.output);
  CHECK(traced.exit_code == 0);
  CHECK(traced.output.find("not tracing") == std::string::npos);
  CHECK(traced.output.find("exited with status 0; traces in ") != std::string::npos);
  std::vector<std::string> folders;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    folders.push_back(e.path().string());
  REQUIRE(folders.size() == 1);
  struct stat st;
  REQUIRE(stat(folders[0].c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  CHECK(Traces(folders[0]) == 1);
  // A command that never calls NCCL: no trace, and `run` says so.
  const jobs::RankResult none = as_nobody("/bin/true");
  INFO(none.output);
  CHECK(none.exit_code == 0);
  CHECK(none.output.find("traces in") == std::string::npos);
  CHECK(none.output.find("exited with status 0; no trace in ") != std::string::npos);
}

// The job's output passes through, live, and a bounded copy is kept beside
// the traces, where the diagnosis reads it: a job that failed before any
// process loaded NCCL is diagnosed from what it printed (torch 2.15's words
// on a machine without a GPU), no longer "no trace files".
TEST_CASE("run: the job's output kept beside the traces, a failure before NCCL diagnosed from it",
          "[run][logs]") {
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/t";
  const Outcome o = Run(
      {"--dir", traces, "--", "sh", "-c",
       "echo step 1; echo '[rank0]: RuntimeError: ProcessGroupNCCL is only supported with GPUs, "
       "no GPUs found!' >&2; exit 1"});
  INFO(o.output);
  CHECK(o.exit_code == 1);
  CHECK(o.output.find("step 1\n") != std::string::npos);  // passed through
  CHECK(o.output.find("no trace in " + traces) != std::string::npos);
  CHECK(o.output.find("PROBLEM: init_failure (cuda)") != std::string::npos);
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(traces))
    if (e.path().filename().string().rfind("job-output.", 0) == 0) kept.push_back(e.path());
  REQUIRE(kept.size() == 1);
  std::ifstream in(kept[0]);
  const std::string copy((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(copy.find("step 1\n") != std::string::npos);
  CHECK(copy.find("no GPUs found!") != std::string::npos);
}

TEST_CASE("run: a job's output past the bounds keeps its head and its tail, and says so",
          "[run][logs]") {
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/t";
  // 6 MiB of lines: the first MiB and the last 4 MiB are kept.
  const Outcome o = Run({"--dir", traces, "--", "sh", "-c",
                         "echo FIRST; yes 0123456789abcdef | head -c 6291456; echo; echo LAST"});
  CHECK(o.exit_code == 0);
  CHECK(o.output.size() > 6291456);  // all of it passed through
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(traces))
    if (e.path().filename().string().rfind("job-output.", 0) == 0) kept.push_back(e.path());
  REQUIRE(kept.size() == 1);
  std::ifstream in(kept[0]);
  const std::string copy((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(copy.rfind("FIRST\n", 0) == 0);
  CHECK(copy.size() < (size_t{5} << 20) + 200);
  CHECK(copy.find("bytes of the job's output left out here]") != std::string::npos);
  CHECK(copy.find("LAST\n") == copy.size() - 5);
}

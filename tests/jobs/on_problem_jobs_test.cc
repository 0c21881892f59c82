// Acting on a verdict: `ncclwatch run --on-problem CMD` and `ncclwatch status
// --on-problem CMD` on real jobs on the simulator. CMD here records what it
// was given (the JSON report on stdin, the NCCLWATCH_* variables) into
// files, and a line per run, so the tests see that it ran once, with the
// report of the diagnosis printed and the culprits of its root cause. And
// `status --metrics` on a live hung job.

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/traced_job.h"

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The command: the report into OUT/report.json, the variables into OUT/env,
// one line per run into OUT/runs; exits with `status`.
std::string RecordingCommand(const std::string& out, int status = 0) {
  return "cat > '" + out + "/report.json'; env | grep '^NCCLWATCH_' | sort > '" + out +
         "/env'; echo ran >> '" + out + "/runs'; exit " + std::to_string(status);
}

std::map<std::string, std::string> Env(const std::string& out) {
  std::map<std::string, std::string> env;
  std::istringstream lines(Slurp(out + "/env"));
  std::string line;
  while (std::getline(lines, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

google::protobuf::Struct Report(const std::string& out) {
  google::protobuf::Struct s;
  const std::string json = Slurp(out + "/report.json");
  INFO(json);
  REQUIRE(google::protobuf::util::JsonStringToMessage(json, &s).ok());
  return s;
}

const google::protobuf::Struct* RootCause(const google::protobuf::Struct& report) {
  for (const auto& f : report.fields().at("findings").list_value().values())
    if (f.struct_value().fields().at("role").string_value() == "root_cause")
      return &f.struct_value();
  return nullptr;
}

std::vector<int> Ranks(const google::protobuf::Struct& finding) {
  std::vector<int> ranks;
  for (const auto& r : finding.fields().at("ranks").list_value().values())
    ranks.push_back(static_cast<int>(r.number_value()));
  return ranks;
}

// "host:pid" of the process of global rank `rank` in the report.
std::string ProcessOf(const google::protobuf::Struct& report, int rank) {
  for (const auto& p : report.fields().at("processes").list_value().values()) {
    const auto& f = p.struct_value().fields();
    if (static_cast<int>(f.at("rank").number_value()) == rank)
      return f.at("host").string_value() + ":" +
             std::to_string(static_cast<long>(f.at("pid").number_value()));
  }
  return "";
}

std::string Hostname() {
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  return host;
}

struct Outcome {
  int exit_code = -1;
  std::string output;
};

// `sh -c SCRIPT` with $0 the bin folder, $1 the test's folder, $2 the shim,
// $3 the recording command (RecordingCommand into the test's folder, exiting
// with `cmd_status`), in a launcher's environment plus `env`.
Outcome Shell(const std::string& script, const std::string& dir, int cmd_status = 0,
              const std::vector<std::string>& env = {}, double timeout_s = 90) {
  jobs::JobSpec spec;
  spec.argv = {
      "sh", "-c", script, jobs::BinDir(), dir, jobs::ShimPath(), RecordingCommand(dir, cmd_status)};
  spec.env = jobs::LauncherEnv();
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.timeout_s = timeout_s;
  const jobs::JobResult r = jobs::RunJob(spec);
  Outcome o;
  if (r.ranks.empty()) return o;
  o.exit_code = r.ranks[0].exit_code;
  o.output = r.ranks[0].output;
  return o;
}

}  // namespace

TEST_CASE(
    "run --on-problem: a hung job ended by its launcher: CMD runs once, with the report of the "
    "diagnosis and the culprit's rank, host and process",
    "[run][on_problem]") {
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/traces";
  // Rank 1 calls Broadcast where the others call AllReduce #3; jobrun ends
  // the hung job after 6 s.
  const Outcome o = Shell(
      "\"$0\"/ncclwatch run --dir \"$1\"/traces --on-problem \"$3\" -- \"$0\"/jobrun -n 4 "
      "--timeout 6 -- \"$0\"/train_loop --steps 8 --bug op:1:3",
      dir.path());
  const std::string& out = o.output;
  INFO(out);
  CHECK(o.exit_code == 124);  // jobrun's, unchanged
  CHECK(out.find("PROBLEM: collective_mismatch on communicator") != std::string::npos);
  CHECK(out.find("ncclwatch: running the --on-problem command (1 root cause, ranks 1)") !=
        std::string::npos);
  CHECK(Slurp(dir.path() + "/runs") == "ran\n");

  const google::protobuf::Struct report = Report(dir.path());
  CHECK(report.fields().at("schema_version").number_value() == 2);
  CHECK(report.fields().at("verdict").string_value() == "problem");
  const google::protobuf::Struct* root = RootCause(report);
  REQUIRE(root != nullptr);
  CHECK(root->fields().at("kind").string_value() == "collective_mismatch");
  CHECK(root->fields().at("comm").string_value() == jobs::CommId(traces, 0, "ncclCommInitRank"));
  CHECK(root->fields().at("seq").number_value() == 3);
  CHECK(Ranks(*root) == std::vector<int>{1});

  const auto env = Env(dir.path());
  CHECK(env.at("NCCLWATCH_VERDICT") == "problem");
  CHECK(env.at("NCCLWATCH_KIND") == "collective_mismatch");
  CHECK(env.at("NCCLWATCH_RANKS") == "1");
  CHECK(env.at("NCCLWATCH_HOSTS") == Hostname());
  CHECK(env.at("NCCLWATCH_PROCESSES") == ProcessOf(report, 1));
  CHECK(env.at("NCCLWATCH_SUMMARY")
            .rfind("PROBLEM: collective_mismatch on communicator " +
                       root->fields().at("comm").string_value().substr(0, 6) + " #3 (rank 1)",
                   0) == 0);
  CHECK(env.at("NCCLWATCH_TRACES") == traces);
}

TEST_CASE(
    "run --on-stall --on-problem: CMD runs at the stall, while the job still runs, and once "
    "though the job is diagnosed again when it fails, and its failure is said, the exit code kept",
    "[run][on_problem]") {
  jobs::TempDir dir;
  // Rank 2 stops calling NCCL before step 3; the shim reports the others'
  // stall after 2 s; jobrun gives up at 12 s.
  const Outcome o = Shell(
      "\"$0\"/ncclwatch run --on-stall --dir \"$1\"/traces --on-problem \"$3\" -- \"$0\"/jobrun "
      "-n 4 --timeout 12 -- \"$0\"/train_loop --steps 8 --bug hang:2:3",
      dir.path(), 3, {"NCCLWATCH_STALL=2"});
  const std::string& out = o.output;
  INFO(out);
  CHECK(o.exit_code == 124);
  const size_t stall = out.find("ncclwatch: a stall was reported; the diagnosis of ");
  const size_t ran =
      out.find("ncclwatch: running the --on-problem command (1 root cause, ranks 2)");
  const size_t killed = out.find("jobrun: rank 0 still running after 12 s: killed");
  const size_t again = out.find("exited with status 124; the diagnosis of ");
  REQUIRE(stall != std::string::npos);
  REQUIRE(ran != std::string::npos);
  REQUIRE(killed != std::string::npos);
  REQUIRE(again != std::string::npos);
  CHECK(stall < ran);
  CHECK(ran < killed);
  CHECK(out.find("ncclwatch: running the --on-problem command", ran + 1) == std::string::npos);
  CHECK(out.find("ncclwatch: the --on-problem command exited with status 3") != std::string::npos);
  CHECK(Slurp(dir.path() + "/runs") == "ran\n");
  const auto env = Env(dir.path());
  CHECK(env.at("NCCLWATCH_KIND") == "missing_rank");
  CHECK(env.at("NCCLWATCH_RANKS") == "2");
  const google::protobuf::Struct report = Report(dir.path());
  const google::protobuf::Struct* root = RootCause(report);
  REQUIRE(root != nullptr);
  CHECK(root->fields().at("kind").string_value() == "missing_rank");
  CHECK(root->fields().at("seq").number_value() == 3);
  CHECK(Ranks(*root) == std::vector<int>{2});
  CHECK(env.at("NCCLWATCH_PROCESSES") == ProcessOf(report, 2));
}

TEST_CASE("run --on-problem: a healthy job, and a bad --on-problem, run no command",
          "[run][on_problem]") {
  jobs::TempDir dir;
  const Outcome o = Shell(
      "\"$0\"/ncclwatch run --dir \"$1\"/traces --on-problem \"$3\" -- \"$0\"/jobrun -n 2 "
      "--timeout 60 -- \"$0\"/train_loop --steps 2; echo \"EXIT $?\"; \"$0\"/ncclwatch run "
      "--on-problem '' -- true; echo \"EMPTY $?\"",
      dir.path());
  INFO(o.output);
  CHECK(o.output.find("EXIT 0") != std::string::npos);
  CHECK(o.output.find("--on-problem") == o.output.find("--on-problem needs a command"));
  CHECK(o.output.find("EMPTY 2") != std::string::npos);
  CHECK(access((dir.path() + "/runs").c_str(), F_OK) != 0);
}

TEST_CASE(
    "status --on-problem and --metrics on a live hung job: stuck, CMD run once with the "
    "culprit, every rank's series stuck",
    "[status][on_problem][metrics]") {
  jobs::TempDir dir;
  // The job hangs at collective #3 (rank 1's Broadcast); status looks once
  // it says stuck (2 s without progress), then the job is left to jobrun's
  // timeout.
  const Outcome o = Shell(
      "LD_PRELOAD=\"$2\" NCCLWATCH_DIR=\"$1\"/traces \"$0\"/jobrun -n 4 --timeout 15 -- "
      "\"$0\"/train_loop --steps 8 --bug op:1:3 > \"$1\"/job.out 2>&1 & i=0; until "
      "\"$0\"/ncclwatch status --stuck-after 2 \"$1\"/traces > /dev/null 2>&1; [ $? -eq 1 ] || "
      "[ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; echo kept > \"$1\"/victim; ln -s victim "
      "\"$1\"/job.prom; echo STATUS; \"$0\"/ncclwatch status "
      "--stuck-after 2 --metrics \"$1\"/job.prom --on-problem \"$3\" \"$1\"/traces; echo \"EXIT "
      "$?\"; \"$0\"/ncclwatch status --stuck-after 2 --metrics - \"$1\"/traces > "
      "\"$1\"/stdout.prom; "
      "echo \"STDOUT $?\"; \"$0\"/ncclwatch status --metrics \"$1\"/no/such/x.prom \"$1\"/traces; "
      "echo "
      "\"NOWHERE $?\"; wait",
      dir.path());
  const std::string& out = o.output;
  INFO(out);
  const size_t status = out.find("STATUS\n");
  REQUIRE(status != std::string::npos);
  CHECK(out.find("STUCK: communicator ", status) != std::string::npos);
  CHECK(out.find("EXIT 1") != std::string::npos);
  CHECK(out.find("STDOUT 1") != std::string::npos);
  // A metrics file that cannot be written: one line, exit 2.
  CHECK(out.find("ncclwatch: cannot write beside " + dir.path() +
                 "/no/such/x.prom: No such file or directory\n") != std::string::npos);
  CHECK(out.find("NOWHERE 2") != std::string::npos);
  // The metrics replaced the link at job.prom, not what it pointed to.
  struct stat st;
  REQUIRE(lstat((dir.path() + "/job.prom").c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK(Slurp(dir.path() + "/victim") == "kept\n");
  CHECK(out.find("ncclwatch: running the --on-problem command (1 root cause, ranks 1)") !=
        std::string::npos);
  CHECK(Slurp(dir.path() + "/runs") == "ran\n");
  const auto env = Env(dir.path());
  CHECK(env.at("NCCLWATCH_KIND") == "collective_mismatch");
  CHECK(env.at("NCCLWATCH_RANKS") == "1");
  CHECK(env.at("NCCLWATCH_HOSTS") == Hostname());
  CHECK(env.at("NCCLWATCH_TRACES") == dir.path() + "/traces");

  const std::string comm = jobs::CommId(dir.path() + "/traces", 0, "ncclCommInitRank");
  REQUIRE(comm.size() == 16);
  for (const char* file : {"/job.prom", "/stdout.prom"}) {
    const std::string metrics = Slurp(dir.path() + file);
    INFO(file << ":\n" << metrics);
    for (int rank = 0; rank < 4; ++rank) {
      const std::string series = "ncclwatch_stuck{job=\"traces\",host=\"" + Hostname() +
                                 "\",rank=\"" + std::to_string(rank) + "\",communicator=\"" + comm +
                                 "\",comm_rank=\"" + std::to_string(rank) + "\",pid=\"";
      const size_t at = metrics.find(series);
      REQUIRE(at != std::string::npos);
      CHECK(metrics.substr(metrics.find('}', at), 4) == "} 1\n");
    }
    CHECK(metrics.find("ncclwatch_job_stuck{job=\"traces\"} 1\n") != std::string::npos);
  }
}

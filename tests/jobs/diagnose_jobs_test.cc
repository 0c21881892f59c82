// Every failure class ncclwatch claims, reproduced for real: an 8-rank job on
// the simulator with libncclwatch.so preloaded goes wrong as a real one would
// (hangs are ended by the launcher with SIGTERM, then SIGKILL, as a
// scheduler would), and `ncclwatch diagnose --json` must name exactly the
// kind, communicator, sequence number, ranks and field.
//
// In train_loop, step k's world AllReduce is collective #(k + k/4) of the
// world communicator (a Broadcast follows every 4th step's AllReduce).

#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
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

// ------------------------------------------------------------ what is read
//
// The folder walk as another user would meet it (the tests run as root, and
// play that user with uid 65534): links inside a trace folder, folders that
// cannot be read, names made to forge a line, thousands of unreadable files.

namespace {

constexpr uid_t kNobody = 65534;

// A healthy 2-rank job traced into `dir`.
void HealthyJob(const std::string& dir) {
  jobs::JobResult job = jobs::RunJob(jobs::TracedJobSpec(2, "train_loop", {"--steps", "2"}, dir));
  REQUIRE(job.error.empty());
  for (const auto& r : job.ranks) REQUIRE(r.exit_code == 0);
}

void ChownTree(const std::string& dir, uid_t uid) {
  REQUIRE(chown(dir.c_str(), uid, uid) == 0);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    REQUIRE(lchown(e.path().c_str(), uid, uid) == 0);
}

std::vector<std::string> ProcessPaths(const jobs::DiagnosisView& d) {
  std::vector<std::string> paths;
  for (const auto& p : d.raw.fields().at("processes").list_value().values())
    paths.push_back(p.struct_value().fields().at("path").string_value());
  return paths;
}

// `ncclwatch diagnose` as uid 65534, human or JSON.
jobs::DiagnosisView DiagnoseAsNobody(const std::string& dir, bool json) {
  jobs::JobSpec spec;
  spec.argv = {"setpriv",        "--reuid=65534",       "--regid=65534",
               "--clear-groups", jobs::NcclwatchPath(), "diagnose"};
  if (json) spec.argv.push_back("--json");
  spec.argv.push_back(dir);
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  jobs::DiagnosisView d;
  d.exit_code = r.ranks[0].exit_code;
  d.output = r.ranks[0].output;
  return d;
}

}  // namespace

// Root diagnoses a folder another user may write to. That user plants
// x.trace, a link to a trace only root may read: its data must not reach the
// report. A link the user made to a file of their own is still followed
// (traces collected as links), and so is a link given on the command line.
TEST_CASE("a link planted by another user to a root-only trace is not followed",
          "[diagnose][security]") {
  namespace fs = std::filesystem;
  jobs::TempDir root_job, theirs, elsewhere;
  HealthyJob(root_job.path());
  const std::string secret = jobs::TraceOf(root_job.path(), 0);
  REQUIRE(chmod(secret.c_str(), 0600) == 0);
  HealthyJob(theirs.path());
  // Their rank 1's trace lives elsewhere, reached by their own link.
  const std::string moved = elsewhere.path() + "/rank1.trace";
  fs::rename(jobs::TraceOf(theirs.path(), 1), moved);
  fs::create_symlink(moved, theirs.path() + "/rank1.trace");
  fs::create_symlink(secret, theirs.path() + "/x.trace");
  ChownTree(theirs.path(), kNobody);
  ChownTree(elsewhere.path(), kNobody);

  const jobs::DiagnosisView d = jobs::Diagnose({theirs.path()});
  INFO(d.output);
  REQUIRE(d.parsed);
  const std::vector<std::string> read = ProcessPaths(d);
  CHECK(read.size() == 2);
  CHECK(std::find(read.begin(), read.end(), secret) == read.end());
  CHECK(std::find(read.begin(), read.end(), moved) != read.end());
  CHECK(d.output.find(root_job.path()) == std::string::npos);
  // The link not followed is said, and may hold a rank's trace: not healthy.
  CHECK(d.exit_code == 1);
  const jobs::FindingView* root = d.Root();
  REQUIRE(root != nullptr);
  CHECK(root->kind == "unreadable_traces");
  CHECK(root->detail.find(theirs.path() + "/x.trace: a symbolic link of uid 65534 to a file of "
                                          "uid 0: not followed") != std::string::npos);
  // Named on the command line, a link is followed: root chose to read it.
  const jobs::DiagnosisView named = jobs::Diagnose({theirs.path() + "/x.trace"});
  INFO(named.output);
  REQUIRE(named.parsed);
  CHECK(ProcessPaths(named) == std::vector<std::string>{secret});
}

// explain walks a folder for every file, diagnose for traces and logs by
// name: a planted link to a file that is no trace (a note) is passed over
// by both without a verdict's worth of doubt, and one to a trace leaves
// both unsure. The same job, the same verdict.
TEST_CASE("a planted link explain passes over: the same verdict as diagnose's",
          "[diagnose][security][logs]") {
  namespace fs = std::filesystem;
  jobs::TempDir job, elsewhere;
  HealthyJob(job.path());
  const std::string notes = elsewhere.path() + "/notes.txt";
  std::ofstream(notes) << "nothing here\n";
  const std::string link = job.path() + "/notes.txt";
  fs::create_symlink(notes, link);
  REQUIRE(lchown(link.c_str(), kNobody, kNobody) == 0);
  jobs::DiagnosisView diagnosed = jobs::Diagnose({job.path()});
  jobs::DiagnosisView explained = jobs::Explain({job.path()});
  INFO("diagnose:\n" << diagnosed.output << "\nexplain:\n" << explained.output);
  REQUIRE(diagnosed.parsed);
  REQUIRE(explained.parsed);
  CHECK(diagnosed.verdict == "healthy");
  CHECK(explained.verdict == "healthy");
  CHECK(explained.exit_code == 0);
  // The note is named as not read, as a log.
  const auto& unreadable = explained.raw.fields().at("unreadable").list_value();
  REQUIRE(unreadable.values_size() == 1);
  CHECK(unreadable.values(0).struct_value().fields().at("path").string_value() == link);

  // A planted link named as a trace may hold a rank's: neither says healthy.
  const std::string trace_link = job.path() + "/x.trace";
  fs::create_symlink(notes, trace_link);
  REQUIRE(lchown(trace_link.c_str(), kNobody, kNobody) == 0);
  diagnosed = jobs::Diagnose({job.path()});
  explained = jobs::Explain({job.path()});
  REQUIRE(diagnosed.parsed);
  REQUIRE(explained.parsed);
  CHECK(jobs::Differences(diagnosed, explained) == std::vector<std::string>{});
  CHECK(explained.exit_code == 1);
  REQUIRE(explained.Root() != nullptr);
  CHECK(explained.Root()->kind == "unreadable_traces");
}

// A subfolder the user cannot read may hold a rank's trace, and another
// job's whole run: never a plain HEALTHY, and what was not read is named.
TEST_CASE("an unreadable subfolder is named, and the job is not called healthy without it",
          "[diagnose]") {
  jobs::TempDir dir;
  HealthyJob(dir.path());
  const std::string sub = dir.path() + "/node2";
  std::filesystem::create_directory(sub);
  HealthyJob(sub);
  ChownTree(dir.path(), kNobody);
  REQUIRE(chmod(sub.c_str(), 0) == 0);

  jobs::DiagnosisView d = DiagnoseAsNobody(dir.path(), false);
  INFO(d.output);
  CHECK(d.exit_code == 1);
  CHECK(d.output.rfind("PROBLEM: unreadable_traces\n", 0) == 0);
  CHECK(d.output.find(sub + ": cannot be read: Permission denied") != std::string::npos);
  // Readable again, both jobs are read and the verdict is healthy.
  REQUIRE(chmod(sub.c_str(), 0700) == 0);
  d = DiagnoseAsNobody(dir.path(), false);
  INFO(d.output);
  CHECK(d.exit_code == 0);
  CHECK(d.output.rfind("HEALTHY\n", 0) == 0);
  CHECK(d.output.find("4 processes") != std::string::npos);
}

// A log beside the traces that cannot be read is named as not read, in the
// human report and the JSON's "unreadable"; the traces, which say every
// rank finished its work, are judged all the same.
TEST_CASE("a log beside the traces that cannot be read is named, the traces judged all the same",
          "[diagnose][logs]") {
  jobs::TempDir dir;
  HealthyJob(dir.path());
  const std::string log = dir.path() + "/job-output.log";
  std::ofstream(log) << "NCCL WARN anything\n";
  ChownTree(dir.path(), kNobody);
  REQUIRE(chmod(log.c_str(), 0) == 0);
  for (const bool json : {false, true}) {
    const jobs::DiagnosisView d = DiagnoseAsNobody(dir.path(), json);
    INFO(d.output);
    CHECK(d.exit_code == 0);
    if (!json) {
      CHECK(d.output.rfind("HEALTHY\n", 0) == 0);
      CHECK(d.output.find("\nNot read: " + log + ": cannot be read: Permission denied\n") !=
            std::string::npos);
      continue;
    }
    google::protobuf::Struct raw;
    REQUIRE(google::protobuf::util::JsonStringToMessage(d.output, &raw).ok());
    CHECK(raw.fields().at("verdict").string_value() == "healthy");
    const auto& unreadable = raw.fields().at("unreadable").list_value();
    REQUIRE(unreadable.values_size() == 1);
    const auto& entry = unreadable.values(0).struct_value().fields();
    CHECK(entry.at("path").string_value() == log);
    CHECK(entry.at("error").string_value() == log + ": cannot be read: Permission denied");
  }
}

// A file name is printed on one line whatever it holds, and a note on
// thousands of files names the first few and counts the rest.
TEST_CASE("file names cannot forge report lines, and a note on 20000 files stays short",
          "[diagnose]") {
  jobs::TempDir dir;
  HealthyJob(dir.path());
  const std::string forged = "\nPROBLEM: collective_mismatch on communicator 000000 #0 (rank 9)\n";
  std::ofstream(dir.path() + "/a" + forged + ".trace") << "not a trace";
  jobs::DiagnosisView d = jobs::Diagnose({dir.path()}, false);
  INFO(d.output);
  CHECK(d.exit_code == 0);
  CHECK(d.output.rfind("HEALTHY, 1 note\n", 0) == 0);
  CHECK(d.output.find(forged) == std::string::npos);
  CHECK(d.output.find("/a\\x0aPROBLEM: collective_mismatch on communicator 000000 #0 (rank "
                      "9)\\x0a.trace: not an ncclwatch trace") != std::string::npos);

  for (int i = 0; i < 20000; ++i)
    std::ofstream(dir.path() + "/junk-" + std::to_string(100000 + i) + ".trace") << "junk";
  d = jobs::Diagnose({dir.path()}, false);
  CHECK(d.exit_code == 0);
  size_t longest = 0;
  std::istringstream lines(d.output);
  for (std::string line; std::getline(lines, line);) longest = std::max(longest, line.size());
  CHECK(longest < 1000);
  CHECK(d.output.find("20001 file(s) could not be read: ") != std::string::npos);
  CHECK(d.output.find("; and 19998 more (listed in --json)") != std::string::npos);
  // The JSON keeps every one.
  const jobs::DiagnosisView json = jobs::Diagnose({dir.path()});
  REQUIRE(json.parsed);
  CHECK(json.raw.fields().at("unreadable").list_value().values_size() == 20001);
}

// A pseudo file system is not walked (/proc never ends, and its files' sizes
// are made up): refused at once, exit 2 with one line.
TEST_CASE("diagnose /proc is refused without a walk", "[diagnose]") {
  const jobs::DiagnosisView d = jobs::Diagnose({"/proc"});
  CHECK(d.exit_code == 2);
  CHECK(d.output == "ncclwatch: /proc: on proc, a pseudo file system, not read\n");
}

// JobAnalysis and Diagnose end to end on a few synthetic processes: which
// finding comes out of a job (its kind, role, communicator, number and
// ranks), and what the analysis keeps of each process.
//
// Finding assertions live in the few helpers below (ExpectOne, Claims,
// Extra, Describe), so a change of the Finding's field types touches them only.

#include "analysis/job_analysis.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdint>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "findings/finding.h"
#include "ncclwatch/trace_fields.h"
#include "report/finding_text.h"
#include "report/names.h"
#include "report/report_parts.h"
#include "synthetic_process.h"

namespace {

namespace f = ::ncclwatch::fields;
using ncclwatch::decoder::Diagnose;
using ncclwatch::decoder::Diagnosis;
using ncclwatch::decoder::FieldName;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::JobAnalysis;
using ncclwatch::decoder::JobModel;
using namespace ncclwatch::testing;

constexpr uint64_t kComm = 0x3fa9c1d2e5b60718;
constexpr uint64_t kOther = 0x77aa00112233ccdd;

JobAnalysis Analyze(const std::vector<SyntheticProcess>& ps) {
  JobAnalysis job;
  for (const SyntheticProcess& p : ps) job.AddProcess(p.Build());
  job.Finish();
  return job;
}

Diagnosis DiagnoseJob(const std::vector<SyntheticProcess>& ps) { return Diagnose(Analyze(ps)); }

// What one finding should say.
struct Expected {
  std::string kind;
  std::string role;
  std::optional<uint64_t> comm;
  std::optional<uint64_t> seq;
  std::vector<int> ranks;
  std::string field;          // checked when not empty
  std::optional<int> nranks;  // checked when set
  std::optional<int> job;     // checked when set
};

std::string Describe(const Diagnosis& d) {
  std::string s;
  for (const Finding& x : d.findings) {
    s += std::string(ncclwatch::decoder::KindName(x.kind)) + "/" +
         ncclwatch::decoder::RoleName(x.role) + ": " +
         ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites()).detail + "\n";
  }
  return s;
}

// The diagnosis holds exactly one finding, and it is `e`.
Finding ExpectOne(const Diagnosis& d, const Expected& e) {
  INFO(Describe(d));
  REQUIRE(d.findings.size() == 1);
  const Finding x = d.findings[0];
  CHECK(ncclwatch::decoder::KindName(x.kind) == e.kind);
  CHECK(ncclwatch::decoder::RoleName(x.role) == e.role);
  CHECK(x.comm == e.comm);
  CHECK(x.seq == e.seq);
  CHECK(x.ranks == e.ranks);
  if (!e.field.empty()) CHECK(std::string(FieldName(x.field)) == e.field);
  if (e.nranks) CHECK(x.nranks == *e.nranks);
  if (e.job) CHECK(x.job == *e.job);
  return x;
}

// Whether any finding says `ranks` missed or mismatched collective `seq` of `comm`.
bool Claims(const Diagnosis& d, uint64_t comm, uint64_t seq, const std::vector<int>& ranks) {
  for (const Finding& x : d.findings)
    if (x.comm == comm && x.seq == seq && x.ranks == ranks) return true;
  return false;
}

// A kind-specific fact of the JSON output (its JSON text), "" when absent:
// the finding as the report writes it, and the value of `key` in it (a
// string with its quotes, or a number, bool or null).
std::string Extra(const Finding& x, const std::string& key) {
  std::ostringstream out;
  ncclwatch::decoder::JsonWriter w(out);
  ncclwatch::decoder::WriteFindingJson(x, ncclwatch::decoder::NoCallSites(), w);
  const std::string json = out.str();
  const std::string label = "\"" + key + "\":";
  const size_t at = json.find(label);
  if (at == std::string::npos) return "";
  size_t i = at + label.size(), end = i;
  if (i < json.size() && json[i] == '"') {
    for (end = i + 1; end < json.size() && json[end] != '"'; ++end)
      if (json[end] == '\\') ++end;
    return json.substr(i, end + 1 - i);
  }
  while (end < json.size() && json[end] != ',' && json[end] != '}' && json[end] != ']') ++end;
  return json.substr(i, end - i);
}

// Ranks 0..n-1 of kComm, process r naming itself global rank `first_global + r`.
std::vector<SyntheticProcess> Ranks(int n, int first_global = 0) {
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < n; ++r) {
    ps.emplace_back(first_global + r);
    ps.back().Init(kComm, r, n);
  }
  return ps;
}

}  // namespace

TEST_CASE("a healthy two-rank job: no findings, no problem", "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 9).Destroy(kComm).Exit(0);
  const JobAnalysis job = Analyze(ps);
  REQUIRE(job.processes().size() == 2);
  CHECK(job.processes()[1].rank == 1);
  CHECK(job.processes()[1].fate.kind == ncclwatch::decoder::Fate::kExited);
  CHECK(job.processes()[1].fate.exit_code == 0);
  CHECK(job.CommSize(kComm) == 2);
  CHECK(job.ProcessOf(kComm, 1) == 1);
  const Diagnosis d = Diagnose(job);
  INFO(Describe(d));
  CHECK(d.findings.empty());
  CHECK_FALSE(d.problem);
  REQUIRE(d.jobs.size() == 1);
  CHECK(d.jobs[0] == std::vector<int>{0, 1});
}

TEST_CASE("a healthy pipeline of sends and receives, no collective: no findings", "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(3);
  for (uint64_t k = 0; k < 4; ++k) {
    ps[0].Send(kComm, k, 1);
    ps[1].Recv(kComm, k, 0).Send(kComm, k, 2);
    ps[2].Recv(kComm, k, 1);
  }
  for (SyntheticProcess& p : ps) p.Destroy(kComm).Exit(0);
  const Diagnosis d = DiagnoseJob(ps);
  INFO(Describe(d));
  CHECK(d.findings.empty());
  CHECK_FALSE(d.problem);
}

TEST_CASE("crafted sequence numbers, diagnosed: no crash, no claim about numbers nobody holds",
          "[job][hostile]") {
  std::vector<SyntheticProcess> ps = Ranks(3);
  ps[0].Collective(kComm, 0, AllReduce().Pending());
  ps[1].Collective(kComm, uint64_t{1} << 40, AllReduce().Pending());
  ps[2].Collective(kComm, UINT64_MAX, AllReduce().Pending());
  const Diagnosis d = DiagnoseJob(ps);
  INFO(Describe(d));
  CHECK_FALSE(Claims(d, kComm, 1, {0}));
  CHECK_FALSE(Claims(d, kComm, 0, {1}));
  CHECK(d.jobs.size() == 1);
}

TEST_CASE("a collective mismatch: the root cause names the communicator, number, rank and field",
          "[job]") {
  // Global ranks 4, 5, 6 hold ranks 0, 1, 2 of kComm; global rank 6 calls
  // AllReduce #4 with another count, and all three wait in it.
  std::vector<SyntheticProcess> ps = Ranks(3, 4);
  for (int r = 0; r < 3; ++r) {
    ps[r].Collectives(kComm, 0, 3).Collective(kComm, 4, AllReduce(r == 2 ? 1000 : 1024).Pending());
  }
  ExpectOne(DiagnoseJob(ps), {"collective_mismatch", "root_cause", kComm, 4, {6}, "count", 3});
}

TEST_CASE("a mismatch in the redop of a rank added first: the majority still decides who deviates",
          "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(3);
  for (int r = 0; r < 3; ++r) {
    ps[r]
        .Collectives(kComm, 0, 1)
        .Collective(kComm, 2, AllReduce().Redop(r == 0 ? kMax : kSum).Pending());
  }
  ExpectOne(DiagnoseJob(ps), {"collective_mismatch", "root_cause", kComm, 2, {0}, "redop"});
}

TEST_CASE(
    "a process with two ranks of a communicator: its ranks are named by their communicator rank",
    "[job]") {
  // ncclCommInitAll in process 0 (ranks 0 and 1, no launcher rank); rank 1
  // calls #2 in half precision.
  std::vector<SyntheticProcess> ps;
  ps.emplace_back(-1);
  ps[0].Init(kComm, 0, 3).Init(kComm, 1, 3);
  ps.emplace_back(-1);
  ps[1].Init(kComm, 2, 3);
  for (uint64_t k = 0; k < 3; ++k) {
    const int32_t datatype = k == 2 ? kFloat16 : kFloat32;
    ps[0]
        .Collective(kComm, k, AllReduce().Rank(0))
        .Collective(kComm, k, AllReduce().Rank(1).Datatype(datatype));
    ps[1].Collective(kComm, k);
  }
  ExpectOne(DiagnoseJob(ps), {"collective_mismatch", "root_cause", kComm, 2, {1}, "datatype", 3});
}

TEST_CASE("a rank that aborted the communicator: missing_rank, aborted", "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[0].Collectives(kComm, 0, 2).Collective(kComm, 3, AllReduce().Pending());
  ps[1].Collectives(kComm, 0, 2).Abort(kComm);
  const Finding x = ExpectOne(DiagnoseJob(ps), {"missing_rank", "root_cause", kComm, 3, {1}});
  CHECK(Extra(x, "did_instead").find("aborted") != std::string::npos);
}

TEST_CASE("a rank that exited early: missing_rank, and what it did instead", "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[0]
      .Collectives(kComm, 0, 2)
      .Collective(kComm, 3, AllReduce().Pending());  // waits in #3 for ever
  ps[1].Collectives(kComm, 0, 2).Exit(0);            // never destroyed it
  const Finding x = ExpectOne(DiagnoseJob(ps), {"missing_rank", "root_cause", kComm, 3, {1}});
  CHECK(Extra(x, "did_instead").find("exit") != std::string::npos);
  CHECK(Extra(x, "last_seq") == "2");
}

TEST_CASE("a rank that exited before its first collective: missing_rank at #0, no last number",
          "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[0].Collective(kComm, 0, AllReduce().Pending());
  ps[1].Exit(1);
  const Finding x = ExpectOne(DiagnoseJob(ps), {"missing_rank", "root_cause", kComm, 0, {1}});
  CHECK(Extra(x, "did_instead").find("exit") != std::string::npos);
  CHECK(Extra(x, "last_seq") == "null");
}

TEST_CASE("a rank alive elsewhere: missing_rank, it kept calling other communicators", "[job]") {
  // Processes 0 and 1 hold kComm; processes 1 and 2 hold kOther, where
  // process 1 went on after its last collective of kComm.
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps.emplace_back(2);
  ps[1].Init(kOther, 0, 2);
  ps[2].Init(kOther, 1, 2);
  ps[0].Collectives(kComm, 0, 1).Collective(kComm, 2, AllReduce().Pending());
  ps[1]
      .Collectives(kComm, 0, 1)
      .Collectives(kOther, 0, 3)
      .Collective(kOther, 4, AllReduce().Pending());
  ps[2].Collectives(kOther, 0, 3).Collective(kOther, 4, AllReduce().Pending());
  const Finding x = ExpectOne(DiagnoseJob(ps), {"missing_rank", "root_cause", kComm, 2, {1}});
  CHECK(Extra(x, "did_instead").find("kept calling other communicators") != std::string::npos);
  CHECK(Extra(x, "did_instead").find("AllReduce #4 of 77aa00") != std::string::npos);
}

TEST_CASE("a rank a signal ended: alive until the job was killed, or dead before the others waited",
          "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[0].Collectives(kComm, 0, 1).At(1000).Collective(kComm, 2, AllReduce().Pending());
  ps[1].Collectives(kComm, 0, 1);
  SECTION("SIGTERM after the others entered: it was alive, stuck outside NCCL") {
    ps[1].At(5000).Signal(SIGTERM);
    const Finding x = ExpectOne(DiagnoseJob(ps), {"missing_rank", "root_cause", kComm, 2, {1}});
    CHECK(Extra(x, "did_instead").find("still alive") != std::string::npos);
    CHECK(Extra(x, "signal") == "");  // only rank_died names the signal
  }
  SECTION("SIGTERM before the others entered: it died first") {
    ps[1].At(500).Signal(SIGTERM);
    const Finding x = ExpectOne(DiagnoseJob(ps), {"rank_died", "root_cause", kComm, 2, {1}});
    CHECK(Extra(x, "signal").find("SIGTERM") != std::string::npos);
  }
}

TEST_CASE("a rank that destroyed the communicator early: missing_rank, destroyed", "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[0].Collectives(kComm, 0, 4).Collective(kComm, 5, AllReduce().Pending());
  ps[1].Collectives(kComm, 0, 4).Destroy(kComm).Exit(0);
  const Finding x = ExpectOne(DiagnoseJob(ps), {"missing_rank", "root_cause", kComm, 5, {1}});
  CHECK(Extra(x, "did_instead").find("destroyed") != std::string::npos);
}

TEST_CASE("a rank killed by a crash signal: rank_died", "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(3);
  ps[0].Collectives(kComm, 0, 2).Collective(kComm, 3, AllReduce().Pending());
  ps[1].Collectives(kComm, 0, 1).Signal(SIGSEGV);
  ps[2].Collectives(kComm, 0, 2).Collective(kComm, 3, AllReduce().Pending());
  const Finding x = ExpectOne(DiagnoseJob(ps), {"rank_died", "root_cause", kComm, 2, {1}});
  CHECK(Extra(x, "signal").find("SIGSEGV") != std::string::npos);
  CHECK(Extra(x, "last_seq") == "1");
}

TEST_CASE("a rank whose trace just stops where the others' end: rank_died (SIGKILL, OOM)",
          "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[0]
      .Collectives(kComm, 0, 1)
      .Collective(kComm, 2, AllReduce().Pending())
      .Signal(SIGTERM, 2)
      .Exit(143);
  ps[1].Collectives(kComm, 0, 1);  // no exit, no signal
  const Finding x = ExpectOne(DiagnoseJob(ps), {"rank_died", "root_cause", kComm, 2, {1}});
  CHECK(Extra(x, "signal") == "null");
}

TEST_CASE("a rank that died is reported once, where it was first missed", "[job]") {
  // Rank 1 made both communicators and crashed before any collective; rank
  // 0 entered #0 of kComm, then #0 of kOther.
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[0].Init(kOther, 0, 2).Collective(kComm, 0).Collective(kOther, 0, AllReduce().Pending());
  ps[1].Init(kOther, 1, 2).Signal(SIGSEGV);
  const Finding x = ExpectOne(DiagnoseJob(ps), {"rank_died", "root_cause", kComm, 0, {1}});
  CHECK(Extra(x, "last_seq") == "null");
}

// A rank that used two communicators and then crashed: its call on the
// other communicator came after its last collective here, but the crash is
// why it never came back. One rank_died (on the communicator where it was
// first missed, with its signal), not "alive on another communicator".
TEST_CASE("a rank that used two communicators and crashed: rank_died, once", "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[0].Init(kOther, 0, 2);
  ps[1].Init(kOther, 1, 2);
  ps[0].Collective(kComm, 0).Collective(kOther, 0).Collective(kComm, 1).Collective(
      kOther, 1, AllReduce().Pending());
  ps[1].Collective(kComm, 0).Collective(kOther, 0).Signal(SIGBUS);
  const Finding x = ExpectOne(DiagnoseJob(ps), {"rank_died", "root_cause", kComm, 1, {1}});
  CHECK(Extra(x, "signal").find("SIGBUS") != std::string::npos);
}

TEST_CASE("two jobs in one folder are diagnosed apart", "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 3).Destroy(kComm).Exit(0);
  for (int r = 0; r < 2; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kOther, r, 2).Collectives(kOther, 0, 5);
  }
  ps[3].Collective(kOther, 6, AllReduce().Pending());
  ps[2].Exit(0);
  const Diagnosis d = DiagnoseJob(ps);
  REQUIRE(d.jobs.size() == 2);
  CHECK(d.jobs[0] == std::vector<int>{0, 1});
  CHECK(d.jobs[1] == std::vector<int>{2, 3});
  ExpectOne(d, {"missing_rank", "root_cause", kOther, 6, {0}, "", std::nullopt, 1});
}

// A process with no trace is a blind spot: where nothing else is found, the
// job cannot be called healthy without it (issue 8), and the finding says
// what to collect. Beside another cause it stays a note.
TEST_CASE("a missing trace: not healthy when nothing else is found, a note beside a cause",
          "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(3);
  ps.pop_back();  // rank 2's trace was not collected
  SECTION("nothing else found: the root cause") {
    for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 3).Destroy(kComm).Exit(0);
    const Diagnosis d = DiagnoseJob(ps);
    const Finding x = ExpectOne(d, {"missing_traces",
                                    "root_cause",
                                    kComm,
                                    std::nullopt,
                                    {2}});  // communicator ranks: no global rank known
    CHECK(d.problem);
    const auto t = ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites());
    CHECK(t.detail.find("cannot be called healthy") != std::string::npos);
    CHECK(t.fix.find("collect the trace folder") == 0);
  }
  SECTION("beside a cause: a note") {
    ps[0].Collectives(kComm, 0, 3).Collective(kComm, 4, AllReduce().Pending());
    ps[1].Collectives(kComm, 0, 3).Exit(0);
    const Diagnosis d = DiagnoseJob(ps);
    INFO(Describe(d));
    REQUIRE(d.findings.size() == 2);
    CHECK(ncclwatch::decoder::KindName(d.findings[0].kind) == std::string("missing_rank"));
    CHECK(ncclwatch::decoder::KindName(d.findings[1].kind) == std::string("missing_traces"));
    CHECK(ncclwatch::decoder::RoleName(d.findings[1].role) == std::string("note"));
  }
}

TEST_CASE("a send never received, end to end: p2p_mismatch between the two ranks", "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2, 10);
  ps[0].Collective(kComm, 0).Send(kComm, 0, 1).Send(kComm, 1, 1);
  ps[1].Collective(kComm, 0).Recv(kComm, 0, 0);
  ExpectOne(DiagnoseJob(ps), {"p2p_mismatch", "root_cause", kComm, 1, {10, 11}});
}

// A pipeline (each rank sends to the next, receives from the one before)
// where rank 1 receives one element short at #1 and hangs there. Rank 0,
// the sender, posted its send #1 late (descheduled after entering
// collective #1): by then ranks 2 and 3 had entered #2 and posted their #2
// sends and receives, so what rank 1 never did after (enter #2, send #2 to
// rank 2, receive #2 from rank 0) was seen before the mismatch was. The
// mismatch is still the root cause, and every one of those follows it.
TEST_CASE("a size mismatch posted after what it stopped: still the root cause, the rest follows",
          "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(4);
  for (int r = 0; r < 4; ++r) {
    ps[r].Collective(kComm, 0).Send(kComm, 0, (r + 1) % 4).Recv(kComm, 0, (r + 3) % 4);
    ps[r].At(1000).Collective(kComm, 1);
    if (r != 0)
      ps[r].Send(kComm, 1, (r + 1) % 4).Recv(kComm, 1, (r + 3) % 4, Sized(r == 1 ? 7 : 8));
  }
  ps[0].At(5000).Send(kComm, 1, 1).Recv(kComm, 1, 3);
  for (int r : {0, 2, 3}) {
    if (r != 0) ps[r].At(2000);
    ps[r]
        .Collective(kComm, 2, AllReduce().Pending())
        .Send(kComm, 2, (r + 1) % 4)
        .Recv(kComm, 2, (r + 3) % 4);
  }
  for (auto& p : ps) p.At(5'000'000'000).Signal(SIGTERM);  // the launcher, seconds later
  const Diagnosis d = DiagnoseJob(ps);
  INFO(Describe(d));
  REQUIRE_FALSE(d.findings.empty());
  const Finding& root = d.findings.front();
  CHECK(ncclwatch::decoder::KindName(root.kind) == std::string("p2p_mismatch"));
  CHECK(ncclwatch::decoder::RoleName(root.role) == std::string("root_cause"));
  CHECK(root.seq == 1u);
  CHECK(root.ranks == std::vector<int>{0, 1});
  CHECK(std::string(FieldName(root.field)) == "count");
  // What rank 1 did not do after it is there, as consequences.
  CHECK(Claims(d, kComm, 2, {1}));
  CHECK(Claims(d, kComm, 2, {1, 2}));
  CHECK(Claims(d, kComm, 2, {0, 1}));
  for (size_t i = 1; i < d.findings.size(); ++i)
    CHECK(ncclwatch::decoder::RoleName(d.findings[i].role) != std::string("root_cause"));
}

TEST_CASE("an order inversion on one stream, end to end: a root cause on the A communicator",
          "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[0].Init(kOther, 0, 2);
  ps[1].Init(kOther, 1, 2);
  ps[0].Collective(kComm, 0).Collective(kOther, 0, AllReduce().Pending());
  ps[1].Collective(kOther, 0).Collective(kComm, 0, AllReduce().Pending());
  const Diagnosis d = DiagnoseJob(ps);
  CHECK(d.problem);
  // kComm's identity sorts first: it is the pair's A, and #0 the A collective.
  const Finding x = ExpectOne(d, {"order_inversion", "root_cause", kComm, 0, {0, 1}});
  CHECK(Extra(x, "same_stream") == "true");
  CHECK(Extra(x, "other_seq") == "0");
}

// A destroy is written to the file's pinned region, its collectives to the
// ring; the model merges the two into one timeline (process_model_test
// checks that merge on a real file). Here the records are that timeline.
TEST_CASE("a process's last call is the last in its timeline, whatever the table", "[job]") {
  SECTION("the destroy, after the last collective") {
    SyntheticProcess p(0);
    p.Init(kComm, 0, 1).Collectives(kComm, 0, 4).Destroy(kComm).Exit(0);
    const JobAnalysis job = Analyze({p});
    REQUIRE(job.processes().size() == 1);
    const auto& last = job.processes()[0].last;
    CHECK(last.valid);
    CHECK(last.call == f::kCommDestroy);
    CHECK(last.comm == kComm);
  }
  SECTION("a collective, after another communicator's destroy") {
    SyntheticProcess p(0);
    p.Init(kComm, 0, 1)
        .Init(kOther, 0, 1)
        .Collective(kOther, 0)
        .Destroy(kOther)
        .Collective(kComm, 0)
        .Collective(kComm, 1, AllReduce().Pending());
    const JobAnalysis job = Analyze({p});
    const auto& last = job.processes()[0].last;
    CHECK(last.call == f::kAllReduce);
    CHECK(last.comm == kComm);
    CHECK(last.seq == 1);
    CHECK(last.pending);
    CHECK(ncclwatch::decoder::DescribeCall(last) == "AllReduce #1 of 3fa9c1");
  }
}

// A member with no collective of the communicator in its trace, whose ring
// wrapped: whatever it did on kComm was overwritten, so its trace cannot say
// which collective it missed, and no claim about #0 is made.
TEST_CASE(
    "a rank whose ring lost every collective of the communicator is not said to have missed #0",
    "[job]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  ps[1].Init(kOther, 0, 1);
  ps[0].Collectives(kComm, 0, 5).Collective(kComm, 6, AllReduce().Pending());
  ps[1].Wrapped().Collectives(kOther, 700, 800).Collective(kOther, 801, AllReduce().Pending());
  const JobAnalysis job = Analyze(ps);
  REQUIRE_FALSE(job.alignments().at(kComm).members()[1].holds_start);
  const Diagnosis d = Diagnose(job);
  INFO(Describe(d));
  CHECK_FALSE(Claims(d, kComm, 0, {1}));
}

TEST_CASE("the same trace given twice is one process, and a note says so", "[job][hostile]") {
  std::vector<SyntheticProcess> ps = Ranks(2);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 3).Destroy(kComm).Exit(0);
  JobAnalysis job;
  ncclwatch::decoder::ProcessTrace first = ps[0].Build();
  first.path = "a/rank0.trace";
  ncclwatch::decoder::ProcessTrace copy = ps[0].Build();
  copy.path = "b/rank0.trace";
  ncclwatch::decoder::ProcessTrace second = ps[1].Build();
  second.path = "a/rank1.trace";
  job.AddProcess(first);
  job.AddProcess(second);
  job.AddProcess(copy);
  job.Finish();
  REQUIRE(job.processes().size() == 2);
  REQUIRE(job.duplicates().size() == 1);
  CHECK(job.duplicates()[0].first == "b/rank0.trace");
  CHECK(job.duplicates()[0].second == "a/rank0.trace");
  const Diagnosis d = Diagnose(job);
  INFO(Describe(d));
  CHECK_FALSE(d.problem);  // not "two ranks on one GPU", not two jobs
  REQUIRE(d.findings.size() == 1);
  CHECK(ncclwatch::decoder::KindName(d.findings[0].kind) == std::string("duplicate_traces"));
  CHECK(ncclwatch::decoder::RoleName(d.findings[0].role) == std::string("note"));
  CHECK(Extra(d.findings[0], "duplicates").find("b/rank0.trace") != std::string::npos);
}

// The logs' init evidence in the traces' model (JobAnalysis::JoinLogEvidence):
// a traced process's own log, by host and pid, adds to its evidence; a rank
// with a log and no trace is judged with the job's init; a log of a rank the
// traces hold under another pid, or of a pid two traces share, is neither.
TEST_CASE("logs join the traces' init evidence: a process's own log, and a rank with no trace",
          "[job][logs]") {
  using ncclwatch::decoder::InitEvidence;
  JobAnalysis job;
  for (int r : {0, 1, 3}) {
    SyntheticProcess p(r);
    p.OnHost("node0.cluster.example").InitPending(kComm, r, 4).Signal(SIGTERM);
    job.AddProcess(p.Build());
  }
  job.Finish();
  auto log = [](int process, int rank, uint32_t pid) {
    InitEvidence e;
    e.process = process;
    e.rank = rank;
    e.host = "node0";  // NCCL prints the host name to its first dot
    e.pid = pid;
    return e;
  };
  std::vector<InitEvidence> logs;
  logs.push_back(log(0, 0, 1000));  // rank 0's own log
  logs.back().warnings = {"NET/Socket : Using [0]eth0:10.0.0.1<0>"};
  logs.back().bus_id = "0000:18:00.0";
  logs.push_back(log(1, 2, 4242));  // rank 2: no trace
  logs.back().env["NCCL_SOCKET_IFNAME"] = "nosuchif";
  logs.back().failures.push_back(
      {17, "", -1, "Bootstrap : no socket interface found", false, "misc/socket.cc"});
  logs.back().end_ns = 17;
  logs.push_back(log(2, 1, 7777));  // rank 1 under another pid: not its trace's
  logs.back().failures.push_back({3, "", -1, "unhandled system error", false, ""});
  logs.push_back(log(3, 3, 1003));  // rank 3's own log, with a failure its trace lacks
  logs.back().failures.push_back({9, "", -1, "NET/IB : ibv_reg_mr failed", false, ""});
  logs.push_back(log(4, 2, 4243));  // rank 2's output, another process of the log's
  logs.back().failures.push_back({18, "", -1, "ncclCommInitRank failed", false, ""});

  const std::set<int> joined = job.JoinLogEvidence(logs, /*timed=*/false);
  // Rank 3's log says more than its trace: its own forensics still judge it.
  CHECK(joined == std::set<int>{0});
  const InitEvidence& own = job.processes()[0].init;
  CHECK(own.warnings == logs[0].warnings);
  CHECK(own.bus_id == "0000:18:00.0");
  REQUIRE(job.untraced_init().size() == 1);
  const JobModel::UntracedInit& untraced = job.untraced_init().front();
  CHECK(untraced.log_processes == std::vector<int>{1, 4});
  CHECK(untraced.evidence.process == -1);
  CHECK(untraced.evidence.rank == 2);
  // Its log has no timestamps: its order numbers are no times.
  REQUIRE(untraced.evidence.failures.size() == 1);
  CHECK(untraced.evidence.failures[0].when_ns == 0);

  const Diagnosis d = Diagnose(job);
  INFO(Describe(d));
  CHECK(d.untraced_judged == std::set<int>{1, 4});
  REQUIRE(d.findings.size() == 2);
  const Finding& root = d.findings[0];
  CHECK(ncclwatch::decoder::KindName(root.kind) == std::string("init_failure"));
  CHECK(ncclwatch::decoder::RoleName(root.role) == std::string("root_cause"));
  CHECK(root.ranks == std::vector<int>{2});
  CHECK(Extra(root, "subsystem") == "\"network\"");
  const Finding& waited = d.findings[1];
  CHECK(ncclwatch::decoder::RoleName(waited.role) == std::string("consequence"));
  CHECK(waited.ranks == std::vector<int>{0, 1, 3});
  CHECK(Extra(waited, "subsystem") == "\"waiting\"");
}

TEST_CASE("a log joins no trace where two traces hold its pid on its host", "[job][logs]") {
  using ncclwatch::decoder::InitEvidence;
  JobAnalysis job;
  std::vector<SyntheticProcess> ps;
  for (int r : {0, 1}) {
    ps.emplace_back(r);
    ps.back().InitPending(kComm, r, 2).Signal(SIGTERM);
  }
  InitEvidence e;
  e.process = 0;
  e.rank = 0;
  e.host = "node0";
  e.pid = 555;
  e.warnings = {"NET/IB : ibv_reg_mr failed"};
  SECTION("the host's own numbers: the pid alone, which two hold") {
    for (int r : {0, 1}) {
      ncclwatch::decoder::ProcessTrace t = ps[r].Build();
      t.pid = 555;  // a pid the host gave twice (two runs' traces in one folder)
      t.pid_namespace = ncclwatch::decoder::kInitPidNamespace;
      t.path = "rank" + std::to_string(r) + ".trace";
      job.AddProcess(t);
    }
    job.Finish();
    CHECK(job.JoinLogEvidence({e}, true).empty());
    CHECK(job.untraced_init().empty());  // rank 0 has traces: not a rank without one
    for (const auto& p : job.processes()) CHECK(p.init.warnings.empty());
  }
  SECTION("two containers' numbers on one host name: the rank tells them apart") {
    for (int r : {0, 1}) {
      ncclwatch::decoder::ProcessTrace t = ps[r].Build();
      t.pid = 555;
      t.pid_namespace = 0x1000 + r;  // each container its own
      t.path = "rank" + std::to_string(r) + ".trace";
      job.AddProcess(t);
    }
    job.Finish();
    CHECK(job.JoinLogEvidence({e}, true) == std::set<int>{0});
    CHECK(job.processes()[0].init.warnings == e.warnings);
    CHECK(job.processes()[1].init.warnings.empty());
    e.rank = -1;  // a log that does not say its rank: no container's process is sure
    job.JoinLogEvidence({e}, true);
    CHECK(job.processes()[1].init.warnings.empty());
  }
}

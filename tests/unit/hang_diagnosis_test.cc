// Never calling a hung job healthy: the diagnosis from the shim's completion
// and liveness records (heartbeats, GPU progress, stalls, CUDA and NCCL
// asynchronous errors), post-mortem and live (an injected observation of the
// machine), on synthetic processes. Each case checks the exact verdict: the
// root cause's kind, role, communicator, number and ranks, its JSON facts,
// and where the hang is.
//
// Clock: 1 tick = 1 ns of realtime (synthetic_process.h); kS is a second.

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "findings/finding.h"
#include "model/process_liveness.h"
#include "report/finding_text.h"
#include "report/report_parts.h"
#include "synthetic_process.h"

namespace {

using ncclwatch::decoder::Diagnose;
using ncclwatch::decoder::Diagnosis;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::JobAnalysis;
using ncclwatch::decoder::LivenessObservation;
using ncclwatch::decoder::MismatchField;
using ncclwatch::decoder::ProcessObservation;
using namespace ncclwatch::testing;

constexpr uint64_t kComm = 0x3fa9c1d2e5b60718;
constexpr uint64_t kS = 1'000'000'000;
constexpr int32_t kNcclSystemError = 2;
constexpr int32_t kNcclRemoteError = 6;

JobAnalysis Analyze(const std::vector<SyntheticProcess>& ps) {
  JobAnalysis job;
  for (const SyntheticProcess& p : ps) job.AddProcess(p.Build());
  job.Finish();
  return job;
}

std::string Describe(const Diagnosis& d) {
  std::string s;
  for (const Finding& x : d.findings) {
    s += std::string(ncclwatch::decoder::KindName(x.kind)) + "/" +
         ncclwatch::decoder::RoleName(x.role) + ": " +
         ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites()).detail + "\n";
  }
  return s;
}

std::string Json(const Finding& x) {
  std::ostringstream out;
  ncclwatch::decoder::JsonWriter w(out);
  ncclwatch::decoder::WriteFindingJson(x, ncclwatch::decoder::NoCallSites(), w);
  return out.str();
}

// The value of `key` in the finding's JSON (a string with its quotes, a
// number, bool, null, or an array), "" when absent.
std::string Extra(const Finding& x, const std::string& key) {
  const std::string json = Json(x);
  const std::string label = "\"" + key + "\":";
  const size_t at = json.find(label);
  if (at == std::string::npos) return "";
  size_t i = at + label.size(), end = i;
  if (json[i] == '"') {
    for (end = i + 1; end < json.size() && json[end] != '"'; ++end)
      if (json[end] == '\\') ++end;
    return json.substr(i, end + 1 - i);
  }
  if (json[i] == '[') return json.substr(i, json.find(']', i) + 1 - i);
  while (end < json.size() && json[end] != ',' && json[end] != '}') ++end;
  return json.substr(i, end - i);
}

struct Expected {
  std::string kind;
  std::optional<uint64_t> comm;
  std::optional<uint64_t> seq;
  std::vector<int> ranks;
  std::string phase;  // checked when not empty
};

// The root cause is `e`, first among the findings, and the verdict a problem.
Finding ExpectRoot(const Diagnosis& d, const Expected& e) {
  INFO(Describe(d));
  REQUIRE(d.problem);
  REQUIRE_FALSE(d.findings.empty());
  const Finding x = d.findings.front();
  CHECK(ncclwatch::decoder::KindName(x.kind) == e.kind);
  CHECK(ncclwatch::decoder::RoleName(x.role) == std::string("root_cause"));
  CHECK(x.comm == e.comm);
  CHECK(x.seq == e.seq);
  CHECK(x.ranks == e.ranks);
  if (!e.phase.empty()) CHECK(Extra(x, "phase") == "\"" + e.phase + "\"");
  for (size_t i = 1; i < d.findings.size(); ++i)
    CHECK(ncclwatch::decoder::RoleName(d.findings[i].role) != std::string("root_cause"));
  return x;
}

// Ranks 0..n-1 of kComm, completion tracked.
std::vector<SyntheticProcess> Tracked(int n) {
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < n; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm, r, n).Tracked(kComm);
  }
  return ps;
}

// A post-mortem observation: no time, no process looked at.
const LivenessObservation kPostMortem;

// A live observation at `now` (realtime of tick `now`).
LivenessObservation LiveAt(uint64_t now) {
  LivenessObservation o;
  o.now_ns = static_cast<int64_t>(kRealtimeBase + now);
  o.host = "node0";
  return o;
}

}  // namespace

TEST_CASE("healthy, tracked: every rank exited 0 and its GPU completed everything", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps)
    p.Collectives(kComm, 0, 9).Progress(kComm, 10).Heartbeats(kS, 5 * kS).Destroy(kComm).Exit(0);
  const Diagnosis d = Diagnose(Analyze(ps));
  INFO(Describe(d));
  CHECK_FALSE(d.problem);
  CHECK(d.findings.empty());
  CHECK(d.tracked);
  CHECK_FALSE(d.live);
}

TEST_CASE("live and making progress: running, live with nothing completing: never healthy",
          "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps)
    p.Collectives(kComm, 0, 4).Progress(kComm, 5).Heartbeats(kS, 40 * kS);
  SECTION("the newest collective was issued a moment ago: running, with it pending") {
    for (SyntheticProcess& p : ps) p.At(40 * kS + 100).Collective(kComm, 5);
    const Diagnosis d = Diagnose(Analyze(ps), LiveAt(40 * kS + 500'000'000));
    INFO(Describe(d));
    CHECK(d.live);
    CHECK_FALSE(d.problem);
    CHECK(d.running);
    CHECK(d.findings.empty());
    REQUIRE(d.pending.size() == 1);
    CHECK(d.pending[0].seq == 5);
    CHECK(d.pending[0].entered == std::vector<int>{0, 1});
    CHECK(d.pending[0].not_entered.empty());
    CHECK(ncclwatch::decoder::RunningHeadline(d.findings, d.pending) ==
          "RUNNING: AllReduce #5 on communicator 3fa9c1 pending 0.5 s (entered by every rank, not "
          "complete on the GPUs)");
  }
  SECTION("rank 1 has not entered #5 yet, 6 s on: running, naming it, not yet a finding") {
    ps[0].At(34 * kS).Collective(kComm, 5);
    const Diagnosis d = Diagnose(Analyze(ps), LiveAt(40 * kS + 1000));
    INFO(Describe(d));
    CHECK(d.running);
    CHECK_FALSE(d.problem);
    REQUIRE(d.pending.size() == 1);
    CHECK(d.pending[0].seq == 5);
    CHECK(d.pending[0].entered == std::vector<int>{0});
    CHECK(d.pending[0].not_entered == std::vector<int>{1});
    CHECK(ncclwatch::decoder::RunningHeadline(d.findings, d.pending) ==
          "RUNNING: AllReduce #5 on communicator 3fa9c1 pending 6.0 s (rank 1 not entered)");
  }
  SECTION("collective #5 pending for 35 s on both ranks: never_completed, a tie") {
    for (SyntheticProcess& p : ps) p.At(5 * kS + 100).Collective(kComm, 5);
    for (SyntheticProcess& p : ps) p.Heartbeats(41 * kS, 41 * kS);
    const Diagnosis d = Diagnose(Analyze(ps), LiveAt(41 * kS + 1000));
    const Finding x = ExpectRoot(d, {"never_completed", kComm, 5, {0, 1}, "step"});
    CHECK(Extra(x, "stopped_first_by") == "\"tie\"");
    CHECK(Extra(x, "live") == "true");
    CHECK(Extra(x, "completed") == "5");
  }
}

TEST_CASE("a GPU fault on one rank of 4: gpu_fault names that rank and the error, first",
          "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(4);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 5).Progress(kComm, 5);
  // Every rank entered #6 and #7; rank 2's GPU faulted in #5... no: in #6.
  for (SyntheticProcess& p : ps) p.Progress(kComm, 6).Collective(kComm, 6).Collective(kComm, 7);
  ps[2].At(2 * kS).CudaError(kComm, "CUDA_ERROR_ECC_UNCORRECTABLE", 214, 6, 3).At(3 * kS).Exit(1);
  for (int r : {0, 1, 3}) ps[r].Heartbeats(kS, 60 * kS).Signal(SIGTERM, 2).Exit(143);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"gpu_fault", kComm, 6, {2}, "step"});
  CHECK(Extra(x, "cuda_error") == "\"CUDA_ERROR_ECC_UNCORRECTABLE\"");
  CHECK(Extra(x, "cuda_result") == "214");
  CHECK(Extra(x, "waiting") == "[0,1,3]");
  CHECK(ncclwatch::decoder::Headline(d.findings, d.problem) ==
        "PROBLEM: gpu_fault on communicator 3fa9c1 #6 (rank 2)");
  const std::string detail =
      ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites()).detail;
  INFO(detail);
  CHECK(detail.find("rank 2's GPU 3 on node0 reported CUDA_ERROR_ECC_UNCORRECTABLE") == 0);
}

TEST_CASE("a GPU fault its watcher saw late: the others' counts place it, not its own", "[hang]") {
  // Rank 2's watcher last saw 3 collectives complete; then its GPU ran #3..#5
  // (the others completed them, which needs every member's GPU) and
  // faulted in #6. After a sticky error no marker can be queried, so its own
  // count stays at 3: a bound, not the place of the fault.
  std::vector<SyntheticProcess> ps = Tracked(4);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 7);
  for (int r : {0, 1, 3}) ps[r].Progress(kComm, 6);
  ps[2].Progress(kComm, 3);
  ps[2].At(2 * kS).CudaError(kComm, "CUDA_ERROR_ECC_UNCORRECTABLE", 214, 3, 3).At(3 * kS).Exit(1);
  for (int r : {0, 1, 3}) ps[r].Heartbeats(kS, 60 * kS).Signal(SIGTERM, 2).Exit(143);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"gpu_fault", kComm, 6, {2}, "step"});
  CHECK(Extra(x, "completed") == "6");
  for (const Finding& other : d.findings) {
    if (other.kind != ncclwatch::decoder::FindingKind::kNeverCompleted) continue;
    CHECK(other.seq == std::optional<uint64_t>{6});
  }
}

TEST_CASE("an NCCL async error: the rank that reported it first, with NCCL's text", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(3);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 3).Progress(kComm, 3).Collective(kComm, 4);
  ps[1].At(2 * kS).AsyncError(kComm, kNcclSystemError, "NET/IB : Got completion with error 12");
  ps[0].At(3 * kS).AsyncError(kComm, kNcclRemoteError, "remote process exited");
  for (SyntheticProcess& p : ps) p.Heartbeats(4 * kS, 30 * kS);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"nccl_async_error", kComm, 3, {1}, "step"});
  CHECK(Extra(x, "nccl_result") == "\"ncclSystemError\"");
  CHECK(Extra(x, "nccl_text") == "\"NET/IB : Got completion with error 12\"");
}

TEST_CASE("never_completed: the rank whose GPU completed fewer collectives", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(3);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 4);
  ps[0].Progress(kComm, 4);
  ps[1].Progress(kComm, 3);
  ps[2].Progress(kComm, 4);
  for (SyntheticProcess& p : ps) p.Heartbeats(kS, 30 * kS);  // then SIGKILLed together
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"never_completed", kComm, 3, {1}, "step"});
  CHECK(Extra(x, "stopped_first_by") == "\"completed\"");
  CHECK(Extra(x, "completed") == "3");
  CHECK(Extra(x, "entered") == "[0,1,2]");
  CHECK(Extra(x, "call") == "\"AllReduce(count=1024, float32, sum)\"");
}

TEST_CASE("never_completed: as many completed, the earlier last progress stopped first", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(3);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 4);
  ps[0].At(kS).Progress(kComm, 4);
  ps[1].At(kS / 2).Progress(kComm, 4);  // 500 ms earlier
  ps[2].At(kS).Progress(kComm, 4);
  for (SyntheticProcess& p : ps) p.Heartbeats(2 * kS, 30 * kS).Stall(kComm, 4, 4, 300000);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"never_completed", kComm, 4, {1}, "step"});
  CHECK(Extra(x, "stopped_first_by") == "\"last_progress\"");
  CHECK(Extra(x, "stall_record") == "true");
}

TEST_CASE("never_completed at the first collective: the hang is at startup", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps) p.Collective(kComm, 0).Heartbeats(kS, 20 * kS);
  const Finding& x =
      ExpectRoot(Diagnose(Analyze(ps)), {"never_completed", kComm, 0, {0, 1}, "startup"});
  CHECK(Extra(x, "stopped_first_by") == "\"tie\"");
}

TEST_CASE("rank_died by the order of deaths: every trace ends without an exit", "[hang]") {
  // Rank 1 is SIGKILLed before #5 at 10 s; the launcher kills the rest at 40 s.
  std::vector<SyntheticProcess> ps = Tracked(3);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 4).Progress(kComm, 5);
  ps[1].Heartbeats(kS, 10 * kS);
  for (int r : {0, 2}) ps[r].Collective(kComm, 5).Heartbeats(kS, 40 * kS);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"rank_died", kComm, 5, {1}, "step"});
  CHECK(Extra(x, "did_instead").find("\"died first: its heartbeat stopped 30.0 s before") == 0);
  CHECK(Extra(x, "signal") == "null");
  CHECK(Extra(x, "stopped_before_others_s").find("30.") == 0);
}

TEST_CASE("rank_died whose watcher had not yet seen its last collective complete", "[hang]") {
  // As above, but rank 1's watcher last saw #0..#3 complete: #4 completed on
  // ranks 0 and 2, so on rank 1's GPU too, and it is not where rank 1 stopped.
  std::vector<SyntheticProcess> ps = Tracked(3);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 4);
  ps[1].Progress(kComm, 4).Heartbeats(kS, 10 * kS);
  for (int r : {0, 2}) ps[r].Progress(kComm, 5).Collective(kComm, 5).Heartbeats(kS, 40 * kS);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"rank_died", kComm, 5, {1}, "step"});
  CHECK(Extra(x, "did_instead").find("\"died first: its heartbeat stopped 30.0 s before") == 0);
  for (const Finding& other : d.findings)
    CHECK(other.kind != ncclwatch::decoder::FindingKind::kNeverCompleted);
}

TEST_CASE("rank_died by liveness when every rank had entered the collective", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(3);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 5).Progress(kComm, 5);
  ps[1].Heartbeats(kS, 10 * kS);
  for (int r : {0, 2}) ps[r].Heartbeats(kS, 40 * kS);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"rank_died", kComm, 5, {1}, "step"});
  CHECK(Extra(x, "state") == "\"dead\"");
  CHECK(Extra(x, "waiting") == "[0,2]");
}

TEST_CASE("a frozen rank, live: stopped on this host, or a stale heartbeat elsewhere", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(3);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 4).Progress(kComm, 5);
  ps[1].Heartbeats(kS, 10 * kS);  // SIGSTOPped at 10 s
  for (int r : {0, 2}) ps[r].Collective(kComm, 5).Heartbeats(kS, 40 * kS);
  LivenessObservation live = LiveAt(40 * kS + 1000);
  SECTION("on this host, state T") {
    // SyntheticProcess(1): pid 1001 on node0; its trace's creation time is its identity.
    const JobAnalysis job = Analyze(ps);
    const auto& p1 = job.processes()[1];
    live.processes[{p1.host, p1.pid, p1.created_ns}] = {ProcessObservation::State::kStopped, 'T'};
    const Diagnosis d = Diagnose(job, live);
    const Finding x = ExpectRoot(d, {"rank_frozen", kComm, 5, {1}, "step"});
    CHECK(Extra(x, "state") == "\"stopped\"");
    CHECK(Extra(x, "did_instead") == "\"froze: its process is stopped (state T)\"");
  }
  SECTION("on another host: its heartbeat is stale while the others' are fresh") {
    const Diagnosis d = Diagnose(Analyze(ps), live);
    const Finding x = ExpectRoot(d, {"rank_frozen", kComm, 5, {1}, "step"});
    CHECK(Extra(x, "state") == "\"heartbeat_stale\"");
  }
  SECTION("post-mortem the same traces: it stopped living first") {
    ExpectRoot(Diagnose(Analyze(ps)), {"rank_died", kComm, 5, {1}, "step"});
  }
}

TEST_CASE("missing_rank: alive, idle outside NCCL, from the heartbeat", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 4).Progress(kComm, 5);
  ps[0].Collective(kComm, 5);
  for (SyntheticProcess& p : ps) p.Heartbeats(kS, 40 * kS);
  SECTION("post-mortem: its heartbeat went on until the others' traces end") {
    const Finding x = ExpectRoot(Diagnose(Analyze(ps)), {"missing_rank", kComm, 5, {1}, "step"});
    CHECK(Extra(x, "did_instead") == "\"alive, idle outside NCCL until the others' traces end\"");
  }
  SECTION("live: its heartbeat is fresh") {
    const Finding x = ExpectRoot(Diagnose(Analyze(ps), LiveAt(40 * kS + 1000)),
                                 {"missing_rank", kComm, 5, {1}, "step"});
    CHECK(Extra(x, "did_instead") == "\"alive, idle outside NCCL (live when diagnosed)\"");
  }
  SECTION("the launcher's SIGTERM ended it with the rest") {
    for (SyntheticProcess& p : ps) p.Signal(SIGTERM, 2).Exit(143);
    const Finding x = ExpectRoot(Diagnose(Analyze(ps)), {"missing_rank", kComm, 5, {1}, "step"});
    CHECK(Extra(x, "did_instead") ==
          "\"alive, idle outside NCCL until SIGTERM ended it with the rest of the job\"");
  }
}

TEST_CASE("killed while waiting, nothing else visible: hang_unexplained, never healthy", "[hang]") {
  // Untracked (an old trace): no heartbeat, no progress; both ranks inside #3.
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < 2; ++r) {
    ps.emplace_back(r);
    ps.back()
        .Init(kComm, r, 2)
        .Collectives(kComm, 0, 2)
        .Collective(kComm, 3, AllReduce().Pending());
  }
  SECTION("SIGKILLed") {
    const Finding& x =
        ExpectRoot(Diagnose(Analyze(ps)), {"hang_unexplained", kComm, 3, {0, 1}, "step"});
    CHECK(Extra(x, "tracked") == "false");
    const auto t = ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites());
    CHECK(t.detail.find("ranks 0-1 inside AllReduce #3 of 3fa9c1 (the call had not returned)") !=
          std::string::npos);
    CHECK(t.fix.find("py-spy dump") != std::string::npos);
    CHECK(t.fix.find("NCCL_DEBUG=INFO") != std::string::npos);
    CHECK(t.fix.find("dmesg") != std::string::npos);
  }
  SECTION("SIGTERM, handled, exit 143: the launcher ended it, not an error of the rank") {
    for (SyntheticProcess& p : ps) p.Signal(SIGTERM, 2).Exit(143);
    ExpectRoot(Diagnose(Analyze(ps)), {"hang_unexplained", kComm, 3, {0, 1}, "step"});
  }
}

TEST_CASE("a rank that exited with an error code is never healthy", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 3).Progress(kComm, 4).Destroy(kComm);
  ps[0].Exit(0);
  ps[1].Exit(3);
  const Finding x = ExpectRoot(Diagnose(Analyze(ps)), {"rank_exit_error", {}, {}, {1}});
  CHECK(Extra(x, "exit_code") == "3");
  CHECK(Extra(x, "work_done") == "true");
}

TEST_CASE("a clean exit with GPU work not completed is not healthy", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 3).Progress(kComm, 3).Exit(0);
  ExpectRoot(Diagnose(Analyze(ps)), {"never_completed", kComm, 3, {0, 1}, "step"});
}

TEST_CASE("records overwritten before the cause could be seen: trace_overwritten", "[hang]") {
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < 2; ++r) {
    ps.emplace_back(r);
    ps.back()
        .Init(kComm, r, 2)
        .Wrapped(1 << 20)
        .Collectives(kComm, 700, 702)
        .Collective(kComm, 703, AllReduce().Pending());
  }
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"trace_overwritten", {}, {}, {0, 1}});
  CHECK(Extra(x, "suggest") == "\"NCCLWATCH_RING_SIZE=256M\"");
  REQUIRE(d.findings.size() == 2);
  CHECK(ncclwatch::decoder::KindName(d.findings[1].kind) == std::string("hang_unexplained"));
}

TEST_CASE("a rank that loaded NCCL and made no call the shim saw: nccl_calls_unseen", "[hang]") {
  std::vector<SyntheticProcess> ps;
  ps.emplace_back(0);
  ps.back().LoadedNccl().Exit(0);
  const Finding x = ExpectRoot(Diagnose(Analyze(ps)), {"nccl_calls_unseen", {}, {}, {0}});
  CHECK(Extra(x, "nccl_path") == "\"/usr/lib/libnccl.so.2\"");
}

TEST_CASE("a bootstrap root that exited before the others connected is the root cause",
          "[hang][init]") {
  // Rank 0 made the unique id and exited 1; ranks 1-2 wait in ncclCommInitRank.
  std::vector<SyntheticProcess> ps;
  ps.emplace_back(0);
  ps[0].UniqueId(kComm).Init(kComm + 1, 0, 3).Exit(1);  // another comm links the job
  for (int r = 1; r < 3; ++r) {
    ps.emplace_back(r);
    ps.back().Init(kComm + 1, r, 3).At(5 * kS).InitPending(kComm, r, 3);
  }
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"init_failure", kComm, {}, {0}});
  CHECK(Extra(x, "subsystem") == "\"bootstrap\"");
  CHECK(Extra(x, "exit_code") == "1");
  CHECK(Extra(x, "could_not_connect") == "[1,2]");
  REQUIRE(d.findings.size() >= 2);
  CHECK(d.findings[1].ranks == std::vector<int>{1, 2});
  CHECK(Extra(d.findings[1], "subsystem") == "\"waiting\"");
}

TEST_CASE("never_completed: a send and its receive, both posted, never completed", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  ps[0].Send(kComm, 0, 1);
  ps[1].Recv(kComm, 0, 0);
  for (SyntheticProcess& p : ps) p.Heartbeats(kS, 20 * kS);
  const Finding x =
      ExpectRoot(Diagnose(Analyze(ps)), {"never_completed", kComm, 0, {0, 1}, "step"});
  CHECK(Extra(x, "call") == "\"Send\"");
  CHECK(Extra(x, "peer") == "1");
}

TEST_CASE("a hang in ncclCommFinalize is at teardown", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps)
    p.Collectives(kComm, 0, 3).Progress(kComm, 4).FinalizePending(kComm).Heartbeats(kS, 20 * kS);
  const Finding x =
      ExpectRoot(Diagnose(Analyze(ps)), {"hang_unexplained", kComm, {}, {0, 1}, "teardown"});
  const auto t = ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites());
  CHECK(t.detail.find("ranks 0-1 inside ncclCommFinalize of 3fa9c1 (the call had not returned)") !=
        std::string::npos);
}

TEST_CASE("post-mortem, a rank blocked in host code until SIGTERM: alive, idle outside NCCL",
          "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 4).Progress(kComm, 5);
  ps[0].Collective(kComm, 5);
  for (SyntheticProcess& p : ps) p.Heartbeats(kS, 40 * kS).Signal(SIGTERM);
  const Finding x = ExpectRoot(Diagnose(Analyze(ps)), {"missing_rank", kComm, 5, {1}, "step"});
  CHECK(Extra(x, "did_instead") ==
        "\"alive, idle outside NCCL until SIGTERM ended it with the rest of the job\"");
}

TEST_CASE("a collective captured in a CUDA graph is not judged, nor what follows it", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps)
    p.Collectives(kComm, 0, 3).Progress(kComm, 3).Captured(kComm, 3).Collective(kComm, 4).Exit(0);
  const Diagnosis d = Diagnose(Analyze(ps));
  INFO(Describe(d));
  CHECK_FALSE(d.problem);
}

TEST_CASE("live: a rank merely behind is no finding until the others are stuck", "[hang]") {
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 4).Progress(kComm, 5);
  for (SyntheticProcess& p : ps) p.Heartbeats(kS, 40 * kS);
  ps[0].At(40 * kS + 100).Collective(kComm, 5);  // rank 1 has not reached #5 yet
  SECTION("half a second later: healthy") {
    const Diagnosis d = Diagnose(Analyze(ps), LiveAt(40 * kS + 500'000'000));
    INFO(Describe(d));
    CHECK_FALSE(d.problem);
  }
  SECTION("15 s later, both still beating: rank 1 is missing, alive and idle") {
    for (SyntheticProcess& p : ps) p.Heartbeats(55 * kS, 55 * kS);
    const Finding x = ExpectRoot(Diagnose(Analyze(ps), LiveAt(55 * kS + 1000)),
                                 {"missing_rank", kComm, 5, {1}, "step"});
    CHECK(Extra(x, "did_instead") == "\"alive, idle outside NCCL (live when diagnosed)\"");
  }
}

TEST_CASE("live: a heartbeat is judged as fresh as it was when its trace was read", "[hang]") {
  // Rank 0's trace was read at 40 s, rank 1's at 45 s (reading is slow on a
  // busy machine); the observation is at 45 s. Rank 0's last beat (40 s) was
  // fresh when it was read: it is alive, and rank 1 merely ahead.
  std::vector<SyntheticProcess> ps = Tracked(2);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 4).Progress(kComm, 5);
  ps[0].Heartbeats(kS, 40 * kS).ReadAt(40 * kS + 1000);
  ps[1].Heartbeats(kS, 45 * kS).At(45 * kS + 100).Collective(kComm, 5).ReadAt(45 * kS + 1000);
  const Diagnosis d = Diagnose(Analyze(ps), LiveAt(45 * kS + 2000));
  INFO(Describe(d));
  CHECK(d.live);
  CHECK(d.running);
  CHECK_FALSE(d.problem);
  SECTION("read at 45 s too, its beat is 5 s old: frozen") {
    ps[0].ReadAt(45 * kS + 1000);
    const Diagnosis late = Diagnose(Analyze(ps), LiveAt(45 * kS + 2000));
    ExpectRoot(late, {"rank_frozen", kComm, 5, {0}, "step"});
  }
}

TEST_CASE("a bootstrap root that exited before the others started belongs to their job",
          "[hang][init]") {
  // No communicator links rank 0 to the others: only the unique id it made.
  std::vector<SyntheticProcess> ps;
  ps.emplace_back(0);
  ps[0].UniqueId(kComm).Exit(1);
  for (int r = 1; r < 3; ++r) {
    ps.emplace_back(r);
    ps.back().At(5 * kS).InitPending(kComm, r, 3);
  }
  const Diagnosis d = Diagnose(Analyze(ps));
  REQUIRE(d.jobs.size() == 1);
  const Finding x = ExpectRoot(d, {"init_failure", kComm, {}, {0}});
  CHECK(Extra(x, "could_not_connect") == "[1,2]");
}

TEST_CASE("a rank whose GPU never finished #10 is missing from #11 because of it", "[hang]") {
  // A dead receive path on rank 1: its #10 never completes; the others
  // finished #10 and wait in #11, which rank 1 never enters (it waits on its GPU).
  std::vector<SyntheticProcess> ps = Tracked(3);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 10);
  ps[1].Progress(kComm, 10);
  for (int r : {0, 2}) ps[r].Progress(kComm, 11).Collective(kComm, 11);
  for (SyntheticProcess& p : ps) p.Heartbeats(kS, 20 * kS).Signal(SIGTERM);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"never_completed", kComm, 10, {1}, "step"});
  CHECK(Extra(x, "stopped_first_by") == "\"completed\"");
  REQUIRE(d.findings.size() >= 2);
  CHECK(ncclwatch::decoder::KindName(d.findings[1].kind) == std::string("missing_rank"));
  CHECK(Extra(d.findings[1], "did_instead") ==
        "\"waited for its GPU to finish AllReduce #10 of 3fa9c1, which never completed\"");
}

TEST_CASE(
    "a rank dead with nothing recorded before the launcher's SIGTERM died first, however "
    "short the gap",
    "[hang][teardown]") {
  // Ranks 0-3 at #5; rank 2 entered #6 and died (SIGKILL, OOM: no record);
  // 0.4 s after its last sign of life the others recorded SIGTERM. Rank 0 was
  // still in host code (it never entered #6): merely behind, not blamed.
  std::vector<SyntheticProcess> ps = Tracked(4);
  for (SyntheticProcess& p : ps) p.Collectives(kComm, 0, 5).Progress(kComm, 6);
  for (int r : {1, 2, 3}) ps[r].At(2 * kS).Collective(kComm, 6);
  ps[2].Heartbeats(kS, 2 * kS + kS / 10);
  for (int r : {0, 1, 3}) ps[r].Heartbeats(kS, 2 * kS).At(2 * kS + 4 * kS / 10).Signal(SIGTERM);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"rank_died", kComm, 6, {2}, "step"});
  CHECK(Extra(x, "signal") == "null");
  CHECK(Extra(x, "torn_down_by") == "\"SIGTERM\"");
  CHECK(Extra(x, "torn_down_after_s") == "0.400");
  for (const Finding& other : d.findings) CHECK(other.ranks != std::vector<int>{0});
  const std::string detail =
      ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites()).detail;
  INFO(detail);
  CHECK(detail.find("while every other rank recorded the SIGTERM that ended it 0.4 s later") !=
        std::string::npos);
}

TEST_CASE("a job its scheduler ended while it progressed: killed_while_running, no rank blamed",
          "[hang][teardown]") {
  // Every rank completed #0..#8 and entered #9 just before SIGTERM reached
  // them all (a walltime); rank 3 was still in host code.
  std::vector<SyntheticProcess> ps = Tracked(4);
  for (SyntheticProcess& p : ps)
    p.Heartbeats(kS, 9 * kS).Collectives(kComm, 0, 8).Progress(kComm, 9);
  for (int r : {0, 1, 2}) ps[r].Collective(kComm, 9);
  for (SyntheticProcess& p : ps) p.At(9 * kS + kS / 20).Signal(SIGTERM);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"killed_while_running", {}, {}, {}});
  CHECK(d.findings.size() == 1);
  CHECK(Extra(x, "signal") == "\"SIGTERM\"");
  CHECK(ncclwatch::decoder::Headline(d.findings, d.problem) ==
        "PROBLEM: killed_while_running (SIGTERM)");
  const auto t = ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites());
  CHECK(t.detail.find("no rank is to blame") != std::string::npos);
  CHECK(t.fix.find("GPU") == std::string::npos);
  SECTION("the same, but #9 had waited 5 s when SIGTERM came: stuck, not running") {
    std::vector<SyntheticProcess> hung = Tracked(4);
    for (SyntheticProcess& p : hung)
      p.Heartbeats(kS, 3 * kS).Collectives(kComm, 0, 8).Progress(kComm, 9);
    for (int r : {0, 1, 2}) hung[r].Collective(kComm, 9);
    for (SyntheticProcess& p : hung) p.Heartbeats(4 * kS, 9 * kS).At(9 * kS).Signal(SIGTERM);
    const Diagnosis stuck = Diagnose(Analyze(hung));
    ExpectRoot(stuck, {"missing_rank", kComm, 9, {3}, "step"});
  }
}

TEST_CASE(
    "killed at a walltime while one rank's GPU was the last to finish a collective the others "
    "had just finished: killed_while_running",
    "[hang][teardown]") {
  // Every rank issued #0..#8 at 7 s. Rank 1's watcher last saw its GPU
  // progress at 7.5 s (#7 done): its #8 had waited 1.55 s when SIGTERM came
  // at 9.05 s, on its own too long to be in flight. But the watchers of
  // ranks 0, 2 and 3 saw #8 done at `others_finished` (a later Progress of
  // the same count, at 8.95 s, moves nothing), and they entered #9 at 8.9 s:
  // #8 may still have been finishing on rank 1's GPU, whose watcher a busy
  // machine can hold back that long. Rank 1 was missing from #9, waiting on
  // its GPU.
  auto job = [](uint64_t others_finished) {
    std::vector<SyntheticProcess> ps = Tracked(4);
    for (SyntheticProcess& p : ps) p.Heartbeats(kS, 7 * kS).Collectives(kComm, 0, 8);
    ps[1].At(7 * kS + kS / 2).Progress(kComm, 8).Heartbeats(8 * kS, 9 * kS);
    for (int r : {0, 2, 3}) {
      if (others_finished > 8 * kS) ps[r].Heartbeats(8 * kS, 8 * kS);
      ps[r].At(others_finished).Progress(kComm, 9);
      if (others_finished < 8 * kS) ps[r].Heartbeats(8 * kS, 8 * kS);
      ps[r].At(8 * kS + 9 * kS / 10).Collective(kComm, 9);
      ps[r].At(8 * kS + 95 * kS / 100).Progress(kComm, 9).Heartbeats(9 * kS, 9 * kS);
    }
    for (SyntheticProcess& p : ps) p.At(9 * kS + kS / 20).Signal(SIGTERM);
    return Diagnose(Analyze(ps));
  };
  SECTION("the others finished #8 0.45 s before the signal: in flight, no rank blamed") {
    const Diagnosis d = job(8 * kS + 6 * kS / 10);
    ExpectRoot(d, {"killed_while_running", {}, {}, {}});
    CHECK(d.findings.size() == 1);
  }
  SECTION("the others finished #8 1.15 s before the signal: rank 1's GPU never finished it") {
    const Diagnosis d = job(7 * kS + 9 * kS / 10);
    ExpectRoot(d, {"never_completed", kComm, 8, {1}, "step"});
  }
}

TEST_CASE("a rank that skipped a split the others wait in is the cause, with what it did instead",
          "[hang][split]") {
  // Ranks 0-2 entered split #0 of kComm and wait in it; rank 3 never called
  // it and went on to kComm's collective #0. Then the launcher's SIGTERM.
  constexpr uint64_t kHalf = 0x55aa00000000beefull;
  std::vector<SyntheticProcess> ps = Tracked(4);
  for (SyntheticProcess& p : ps) p.Heartbeats(kS, 10 * kS);
  for (int r : {0, 1, 2}) ps[r].At(kS).SplitPending(kComm, 0, kHalf, r / 2, r % 2, 2);
  ps[3].At(kS + 100).Collective(kComm, 0, AllReduce().Pending());
  for (SyntheticProcess& p : ps) p.At(10 * kS).Signal(SIGTERM);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"missing_rank", kComm, {}, {3}, "startup"});
  CHECK(Extra(x, "call") == "\"ncclCommSplit\"");
  CHECK(Extra(x, "entered") == "[0,1,2]");
  CHECK(Extra(x, "did_instead").find("went on to AllReduce #0 of 3fa9c1") != std::string::npos);
  for (const Finding& other : d.findings) {
    INFO(ncclwatch::decoder::KindName(other.kind));
    CHECK(other.kind != ncclwatch::decoder::FindingKind::kInitFailure);
    CHECK(std::find(other.ranks.begin(), other.ranks.end(), 0) == other.ranks.end());
  }
  const std::string detail =
      ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites()).detail;
  CHECK(detail.find("rank 3 never called ncclCommSplit on communicator 3fa9c1 (4 ranks) (its "
                    "split #0), which ranks 0-2 entered and wait in") == 0);
}

TEST_CASE("never_completed whose arguments a ring overwrote: says so, suspects no hardware",
          "[hang][lost]") {
  // Every rank entered #5 and its GPU stopped there; rank 1's ring lost
  // #0..#7 while its host went on enqueuing: its #5 cannot be compared.
  std::vector<SyntheticProcess> ps = Tracked(2);
  ps[0].Collectives(kComm, 0, 9).Progress(kComm, 5);
  ps[1].Wrapped().Collectives(kComm, 8, 9).Progress(kComm, 5);
  for (SyntheticProcess& p : ps) p.Heartbeats(kS, 20 * kS);
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"never_completed", kComm, 5, {0, 1}, "step"});
  CHECK(Extra(x, "arguments_lost") == "[1]");
  const auto t = ncclwatch::decoder::RenderFinding(x, ncclwatch::decoder::NoCallSites());
  INFO(t.detail << "\n" << t.fix);
  CHECK(t.detail.find("the ring of rank 1 overwrote its record of it") != std::string::npos);
  CHECK(t.fix.find("NCCLWATCH_RING_SIZE") != std::string::npos);
  CHECK(t.fix.find("GPU or link fault") == std::string::npos);
  CHECK(t.fix.find("ibstat") == std::string::npos);
}

TEST_CASE("a mismatch whose records the ring lost is named from the watcher's holds",
          "[hang][lost]") {
  // Every rank's ring lost #0..#7 while the hosts went on enqueuing and the
  // GPUs waited at #5; each watcher held #5 with its arguments. Rank 1's
  // count differs.
  std::vector<SyntheticProcess> ps = Tracked(3);
  for (int r = 0; r < 3; ++r) {
    ps[r].Wrapped(4096).Collectives(kComm, 8, 9);
    ps[r].At(3 * kS).Held(kComm, 5, r == 1 ? AllReduce(1000) : AllReduce(), 5);
    ps[r].Heartbeats(3 * kS, 10 * kS);
  }
  const Diagnosis d = Diagnose(Analyze(ps));
  const Finding x = ExpectRoot(d, {"collective_mismatch", kComm, 5, {1}, "step"});
  CHECK(x.field == MismatchField::kCount);
  SECTION("held alike on every rank: never_completed with its arguments known") {
    std::vector<SyntheticProcess> alike = Tracked(3);
    for (int r = 0; r < 3; ++r) {
      alike[r].Wrapped(4096).Collectives(kComm, 8, 9);
      alike[r].At(3 * kS).Held(kComm, 5, AllReduce(), 5);
      alike[r].Heartbeats(3 * kS, 10 * kS);
    }
    const Finding nc =
        ExpectRoot(Diagnose(Analyze(alike)), {"never_completed", kComm, 5, {0, 1, 2}});
    CHECK(Extra(nc, "arguments_lost") == "");
    CHECK(Extra(nc, "completed") == "5");
  }
}

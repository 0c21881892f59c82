// The report's side of typed findings: a payload of facts in, the exact
// `detail`, `fix`, rank groups and JSON out; the headline every human report
// opens with; and the exit codes.

#include "report/finding_text.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <limits>
#include <sstream>
#include <string>

#include "findings/finding.h"
#include "ncclwatch/trace_fields.h"
#include "ncclwatch_version.h"
#include "report/report_parts.h"

namespace {

using namespace ncclwatch::decoder;
namespace f = ncclwatch::fields;

// AllReduce(count=4096, float32, avg): ncclFloat32 is 7, ncclAvg 4 (nccl.h).
CollectiveSignature AllReduceAvg() { return CollectiveSignature{f::kAllReduce, 4096, 7, 4, -1}; }

constexpr uint64_t kComm = 0x3fa9c10000000001ull;
constexpr uint64_t kOther = 0x09572d0000000002ull;
constexpr int32_t kFloat32 = 7;  // ncclFloat32

std::string Json(const Finding& f) {
  std::ostringstream out;
  JsonWriter w(out);
  WriteFindingJson(f, NoCallSites(), w);
  return out.str();
}

// Names a call site by its process and address, so a test can see which one was asked for.
std::string FakeSite(const CallSiteRef& s) {
  return "p" + std::to_string(s.process) + "+" + std::to_string(s.address);
}

Finding Mismatch() {
  Finding f;
  f.kind = FindingKind::kCollectiveMismatch;
  f.role = FindingRole::kRootCause;
  f.comm = kComm;
  f.seq = 3;
  f.nranks = 8;
  f.ranks = {5};
  f.field = MismatchField::kOp;
  CollectiveMismatchFacts x;
  x.groups.push_back({{0, 1, 2, 3, 4, 6, 7}, AllReduceAvg(), {0, 10}});
  x.groups.push_back({{5}, CollectiveSignature{f::kBroadcast, 4096, 7, -1, 0}, {5, 20}});
  f.facts = x;
  return f;
}

Finding Inversion(bool same_stream) {
  Finding f;
  f.kind = FindingKind::kOrderInversion;
  f.role = same_stream ? FindingRole::kRootCause : FindingRole::kWarning;
  f.comm = kComm;
  f.seq = 2;
  f.nranks = 8;
  f.ranks = {0, 1};
  OrderInversionFacts x;
  x.rank = 1;
  x.reference_rank = 0;
  x.other_comm = kOther;
  x.other_seq = 2;
  x.comm_first = false;
  x.same_stream = same_stream;
  f.facts = x;
  return f;
}

}  // namespace

TEST_CASE("collective_mismatch: detail, fix and groups from the payload", "[report]") {
  const FindingText t = RenderFinding(Mismatch(), FakeSite);
  CHECK(t.title == "collective mismatch");
  CHECK(t.detail ==
        "rank 5 called Broadcast(count=4096, float32, root=0) as collective #3 of communicator "
        "3fa9c1 (8 ranks) "
        "where ranks 0-4,6-7 called AllReduce(count=4096, float32, avg)");
  CHECK(t.fix.rfind(
            "make every rank call the same collectives in the same order with the same arguments; "
            "rank 5 "
            "took another path at collective #3 (see its call site): one rank is in another phase",
            0) == 0);
  REQUIRE(t.groups.size() == 2);
  CHECK(t.groups[0].ranks == std::vector<int>{0, 1, 2, 3, 4, 6, 7});
  CHECK(t.groups[0].doing == "AllReduce(count=4096, float32, avg) #3 (p0+10)");
  CHECK(t.groups[1].doing == "Broadcast(count=4096, float32, root=0) #3 (p5+20)");
}

TEST_CASE("collective_mismatch: the JSON contract's fields, then the kind's facts",
          "[report][json]") {
  const std::string json = Json(Mismatch());
  CHECK(json.rfind("{\"kind\":\"collective_mismatch\",\"role\":\"root_cause\",\"job\":0,\"comm\":"
                   "\"3fa9c10000000001\","
                   "\"seq\":3,\"ranks\":[5],\"field\":\"op\",\"nranks\":8,\"detail\":\"rank 5 "
                   "called Broadcast",
                   0) == 0);
  CHECK(json.find(",\"rank_groups\":[{\"ranks\":[0,1,2,3,4,6,7],\"doing\":\"AllReduce(count=4096, "
                  "float32, avg) #3 "
                  "(an unknown call site)\"},") != std::string::npos);
  CHECK(json.find("],\"expected\":\"AllReduce(count=4096, float32, "
                  "avg)\",\"groups\":[{\"ranks\":[0,1,2,3,4,6,7],"
                  "\"call\":\"AllReduce(count=4096, float32, avg)\",\"call_site\":\"an unknown "
                  "call site\"},{\"ranks\":[5],"
                  "\"call\":\"Broadcast(count=4096, float32, root=0)\",\"call_site\":\"an unknown "
                  "call site\"}]}") != std::string::npos);
}

TEST_CASE("missing_rank: what the rank did instead, in words and in JSON", "[report]") {
  Finding f;
  f.kind = FindingKind::kMissingRank;
  f.comm = kComm;
  f.seq = 4;
  f.nranks = 8;
  f.ranks = {2};
  MissingRankFacts x;
  x.call = AllReduceAvg();
  x.entered = {0, 1, 3, 4, 5, 6, 7};
  x.last_seq = 3;
  x.last_site = {2, 7};
  x.departure.how = Departure::kExited;
  x.departure.exit_code = 0;
  f.facts = x;
  const FindingText t = RenderFinding(f, FakeSite);
  CHECK(t.detail ==
        "rank 2 never entered collective #4 of communicator 3fa9c1 (8 ranks), "
        "AllReduce(count=4096, float32, avg), "
        "which ranks 0-1,3-7 entered; it exited with code 0 after collective #3 without destroying "
        "it");
  CHECK(t.fix.rfind("the rank's program ended early: make every rank run the same collectives",
                    0) == 0);
  REQUIRE(t.groups.size() == 2);
  CHECK(t.groups[0].doing == "entered AllReduce(count=4096, float32, avg) #4 and waited");
  CHECK(t.groups[1].doing == "last entered #3 (p2+7), then exited (code 0)");
  const std::string json = Json(f);
  CHECK(json.find(",\"did_instead\":\"exited (code 0)\",\"last_seq\":3}") != std::string::npos);
  CHECK(json.find("\"signal\"") == std::string::npos);  // rank_died's alone
}

TEST_CASE("rank_died: the signal, and null when none was recorded", "[report][json]") {
  Finding f;
  f.kind = FindingKind::kRankDied;
  f.comm = kComm;
  f.seq = 2;
  f.ranks = {3};
  MissingRankFacts x;
  x.call = AllReduceAvg();
  x.entered = {0, 1, 2};
  x.departure.kind = FindingKind::kRankDied;
  x.departure.how = Departure::kDiedOfSignal;
  x.departure.signo = SIGSEGV;
  f.facts = x;
  CHECK(RenderFinding(f, NoCallSites())
            .detail.find("; its process died of SIGSEGV before its first collective") !=
        std::string::npos);
  CHECK(Json(f).find(
            ",\"did_instead\":\"died of SIGSEGV\",\"last_seq\":null,\"signal\":\"SIGSEGV\"}") !=
        std::string::npos);
  std::get<MissingRankFacts>(f.facts).departure = {FindingKind::kRankDied,
                                                   Departure::kKilledUntraced};
  CHECK(Json(f).find(",\"signal\":null}") != std::string::npos);
}

TEST_CASE("p2p_mismatch: the two sides of a send", "[report]") {
  Finding f;
  f.kind = FindingKind::kP2pMismatch;
  f.comm = kComm;
  f.seq = 1;
  f.nranks = 8;
  f.ranks = {2, 3};
  f.field = MismatchField::kCount;
  P2pMismatchFacts x;
  x.problem = P2pMismatchFacts::Problem::kSizeMismatch;
  x.sender = 2;
  x.receiver = 3;
  x.send = {4095, kFloat32, 0, {2, 1}};
  x.receive = {4096, kFloat32, 0, {3, 1}};
  f.facts = x;
  const FindingText t = RenderFinding(f, FakeSite);
  CHECK(t.detail ==
        "rank 2 sent 4095 x float32 to rank 3 as its send #1 to that peer on communicator 3fa9c1 "
        "(8 ranks), but rank 3 "
        "posted its receive #1 from rank 2 for 4096 x float32");
  REQUIRE(t.groups.size() == 2);
  CHECK(t.groups[0].doing == "Send #1 of 4095 x float32 to rank 3 (p2+1)");
  CHECK(Json(f).find(",\"sender\":2,\"receiver\":3}") != std::string::npos);
}

TEST_CASE("order_inversion: one stream deadlocks, separate streams warn", "[report]") {
  const FindingText same = RenderFinding(Inversion(true), NoCallSites());
  CHECK(same.detail ==
        "rank 1 issued collective #2 of 09572d before collective #2 of 3fa9c1, and rank 0 the "
        "reverse, each on a "
        "single stream: each waits for the other");
  const FindingText apart = RenderFinding(Inversion(false), NoCallSites());
  CHECK(apart.detail ==
        "rank 1 issued collective #2 of 09572d before collective #2 of 3fa9c1, and rank 0 the "
        "reverse, on different "
        "streams");
  REQUIRE(apart.groups.size() == 2);
  CHECK(apart.groups[0].doing == "collective #2 of 09572d then collective #2 of 3fa9c1");
  CHECK(Json(Inversion(false)).find(",\"role\":\"warning\",") != std::string::npos);
  CHECK(Json(Inversion(false))
            .find(",\"other_comm\":\"09572d0000000002\",\"other_seq\":2,\"same_stream\":false}") !=
        std::string::npos);
}

TEST_CASE("init_failure: its facts as the JSON contract names them", "[report][json]") {
  Finding f;
  f.kind = FindingKind::kInitFailure;
  f.ranks = {1};
  InitFailureFacts x;
  x.cause = InitCause::kSharedMemory;
  x.subsystem = Area::kShm;
  x.err = ENOSPC;
  x.pids = {4711};
  x.host = "node3";
  x.shm_call = "fallocate";
  x.shm_call_traced = true;
  x.shm = InitFailureFacts::Shm{std::string("/dev/shm/nccl-x"), 9637892, 1048576, std::nullopt};
  f.facts = x;
  const FindingText t = RenderFinding(f, NoCallSites());
  CHECK(t.title == "NCCL initialisation failed: shared memory (/dev/shm) (ENOSPC)");
  CHECK(t.detail ==
        "Rank 1 could not make NCCL's shared-memory segment in /dev/shm: fallocate of 9.2 MiB "
        "failed with ENOSPC; "
        "/dev/shm on node3 is 1.0 MiB (unknown free when NCCL began) (each connection between two "
        "local ranks takes "
        "such a segment)");
  CHECK(t.fix.rfind("give the container a larger /dev/shm (docker run --shm-size=8g;", 0) == 0);
  const std::string json = Json(f);
  CHECK(
      json.rfind(
          "{\"kind\":\"init_failure\",\"role\":\"root_cause\",\"job\":0,\"comm\":null,\"seq\":null,"
          "\"ranks\":[1],\"nranks\":null,\"detail\":\"Rank 1 could not make",
          0) == 0);
  CHECK(json.find("\"rank_groups\":[{\"ranks\":[1],\"doing\":\"init failed: shm (ENOSPC)\"}],"
                  "\"subsystem\":\"shm\",\"errno\":\"ENOSPC\",\"path\":\"/dev/shm/"
                  "nccl-x\",\"requested\":9637892,"
                  "\"shm_size\":1048576,\"shm_free\":null,\"pids\":[4711]}") != std::string::npos);
}

TEST_CASE("init_failure: processes of unknown rank are named by pid, the waiting ranks",
          "[report]") {
  Finding f;
  f.kind = FindingKind::kInitFailure;
  InitFailureFacts x;
  x.cause = InitCause::kBootstrapRefused;
  x.subsystem = Area::kBootstrap;
  x.err = ECONNREFUSED;
  x.pids = {7, 8};
  x.address = "10.0.0.1:29500";
  x.attempts = 3;
  f.facts = x;
  CHECK(RenderFinding(f, NoCallSites())
            .detail.rfind("Processes 7, 8 could not connect to the bootstrap root at "
                          "10.0.0.1:29500 (ECONNREFUSED, 3 attempts): "
                          "nothing listens there",
                          0) == 0);
  Finding w;
  w.kind = FindingKind::kInitFailure;
  w.role = FindingRole::kConsequence;
  w.ranks = {1, 2, 3};
  InitFailureFacts waiting;
  waiting.cause = InitCause::kWaitedForCause;
  waiting.subsystem = Area::kWaiting;
  waiting.has_pids = false;
  waiting.call = "ncclCommInitRank";
  waiting.until = {RankEnd{std::nullopt, SIGTERM}};
  w.facts = waiting;
  const FindingText t = RenderFinding(w, NoCallSites());
  CHECK(t.detail ==
        "ranks 1-3 failed or waited in ncclCommInitRank because of the rank(s) above (until: "
        "SIGTERM)");
  CHECK(Json(w).find(",\"subsystem\":\"waiting\",\"errno\":null}") != std::string::npos);
}

TEST_CASE(
    "explain's log facts: an Xid in words, its group named by the kind, xid and bus id in JSON",
    "[report][json]") {
  Finding f;
  f.kind = FindingKind::kGpuFault;
  f.ranks = {3};
  LogFacts x;
  x.cause = LogCause::kXid;
  x.xid = 79;
  x.bus_id = "0000:3b:00";
  f.facts = x;
  const FindingText t = RenderFinding(f, NoCallSites());
  CHECK(t.detail == "Rank 3 GPU 0000:3b:00 reported Xid 79: the GPU fell off the bus");
  CHECK(t.fix.rfind("take the GPU (or node) out of the job", 0) == 0);
  const std::string json = Json(f);
  CHECK(json.find(",\"rank_groups\":[{\"ranks\":[3],\"doing\":\"gpu_fault\"}],\"xid\":79,\"bus_"
                  "id\":\"0000:3b:00\"}") != std::string::npos);
}

TEST_CASE("explain's watchdog timeout: the collectives each group timed out in", "[report]") {
  Finding f;
  f.kind = FindingKind::kWatchdogTimeout;
  f.seq = 17;
  f.ranks = {0, 1, 2};
  LogFacts x;
  x.cause = LogCause::kWatchdogTimeout;
  x.timeout_ms = "600000";
  x.timeouts = {{{0, 1, 2}, 17, "ALLREDUCE", "4096"}};
  f.facts = x;
  const FindingText t = RenderFinding(f, NoCallSites());
  CHECK(t.detail ==
        "PyTorch's watchdog timed out after 600000 ms: ranks 0-2 in ALLREDUCE(numel=4096) #17");
  REQUIRE(t.groups.size() == 1);
  CHECK(t.groups[0].doing == "timed out in ALLREDUCE(numel=4096) #17");
  CHECK(Json(f).find(",\"timeout_ms\":600000}") != std::string::npos);
}

TEST_CASE(
    "the JSON envelope: version from CMake, schema version, verdict, findings, processes, "
    "unreadable",
    "[report][json]") {
  Report r;
  r.findings = {Inversion(false)};
  TracesSeen seen;
  TracedProcess p;
  p.path = "b.trace";
  p.pid = 1;
  seen.processes = {p};
  r.seen = seen;
  r.traces_not_read = {{"a.trace", "torn"}};
  r.logs_not_read = {{"job.log", "Permission denied"}};
  std::ostringstream out;
  WriteJson(r, out);
  const std::string json = out.str();
  CHECK(json.rfind(std::string("{\"ncclwatch\":\"") + kNcclwatchVersion +
                       "\",\"schema_version\":2,\"verdict\":\"healthy\",\"findings\":[{",
                   0) == 0);
  CHECK(json.find("],\"processes\":[{\"path\":\"b.trace\",\"host\":\"\",\"pid\":1,") !=
        std::string::npos);
  // The traces not read, then the logs.
  CHECK(json.find("\"unreadable\":[{\"path\":\"a.trace\",\"error\":\"torn\"},{\"path\":"
                  "\"job.log\",\"error\":\"Permission denied\"}]}\n") != std::string::npos);
}

TEST_CASE("headline: healthy, with warnings and notes counted", "[report][headline]") {
  CHECK(Headline({}, false) == "HEALTHY");
  Finding note;
  note.kind = FindingKind::kMissingTraces;
  note.role = FindingRole::kNote;
  note.comm = kComm;
  note.ranks = {6, 7};
  note.facts = MissingTracesFacts{};
  CHECK(Headline({Inversion(false)}, false) == "HEALTHY, 1 warning");
  CHECK(Headline({Inversion(false), Inversion(false), note}, false) ==
        "HEALTHY, 2 warnings, 1 note");
}

TEST_CASE("headline: the root cause first, where and who", "[report][headline]") {
  Finding consequence = Mismatch();
  consequence.role = FindingRole::kConsequence;
  CHECK(Headline({Mismatch(), consequence}, true) ==
        "PROBLEM: collective_mismatch on communicator 3fa9c1 #3 (rank 5)");
  Finding init;
  init.kind = FindingKind::kInitFailure;
  init.ranks = {1, 2, 3};
  InitFailureFacts x;
  x.subsystem = Area::kBootstrap;
  x.err = ECONNREFUSED;
  init.facts = x;
  CHECK(Headline({init}, true) == "PROBLEM: init_failure (bootstrap, ECONNREFUSED) (ranks 1-3)");
  Finding other_job = Mismatch();
  other_job.job = 1;
  CHECK(Headline({Mismatch(), other_job}, true) ==
        "PROBLEM: collective_mismatch on communicator 3fa9c1 #3 (rank 5); and 1 more job with a "
        "problem");
}

TEST_CASE("exit codes: 0 healthy (warnings allowed), 1 a problem", "[report][exit]") {
  CHECK(ExitCode(false) == 0);
  CHECK(ExitCode(true) == 1);
}

TEST_CASE("never_completed: detail, fix, groups, phase and the JSON facts", "[report][hang]") {
  Finding f;
  f.kind = FindingKind::kNeverCompleted;
  f.role = FindingRole::kRootCause;
  f.comm = kComm;
  f.seq = 7;
  f.nranks = 4;
  f.ranks = {2};
  f.phase = HangPhase::kStep;
  NeverCompletedFacts x;
  x.op = LastCall{true, f::kAllReduce, kComm, 7, true, false, 0, 0};
  x.collective = AllReduceAvg();
  x.entered = {0, 1, 2, 3};
  x.completed = 7;
  x.by = NeverCompletedFacts::By::kCompleted;
  x.others.push_back({{0, 1, 3}, 8});
  x.waited_ns = 312'000'000'000;
  x.stall_record = true;
  x.site = {2, 99};
  f.facts = x;
  const FindingText t = RenderFinding(f, FakeSite);
  CHECK(t.title == "an operation every rank entered never completed");
  CHECK(t.detail ==
        "AllReduce(count=4096, float32, avg) #7 of communicator 3fa9c1 (4 ranks) was entered by "
        "ranks 0-3 and never completed on the GPUs; rank 2 stopped first: its GPU completed 7 "
        "collectives of it, the others more (ranks 0-1,3 8); it had been pending for 312.0 s "
        "when the traces end; the shim's stall watchdog reported it");
  CHECK(t.fix.rfind("every rank entered it, so the GPUs or the network did not finish it: on "
                    "rank 2's node",
                    0) == 0);
  REQUIRE(t.groups.size() == 2);
  CHECK(t.groups[0].doing ==
        "stopped first: entered AllReduce(count=4096, float32, avg) #7 (p2+99), GPU completed 7 "
        "of it");
  const std::string json = Json(f);
  CHECK(json.find("\"kind\":\"never_completed\",\"role\":\"root_cause\",\"job\":0,\"comm\":"
                  "\"3fa9c10000000001\",\"seq\":7,\"ranks\":[2],\"nranks\":4,\"phase\":\"step\"") ==
        1);
  CHECK(json.find(",\"call\":\"AllReduce(count=4096, float32, avg)\",\"peer\":null,\"completed\":"
                  "7,\"stopped_first_by\":\"completed\",\"entered\":[0,1,2,3],\"waited_s\":312.000,"
                  "\"stall_record\":true,\"live\":false}") != std::string::npos);
  CHECK(Headline({f}, true) == "PROBLEM: never_completed on communicator 3fa9c1 #7 (rank 2)");
  std::ostringstream human;
  WriteFindingsHuman({f}, FakeSite, human);
  CHECK(human.str().find("\n  Where: in a training step's collective or send/receive.\n") !=
        std::string::npos);
}

TEST_CASE("hang findings' JSON names: the contract the integration tests read", "[report][hang]") {
  CHECK(std::string(KindName(FindingKind::kNeverCompleted)) == "never_completed");
  CHECK(std::string(KindName(FindingKind::kNcclAsyncError)) == "nccl_async_error");
  CHECK(std::string(KindName(FindingKind::kRankFrozen)) == "rank_frozen");
  CHECK(std::string(KindName(FindingKind::kRankExitError)) == "rank_exit_error");
  CHECK(std::string(KindName(FindingKind::kHangUnexplained)) == "hang_unexplained");
  CHECK(std::string(KindName(FindingKind::kTraceOverwritten)) == "trace_overwritten");
  CHECK(std::string(KindName(FindingKind::kNcclCallsUnseen)) == "nccl_calls_unseen");
  Finding frozen;
  frozen.kind = FindingKind::kRankFrozen;
  frozen.ranks = {1};
  frozen.comm = kComm;
  frozen.seq = 5;
  frozen.phase = HangPhase::kStartup;
  StoppedRankFacts s;
  s.state = StoppedRankFacts::State::kStopped;
  s.proc_state = 'T';
  s.before_others_ns = 30'000'000'000;
  s.waiting = {0, 2};
  frozen.facts = s;
  const std::string json = Json(frozen);
  CHECK(json.find("\"phase\":\"startup\"") != std::string::npos);
  CHECK(json.find(",\"state\":\"stopped\",\"signal\":null,\"stopped_before_others_s\":30.000,"
                  "\"doing\":null,\"waiting\":[0,2]}") != std::string::npos);
  CHECK(RenderFinding(frozen, NoCallSites()).detail ==
        "rank 1 is frozen: its process exists and is stopped (state T in /proc/PID/stat) before "
        "any NCCL call; its heartbeat stopped 30.0 s before the others'; ranks 0,2 waited for "
        "it");
}

TEST_CASE("trace_overwritten: a crafted trace's span beyond int64 nanoseconds is said, not UB",
          "[report][hang]") {
  // A job_trace_fuzzer input: time stamps 2^63 ns apart made the span's
  // conversion to nanoseconds overflow (UBSan: outside the range of long).
  for (const double span : {1e300, 9.3e9, std::numeric_limits<double>::quiet_NaN(), -5.0, 12.5}) {
    Finding f;
    f.kind = FindingKind::kTraceOverwritten;
    f.ranks = {0};
    BlindSpotFacts b;
    b.ring_bytes = 1 << 20;
    b.needed_bytes = 4 << 20;
    b.overwritten = 100;
    b.span_s = span;
    b.records_per_s = 1;
    f.facts = b;
    const FindingText t = RenderFinding(f, FakeSite);
    INFO(t.detail);
    CHECK(t.detail.find(" s); 100 older slots were overwritten") != std::string::npos);
    if (span == 12.5) CHECK(t.detail.find("over 12.5 s)") != std::string::npos);
  }
}

// The JSON report's documented schema (decoder/report/report.schema.json):
// the validator the job tests' reports go through refuses what breaks it,
// and the one JSON writer's output conforms for every kind of finding, with
// the facts of each kind, for diagnose's processes and for explain's.

#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "findings/finding.h"
#include "report/finding_text.h"
#include "report/report.h"
#include "report/report_parts.h"
#include "support/json_schema.h"

namespace {

using namespace ncclwatch::decoder;  // NOLINT: the findings' many types

std::string Envelope(const std::vector<Finding>& findings,
                     const std::variant<TracesSeen, LogsSeen>& seen = TracesSeen{},
                     const UnreadableFiles& unreadable = {}) {
  Report r;
  r.verdict = Verdict::kProblem;
  r.findings = findings;
  r.seen = seen;
  r.traces_not_read = unreadable;
  std::ostringstream out;
  WriteJson(r, out);
  return out.str();
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

}  // namespace

TEST_CASE("the report schema is read, and its version is the writer's", "[report][schema]") {
  const google::protobuf::Value& schema = jobs::ReportSchema();
  REQUIRE(schema.has_struct_value());
  const auto& version = schema.struct_value()
                            .fields()
                            .at("properties")
                            .struct_value()
                            .fields()
                            .at("schema_version")
                            .struct_value()
                            .fields()
                            .at("const");
  CHECK(version.number_value() == kJsonSchemaVersion);
  const std::string json = Envelope({});
  CHECK(json.find("\"schema_version\":" + std::to_string(kJsonSchemaVersion) + ",") !=
        std::string::npos);
  INFO(json);
  CHECK(jobs::ValidateReport(json).empty());
}

TEST_CASE("the validator refuses what breaks the schema", "[report][schema]") {
  const std::string good = Envelope({});
  REQUIRE(jobs::ValidateReport(good).empty());
  auto broken = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    s.replace(at, from.size(), to);
    return jobs::ValidateReport(s);
  };
  CHECK_FALSE(broken("\"verdict\":\"problem\"", "\"verdict\":\"fine\"").empty());  // enum
  CHECK_FALSE(broken("\"verdict\":\"problem\"", "\"verdict\":1").empty());         // type
  CHECK_FALSE(broken("\"findings\":[],", "").empty());                             // required
  CHECK_FALSE(broken("\"findings\":[]", "\"findings\":[],\"extra\":0").empty());   // unknown
  CHECK_FALSE(broken("\"schema_version\":" + std::to_string(kJsonSchemaVersion),
                     "\"schema_version\":" + std::to_string(kJsonSchemaVersion + 1))
                  .empty());  // const
  CHECK_FALSE(jobs::ValidateReport("{not json").empty());

  Finding f;
  f.kind = FindingKind::kCollectiveMismatch;
  f.comm = 0x0123456789abcdefull;
  const std::string one = Envelope({f});
  INFO(one);
  REQUIRE(jobs::ValidateReport(one).empty());
  std::string bad_comm = one;
  bad_comm.replace(bad_comm.find("0123456789abcdef"), 16, "0123");  // pattern
  CHECK_FALSE(jobs::ValidateReport(bad_comm).empty());
}

TEST_CASE("every kind of finding, with its facts, conforms", "[report][schema]") {
  std::vector<Finding> findings;
  for (int k = 0; k <= static_cast<int>(FindingKind::kNcclNotVisible); ++k) {
    Finding f;
    f.kind = static_cast<FindingKind>(k);
    f.role = static_cast<FindingRole>(k % 4);
    f.seq = k;
    f.ranks = {k, k + 1};
    f.nranks = 8;
    if (k % 3 == 0) f.phase = HangPhase::kStep;
    findings.push_back(f);
  }
  Finding mismatch;
  mismatch.kind = FindingKind::kCollectiveMismatch;
  mismatch.field = MismatchField::kCount;
  mismatch.comm = 0xc06c50cabbc8b5d1ull;
  CollectiveMismatchFacts cm;
  cm.groups.push_back({{0, 1, 2}, CollectiveSignature(1, 1024, 7, 0, -1), {}});
  cm.groups.push_back({{3}, CollectiveSignature(1, 2048, 7, 0, -1), {}});
  mismatch.facts = cm;
  findings.push_back(mismatch);

  Finding init;
  init.kind = FindingKind::kInitFailure;
  InitFailureFacts x;
  x.cause = InitCause::kSharedMemory;
  x.subsystem = ncclwatch::decoder::Area::kShm;
  x.err = 28;
  x.pids = {10, 11};
  InitFailureFacts::Shm shm;
  shm.path = "/dev/shm/nccl-x";
  shm.requested = 1 << 20;
  x.shm = shm;
  x.memlock = InitFailureFacts::Memlock{std::nullopt, true};
  init.facts = x;
  findings.push_back(init);
  // The facts each cause carries: an unset setting (null), an unknown address and bus id.
  for (const InitCause cause :
       {InitCause::kNoInterface, InitCause::kBootstrapUnreachable, InitCause::kDuplicateGpu}) {
    InitFailureFacts y;
    y.cause = cause;
    y.subsystem = cause == InitCause::kNoInterface    ? ncclwatch::decoder::Area::kNetwork
                  : cause == InitCause::kDuplicateGpu ? ncclwatch::decoder::Area::kGpu
                                                      : ncclwatch::decoder::Area::kBootstrap;
    if (cause == InitCause::kNoInterface) y.interfaces = std::vector<std::string>{"lo", "eth0"};
    init.facts = y;
    findings.push_back(init);
  }

  Finding died;
  died.kind = FindingKind::kRankDied;
  MissingRankFacts mr;
  mr.departure.kind = FindingKind::kRankDied;
  mr.departure.how = Departure::kDiedFirst;
  mr.departure.signo = 9;
  mr.last_seq = 4;
  died.facts = mr;
  findings.push_back(died);

  Finding never;
  never.kind = FindingKind::kNeverCompleted;
  NeverCompletedFacts nc;
  nc.op.valid = true;
  nc.op.call = 10;  // Send
  nc.op.peer = 3;
  never.facts = nc;
  findings.push_back(never);

  Finding device;
  device.kind = FindingKind::kGpuFault;
  DeviceErrorFacts de;
  de.name = "CUDA_ERROR_ECC_UNCORRECTABLE";
  de.completed = 5;
  device.facts = de;
  findings.push_back(device);

  Finding log;
  log.kind = FindingKind::kWatchdogTimeout;
  LogFacts lf;
  lf.cause = LogCause::kWatchdogTimeout;
  lf.timeout_ms = "600000";
  lf.xid = 79;
  lf.memory = "gpu";
  log.facts = lf;
  findings.push_back(log);

  Finding skew;
  skew.kind = FindingKind::kConfigSkew;
  SetupFacts sf;
  sf.settings.push_back({"NCCL_SOCKET_IFNAME", {{"eth0", {0, 1}}, {"", {2}}}});
  skew.facts = sf;
  findings.push_back(skew);

  Finding hidden;
  hidden.kind = FindingKind::kNcclNotVisible;
  NcclNotVisibleFacts nv;
  nv.items.push_back({0, 1, "node1", 4711, 1, "/app/train", true});
  hidden.facts = nv;
  findings.push_back(hidden);

  Finding killed;
  killed.kind = FindingKind::kKilledWhileRunning;
  KilledWhileRunningFacts kw;
  kw.signo = 15;
  kw.spread_ns = 2000000;
  KilledWhileRunningFacts::Rank r;
  r.rank = 1;
  r.before_signal_ns = 5000000;
  kw.ranks.push_back(r);
  killed.facts = kw;
  findings.push_back(killed);

  Finding slow;
  slow.kind = FindingKind::kStraggler;
  slow.role = FindingRole::kWarning;
  slow.comm = 0x3fa9c1d2e5b60718ULL;
  slow.seq = 5;
  slow.ranks = {2};
  StragglerFacts st;
  st.rank = 2;
  st.members = 4;
  st.compared = st.gapped = 100;
  st.times_last = st.call_times_last = st.call_compared = 90;
  st.call = 1;
  st.median_late_ns = 15'000'000;
  st.p90_late_ns = 21'000'000;
  st.median_interval_ns = 22'000'000;
  st.last_seq = 99;
  st.began_seq = 5;
  st.began_later = true;
  st.also_comms = {0x5fb2eb0000000001ULL};
  st.hosts = 2;
  st.clocks_aligned = true;
  st.clock_residual_ns = 40'000;
  slow.facts = st;
  findings.push_back(slow);
  // A slow link between two ranks: cause link, with the kind's usual time.
  st.cause = StragglerFacts::Cause::kLink;
  st.link_ranks = {2, 3};
  st.usual_ns = 400'000;
  st.kind_comms = 4;
  slow.ranks = {2, 3};
  slow.facts = st;
  findings.push_back(slow);

  for (const auto cause :
       {RendezvousFacts::Cause::kSettingsDiffer, RendezvousFacts::Cause::kPortInUse,
        RendezvousFacts::Cause::kRefused, RendezvousFacts::Cause::kUnreachable,
        RendezvousFacts::Cause::kRanksMissing}) {
    Finding rdv;
    rdv.kind = FindingKind::kRendezvousFailure;
    rdv.ranks = {1};
    RendezvousFacts rf;
    rf.cause = cause;
    rf.settings.push_back({"MASTER_PORT", {{"29500", {0}}, {"29501", {1}}}});
    rf.address = "127.0.0.1:29500";
    rf.err = 98;
    rf.attempts = 3;
    rf.span_ns = 1'500'000'000;
    rf.failed = {1};
    rf.world_size = 3;
    rf.started = {0, 1};
    rf.missing = {2};
    rf.waiting = {0, 1};
    rf.server = {0};
    rf.joined = 1;
    rdv.facts = rf;
    findings.push_back(rdv);
    // torchrun's agents: nodes, not ranks.
    rdv.ranks.clear();
    rf.agents = true;
    rf.backend = "static";
    rdv.facts = rf;
    findings.push_back(rdv);
  }

  Finding topo;
  topo.kind = FindingKind::kGpuTopology;
  topo.role = FindingRole::kWarning;
  GpuTopologyFacts gt;
  gt.file = "job.log:12";
  gt.gpus = 8;
  gt.nics = 2;
  gt.usual = "NV18";
  gt.usual_pairs = 21;
  gt.weak = {{"GPU0", "GPU5", "SYS"}};
  gt.far_nics = {{"mlx5_1", "GPU4", "NODE"}};
  topo.facts = gt;
  findings.push_back(topo);

  TracesSeen traced;
  TracedProcess p;
  p.path = "/t/a.trace";
  p.host = "n";
  p.pid = 1;
  p.rank = 0;
  p.rank_source = "RANK";
  p.nccl_version = 22809;
  p.end.kind = Fate::kExited;
  p.end.exit_code = 0;
  p.records = 3;
  traced.processes = {p};
  p.rank = -1;  // a process with no rank, that died of a signal inside a collective
  p.end.kind = Fate::kSignal;
  p.end.signo = 9;
  p.last.valid = true;
  p.last.call = 1;
  p.last.pending = true;
  traced.processes.push_back(p);
  const std::string json = Envelope(findings, traced, {{"/t/b.trace", "not a trace"}});
  INFO(json);
  const std::vector<std::string> errors = jobs::ValidateReport(json);
  INFO(Joined(errors));
  CHECK(errors.empty());
}

TEST_CASE("a running job's report, with its pending operations, conforms", "[report][schema]") {
  PendingOperation op;
  op.comm = 0xc06c50cabbc8b5d1ull;
  op.seq = 12;
  op.call.valid = true;
  op.call.call = 1;  // AllReduce
  op.entered = {0, 1};
  op.not_entered = {2};
  op.pending_ns = 1500000000;
  Report r;
  r.verdict = Verdict::kRunning;
  r.pending = {op};
  std::ostringstream out;
  WriteJson(r, out);
  INFO(out.str());
  CHECK(out.str().find("\"verdict\":\"running\"") != std::string::npos);
  const std::vector<std::string> errors = jobs::ValidateReport(out.str());
  INFO(Joined(errors));
  CHECK(errors.empty());
}

TEST_CASE("explain's report, of the processes the logs showed, conforms", "[report][schema]") {
  LogsSeen logged;
  logged.files = 2;
  LoggedProcess p;
  p.source = "job.log";
  p.host = "node1";
  p.pid = 4242;
  p.rank = 3;
  p.nccl_version = 22809;
  p.bus_id = "0000:18:00.0";
  p.init = LoggedProcess::Init::kStarted;
  p.lines = 12;
  logged.processes = {p};
  logged.processes.push_back(LoggedProcess{});  // nothing known of it
  Finding f;
  f.kind = FindingKind::kLogInsufficient;
  f.role = FindingRole::kNote;
  const std::string json = Envelope({f}, logged, {{"nccl.log", "Permission denied"}});
  INFO(json);
  CHECK(json.find("\"processes\":[{\"source\":\"job.log\",\"host\":\"node1\",\"pid\":4242,"
                  "\"rank\":3,\"nccl_version\":\"2.28.9\",\"bus_id\":\"0000:18:00.0\","
                  "\"init\":\"started\",\"lines\":12},") != std::string::npos);
  const std::vector<std::string> errors = jobs::ValidateReport(json);
  INFO(Joined(errors));
  CHECK(errors.empty());
}

TEST_CASE("the schema's subsystems are knowledge/area.h's names, each once", "[report][schema]") {
  const auto& subsystem =
      jobs::ReportSchema().struct_value().fields().at("$defs").struct_value().fields().at(
          "subsystem");
  std::vector<std::string> in_schema;
  for (const auto& v : subsystem.struct_value().fields().at("enum").list_value().values())
    in_schema.push_back(v.string_value());
  std::vector<std::string> names;
  for (int i = 0; i < kAreaCount; ++i) names.push_back(AreaName(static_cast<Area>(i)));
  CHECK(in_schema == names);
}

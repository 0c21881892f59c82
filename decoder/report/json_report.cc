// The JSON contract (stable; documented in README.md): a Report
// (report/report.h) written as data, for diagnose and explain alike:
//
// {"ncclwatch": VERSION, "schema_version": kJsonSchemaVersion,
//  "verdict": "healthy"|"running"|"problem",
//  "findings": [{"kind", "role", "job", "comm", "seq", "ranks", "field", "nranks",
//                "detail", "fix", "rank_groups", ...the kind's facts}],
//  "pending": [{"comm", "seq", "call", "entered", "not_entered", "pending_s"}]
//             (only when running),
//  "processes": [...], "unreadable": [...]}
//
// Its schema is report.schema.json, beside this file (of schema_version
// kJsonSchemaVersion); the tests validate every job's JSON against it.

#include <functional>
#include <variant>

#include "absl/strings/numbers.h"
#include "knowledge/nccl_semantics.h"
#include "ncclwatch/trace_fields.h"
#include "ncclwatch_version.h"
#include "report/call_site.h"
#include "report/finding_text.h"
#include "report/hang_text.h"
#include "report/json_writer.h"
#include "report/names.h"
#include "report/rendezvous_text.h"
#include "report/report.h"
#include "report/report_parts.h"

namespace ncclwatch::decoder {
namespace {

void WriteFate(const Fate& f, JsonWriter& w) {
  w.BeginObject();
  switch (f.kind) {
    case Fate::kExited:
      w.Key("how").String("exit").Key("exit_code").Integer(f.exit_code);
      if (f.signo) w.Key("signal").String(SignalName(f.signo));
      break;
    case Fate::kSignal:
      w.Key("how").String("signal").Key("signal").String(SignalName(f.signo));
      break;
    default:
      w.Key("how").String("none");
  }
  w.EndObject();
}

void OptionalString(const std::optional<std::string>& v, JsonWriter& w) {
  if (v)
    w.String(*v);
  else
    w.Null();
}
template <typename T>
void OptionalInteger(const std::optional<T>& v, JsonWriter& w) {
  if (v)
    w.Integer(*v);
  else
    w.Null();
}
// `s`, or null when it is empty (a fact not known).
void StringOrNull(const std::string& s, JsonWriter& w) {
  if (s.empty())
    w.Null();
  else
    w.String(s);
}
// A signal's name, or null for none.
void SignalOrNull(int signo, JsonWriter& w) {
  if (signo)
    w.String(SignalName(signo));
  else
    w.Null();
}
void CallOrNull(const LastCall& call, JsonWriter& w) {
  if (call.valid)
    w.String(DescribeCall(call));
  else
    w.Null();
}
// A duration in seconds, to the millisecond; null when none was measured.
void Seconds(int64_t ns, JsonWriter& w) {
  if (ns > 0)
    w.Fixed(static_cast<double>(ns) / 1e9, 3);
  else
    w.Null();
}

// A finding's kind-specific facts, after the common fields.
void WriteFacts(const Finding&, const std::monostate&, const CallSiteNamer&, JsonWriter&) {}
void WriteFacts(const Finding&, const MissingTracesFacts& x, const CallSiteNamer&, JsonWriter& w) {
  if (x.grow_unjoined) w.Key("grow_unjoined").Bool(true);
}
void WriteFacts(const Finding&, const NcclNotVisibleFacts& x, const CallSiteNamer&, JsonWriter& w) {
  static const char* const kReasons[] = {"unknown",        "linked_in",  "deepbind",
                                         "second_library", "slots_full", "active_unseen",
                                         "device_api"};
  w.Key("not_visible").BeginArray();
  for (const NcclNotVisibleFacts::Item& it : x.items) {
    w.BeginObject();
    w.Key("pid").Integer(it.pid);
    w.Key("host").String(it.host);
    w.Key("rank").Integer(it.rank);
    w.Key("reason").String(kReasons[it.reason < 7 ? it.reason : 0]);
    w.Key("path").String(it.path);
    if (it.comm != 0) w.Key("comm").String(CommName(it.comm));
    w.Key("calls_seen").Bool(it.calls_seen);
    w.EndObject();
  }
  w.EndArray();
}
void WriteFacts(const Finding&, const UnreadableTracesFacts&, const CallSiteNamer&, JsonWriter&) {}
void WriteFacts(const Finding&, const SummaryGapFacts& x, const CallSiteNamer&, JsonWriter& w) {
  w.Key("gaps").BeginArray();
  for (const SummaryGapFacts::Gap& g : x.gaps) {
    w.BeginObject();
    w.Key("kind").String(g.differ ? "differ" : "not_compared");
    w.Key("ring_start").Bool(g.ring_start);
    w.Key("calls").String(g.sends ? "sends" : "collectives");
    if (g.sends) w.Key("sender").Integer(g.sender).Key("receiver").Integer(g.receiver);
    w.Key("comm").String(CommName(g.comm));
    w.Key("first_seq").Integer(g.first_seq);
    w.Key("last_seq").Integer(g.last_seq);
    w.Key("left_out_ranks").IntArray(g.left_out_ranks);
    w.Key("left_out_nodes").StringArray(g.left_out_nodes);
    w.Key("other_ranks").IntArray(g.other_ranks);
    w.Key("other_nodes").StringArray(g.other_nodes);
    w.EndObject();
  }
  w.EndArray().Key("more_gaps").Integer(x.more);
}
void WriteFacts(const Finding&, const GpuTopologyFacts& x, const CallSiteNamer&, JsonWriter& w) {
  auto links = [&](const std::vector<GpuTopologyFacts::Link>& v) {
    w.BeginArray();
    for (const GpuTopologyFacts::Link& l : v) {
      w.BeginObject();
      w.Key("a").String(l.a);
      w.Key("b").String(l.b);
      w.Key("link").String(l.link);
      w.EndObject();
    }
    w.EndArray();
  };
  w.Key("topology_file").String(x.file).Key("gpu_count").Integer(x.gpus);
  w.Key("nic_count").Integer(x.nics).Key("usual_link");
  StringOrNull(x.usual, w);
  w.Key("usual_pairs").Integer(x.usual_pairs).Key("weak_links");
  links(x.weak);
  w.Key("far_nics");
  links(x.far_nics);
}
void WriteFacts(const Finding&, const DuplicateTracesFacts& x, const CallSiteNamer&,
                JsonWriter& w) {
  w.Key("duplicates").BeginArray();
  for (const auto& d : x.duplicates)
    w.BeginObject().Key("path").String(d.path).Key("same_as").String(d.first).EndObject();
  w.EndArray();
}

void WriteFacts(const Finding&, const CollectiveMismatchFacts& x, const CallSiteNamer& sites,
                JsonWriter& w) {
  if (x.groups.empty()) return;
  w.Key("expected").String(DescribeCollective(x.groups.front().call)).Key("groups").BeginArray();
  for (const CollectiveMismatchFacts::Group& g : x.groups) {
    w.BeginObject();
    w.Key("ranks").IntArray(g.ranks);
    w.Key("call").String(DescribeCollective(g.call));
    w.Key("call_site").String(sites(g.site));
    w.EndObject();
  }
  w.EndArray();
}

void WriteFacts(const Finding& f, const MissingRankFacts& x, const CallSiteNamer& sites,
                JsonWriter& w) {
  w.Key("did_instead").String(DidInstead(x, sites)).Key("last_seq");
  OptionalInteger(x.last_seq, w);
  if (x.creation_call != 0) {
    w.Key("call").String(CallName(x.creation_call));
    w.Key("split_index").Integer(x.split_index);
    w.Key("entered").IntArray(x.entered);
  }
  if (f.kind == FindingKind::kRankDied) {
    w.Key("signal");
    SignalOrNull(x.departure.signo, w);
  }
  if (f.kind == FindingKind::kRankFrozen) {
    const char s = x.departure.proc_state;
    w.Key("state").String(s == 'T' || s == 't' ? "stopped" : "heartbeat_stale");
  }
  if (x.departure.how == Departure::kDiedFirst || x.departure.how == Departure::kFrozen) {
    w.Key("stopped_before_others_s");
    Seconds(x.departure.stopped_before_ns, w);
  }
}

void WriteFacts(const Finding&, const NeverCompletedFacts& x, const CallSiteNamer&, JsonWriter& w) {
  const char* by = x.by == NeverCompletedFacts::By::kCompleted      ? "completed"
                   : x.by == NeverCompletedFacts::By::kLastProgress ? "last_progress"
                                                                    : "tie";
  const bool p2p = x.op.call == fields::kSend || x.op.call == fields::kRecv;
  w.Key("call").String(x.collective ? DescribeCollective(*x.collective)
                                    : (x.op.valid && x.op.call != 0 ? CallName(x.op.call) : ""));
  w.Key("peer");
  if (p2p)
    w.Integer(x.op.peer);
  else
    w.Null();
  w.Key("completed").Integer(x.completed);
  w.Key("stopped_first_by").String(by);
  w.Key("entered").IntArray(x.entered);
  w.Key("waited_s");
  Seconds(x.waited_ns, w);
  w.Key("stall_record").Bool(x.stall_record).Key("live").Bool(x.live);
  if (!x.arguments_lost.empty()) w.Key("arguments_lost").IntArray(x.arguments_lost);
}

void WriteFacts(const Finding&, const DeviceErrorFacts& x, const CallSiteNamer&, JsonWriter& w) {
  if (x.nccl) {
    w.Key("nccl_result").String(ResultName(x.result)).Key("nccl_text").String(x.text);
  } else {
    w.Key("cuda_error").String(x.name);
    w.Key("cuda_result").Integer(x.result);
    w.Key("cuda_text").String(x.text);
    w.Key("device");
    if (x.device >= 0)
      w.Integer(x.device);
    else
      w.Null();
    w.Key("bus_id");
    StringOrNull(x.bus_id, w);
  }
  w.Key("completed");
  OptionalInteger(x.completed, w);
  w.Key("waiting").IntArray(x.waiting);
}

void WriteFacts(const Finding&, const StoppedRankFacts& x, const CallSiteNamer&, JsonWriter& w) {
  const char* state = x.state == StoppedRankFacts::State::kDead      ? "dead"
                      : x.state == StoppedRankFacts::State::kStopped ? "stopped"
                                                                     : "heartbeat_stale";
  w.Key("state").String(state).Key("signal");
  SignalOrNull(x.signo, w);
  w.Key("stopped_before_others_s");
  Seconds(x.before_others_ns, w);
  w.Key("doing");
  CallOrNull(x.doing, w);
  w.Key("waiting").IntArray(x.waiting);
  // Only for a rank that died before the launcher's teardown of the rest.
  if (x.teardown_signo) {
    w.Key("torn_down_by").String(SignalName(x.teardown_signo)).Key("torn_down_after_s");
    Seconds(x.teardown_after_ns, w);
  }
}

void WriteFacts(const Finding&, const HangFacts& x, const CallSiteNamer&, JsonWriter& w) {
  w.Key("live").Bool(x.live).Key("tracked").Bool(x.tracked);
}

void WriteFacts(const Finding&, const KilledWhileRunningFacts& x, const CallSiteNamer&,
                JsonWriter& w) {
  w.Key("signal").String(SignalName(x.signo)).Key("signal_spread_s");
  Seconds(x.spread_ns, w);
  w.Key("last_progress").BeginArray();
  for (const KilledWhileRunningFacts::Rank& r : x.ranks) {
    w.BeginObject().Key("rank").Integer(r.rank).Key("finished").Bool(r.finished);
    w.Key("before_signal_s");
    if (r.finished)
      w.Null();
    else
      Seconds(r.before_signal_ns, w);
    w.Key("last_call");
    CallOrNull(r.last, w);
    w.EndObject();
  }
  w.EndArray();
}

void WriteFacts(const Finding&, const StragglerFacts& x, const CallSiteNamer&, JsonWriter& w) {
  const bool gpu = x.cause == StragglerFacts::Cause::kGpu;
  const bool link = x.cause == StragglerFacts::Cause::kLink;
  w.Key("cause").String(gpu ? "gpu" : link ? "link" : "host");
  if (gpu) {
    w.Key("host_late_s");
    Seconds(x.host_late_ns, w);
    w.Key("host_on_time").Integer(x.host_on_time);
  }
  if (link) {
    w.Key("link_ranks").IntArray(x.link_ranks).Key("usual_s");
    Seconds(x.usual_ns, w);
    w.Key("kind_comms").Integer(x.kind_comms);
  }
  w.Key("call").String(CallName(x.call));
  w.Key("times_last").Integer(x.call_times_last);
  w.Key("of").Integer(x.call_compared);
  w.Key("times_last_all").Integer(x.times_last);
  w.Key("compared").Integer(x.compared);
  w.Key("window").Integer(x.window);
  if (x.summary_kept > 0) w.Key("summary_kept").Integer(x.summary_kept);
  w.Key("gapped").Integer(x.gapped);
  w.Key("members").Integer(x.members);
  w.Key("median_late_s");
  Seconds(x.median_late_ns, w);
  w.Key("p90_late_s");
  Seconds(x.p90_late_ns, w);
  w.Key("interval_s");
  Seconds(x.median_interval_ns, w);
  w.Key("first_seq").Integer(x.first_seq);
  w.Key("last_seq").Integer(x.last_seq);
  w.Key("began_seq").Integer(x.began_seq);
  w.Key("began_later").Bool(x.began_later);
  w.Key("worsening").Bool(x.worsening);
  w.Key("early_late_s");
  Seconds(x.early_late_ns, w);
  w.Key("recent_late_s");
  Seconds(x.recent_late_ns, w);
  w.Key("hosts").Integer(x.hosts).Key("clocks_aligned").Bool(x.clocks_aligned);
  w.Key("clock_residual_s");
  if (x.clocks_aligned)
    Seconds(x.clock_residual_ns, w);
  else
    w.Null();
  w.Key("also_comms").BeginArray();
  for (uint64_t c : x.also_comms) w.String(CommName(c));
  w.EndArray();
}

void WriteFacts(const Finding&, const ExitErrorFacts& x, const CallSiteNamer&, JsonWriter& w) {
  w.Key("exit_code").Integer(x.exit_code).Key("signal");
  SignalOrNull(x.signo, w);
  w.Key("work_done");
  if (x.tracked)
    w.Bool(x.work_done);
  else
    w.Null();
  w.Key("ended_after").IntArray(x.ended_after);
}

void WriteFacts(const Finding& f, const BlindSpotFacts& x, const CallSiteNamer&, JsonWriter& w) {
  if (f.kind == FindingKind::kTraceOverwritten) {
    w.Key("ring_size").Integer(x.ring_bytes);
    w.Key("ring_size_needed").Integer(x.needed_bytes);
    w.Key("suggest").String("NCCLWATCH_RING_SIZE=" + RingSizeSetting(x.needed_bytes));
  } else {
    w.Key("nccl_path").String(x.nccl_path);
  }
  w.Key("pids").IntArray(x.pids);
}

void WriteFacts(const Finding&, const P2pMismatchFacts& x, const CallSiteNamer&, JsonWriter& w) {
  w.Key("sender").Integer(x.sender).Key("receiver").Integer(x.receiver);
  if (x.one_sided) {
    w.Key("one_sided").Bool(true);
    w.Key("signals_sent").Integer(x.other_side_posted);
    w.Key("signals_awaited").Integer(x.awaited);
  }
}

void WriteFacts(const Finding&, const OrderInversionFacts& x, const CallSiteNamer&, JsonWriter& w) {
  w.Key("other_comm").String(CommName(x.other_comm));
  w.Key("other_seq").Integer(x.other_seq);
  w.Key("same_stream").Bool(x.same_stream);
}

void WriteFacts(const Finding&, const InitFailureFacts& x, const CallSiteNamer&, JsonWriter& w) {
  w.Key("subsystem").String(AreaName(x.subsystem)).Key("errno");
  if (x.err)
    w.String(ErrnoName(x.err));
  else
    w.Null();
  if (x.cause == InitCause::kNoInterface) {
    w.Key("socket_ifname");
    OptionalString(x.socket_ifname, w);
  }
  if (x.interfaces) w.Key("interfaces").StringArray(*x.interfaces);
  if (x.shm) {
    w.Key("path");
    OptionalString(x.shm->path, w);
    w.Key("requested");
    OptionalInteger(x.shm->requested, w);
    w.Key("shm_size");
    OptionalInteger(x.shm->shm_size, w);
    w.Key("shm_free");
    OptionalInteger(x.shm->shm_free, w);
  }
  if (x.cause == InitCause::kBootstrapRefused || x.cause == InitCause::kBootstrapUnreachable) {
    w.Key("address");
    OptionalString(x.address, w);
  }
  if (!x.message.empty()) w.Key("message").String(x.message);
  if (x.cause == InitCause::kDuplicateGpu) {
    w.Key("bus_id");
    OptionalString(x.bus_id, w);
  }
  if (x.versions) w.Key("versions").StringArray(*x.versions);
  if (x.cuda) {
    w.Key("cuda_driver");
    OptionalString(x.cuda->driver, w);
    w.Key("cuda_runtime");
    OptionalString(x.cuda->runtime, w);
  }
  if (x.memlock) {
    w.Key("memlock");
    if (x.memlock->unlimited)
      w.String("unlimited");
    else
      OptionalInteger(x.memlock->bytes, w);
  }
  if (x.cause == InitCause::kRootGone) {
    w.Key("exit_code");
    OptionalInteger(x.exit_code, w);
    w.Key("signal");
    SignalOrNull(x.signo, w);
    w.Key("could_not_connect").IntArray(x.could_not_connect);
  }
  if (x.sharing) {
    w.Key("cuda_call").String(x.sharing->function).Key("cuda_result").Integer(x.sharing->result);
  }
  if (x.has_pids) w.Key("pids").IntArray(x.pids);
}

void WriteFacts(const Finding& f, const SetupFacts& x, const CallSiteNamer&, JsonWriter& w) {
  if (f.kind == FindingKind::kP2pPath) {
    w.Key("host").String(x.host);
    w.Key("bridges").StringArray(x.bridges);
    w.Key("gpus").StringArray(x.gpus);
    w.Key("iommu").Bool(x.iommu);
    return;
  }
  w.Key("settings").BeginArray();
  for (const auto& setting : x.settings) {
    w.BeginObject().Key("name").String(setting.name).Key("values").BeginArray();
    for (const auto& [value, ranks] : setting.values) {
      w.BeginObject().Key("value");
      StringOrNull(value, w);
      w.Key("ranks").IntArray(ranks).EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray();
}

void WriteFacts(const Finding&, const RendezvousFacts& x, const CallSiteNamer&, JsonWriter& w) {
  WriteRendezvousJson(x, w);
}

void WriteFacts(const Finding&, const LogFacts& x, const CallSiteNamer&, JsonWriter& w) {
  if (x.xid) w.Key("xid").Integer(*x.xid);
  if (x.bus_id) w.Key("bus_id").String(*x.bus_id);
  if (x.memory) w.Key("memory").String(*x.memory);
  if (x.signo) w.Key("signal").String(SignalName(*x.signo));
  if (x.timeout_ms) {
    // PyTorch's digits, as it printed them: a number when they are one.
    uint64_t ms = 0;
    w.Key("timeout_ms");
    if (absl::SimpleAtoi(*x.timeout_ms, &ms) && absl::StrCat(ms) == *x.timeout_ms)
      w.Integer(ms);
    else
      w.String(*x.timeout_ms);
  }
  if (x.peer) w.Key("peer").String(*x.peer);
  if (!x.message.empty()) w.Key("message").String(x.message);
  if (x.address) w.Key("address").String(*x.address);
  if (x.hit) w.Key("hit").String(*x.hit);
  if (x.subsystem) w.Key("subsystem").String(AreaName(*x.subsystem));
  if (x.tool) w.Key("tool").String(*x.tool);
  if (x.pid) w.Key("pid").Integer(*x.pid);
  if (x.cause == LogCause::kStacks) {
    w.Key("waits").BeginArray();
    for (const LogFacts::Wait& wait : x.waits) {
      std::vector<int> known;
      for (int r : wait.ranks)
        if (r >= 0) known.push_back(r);
      w.BeginObject();
      w.Key("ranks").IntArray(known);
      w.Key("processes").Integer(wait.ranks.size());
      w.Key("frame").String(wait.frame);
      w.Key("place").String(wait.place);
      w.Key("phase");
      if (wait.phase)
        w.String(PhaseName(*wait.phase));
      else
        w.Null();
      w.Key("subsystem").String(AreaName(wait.subsystem));
      w.EndObject();
    }
    w.EndArray();
  }
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kProblem:
      return "problem";
    case Verdict::kRunning:
      return "running";
    default:
      return "healthy";
  }
}

// diagnose's processes: each as its trace showed it.
void WriteProcesses(const TracesSeen& seen, JsonWriter& w) {
  for (const TracedProcess& p : seen.processes) {
    w.BeginObject();
    w.Key("path").String(p.path);
    w.Key("host").String(p.host);
    w.Key("pid").Integer(p.pid);
    w.Key("rank").Integer(p.rank);
    w.Key("rank_source").String(p.rank_source);
    w.Key("nccl_version");
    if (p.nccl_version > 0)
      w.String(NcclVersionString(p.nccl_version));
    else
      w.Null();
    w.Key("end");
    WriteFate(p.end, w);
    w.Key("last_call");
    CallOrNull(p.last, w);
    w.Key("last_call_pending").Bool(p.last.pending);
    w.Key("records").Integer(p.records);
    w.Key("torn_slots").Integer(p.torn_slots);
    w.Key("overwritten_slots").Integer(p.overwritten_slots);
    w.Key("unwritten_slots").Integer(p.unwritten_slots);
    w.EndObject();
  }
}

const char* InitName(LoggedProcess::Init init) {
  switch (init) {
    case LoggedProcess::Init::kComplete:
      return "complete";
    case LoggedProcess::Init::kStarted:
      return "started";
    default:
      return "unknown";
  }
}

// explain's processes: each as the logs showed it: where its lines came
// from, who it was, how far its init got.
void WriteProcesses(const LogsSeen& seen, JsonWriter& w) {
  for (const LoggedProcess& p : seen.processes) {
    w.BeginObject();
    w.Key("source").String(p.source);
    w.Key("host").String(p.host);
    w.Key("pid").Integer(p.pid);
    w.Key("rank").Integer(p.rank);
    w.Key("nccl_version");
    if (p.nccl_version)
      w.String(NcclVersionString(p.nccl_version));
    else
      w.Null();
    w.Key("bus_id");
    StringOrNull(p.bus_id, w);
    w.Key("init").String(InitName(p.init));
    w.Key("lines").Integer(p.lines);
    w.EndObject();
  }
}

}  // namespace

void WriteFindingJson(const Finding& f, const CallSiteNamer& sites, JsonWriter& w) {
  const FindingText t = RenderFinding(f, sites);
  w.BeginObject();
  w.Key("kind").String(KindName(f.kind));
  w.Key("role").String(RoleName(f.role));
  w.Key("job").Integer(f.job);
  w.Key("comm");
  if (f.comm)
    w.String(CommName(*f.comm));
  else
    w.Null();
  w.Key("seq");
  OptionalInteger(f.seq, w);
  w.Key("ranks").IntArray(f.ranks);
  if (f.kind == FindingKind::kCollectiveMismatch || f.field != MismatchField::kNone)
    w.Key("field").String(FieldName(f.field));
  w.Key("nranks");
  if (f.nranks > 0)
    w.Integer(f.nranks);
  else
    w.Null();
  if (f.phase) w.Key("phase").String(PhaseName(*f.phase));
  w.Key("detail").String(t.detail).Key("fix").String(t.fix);
  w.Key("rank_groups").BeginArray();
  for (const auto& g : t.groups)
    w.BeginObject().Key("ranks").IntArray(g.ranks).Key("doing").String(g.doing).EndObject();
  w.EndArray();
  std::visit([&](const auto& facts) { WriteFacts(f, facts, sites, w); }, f.facts);
  w.EndObject();
}

void WriteJson(const Report& r, std::ostream& out) {
  const CallSiteNamer sites = r.Sites();
  // One object, on one line of its own.
  JsonWriter w(out, JsonLayout::kLines);
  w.BeginObject();
  w.Key("ncclwatch").String(kNcclwatchVersion);
  w.Key("schema_version").Integer(kJsonSchemaVersion);
  w.Key("verdict").String(VerdictName(r.verdict));
  w.Key("findings").BeginArray();
  for (const Finding& f : r.findings) WriteFindingJson(f, sites, w);
  w.EndArray();
  if (r.verdict == Verdict::kRunning) {
    w.Key("pending").BeginArray();
    for (const PendingOperation& p : r.pending) {
      w.BeginObject();
      w.Key("comm").String(CommName(p.comm));
      w.Key("seq").Integer(p.seq);
      w.Key("call").String(CallName(p.call.call));
      w.Key("entered").IntArray(p.entered);
      w.Key("not_entered").IntArray(p.not_entered);
      w.Key("pending_s");
      Seconds(p.pending_ns, w);
      w.EndObject();
    }
    w.EndArray();
  }
  w.Key("processes").BeginArray();
  std::visit([&](const auto& seen) { WriteProcesses(seen, w); }, r.seen);
  w.EndArray();
  w.Key("unreadable").BeginArray();
  for (const UnreadableFiles* files : {&r.traces_not_read, &r.logs_not_read})
    for (const auto& [path, error] : *files)
      w.BeginObject().Key("path").String(path).Key("error").String(error).EndObject();
  w.EndArray();
  w.EndObject();
}

}  // namespace ncclwatch::decoder

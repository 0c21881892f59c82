// The JSON contract (stable; documented in README.md), one writer for
// diagnose and explain:
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

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "knowledge/nccl_semantics.h"
#include "ncclwatch/trace_fields.h"
#include "ncclwatch_version.h"
#include "report/call_site.h"
#include "report/finding_text.h"
#include "report/hang_text.h"
#include "report/json.h"
#include "report/names.h"
#include "report/rendezvous_text.h"
#include "report/reports.h"

namespace ncclwatch::decoder {
namespace {

std::string Ints(const std::vector<int>& v) {
  return absl::StrCat("[", absl::StrJoin(v, ","), "]");
}

std::string FateJson(const Fate& f) {
  switch (f.kind) {
    case Fate::kExited:
      return absl::StrCat(
          "{\"how\":\"exit\",\"exit_code\":", f.exit_code,
          f.signo ? absl::StrCat(",\"signal\":", JsonString(SignalName(f.signo))) : "", "}");
    case Fate::kSignal:
      return absl::StrCat("{\"how\":\"signal\",\"signal\":", JsonString(SignalName(f.signo)), "}");
    default:
      return "{\"how\":\"none\"}";
  }
}

std::string Str(const std::optional<std::string>& v) { return v ? JsonString(*v) : "null"; }
template <typename T>
std::string Num(const std::optional<T>& v) {
  return v ? absl::StrCat(*v) : "null";
}
std::string Strings(const std::vector<std::string>& v) {
  std::vector<std::string> quoted;
  for (const std::string& s : v) quoted.push_back(JsonString(s));
  return absl::StrCat("[", absl::StrJoin(quoted, ","), "]");
}

// A finding's kind-specific facts, after the common fields.
void WriteFacts(const Finding&, const std::monostate&, const CallSiteNamer&, std::ostream&) {}
void WriteFacts(const Finding&, const MissingTracesFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  if (x.grow_unjoined) out << ",\"grow_unjoined\":true";
}
void WriteFacts(const Finding&, const NcclNotVisibleFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  static const char* const kReasons[] = {"unknown",        "linked_in",  "deepbind",
                                         "second_library", "slots_full", "active_unseen",
                                         "device_api"};
  out << ",\"not_visible\":[";
  for (size_t i = 0; i < x.items.size(); ++i) {
    const NcclNotVisibleFacts::Item& it = x.items[i];
    out << (i ? "," : "") << "{\"pid\":" << it.pid << ",\"host\":" << JsonString(it.host)
        << ",\"rank\":" << it.rank << ",\"reason\":\"" << kReasons[it.reason < 7 ? it.reason : 0]
        << "\",\"path\":" << JsonString(it.path);
    if (it.comm != 0) out << ",\"comm\":" << JsonString(CommName(it.comm));
    out << ",\"calls_seen\":" << (it.calls_seen ? "true" : "false") << "}";
  }
  out << "]";
}
void WriteFacts(const Finding&, const UnreadableTracesFacts&, const CallSiteNamer&, std::ostream&) {
}
void WriteFacts(const Finding&, const SummaryGapFacts& x, const CallSiteNamer&, std::ostream& out) {
  auto strings = [&](const std::vector<std::string>& v) {
    out << "[";
    for (size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << JsonString(v[i]);
    out << "]";
  };
  out << ",\"gaps\":[";
  for (size_t i = 0; i < x.gaps.size(); ++i) {
    const SummaryGapFacts::Gap& g = x.gaps[i];
    out << (i ? "," : "") << "{\"kind\":\"" << (g.differ ? "differ" : "not_compared")
        << "\",\"comm\":\"" << CommName(g.comm) << "\",\"first_seq\":" << g.first_seq
        << ",\"last_seq\":" << g.last_seq << ",\"left_out_ranks\":" << Ints(g.left_out_ranks)
        << ",\"left_out_nodes\":";
    strings(g.left_out_nodes);
    out << ",\"other_ranks\":" << Ints(g.other_ranks) << ",\"other_nodes\":";
    strings(g.other_nodes);
    out << "}";
  }
  out << "],\"more_gaps\":" << x.more;
}
void WriteFacts(const Finding&, const GpuTopologyFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  auto links = [&](const std::vector<GpuTopologyFacts::Link>& v) {
    out << "[";
    for (size_t i = 0; i < v.size(); ++i)
      out << (i ? "," : "") << "{\"a\":" << JsonString(v[i].a) << ",\"b\":" << JsonString(v[i].b)
          << ",\"link\":" << JsonString(v[i].link) << "}";
    out << "]";
  };
  out << ",\"topology_file\":" << JsonString(x.file) << ",\"gpu_count\":" << x.gpus
      << ",\"nic_count\":" << x.nics
      << ",\"usual_link\":" << (x.usual.empty() ? std::string("null") : JsonString(x.usual))
      << ",\"usual_pairs\":" << x.usual_pairs << ",\"weak_links\":";
  links(x.weak);
  out << ",\"far_nics\":";
  links(x.far_nics);
}
void WriteFacts(const Finding&, const DuplicateTracesFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  out << ",\"duplicates\":[";
  for (size_t i = 0; i < x.duplicates.size(); ++i) {
    out << (i ? "," : "") << "{\"path\":" << JsonString(x.duplicates[i].path)
        << ",\"same_as\":" << JsonString(x.duplicates[i].first) << "}";
  }
  out << "]";
}

void WriteFacts(const Finding&, const CollectiveMismatchFacts& x, const CallSiteNamer& sites,
                std::ostream& out) {
  if (x.groups.empty()) return;
  out << ",\"expected\":" << JsonString(DescribeCollective(x.groups.front().call))
      << ",\"groups\":[";
  for (size_t i = 0; i < x.groups.size(); ++i) {
    const CollectiveMismatchFacts::Group& g = x.groups[i];
    out << (i ? "," : "") << "{\"ranks\":" << Ints(g.ranks)
        << ",\"call\":" << JsonString(DescribeCollective(g.call))
        << ",\"call_site\":" << JsonString(sites(g.site)) << "}";
  }
  out << "]";
}

std::string SecondsJson(int64_t ns) {
  return ns > 0 ? absl::StrFormat("%.3f", static_cast<double>(ns) / 1e9) : "null";
}

void WriteFacts(const Finding& f, const MissingRankFacts& x, const CallSiteNamer& sites,
                std::ostream& out) {
  out << ",\"did_instead\":" << JsonString(DidInstead(x, sites))
      << ",\"last_seq\":" << Num(x.last_seq);
  if (x.creation_call != 0) {
    out << ",\"call\":" << JsonString(CallName(x.creation_call))
        << ",\"split_index\":" << x.split_index << ",\"entered\":" << Ints(x.entered);
  }
  if (f.kind == FindingKind::kRankDied)
    out << ",\"signal\":"
        << (x.departure.signo ? JsonString(SignalName(x.departure.signo)) : "null");
  if (f.kind == FindingKind::kRankFrozen) {
    const char s = x.departure.proc_state;
    out << ",\"state\":" << JsonString(s == 'T' || s == 't' ? "stopped" : "heartbeat_stale");
  }
  if (x.departure.how == Departure::kDiedFirst || x.departure.how == Departure::kFrozen)
    out << ",\"stopped_before_others_s\":" << SecondsJson(x.departure.stopped_before_ns);
}

void WriteFacts(const Finding&, const NeverCompletedFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  const char* by = x.by == NeverCompletedFacts::By::kCompleted      ? "completed"
                   : x.by == NeverCompletedFacts::By::kLastProgress ? "last_progress"
                                                                    : "tie";
  const bool p2p = x.op.call == fields::kSend || x.op.call == fields::kRecv;
  out << ",\"call\":"
      << JsonString(x.collective ? DescribeCollective(*x.collective)
                                 : (x.op.valid && x.op.call != 0 ? CallName(x.op.call) : ""))
      << ",\"peer\":" << (p2p ? absl::StrCat(x.op.peer) : "null")
      << ",\"completed\":" << x.completed << ",\"stopped_first_by\":" << JsonString(by)
      << ",\"entered\":" << Ints(x.entered) << ",\"waited_s\":" << SecondsJson(x.waited_ns)
      << ",\"stall_record\":" << (x.stall_record ? "true" : "false")
      << ",\"live\":" << (x.live ? "true" : "false");
  if (!x.arguments_lost.empty()) out << ",\"arguments_lost\":" << Ints(x.arguments_lost);
}

void WriteFacts(const Finding&, const DeviceErrorFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  if (x.nccl) {
    out << ",\"nccl_result\":" << JsonString(ResultName(x.result))
        << ",\"nccl_text\":" << JsonString(x.text);
  } else {
    out << ",\"cuda_error\":" << JsonString(x.name) << ",\"cuda_result\":" << x.result
        << ",\"cuda_text\":" << JsonString(x.text)
        << ",\"device\":" << (x.device >= 0 ? absl::StrCat(x.device) : "null")
        << ",\"bus_id\":" << (x.bus_id.empty() ? "null" : JsonString(x.bus_id));
  }
  out << ",\"completed\":" << Num(x.completed) << ",\"waiting\":" << Ints(x.waiting);
}

void WriteFacts(const Finding&, const StoppedRankFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  const char* state = x.state == StoppedRankFacts::State::kDead      ? "dead"
                      : x.state == StoppedRankFacts::State::kStopped ? "stopped"
                                                                     : "heartbeat_stale";
  out << ",\"state\":" << JsonString(state)
      << ",\"signal\":" << (x.signo ? JsonString(SignalName(x.signo)) : "null")
      << ",\"stopped_before_others_s\":" << SecondsJson(x.before_others_ns)
      << ",\"doing\":" << (x.doing.valid ? JsonString(DescribeCall(x.doing)) : "null")
      << ",\"waiting\":" << Ints(x.waiting);
  // Only for a rank that died before the launcher's teardown of the rest.
  if (x.teardown_signo) {
    out << ",\"torn_down_by\":" << JsonString(SignalName(x.teardown_signo))
        << ",\"torn_down_after_s\":" << SecondsJson(x.teardown_after_ns);
  }
}

void WriteFacts(const Finding&, const HangFacts& x, const CallSiteNamer&, std::ostream& out) {
  out << ",\"live\":" << (x.live ? "true" : "false")
      << ",\"tracked\":" << (x.tracked ? "true" : "false");
}

void WriteFacts(const Finding&, const KilledWhileRunningFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  out << ",\"signal\":" << JsonString(SignalName(x.signo))
      << ",\"signal_spread_s\":" << SecondsJson(x.spread_ns) << ",\"last_progress\":[";
  for (size_t i = 0; i < x.ranks.size(); ++i) {
    const KilledWhileRunningFacts::Rank& r = x.ranks[i];
    out << (i ? "," : "") << "{\"rank\":" << r.rank
        << ",\"finished\":" << (r.finished ? "true" : "false")
        << ",\"before_signal_s\":" << (r.finished ? "null" : SecondsJson(r.before_signal_ns))
        << ",\"last_call\":" << (r.last.valid ? JsonString(DescribeCall(r.last)) : "null") << "}";
  }
  out << "]";
}

void WriteFacts(const Finding&, const StragglerFacts& x, const CallSiteNamer&, std::ostream& out) {
  std::vector<std::string> also;
  for (uint64_t c : x.also_comms) also.push_back(JsonString(CommName(c)));
  const bool gpu = x.cause == StragglerFacts::Cause::kGpu;
  const bool link = x.cause == StragglerFacts::Cause::kLink;
  out << ",\"cause\":" << (gpu ? "\"gpu\"" : link ? "\"link\"" : "\"host\"");
  if (gpu)
    out << ",\"host_late_s\":" << SecondsJson(x.host_late_ns)
        << ",\"host_on_time\":" << x.host_on_time;
  if (link)
    out << ",\"link_ranks\":[" << absl::StrJoin(x.link_ranks, ",")
        << "],\"usual_s\":" << SecondsJson(x.usual_ns) << ",\"kind_comms\":" << x.kind_comms;
  out << ",\"call\":" << JsonString(CallName(x.call)) << ",\"times_last\":" << x.call_times_last
      << ",\"of\":" << x.call_compared << ",\"times_last_all\":" << x.times_last
      << ",\"compared\":" << x.compared << ",\"window\":" << x.window << ",\"gapped\":" << x.gapped
      << ",\"members\":" << x.members << ",\"median_late_s\":" << SecondsJson(x.median_late_ns)
      << ",\"p90_late_s\":" << SecondsJson(x.p90_late_ns)
      << ",\"interval_s\":" << SecondsJson(x.median_interval_ns) << ",\"first_seq\":" << x.first_seq
      << ",\"last_seq\":" << x.last_seq << ",\"began_seq\":" << x.began_seq
      << ",\"began_later\":" << (x.began_later ? "true" : "false")
      << ",\"worsening\":" << (x.worsening ? "true" : "false")
      << ",\"early_late_s\":" << SecondsJson(x.early_late_ns)
      << ",\"recent_late_s\":" << SecondsJson(x.recent_late_ns) << ",\"hosts\":" << x.hosts
      << ",\"clocks_aligned\":" << (x.clocks_aligned ? "true" : "false")
      << ",\"clock_residual_s\":" << (x.clocks_aligned ? SecondsJson(x.clock_residual_ns) : "null")
      << ",\"also_comms\":[" << absl::StrJoin(also, ",") << "]";
}

void WriteFacts(const Finding&, const ExitErrorFacts& x, const CallSiteNamer&, std::ostream& out) {
  out << ",\"exit_code\":" << x.exit_code
      << ",\"signal\":" << (x.signo ? JsonString(SignalName(x.signo)) : "null")
      << ",\"work_done\":" << (x.tracked ? (x.work_done ? "true" : "false") : "null")
      << ",\"ended_after\":" << Ints(x.ended_after);
}

void WriteFacts(const Finding& f, const BlindSpotFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  if (f.kind == FindingKind::kTraceOverwritten) {
    out << ",\"ring_size\":" << x.ring_bytes << ",\"ring_size_needed\":" << x.needed_bytes
        << ",\"suggest\":" << JsonString("NCCLWATCH_RING_SIZE=" + RingSizeSetting(x.needed_bytes));
  } else {
    out << ",\"nccl_path\":" << JsonString(x.nccl_path);
  }
  out << ",\"pids\":[" << absl::StrJoin(x.pids, ",") << "]";
}

void WriteFacts(const Finding&, const P2pMismatchFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  out << ",\"sender\":" << x.sender << ",\"receiver\":" << x.receiver;
  if (x.one_sided)
    out << ",\"one_sided\":true,\"signals_sent\":" << x.other_side_posted
        << ",\"signals_awaited\":" << x.awaited;
}

void WriteFacts(const Finding&, const OrderInversionFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  out << ",\"other_comm\":" << JsonString(CommName(x.other_comm))
      << ",\"other_seq\":" << x.other_seq
      << ",\"same_stream\":" << (x.same_stream ? "true" : "false");
}

void WriteFacts(const Finding&, const InitFailureFacts& x, const CallSiteNamer&,
                std::ostream& out) {
  out << ",\"subsystem\":" << JsonString(x.subsystem)
      << ",\"errno\":" << (x.err ? JsonString(ErrnoName(x.err)) : "null");
  if (x.socket_ifname) out << ",\"socket_ifname\":" << Str(*x.socket_ifname);
  if (x.interfaces) out << ",\"interfaces\":" << Strings(*x.interfaces);
  if (x.shm) {
    out << ",\"path\":" << Str(x.shm->path) << ",\"requested\":" << Num(x.shm->requested)
        << ",\"shm_size\":" << Num(x.shm->shm_size) << ",\"shm_free\":" << Num(x.shm->shm_free);
  }
  if (x.address) out << ",\"address\":" << Str(*x.address);
  if (!x.message.empty()) out << ",\"message\":" << JsonString(x.message);
  if (x.bus_id) out << ",\"bus_id\":" << Str(*x.bus_id);
  if (x.versions) out << ",\"versions\":" << Strings(*x.versions);
  if (x.cuda)
    out << ",\"cuda_driver\":" << Str(x.cuda->driver)
        << ",\"cuda_runtime\":" << Str(x.cuda->runtime);
  if (x.memlock) {
    out << ",\"memlock\":"
        << (x.memlock->unlimited ? JsonString("unlimited") : Num(x.memlock->bytes));
  }
  if (x.cause == InitCause::kRootGone) {
    out << ",\"exit_code\":" << Num(x.exit_code)
        << ",\"signal\":" << (x.signo ? JsonString(SignalName(x.signo)) : "null")
        << ",\"could_not_connect\":" << Ints(x.could_not_connect);
  }
  if (x.sharing) {
    out << ",\"cuda_call\":" << JsonString(x.sharing->function)
        << ",\"cuda_result\":" << x.sharing->result;
  }
  if (x.has_pids) out << ",\"pids\":[" << absl::StrJoin(x.pids, ",") << "]";
}

void WriteFacts(const Finding& f, const SetupFacts& x, const CallSiteNamer&, std::ostream& out) {
  if (f.kind == FindingKind::kP2pPath) {
    out << ",\"host\":" << JsonString(x.host) << ",\"bridges\":" << Strings(x.bridges)
        << ",\"gpus\":" << Strings(x.gpus) << ",\"iommu\":" << (x.iommu ? "true" : "false");
    return;
  }
  out << ",\"settings\":[";
  for (size_t i = 0; i < x.settings.size(); ++i) {
    out << (i ? "," : "") << "{\"name\":" << JsonString(x.settings[i].name) << ",\"values\":[";
    for (size_t j = 0; j < x.settings[i].values.size(); ++j) {
      const auto& [value, ranks] = x.settings[i].values[j];
      out << (j ? "," : "")
          << "{\"value\":" << (value.empty() ? std::string("null") : JsonString(value))
          << ",\"ranks\":[" << absl::StrJoin(ranks, ",") << "]}";
    }
    out << "]}";
  }
  out << "]";
}

void WriteFacts(const Finding&, const RendezvousFacts& x, const CallSiteNamer&, std::ostream& out) {
  WriteRendezvousJson(x, out);
}

void WriteFacts(const Finding&, const LogFacts& x, const CallSiteNamer&, std::ostream& out) {
  if (x.xid) out << ",\"xid\":" << *x.xid;
  if (x.bus_id) out << ",\"bus_id\":" << JsonString(*x.bus_id);
  if (x.memory) out << ",\"memory\":" << JsonString(*x.memory);
  if (x.signo) out << ",\"signal\":" << JsonString(SignalName(*x.signo));
  if (x.timeout_ms) out << ",\"timeout_ms\":" << *x.timeout_ms;
  if (x.peer) out << ",\"peer\":" << JsonString(*x.peer);
  if (!x.message.empty()) out << ",\"message\":" << JsonString(x.message);
  if (x.address) out << ",\"address\":" << JsonString(*x.address);
  if (x.hit) out << ",\"hit\":" << JsonString(*x.hit);
  if (x.subsystem) out << ",\"subsystem\":" << JsonString(*x.subsystem);
  if (x.tool) out << ",\"tool\":" << JsonString(*x.tool);
  if (x.pid) out << ",\"pid\":" << *x.pid;
  if (x.cause == LogCause::kStacks) {
    out << ",\"waits\":[";
    for (size_t i = 0; i < x.waits.size(); ++i) {
      const LogFacts::Wait& w = x.waits[i];
      std::vector<int> known;
      for (int r : w.ranks)
        if (r >= 0) known.push_back(r);
      out << (i ? "," : "") << "{\"ranks\":" << Ints(known) << ",\"processes\":" << w.ranks.size()
          << ",\"frame\":" << JsonString(w.frame) << ",\"place\":" << JsonString(w.place)
          << ",\"phase\":" << (w.phase ? JsonString(PhaseName(*w.phase)) : "null")
          << ",\"subsystem\":" << JsonString(w.subsystem) << "}";
    }
    out << "]";
  }
}

}  // namespace

void WriteFindingJson(const Finding& f, const CallSiteNamer& sites, std::ostream& out) {
  const FindingText t = RenderFinding(f, sites);
  out << "{\"kind\":" << JsonString(KindName(f.kind))
      << ",\"role\":" << JsonString(RoleName(f.role)) << ",\"job\":" << f.job
      << ",\"comm\":" << (f.comm ? JsonString(CommName(*f.comm)) : "null")
      << ",\"seq\":" << (f.seq ? absl::StrCat(*f.seq) : "null") << ",\"ranks\":" << Ints(f.ranks);
  if (f.kind == FindingKind::kCollectiveMismatch || f.field != MismatchField::kNone)
    out << ",\"field\":" << JsonString(FieldName(f.field));
  out << ",\"nranks\":" << (f.nranks > 0 ? absl::StrCat(f.nranks) : "null");
  if (f.phase) out << ",\"phase\":" << JsonString(PhaseName(*f.phase));
  out << ",\"detail\":" << JsonString(t.detail) << ",\"fix\":" << JsonString(t.fix);
  out << ",\"rank_groups\":[";
  for (size_t g = 0; g < t.groups.size(); ++g) {
    out << (g ? "," : "") << "{\"ranks\":" << Ints(t.groups[g].ranks)
        << ",\"doing\":" << JsonString(t.groups[g].doing) << "}";
  }
  out << "]";
  std::visit([&](const auto& facts) { WriteFacts(f, facts, sites, out); }, f.facts);
  out << "}";
}

void WriteJsonEnvelope(bool problem, const std::vector<Finding>& findings,
                       const CallSiteNamer& sites, const std::vector<std::string>& processes,
                       const UnreadableFiles& unreadable, std::ostream& out,
                       const std::vector<PendingOperation>* running) {
  const char* verdict = problem ? "\"problem\"" : running ? "\"running\"" : "\"healthy\"";
  out << "{\"ncclwatch\":" << JsonString(kNcclwatchVersion)
      << ",\"schema_version\":" << kJsonSchemaVersion << ",\"verdict\":" << verdict
      << ",\"findings\":[";
  for (size_t i = 0; i < findings.size(); ++i) {
    if (i) out << ",";
    WriteFindingJson(findings[i], sites, out);
  }
  out << "]";
  if (running != nullptr && !problem) {
    out << ",\"pending\":[";
    for (size_t i = 0; i < running->size(); ++i) {
      const PendingOperation& p = (*running)[i];
      out << (i ? "," : "") << "{\"comm\":" << JsonString(CommName(p.comm)) << ",\"seq\":" << p.seq
          << ",\"call\":" << JsonString(CallName(p.call.call)) << ",\"entered\":" << Ints(p.entered)
          << ",\"not_entered\":" << Ints(p.not_entered)
          << ",\"pending_s\":" << SecondsJson(p.pending_ns) << "}";
    }
    out << "]";
  }
  out << ",\"processes\":[" << absl::StrJoin(processes, ",") << "],\"unreadable\":[";
  for (size_t i = 0; i < unreadable.size(); ++i) {
    out << (i ? "," : "") << "{\"path\":" << JsonString(unreadable[i].first)
        << ",\"error\":" << JsonString(unreadable[i].second) << "}";
  }
  out << "]}\n";
}

void WriteJsonReport(const JobAnalysis& job, const Diagnosis& d, std::ostream& out) {
  std::vector<std::string> processes;
  for (const ProcessFacts& p : job.processes()) {
    processes.push_back(absl::StrCat(
        "{\"path\":", JsonString(p.path), ",\"host\":", JsonString(p.host), ",\"pid\":", p.pid,
        ",\"rank\":", p.rank, ",\"rank_source\":", JsonString(p.rank_source), ",\"nccl_version\":",
        p.nccl_version > 0 ? JsonString(NcclVersionString(p.nccl_version)) : "null",
        ",\"end\":", FateJson(p.fate),
        ",\"last_call\":", p.last.valid ? JsonString(DescribeCall(p.last)) : "null",
        ",\"last_call_pending\":", p.last.pending ? "true" : "false", ",\"records\":", p.records,
        ",\"torn_slots\":", p.stats.torn_slots + p.unparsed, ",\"overwritten_slots\":",
        p.stats.ring_overwritten, ",\"unwritten_slots\":", p.stats.unwritten_slots, "}"));
  }
  UnreadableFiles unreadable;
  for (const UnreadableTrace& u : job.unreadable()) unreadable.push_back({u.path, u.error});
  WriteJsonEnvelope(d.problem, d.findings, TraceCallSites(job), processes, unreadable, out,
                    d.running ? &d.pending : nullptr);
}

}  // namespace ncclwatch::decoder

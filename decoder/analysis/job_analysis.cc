#include "analysis/job_analysis.h"

#include <sys/socket.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "analysis/gpu_sharing_failure.h"
#include "knowledge/nccl_semantics.h"
#include "model/torchrun_agent.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;

// A candidate for a process's last call.
void Consider(LastCall* best, uint64_t order, const LastCall& c, uint64_t* best_order) {
  if (order >= *best_order) {
    *best = c;
    *best_order = order;
  }
}

// The process's NCCL initialisation, as init forensics reads it.
InitEvidence InitEvidenceOf(const ProcessTrace& t, const ProcessFacts& p) {
  InitEvidence e;
  e.process = p.index;
  e.rank = p.rank;
  e.host = t.host;
  e.pid = t.pid;
  for (const NcclErrorEvent& x : t.errors) {
    // An asynchronous error on a communicator that was made happened after
    // its init: the completion findings report it, not init forensics.
    if (x.async && x.comm != 0) {
      const CommMembership* m = t.Membership(x.comm);
      if (m != nullptr && m->Formed()) continue;
    }
    e.failures.push_back({t.RealtimeNs(x.t), CallName(x.call), x.result, x.text, x.async});
  }
  for (const SysCallEvent& c : t.syscalls) {
    const bool ip = c.addr && (c.addr->family == AF_INET || c.addr->family == AF_INET6);
    if (c.err != 0) {
      // A verbs call is named by its function ("ibv_reg_mr").
      const std::string call = c.kind == f::sys_call::kVerbs ? c.path : SysCallName(c.kind);
      e.sys_failures.push_back({t.RealtimeNs(c.t), call, c.err, c.path, c.size, c.addr});
    } else if (c.kind == f::sys_call::kBind && c.from_nccl && ip && !c.addr->IsLoopback() &&
               !e.bootstrap_addr) {
      e.bootstrap_addr = c.addr;
    }
    if (c.kind == f::sys_call::kConnect && c.from_nccl && ip && c.in_call != 0 && !e.root_addr)
      e.root_addr = c.addr;
    if (c.kind == f::sys_call::kDlopen && c.from_nccl && !t.Loaded(c.path) &&
        std::find(e.failed_loads.begin(), e.failed_loads.end(), c.path) == e.failed_loads.end()) {
      e.failed_loads.push_back(c.path);
    }
  }
  for (const CudaCallEvent& c : t.cuda_calls) {
    if (GpuSharingFailed(c.function, c.result)) {
      e.cuda_failures.push_back({t.RealtimeNs(c.t), c.function, c.result, c.handle_type, c.err,
                                 c.device, c.peer, c.from_nccl});
    }
  }
  const InventoryInfo& inv = t.inventory;
  e.gpus = inv.gpus;
  e.iommu_enabled = inv.iommu_enabled;
  if (inv.present) {
    e.nccl_version = inv.nccl_version;
    e.nccl_path = inv.nccl_path;
    e.cuda_driver_version = inv.cuda_driver_version;
    e.cuda_runtime_version = inv.cuda_runtime_version;
    // At NCCL's load the versions were not asked yet: 0 is not "none".
    e.driver_known = !inv.at_load;
    e.env = inv.env;
    e.interfaces_known = true;
    e.interfaces = inv.interfaces;
    if (inv.shm_known) {
      e.shm_size = inv.shm_size;
      e.shm_free = inv.shm_free;
    }
    if (inv.memlock_soft != 0) e.memlock_soft = inv.memlock_soft;
    e.container = inv.container;
  }
  if (e.nccl_version == 0) e.nccl_version = t.nccl_version;
  if (e.bootstrap_addr) {
    for (const InterfaceInfo& i : inv.interfaces)
      if (i.addr.family == e.bootstrap_addr->family && i.addr.ip == e.bootstrap_addr->ip)
        e.bootstrap_iface = i.name;
  }
  for (const CommMembership& m : t.comms) {
    if (e.bus_id.empty() && !m.bus_id.empty()) {
      e.bus_id = m.bus_id;
      e.device = m.begin_device;
    }
    const bool ok = m.Formed();
    if (ok) e.init_succeeded = true;
    if (!m.init_returned && !e.init_pending) {
      e.init_pending = true;
      e.pending_call = CallName(m.init_call);
      e.comm = m.comm;
    }
    if (m.init_returned && !ok && e.comm == 0) e.comm = m.comm;
  }
  e.end_ns = p.last_ns;
  e.end_known = true;
  if (p.fate.kind == Fate::kExited) e.exit_code = p.fate.exit_code;
  if (p.fate.kind == Fate::kSignal) e.signo = p.fate.signo;
  for (const ApiEvent& a : t.apis) {
    if (a.call == f::kGetUniqueId && Accepted(a.result) && a.value != 0) {
      e.made_unique_id = static_cast<uint64_t>(a.value);
    }
  }
  for (const CommMembership& m : t.comms)
    if (e.made_unique_id != 0 && m.comm == e.made_unique_id) e.formed_from_unique_id = true;
  return e;
}

}  // namespace

const ModuleInfo* ProcessFacts::ModuleAt(uint64_t address) const {
  for (const ModuleInfo& m : modules)
    if (address >= m.start && address < m.end) return &m;
  return nullptr;
}

std::optional<LastCall> ProcessFacts::ActivityAfter(uint64_t comm) const {
  int64_t since = 0;
  if (auto it = last_collective_ns.find(comm); it != last_collective_ns.end()) since = it->second;
  std::optional<LastCall> later;
  for (const LastCall& a : activity) {
    if (a.comm == comm || a.comm == 0 || a.when_ns <= since) continue;
    if (!later || a.when_ns > later->when_ns) later = a;
  }
  return later;
}

void JobAnalysis::AddUnreadable(const std::string& path, const std::string& error,
                                bool may_hold_traces) {
  unreadable_.push_back({path, error, may_hold_traces});
}

void JobAnalysis::AddProcess(const ProcessTrace& t) {
  // A trace is identified by what it holds, not by its path: the same
  // folder given twice, or a copy, is one process.
  auto [seen, fresh] = seen_.emplace(std::make_tuple(t.host, t.pid, t.created_realtime_ns), t.path);
  if (!fresh) {
    duplicates_.push_back({t.path, seen->second});
    return;
  }
  const int index = static_cast<int>(processes_.size());
  ProcessFacts p;
  p.index = index;
  p.path = t.path;
  p.host = t.host;
  p.pid = t.pid;
  p.rank = t.DisplayRank();
  p.rank_source = t.rank_source;
  p.nccl_version = t.nccl_version;
  p.world_size = t.world_size;
  p.job_id = t.job_id;
  p.not_seen = t.not_seen;
  // A communicator with device-API communicators: its GPUs communicate on
  // their own, which no record shows (one note per communicator).
  for (const ApiEvent& a : t.apis) {
    if (a.call != f::kDevCommCreate || a.result != 0 || a.comm == 0) continue;
    bool noted = false;
    for (const NcclNotSeenEvent& e : p.not_seen) noted |= e.reason == 6 && e.comm == a.comm;
    if (noted) continue;
    NcclNotSeenEvent e;
    e.order = a.order;
    e.t = a.t;
    e.reason = 6;
    e.comm = a.comm;
    e.calls_seen = true;
    p.not_seen.push_back(e);
  }
  p.exe = t.exe;
  p.modules = t.modules;
  p.comms = t.comms;
  p.read_ns = t.read_ns;
  for (const CommMembership& m : t.comms) p.comm_init_ns.push_back(t.RealtimeNs(m.init_t));
  p.stats = t.stats;
  p.unparsed = t.unparsed_records;
  p.records = t.records;
  p.first_ns = t.anchors.empty() ? 0 : t.RealtimeNs(t.anchors.front().t);
  p.last_ns = t.RealtimeNs(t.last_t);

  // How it ended: an exit (perhaps after a signal it handled), a signal it
  // did not survive, or nothing at all (SIGKILL, OOM, or still running).
  const FatalSignalEvent* signal = t.signals.empty() ? nullptr : &t.signals.back();
  if (t.end) {
    p.fate.kind = Fate::kExited;
    p.fate.exit_code = t.end->exit_code;
    p.fate.when_ns = t.RealtimeNs(t.end->t);
    if (signal != nullptr && signal->order < t.end->order) {
      p.fate.signo = signal->signo;
      p.fate.signal_ns = t.RealtimeNs(signal->t);
    }
  } else if (signal != nullptr) {
    const uint64_t last_call_order = t.LastCallOrder();
    const bool carried_on = signal->disposition != 0 && last_call_order > signal->order;
    if (!carried_on) {
      p.fate.kind = Fate::kSignal;
      p.fate.signo = signal->signo;
      p.fate.disposition = signal->disposition;
      p.fate.when_ns = t.RealtimeNs(signal->t);
      p.fate.signal_ns = p.fate.when_ns;
    }
  }

  // Its last NCCL call, and its last call per communicator: the tables are
  // in timeline order, so only their last rows and each stream's last calls
  // are candidates.
  uint64_t best_order = 0;
  auto collective_call = [&](const CollectiveEvent& e) {
    return LastCall{
        true, e.call, e.comm, e.seq, true, e.result == kResultPending, t.RealtimeNs(e.t), e.caller};
  };
  auto p2p_call = [&](const P2pEvent& e) {
    return LastCall{true,
                    e.send ? f::kSend : f::kRecv,
                    e.comm,
                    e.seq,
                    true,
                    e.result == kResultPending,
                    t.RealtimeNs(e.t),
                    e.caller,
                    e.send,
                    e.peer};
  };
  if (!t.collectives.empty())
    Consider(&p.last, t.collectives.back().order, collective_call(t.collectives.back()),
             &best_order);
  if (!t.p2p.empty()) Consider(&p.last, t.p2p.back().order, p2p_call(t.p2p.back()), &best_order);
  if (!t.groups.empty()) {
    const GroupEvent& e = t.groups.back();
    Consider(&p.last, e.order,
             LastCall{true, e.call, 0, 0, false, e.result == kResultPending, t.RealtimeNs(e.t),
                      e.caller},
             &best_order);
  }
  for (const CommMembership& m : t.comms) {
    LastCall c{true,    m.init_call, m.comm, 0, false, !m.init_returned, t.RealtimeNs(m.init_t),
               m.caller};
    Consider(&p.last, m.init_order, c, &best_order);
    if (m.end_call != 0) {
      LastCall e{
          true, m.end_call, m.comm, 0, false, m.end_result == kResultPending, t.RealtimeNs(m.end_t),
          0};
      Consider(&p.last, m.end_order, e, &best_order);
    }
  }
  std::map<uint64_t, std::pair<uint64_t, LastCall>> per_comm;
  for (const CommStream& s : t.streams) {
    auto note = [&](uint64_t order, const LastCall& c) {
      auto& slot = per_comm[c.comm];
      if (order >= slot.first) slot = {order, c};
    };
    if (s.any()) {
      const CollectiveEvent& e = t.collectives[s.collectives.back()];
      note(e.order, collective_call(e));
      p.last_collective[s.comm] = e;
      p.last_collective_ns[s.comm] = t.RealtimeNs(e.t);
    }
    if (!s.p2p.empty()) note(t.p2p[s.p2p.back()].order, p2p_call(t.p2p[s.p2p.back()]));
  }
  for (auto& [comm, entry] : per_comm) p.activity.push_back(entry.second);
  for (const ApiEvent& a : t.apis) {  // in the process's order
    if (a.comm == 0 || !Accepted(a.result)) continue;
    if (a.call == f::kCommSuspend) {
      p.suspended[a.comm] = LastCall{true, a.call, a.comm, 0, false, false, t.RealtimeNs(a.t), 0};
    } else if (a.call == f::kCommResume) {
      p.suspended.erase(a.comm);
    }
  }

  // The analyses. Each member of a communicator is one CommStream here; a
  // member that made no collective still counts (it was expected to).
  for (const CommStream& s : t.streams)
    if (s.any() || s.membership >= 0) alignments_[s.comm].AddMember(index, s, t);
  p2p_.AddProcess(index, t);
  signals_.AddProcess(index, t);
  order_.AddProcess(index, t);
  arrivals_.AddProcess(index, t);
  gpu_arrivals_.AddProcess(index, t);
  clocks_.AddProcess(index, t);
  links_.AddProcess(index, t);
  gaps_.AddProcess(index, t);
  p.summary = t.summary;
  p.summary_host = t.summary_host;
  p.created_ns = t.created_realtime_ns;
  p.pid_namespace = t.pid_namespace;
  p.completion = SummariseCompletion(t);
  for (const ModuleInfo& m : t.modules) {
    const size_t slash = m.path.rfind('/');
    if (m.path.compare(slash == std::string::npos ? 0 : slash + 1, 8, "libnccl.") == 0) {
      p.nccl_loaded = true;
      p.nccl_path = m.path;
    }
  }
  p.nccl_calls = !t.comms.empty() || !t.collectives.empty() || !t.p2p.empty() ||
                 !t.one_sided.empty() || !t.groups.empty() || !t.apis.empty();
  p.lost_start = t.stats.lapped_slots > 0;
  for (const CommStream& s : t.streams) p.lost_start |= !s.holds_start;
  p.init = InitEvidenceOf(t, p);
  RendezvousEvidence& rv = p.rendezvous;
  rv.process = index;
  rv.rank = t.global_rank;
  rv.host = t.host;
  rv.traced_from_load = t.traced_from == fields::process_start::kNcclLoaded;
  rv.nccl_calls = p.nccl_calls;
  rv.made_comm = !t.comms.empty();
  auto env = [&t](const char* name) {
    const std::string* v = t.inventory.Env(name);
    return v != nullptr ? *v : std::string();
  };
  rv.master_addr = env("MASTER_ADDR");
  rv.master_port = env("MASTER_PORT");
  rv.world_size = env("WORLD_SIZE");
  // torchrun's agent: no rank, and where its agents meet is in its options.
  if (t.rank_source.empty()) {
    if (std::optional<TorchrunAgent> a = TorchrunAgentOf(t.inventory); a && !a->local) {
      rv.agent = true;
      rv.rank = a->node_rank;
      rv.backend = a->backend;
      rv.master_addr = a->host;
      rv.master_port = a->port;
      rv.world_size = a->nnodes;
    }
  }
  rv.sockets = RendezvousSocketsOf(t);
  rv.ended_ok = p.fate.kind == Fate::kExited && p.fate.exit_code == 0 && p.fate.signo == 0;
  // The memberships, indexed: the first process to hold each (communicator,
  // rank), and each communicator's size as its members reported it.
  for (const CommMembership& m : p.comms) {
    member_process_.emplace(std::make_pair(m.comm, m.rank), index);
    int& size = comm_size_.try_emplace(m.comm, -1).first->second;
    size = std::max(size, m.nranks);
  }
  processes_.push_back(std::move(p));
}

void JobAnalysis::Finish() {
  // A peer's trace proves it posted nothing only if its ring still holds
  // everything since the communicator began.
  auto whole = [this](uint64_t comm, int32_t rank, int* process) {
    *process = ProcessOf(comm, rank);
    if (*process < 0) return false;
    const TraceFileStats& s = processes_[*process].stats;
    return s.ring_overwritten == 0 && s.lapped_slots == 0;
  };
  p2p_.Finish(whole);
  signals_.Finish(whole);
  clocks_.Solve();
  arrivals_.AlignClocks(clocks_);
  gpu_arrivals_.AlignClocks(clocks_);
}

namespace {

// Whether a trace's host and a log's name one machine: NCCL prints the host
// name up to its first dot, the shim records it whole.
bool SameHost(const std::string& traced, const std::string& logged) {
  if (traced.empty() || logged.empty()) return false;
  auto short_name = [](const std::string& h) { return h.substr(0, h.find('.')); };
  return traced == logged || short_name(traced) == short_name(logged);
}

}  // namespace

std::set<int> JobAnalysis::JoinLogEvidence(const std::vector<InitEvidence>& logs, bool timed) {
  std::set<int> joined;
  std::set<int> traced_ranks;
  bool all_ranked = true;  // every traced process has a rank to tell the untraced ones by
  int world = -1;          // the launcher's world size, where the traces agree on one
  bool worlds_agree = true;
  for (const ProcessFacts& p : processes_) {
    if (p.rank >= 0) traced_ranks.insert(p.rank);
    all_ranked &= p.rank >= 0;
    if (p.world_size > 0) {
      worlds_agree &= world < 0 || world == p.world_size;
      world = p.world_size;
    }
  }
  for (const InitEvidence& log : logs) {
    // Its own trace: the one traced process with its host and pid (and,
    // in a container's numbers, its rank).
    int own = -1, matches = 0;
    for (const ProcessFacts& p : processes_) {
      if (log.pid == 0 || p.pid != log.pid || !SameHost(p.host, log.host)) continue;
      if (p.pid_namespace != kInitPidNamespace && (log.rank < 0 || log.rank != p.rank)) continue;
      own = p.index;
      ++matches;
    }
    if (matches == 1) {
      InitEvidence& traced = processes_[own].init;
      const bool own_failures = traced.AnyFailure();
      traced.AddFromLog(log);
      if (own_failures || log.failures.empty()) joined.insert(log.process);
      continue;
    }
    if (matches > 1) continue;  // a pid reused on the host: not told apart
    // A rank with no trace, and something to say about its init.
    if (!all_ranked || log.rank < 0 || traced_ranks.count(log.rank) > 0) continue;
    if (!worlds_agree || (world > 0 && log.rank >= world)) continue;
    if (!log.AnyFailure() && !log.init_pending) continue;
    auto same_rank =
        std::find_if(untraced_init_.begin(), untraced_init_.end(),
                     [&](const UntracedInit& u) { return u.evidence.rank == log.rank; });
    if (same_rank != untraced_init_.end()) {
      // Another process of the rank's (its output beside its NCCL log, a
      // restart): the first speaks for the rank, all are judged with it.
      same_rank->log_processes.push_back(log.process);
      continue;
    }
    UntracedInit u;
    u.log_processes = {log.process};
    u.evidence = log;
    u.evidence.process = -1;
    if (!timed) {
      for (InitEvidence::Failure& f : u.evidence.failures) f.when_ns = 0;
      u.evidence.end_ns = 0;
    }
    untraced_init_.push_back(std::move(u));
  }
  return joined;
}

int JobAnalysis::ProcessOf(uint64_t comm, int32_t comm_rank) const {
  auto it = member_process_.find({comm, comm_rank});
  return it == member_process_.end() ? -1 : it->second;
}

int JobAnalysis::CommSize(uint64_t comm) const {
  auto it = comm_size_.find(comm);
  return it == comm_size_.end() ? -1 : it->second;
}

int JobAnalysis::GlobalRank(int process, uint64_t comm, int32_t comm_rank) const {
  if (process < 0 || process >= static_cast<int>(processes_.size())) return comm_rank;
  const ProcessFacts& p = processes_[process];
  int ranks_here = 0;
  for (const CommMembership& m : p.comms)
    if (m.comm == comm) ++ranks_here;
  return (p.rank >= 0 && ranks_here <= 1) ? p.rank : comm_rank;
}

}  // namespace ncclwatch::decoder

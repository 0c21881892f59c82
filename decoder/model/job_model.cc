#include "model/job_model.h"

#include <algorithm>
#include <utility>

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

}  // namespace

const ModuleInfo* ProcessRecord::ModuleAt(uint64_t address) const {
  return ModuleContaining(modules, address);
}

std::optional<LastCall> ProcessRecord::ActivityAfter(uint64_t comm) const {
  int64_t since = 0;
  if (auto it = last_collective_ns.find(comm); it != last_collective_ns.end()) since = it->second;
  std::optional<LastCall> later;
  for (const LastCall& a : activity) {
    if (a.comm == comm || a.comm == 0 || a.when_ns <= since) continue;
    if (!later || a.when_ns > later->when_ns) later = a;
  }
  return later;
}

ProcessRecord RecordOf(const ProcessTrace& t, int index) {
  ProcessRecord p;
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

  p.fate = FateOf(t);

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

  p.summary = t.summary;
  p.summary_host = t.summary_host;
  p.summarized_here = t.summarized_here;
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
  p.init = InitEvidenceOf(t, index, p.rank, p.last_ns, p.fate);
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
  return p;
}

std::optional<int> JobModel::Add(const ProcessTrace& t) {
  // A trace is identified by what it holds, not by its path: the same
  // folder given twice, or a copy, is one process.
  auto [seen, fresh] = seen_.emplace(std::make_tuple(t.host, t.pid, t.created_realtime_ns), t.path);
  if (!fresh) {
    duplicates_.push_back({t.path, seen->second});
    return std::nullopt;
  }
  const int index = static_cast<int>(processes_.size());
  ProcessRecord p = RecordOf(t, index);
  // The memberships, indexed: the first process to hold each (communicator,
  // rank), and each communicator's size as its members reported it.
  for (const CommMembership& m : p.comms) {
    member_process_.emplace(std::make_pair(m.comm, m.rank), index);
    int& size = comm_size_.try_emplace(m.comm, -1).first->second;
    size = std::max(size, m.nranks);
  }
  processes_.push_back(std::move(p));
  return index;
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

std::set<int> JobModel::JoinLogEvidence(const std::vector<InitEvidence>& logs, bool timed) {
  std::set<int> joined;
  std::set<int> traced_ranks;
  bool all_ranked = true;  // every traced process has a rank to tell the untraced ones by
  int world = -1;          // the launcher's world size, where the traces agree on one
  bool worlds_agree = true;
  for (const ProcessRecord& p : processes_) {
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
    for (const ProcessRecord& p : processes_) {
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

int JobModel::ProcessOf(uint64_t comm, int32_t comm_rank) const {
  auto it = member_process_.find({comm, comm_rank});
  return it == member_process_.end() ? -1 : it->second;
}

int JobModel::CommSize(uint64_t comm) const {
  auto it = comm_size_.find(comm);
  return it == comm_size_.end() ? -1 : it->second;
}

int JobModel::GlobalRank(int process, uint64_t comm, int32_t comm_rank) const {
  if (process < 0 || process >= static_cast<int>(processes_.size())) return comm_rank;
  const ProcessRecord& p = processes_[process];
  int ranks_here = 0;
  for (const CommMembership& m : p.comms)
    if (m.comm == comm) ++ranks_here;
  return (p.rank >= 0 && ranks_here <= 1) ? p.rank : comm_rank;
}

}  // namespace ncclwatch::decoder

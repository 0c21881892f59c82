#include "trace/process_trace.h"

#include <algorithm>

#include "ncclwatch/trace.pb.h"
#include "util/status_macros.h"

namespace ncclwatch::decoder {
namespace {

namespace pb = ::ncclwatch::trace::v1;

// Folds one parsed record into the process's model.
class Builder {
 public:
  explicit Builder(ProcessTrace* p) : p_(p) {}

  void Add(const pb::Record& r) {
    const uint64_t order = ++p_->last_order;
    const uint64_t t = r.t();
    if (t > p_->last_t) p_->last_t = t;
    switch (r.body_case()) {
      case pb::Record::kProcessStart: {
        const auto& s = r.process_start();
        p_->has_start = true;
        p_->pid = s.pid();
        p_->host = s.host();
        p_->global_rank = s.global_rank();
        p_->rank_source = s.rank_source();
        p_->world_size = s.world_size();
        p_->local_rank = s.local_rank();
        p_->exe = s.exe();
        p_->job_id = s.job_id();
        break;
      }
      case pb::Record::kProcessEnd:
        p_->end = ProcessEndEvent{order, t, static_cast<uint32_t>(r.process_end().how()), r.process_end().exit_code()};
        break;
      case pb::Record::kTimeAnchor:
        p_->anchors.push_back({r.time_anchor().t(), r.time_anchor().monotonic_ns(), r.time_anchor().realtime_ns()});
        break;
      case pb::Record::kModule: {
        const auto& m = r.module();
        p_->modules.push_back({m.path(), m.base(), m.start(), m.end(), m.build_id()});
        break;
      }
      case pb::Record::kCommInitBegin: {
        const auto& b = r.comm_init_begin();
        CommMembership m;
        m.comm = b.comm();
        m.init_call = static_cast<uint32_t>(b.call());
        m.rank = b.rank();
        m.nranks = b.nranks();
        m.parent = b.parent();
        m.color = b.color();
        m.key = b.key();
        m.split_index = b.split_index();
        m.excluded.assign(b.excluded().begin(), b.excluded().end());
        m.init_t = t;
        m.init_order = order;
        m.caller = b.caller();
        m.begin_device = b.device();
        m.bus_id = b.bus_id();
        p_->comms.push_back(m);
        break;
      }
      case pb::Record::kCommInitEnd: {
        const auto& e = r.comm_init_end();
        // The earliest begin of this identity still waiting for its end (for
        // ncclCommInitAll, the one with this rank).
        for (CommMembership& m : p_->comms) {
          if (m.comm == e.comm() && !m.init_returned && (m.rank == e.rank() || m.rank < 0 || e.rank() < 0)) {
            m.init_returned = true;
            m.init_result = e.result();
            m.handle = e.handle();
            if (e.rank() >= 0) m.rank = e.rank();
            if (e.nranks() > 0) m.nranks = e.nranks();
            m.device = e.device();
            break;
          }
        }
        break;
      }
      case pb::Record::kCommEnd: {
        const auto& e = r.comm_end();
        for (auto it = p_->comms.rbegin(); it != p_->comms.rend(); ++it) {
          if (it->handle == e.handle() || (e.comm() != 0 && it->comm == e.comm() && it->handle == 0)) {
            it->end_call = static_cast<uint32_t>(e.call());
            it->end_result = e.result();
            it->end_t = t;
            it->end_order = order;
            break;
          }
        }
        break;
      }
      case pb::Record::kCollective: {
        const auto& c = r.collective();
        CollectiveEvent e;
        e.order = order;
        e.t = t;
        e.comm = c.comm();
        e.seq = c.seq();
        e.call = static_cast<uint32_t>(c.call());
        e.count = c.count();
        e.datatype = c.datatype();
        e.redop = c.has_redop() ? c.redop() : -1;
        e.root = c.has_root() ? c.root() : -1;
        e.stream = c.stream();
        e.group = c.group();
        e.result = c.result();
        e.caller = c.caller();
        e.thread = r.thread();
        e.rank = c.rank();
        p_->collectives.push_back(e);
        break;
      }
      case pb::Record::kP2P: {
        const auto& c = r.p2p();
        P2pEvent e;
        e.order = order;
        e.t = t;
        e.comm = c.comm();
        e.seq = c.seq();
        e.send = c.send();
        e.peer = c.peer();
        e.count = c.count();
        e.datatype = c.datatype();
        e.stream = c.stream();
        e.group = c.group();
        e.result = c.result();
        e.caller = c.caller();
        e.rank = c.rank();
        p_->p2p.push_back(e);
        break;
      }
      case pb::Record::kGroup: {
        const auto& g = r.group();
        p_->groups.push_back({order, t, static_cast<uint32_t>(g.call()), g.group(), g.depth(), g.result(), g.caller()});
        break;
      }
      case pb::Record::kApi: {
        const auto& a = r.api();
        p_->apis.push_back({order, t, static_cast<uint32_t>(a.call()), a.comm(), a.value(), a.result()});
        if (a.call() == pb::GET_VERSION && a.result() == 0) p_->nccl_version = static_cast<int32_t>(a.value());
        break;
      }
      case pb::Record::kSysCall: {
        const auto& c = r.sys_call();
        SysCallEvent e;
        e.order = order;
        e.t = t;
        e.kind = static_cast<uint32_t>(c.kind());
        e.ret = c.ret();
        e.err = c.err();
        e.fd = c.fd();
        e.path = c.path();
        e.size = c.size() ? c.size() : -1;
        e.offset = c.offset();
        if (!c.addr().empty()) e.addr = ParseSocketAddress(c.addr());
        e.arg = c.arg();
        e.in_call = static_cast<uint32_t>(c.in_call());
        e.from_nccl = c.from_nccl();
        e.caller = c.caller();
        p_->syscalls.push_back(std::move(e));
        break;
      }
      case pb::Record::kNcclError: {
        const auto& n = r.nccl_error();
        p_->errors.push_back({order, t, static_cast<uint32_t>(n.call()), n.result(), n.comm(), n.last_error(),
                              n.async()});
        break;
      }
      case pb::Record::kInventory: {
        const auto& v = r.inventory();
        InventoryInfo& inv = p_->inventory;
        inv.present = true;
        for (const auto& e : v.env()) inv.env[e.name()] = e.value();
        inv.nccl_version = v.nccl_version();
        inv.nccl_path = v.nccl_path();
        inv.cuda_driver_version = v.cuda_driver_version();
        inv.cuda_runtime_version = v.cuda_runtime_version();
        inv.framework = v.framework();
        inv.framework_path = v.framework_path();
        for (const auto& i : v.interfaces()) {
          std::optional<SocketAddress> a = ParseSocketAddress(i.addr());
          if (a) inv.interfaces.push_back({i.name(), i.flags(), *a, static_cast<int>(i.prefix_len())});
        }
        inv.shm_known = v.shm_known();
        inv.shm_size = v.shm_size();
        inv.shm_free = v.shm_free();
        inv.memlock_soft = v.memlock_soft();
        inv.memlock_hard = v.memlock_hard();
        inv.cgroup = v.cgroup();
        inv.container = v.container();
        if (p_->nccl_version == 0) p_->nccl_version = v.nccl_version();
        break;
      }
      case pb::Record::kFatalSignal: {
        const auto& s = r.fatal_signal();
        p_->signals.push_back(
            {order, t, s.signo(), s.code(), s.address(), s.sender_pid(), s.disposition()});
        break;
      }
      default:
        break;  // a body this version does not know: skipped, as the schema allows
    }
  }

 private:
  ProcessTrace* p_;
};

}  // namespace

int32_t ProcessTrace::DisplayRank() const {
  if (global_rank >= 0) return global_rank;
  for (const CommMembership& m : comms)
    if (m.rank >= 0 && m.parent == 0) return m.rank;
  return -1;
}

int64_t ProcessTrace::MonotonicNs(uint64_t t) const {
  if (clock == NCCLWATCH_CLOCK_MONOTONIC_NS || anchors.empty()) return static_cast<int64_t>(t);
  // TSC: the rate from the two anchors furthest apart, offset from the nearest.
  const TimeAnchorEvent& a = anchors.front();
  const TimeAnchorEvent& b = anchors.back();
  double rate = 1.0;  // ns per tick
  if (b.t > a.t && b.monotonic_ns > a.monotonic_ns) {
    rate = static_cast<double>(b.monotonic_ns - a.monotonic_ns) / static_cast<double>(b.t - a.t);
  }
  // Anchors are sorted by t: the nearest is at the first not before t, or just before it.
  auto it = std::lower_bound(anchors.begin(), anchors.end(), t,
                             [](const TimeAnchorEvent& x, uint64_t v) { return x.t < v; });
  const TimeAnchorEvent* near = it == anchors.end() ? &anchors.back() : &*it;
  if (it != anchors.begin()) {
    const TimeAnchorEvent* before = &*(it - 1);
    if (t - before->t < (near->t > t ? near->t - t : t - near->t)) near = before;
  }
  return static_cast<int64_t>(near->monotonic_ns) +
         static_cast<int64_t>(rate * (static_cast<double>(t) - static_cast<double>(near->t)));
}

int64_t ProcessTrace::RealtimeNs(uint64_t t) const {
  if (anchors.empty()) return 0;
  const TimeAnchorEvent& a = anchors.front();
  return MonotonicNs(t) + (static_cast<int64_t>(a.realtime_ns) - static_cast<int64_t>(a.monotonic_ns));
}

const ModuleInfo* ProcessTrace::ModuleAt(uint64_t address) const {
  for (const ModuleInfo& m : modules)
    if (address >= m.start && address < m.end) return &m;
  return nullptr;
}

bool ProcessTrace::Loaded(const std::string& name) const {
  const std::string base = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
  if (base.empty()) return false;
  for (const ModuleInfo& m : modules) {
    const size_t slash = m.path.rfind('/');
    if (m.path.compare(slash == std::string::npos ? 0 : slash + 1, base.size(), base) == 0) return true;
  }
  return false;
}

const CommMembership* ProcessTrace::Membership(uint64_t comm) const {
  for (const CommMembership& m : comms)
    if (m.comm == comm) return &m;
  return nullptr;
}

absl::StatusOr<ProcessTrace> LoadProcessTrace(const std::string& path) {
  NCCLWATCH_ASSIGN_OR_RETURN(std::unique_ptr<TraceFile> file, TraceFile::Open(path));
  ProcessTrace p;
  p.path = path;
  p.clock = file->header().clock;
  p.pid = file->header().pid;
  p.host = file->header().host;
  // Most of a trace is collectives: room for all of them at once.
  p.collectives.reserve(file->SlotsInUse());
  Builder builder(&p);
  pb::Record record;
  file->ForEachRecord(
      [&](bool, uint64_t, absl::Span<const uint8_t> bytes) {
        record.Clear();
        if (!record.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
          ++p.unparsed_records;
          return;
        }
        ++p.records;
        builder.Add(record);
      },
      &p.stats);
  std::sort(p.anchors.begin(), p.anchors.end(),
            [](const TimeAnchorEvent& a, const TimeAnchorEvent& b) { return a.t < b.t; });
  return p;
}

}  // namespace ncclwatch::decoder

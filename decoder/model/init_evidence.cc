#include "model/init_evidence.h"

#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "knowledge/nccl_semantics.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {

namespace f = ::ncclwatch::fields;

InitEvidence InitEvidenceOf(const ProcessTrace& t, int process, int rank, int64_t end_ns,
                            const Fate& fate) {
  InitEvidence e;
  e.process = process;
  e.rank = rank;
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
  e.end_ns = end_ns;
  e.end_known = true;
  if (fate.kind == Fate::kExited) e.exit_code = fate.exit_code;
  if (fate.kind == Fate::kSignal) e.signo = fate.signo;
  for (const ApiEvent& a : t.apis) {
    if (a.call == f::kGetUniqueId && Accepted(a.result) && a.value != 0) {
      e.made_unique_id = static_cast<uint64_t>(a.value);
    }
  }
  for (const CommMembership& m : t.comms)
    if (e.made_unique_id != 0 && m.comm == e.made_unique_id) e.formed_from_unique_id = true;
  return e;
}

bool PeerAccessCall(uint32_t fn) {
  return fn == f::kCuCtxEnablePeerAccess || fn == f::kCudaDeviceEnablePeerAccess ||
         fn == f::kCuDeviceCanAccessPeer || fn == f::kCudaDeviceCanAccessPeer;
}

bool GpuSharingFailed(uint32_t function, int32_t result) {
  if (result == 0) return false;
  // Enabling peer access twice, or disabling it when it was not: answers, not failures.
  if (PeerAccessCall(function) && (result == 704 || result == 705)) return false;
  return true;
}

int64_t InitEvidence::FirstFailureNs() const {
  int64_t t = INT64_MAX;
  for (const Failure& f : failures) t = std::min(t, f.when_ns);
  for (const SysFailure& s : sys_failures) t = std::min(t, s.when_ns);
  for (const CudaFailure& c : cuda_failures) t = std::min(t, c.when_ns);
  return t;
}

void InitEvidence::AddFromLog(const InitEvidence& log) {
  for (const std::string& w : log.warnings)
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  for (const auto& [name, value] : log.env) env.emplace(name, value);  // the trace's value stays
  if (bootstrap_iface.empty()) bootstrap_iface = log.bootstrap_iface;
  if (!bootstrap_addr) bootstrap_addr = log.bootstrap_addr;
  if (!root_addr) root_addr = log.root_addr;
  if (bus_id.empty()) bus_id = log.bus_id;
  if (device < 0) device = log.device;
  if (nccl_version == 0) nccl_version = log.nccl_version;
  if (cuda_runtime_version == 0) cuda_runtime_version = log.cuda_runtime_version;
}

}  // namespace ncclwatch::decoder

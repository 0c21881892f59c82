// The process: who it is (ProcessStart), how it ended (ProcessEnd,
// FatalSignal), its clock anchors, its modules, and its inventory (the
// environment, the network, the P2P hardware path).

#include <string>
#include <utility>

#include "model/import/body_importer.h"
#include "model/import/wire_fields.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::importing {
namespace {

namespace f = ::ncclwatch::fields;

// One Inventory.Gpu (its bridges included) appended to `out`.
bool DecodeGpuPath(const WireField& x, std::vector<GpuPathInfo>* out) {
  namespace g = f::inventory::gpu;
  GpuPathInfo gpu;
  WireReader gr(x.bytes);
  WireField y;
  while (gr.Next(&y)) {
    if (y.number == g::kBdf && Bytes(y)) gpu.bdf = Str(y);
    if (y.number == g::kIommuGroup && Varint(y)) gpu.iommu_group = y.Zigzag32();
    if (y.number == g::kBridges && Bytes(y)) {
      GpuPathInfo::Bridge b;
      WireReader br(y.bytes);
      WireField z;
      while (br.Next(&z)) {
        if (z.number == f::inventory::pci_bridge::kBdf && Bytes(z)) b.bdf = Str(z);
        if (z.number == f::inventory::pci_bridge::kAcsCtrl && Varint(z)) b.acs_ctrl = z.Zigzag32();
      }
      if (!br.ok()) return false;
      gpu.bridges.push_back(std::move(b));
    }
  }
  if (!gr.ok()) return false;
  out->push_back(std::move(gpu));
  return true;
}
bool ImportProcessStart(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  WireReader r(body);
  WireField x;
  bool ok = true;
  ProcessTrace s;  // proto defaults
  s.global_rank = s.world_size = s.local_rank = 0;
  while (r.Next(&x)) {
    switch (x.number) {
      case f::process_start::kPid:
        if (Varint(x)) s.pid = static_cast<uint32_t>(x.value);
        break;
      case f::process_start::kHost:
        if (Bytes(x)) s.host = Str(x);
        break;
      case f::process_start::kGlobalRank:
        if (Varint(x)) s.global_rank = x.Zigzag32();
        break;
      case f::process_start::kRankSource:
        if (Bytes(x)) s.rank_source = Str(x);
        break;
      case f::process_start::kWorldSize:
        if (Varint(x)) s.world_size = x.Zigzag32();
        break;
      case f::process_start::kLocalRank:
        if (Varint(x)) s.local_rank = x.Zigzag32();
        break;
      case f::process_start::kExe:
        if (Bytes(x)) s.exe = Str(x);
        break;
      case f::process_start::kJobId:
        if (Bytes(x)) s.job_id = Str(x);
        break;
      case f::process_start::kPidNamespace:
        if (Varint(x)) s.pid_namespace = x.value;
        break;
      case f::process_start::kTracedFrom:
        if (Varint(x)) s.traced_from = static_cast<uint32_t>(x.value);
        break;
      default:
        break;
    }
  }
  ok = r.ok();
  if (ok) {
    p.has_start = true;
    p.pid = s.pid;
    p.host = std::move(s.host);
    p.global_rank = s.global_rank;
    p.rank_source = std::move(s.rank_source);
    p.world_size = s.world_size;
    p.local_rank = s.local_rank;
    p.exe = std::move(s.exe);
    p.job_id = std::move(s.job_id);
    p.pid_namespace = s.pid_namespace;
    p.traced_from = s.traced_from;
  }
  return ok;
}

bool ImportProcessEnd(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
  ProcessEndEvent e{order, t, 0, 0};
  while (r.Next(&x)) {
    if (x.number == f::process_end::kHow && Varint(x)) e.how = static_cast<uint32_t>(x.value);
    if (x.number == f::process_end::kExitCode && Varint(x)) e.exit_code = x.Zigzag32();
  }
  ok = r.ok();
  if (ok) p.end = e;
  return ok;
}

bool ImportTimeAnchor(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  WireReader r(body);
  WireField x;
  bool ok = true;
  TimeAnchorEvent a;
  while (r.Next(&x)) {
    if (!Varint(x)) continue;
    if (x.number == f::time_anchor::kT) a.t = x.value;
    if (x.number == f::time_anchor::kMonotonicNs) a.monotonic_ns = x.value;
    if (x.number == f::time_anchor::kRealtimeNs) a.realtime_ns = x.value;
  }
  ok = r.ok();
  if (ok) p.anchors.push_back(a);
  return ok;
}

bool ImportModule(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  WireReader r(body);
  WireField x;
  bool ok = true;
  ModuleInfo m;
  while (r.Next(&x)) {
    switch (x.number) {
      case f::module::kPath:
        if (Bytes(x)) m.path = Str(x);
        break;
      case f::module::kBase:
        if (Fixed64(x)) m.base = x.value;
        break;
      case f::module::kStart:
        if (Fixed64(x)) m.start = x.value;
        break;
      case f::module::kEnd:
        if (Fixed64(x)) m.end = x.value;
        break;
      case f::module::kBuildId:
        if (Bytes(x)) m.build_id = Str(x);
        break;
      default:
        break;
    }
  }
  ok = r.ok();
  if (ok) p.modules.push_back(std::move(m));
  return ok;
}

bool ImportInventory(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  WireReader r(body);
  WireField x;
  bool ok = true;
  InventoryInfo v;
  v.present = true;
  while (r.Next(&x) && ok) {
    switch (x.number) {
      case f::inventory::kEnv: {
        if (!Bytes(x)) break;
        std::string name, value;
        WireReader vr(x.bytes);
        WireField y;
        while (vr.Next(&y)) {
          if (y.number == f::inventory::variable::kName && Bytes(y)) name = Str(y);
          if (y.number == f::inventory::variable::kValue && Bytes(y)) value = Str(y);
        }
        ok = vr.ok();
        v.env[std::move(name)] = std::move(value);
        break;
      }
      case f::inventory::kNcclVersion:
        if (Varint(x)) v.nccl_version = x.Zigzag32();
        break;
      case f::inventory::kNcclPath:
        if (Bytes(x)) v.nccl_path = Str(x);
        break;
      case f::inventory::kCudaDriverVersion:
        if (Varint(x)) v.cuda_driver_version = x.Zigzag32();
        break;
      case f::inventory::kCudaRuntimeVersion:
        if (Varint(x)) v.cuda_runtime_version = x.Zigzag32();
        break;
      case f::inventory::kFramework:
        if (Bytes(x)) v.framework = Str(x);
        break;
      case f::inventory::kFrameworkPath:
        if (Bytes(x)) v.framework_path = Str(x);
        break;
      case f::inventory::kInterfaces: {
        if (!Bytes(x)) break;
        std::string name;
        uint32_t flags = 0, prefix = 0;
        std::string_view addr;
        WireReader ir(x.bytes);
        WireField y;
        while (ir.Next(&y)) {
          if (y.number == f::inventory::interface::kName && Bytes(y)) name = Str(y);
          if (y.number == f::inventory::interface::kFlags && Varint(y))
            flags = static_cast<uint32_t>(y.value);
          if (y.number == f::inventory::interface::kAddr && Bytes(y)) addr = y.AsString();
          if (y.number == f::inventory::interface::kPrefixLen && Varint(y))
            prefix = static_cast<uint32_t>(y.value);
        }
        ok = ir.ok();
        if (std::optional<SocketAddress> a = ParseSocketAddress(addr)) {
          v.interfaces.push_back({std::move(name), flags, *a, static_cast<int>(prefix)});
        }
        break;
      }
      case f::inventory::kShmKnown:
        if (Varint(x)) v.shm_known = x.value != 0;
        break;
      case f::inventory::kShmSize:
        if (Varint(x)) v.shm_size = x.value;
        break;
      case f::inventory::kShmFree:
        if (Varint(x)) v.shm_free = x.value;
        break;
      case f::inventory::kMemlockSoft:
        if (Varint(x)) v.memlock_soft = x.value;
        break;
      case f::inventory::kMemlockHard:
        if (Varint(x)) v.memlock_hard = x.value;
        break;
      case f::inventory::kCgroup:
        if (Bytes(x)) v.cgroup = Str(x);
        break;
      case f::inventory::kContainer:
        if (Bytes(x)) v.container = Str(x);
        break;
      case f::inventory::kGpus:
        if (Bytes(x)) ok = DecodeGpuPath(x, &v.gpus);
        break;
      case f::inventory::kIommuEnabled:
        if (Varint(x)) v.iommu_enabled = x.value != 0;
        break;
      case f::inventory::kNvswitches:
        if (Varint(x)) v.nvswitches = static_cast<uint32_t>(x.value);
        break;
      case f::inventory::kCommandLine:
        if (Bytes(x)) v.command_line = Str(x);
        break;
      case f::inventory::kAtLoad:
        if (Varint(x)) v.at_load = x.value != 0;
        break;
      default:
        break;
    }
  }
  ok = ok && r.ok();
  // The whole inventory of the first NCCL init holds over the one written
  // at NCCL's load, whichever the file holds first.
  if (ok && !(v.at_load && p.inventory.present && !p.inventory.at_load)) {
    if (p.nccl_version == 0) p.nccl_version = v.nccl_version;
    p.inventory = std::move(v);
  }
  return ok;
}

bool ImportFatalSignal(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
  FatalSignalEvent s{order, t};
  while (r.Next(&x)) {
    switch (x.number) {
      case f::fatal_signal::kSigno:
        if (Varint(x)) s.signo = x.Zigzag32();
        break;
      case f::fatal_signal::kCode:
        if (Varint(x)) s.code = x.Zigzag32();
        break;
      case f::fatal_signal::kAddress:
        if (Fixed64(x)) s.address = x.value;
        break;
      case f::fatal_signal::kSenderPid:
        if (Varint(x)) s.sender_pid = x.Zigzag32();
        break;
      case f::fatal_signal::kDisposition:
        if (Varint(x)) s.disposition = static_cast<uint32_t>(x.value);
        break;
      default:
        break;
    }
  }
  ok = r.ok();
  if (ok) p.signals.push_back(s);
  return ok;
}

}  // namespace

absl::Span<const BodyImporter> ProcessImporters() {
  static constexpr BodyImporter kImporters[] = {
      {f::record::kProcessStart, ImportProcessStart}, {f::record::kProcessEnd, ImportProcessEnd},
      {f::record::kTimeAnchor, ImportTimeAnchor},     {f::record::kModule, ImportModule},
      {f::record::kInventory, ImportInventory},       {f::record::kFatalSignal, ImportFatalSignal},
  };
  return kImporters;
}

}  // namespace ncclwatch::decoder::importing

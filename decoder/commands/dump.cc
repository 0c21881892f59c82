#include "commands/dump.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/gpu_sharing_failure.h"
#include "analysis/nccl_semantics.h"
#include "commands/input_files.h"
#include "model/process_trace.h"
#include "ncclwatch/trace.pb.h"
#include "report/names.h"
#include "report/terminal_text.h"
#include "trace/socket_address.h"
#include "trace/trace_file.h"

namespace ncclwatch::decoder {
namespace {

namespace pb = ::ncclwatch::trace::v1;

std::string Where(const ProcessTrace& p, uint64_t address) {
  if (address == 0) return "?";
  if (const ModuleInfo* m = p.ModuleAt(address)) {
    const size_t slash = m->path.rfind('/');
    return absl::StrFormat("%s+0x%x",
                           slash == std::string::npos ? m->path : m->path.substr(slash + 1),
                           address - m->base);
  }
  return Hex(address);
}

std::string Describe(const ProcessTrace& p, const pb::Record& r) {
  switch (r.body_case()) {
    case pb::Record::kProcessStart: {
      const auto& s = r.process_start();
      return absl::StrFormat(
          "process_start pid=%u host=%s rank=%d(%s) world=%d local=%d exe=%s job=%s", s.pid(),
          s.host(), s.global_rank(), s.rank_source(), s.world_size(), s.local_rank(), s.exe(),
          s.job_id());
    }
    case pb::Record::kProcessEnd: {
      const char* how = "exit";
      switch (r.process_end().how()) {
        case pb::ProcessEnd::UNDERSCORE_EXIT:
          how = "_exit";
          break;
        case pb::ProcessEnd::EXEC:
          how = "exec";
          break;
        case pb::ProcessEnd::EXEC_FAILED:
          how = "exec_failed";
          break;
        case pb::ProcessEnd::QUICK_EXIT:
          how = "quick_exit";
          break;
        default:
          break;
      }
      return absl::StrFormat("process_end how=%s exit_code=%d", how, r.process_end().exit_code());
    }
    case pb::Record::kTimeAnchor:
      return absl::StrFormat("time_anchor t=%u monotonic_ns=%u realtime_ns=%u", r.time_anchor().t(),
                             r.time_anchor().monotonic_ns(), r.time_anchor().realtime_ns());
    case pb::Record::kModule:
      return absl::StrFormat("module %s base=%s [%s,%s)", r.module().path(), Hex(r.module().base()),
                             Hex(r.module().start()), Hex(r.module().end()));
    case pb::Record::kCommInitBegin: {
      const auto& b = r.comm_init_begin();
      std::string s = absl::StrFormat("comm_init_begin %s comm=%s rank=%d nranks=%d",
                                      CallName(b.call()), CommName(b.comm()), b.rank(), b.nranks());
      if (b.parent()) {
        absl::StrAppendFormat(&s, " parent=%s split=%u color=%d key=%d", CommName(b.parent()),
                              b.split_index(), b.color(), b.key());
      }
      for (int x : b.excluded()) absl::StrAppend(&s, " excluded=", x);
      absl::StrAppend(&s, " caller=", Where(p, b.caller()));
      return s;
    }
    case pb::Record::kCommInitEnd: {
      const auto& e = r.comm_init_end();
      return absl::StrFormat(
          "comm_init_end comm=%s result=%s handle=%s rank=%d nranks=%d device=%d",
          CommName(e.comm()), ResultName(e.result()), Hex(e.handle()), e.rank(), e.nranks(),
          e.device());
    }
    case pb::Record::kCommEnd: {
      const auto& e = r.comm_end();
      return absl::StrFormat("comm_end %s comm=%s handle=%s rank=%d result=%s", CallName(e.call()),
                             CommName(e.comm()), Hex(e.handle()), e.rank(), ResultName(e.result()));
    }
    case pb::Record::kCollective: {
      const auto& c = r.collective();
      std::string s = absl::StrFormat("collective %s comm=%s rank=%d seq=%u count=%u %s",
                                      CallName(c.call()), CommName(c.comm()), c.rank(), c.seq(),
                                      c.count(), DatatypeName(c.datatype()));
      if (c.has_redop()) absl::StrAppend(&s, " ", RedopName(c.redop()));
      if (c.has_root()) absl::StrAppend(&s, " root=", c.root());
      absl::StrAppendFormat(&s, " stream=%s send=%s recv=%s", Hex(c.stream()), Hex(c.sendbuff()),
                            Hex(c.recvbuff()));
      if (c.group()) absl::StrAppend(&s, " group=", c.group());
      absl::StrAppend(&s, " result=", ResultName(c.result()), " caller=", Where(p, c.caller()));
      return s;
    }
    case pb::Record::kP2P: {
      const auto& c = r.p2p();
      std::string s = absl::StrFormat(
          "p2p %s comm=%s rank=%d %s=%d seq=%u count=%u %s stream=%s buff=%s",
          c.send() ? "Send" : "Recv", CommName(c.comm()), c.rank(), c.send() ? "to" : "from",
          c.peer(), c.seq(), c.count(), DatatypeName(c.datatype()), Hex(c.stream()), Hex(c.buff()));
      if (c.group()) absl::StrAppend(&s, " group=", c.group());
      absl::StrAppend(&s, " result=", ResultName(c.result()), " caller=", Where(p, c.caller()));
      return s;
    }
    case pb::Record::kGroup:
      return absl::StrFormat("group %s group=%u depth=%u result=%s", CallName(r.group().call()),
                             r.group().group(), r.group().depth(), ResultName(r.group().result()));
    case pb::Record::kApi: {
      const auto& a = r.api();
      std::string s = absl::StrFormat("api %s", CallName(a.call()));
      if (a.comm()) absl::StrAppend(&s, " comm=", CommName(a.comm()));
      if (a.value()) {
        absl::StrAppend(&s, " value=",
                        a.call() == pb::GET_UNIQUE_ID ? CommName(static_cast<uint64_t>(a.value()))
                                                      : absl::StrCat(a.value()));
      }
      absl::StrAppend(&s, " result=", ResultName(a.result()));
      return s;
    }
    case pb::Record::kFatalSignal: {
      const auto& s = r.fatal_signal();
      return absl::StrFormat("fatal_signal %s code=%d address=%s sender=%d disposition=%s",
                             SignalName(s.signo()), s.code(), Hex(s.address()), s.sender_pid(),
                             s.disposition() == 0   ? "default"
                             : s.disposition() == 1 ? "ignore"
                                                    : "handler");
    }
    case pb::Record::kSysCall: {
      const auto& c = r.sys_call();
      std::string s = absl::StrCat("sys_call ", SysCallName(c.kind()));
      if (c.kind() == pb::SysCall::VERBS) {
        absl::StrAppend(&s, " ", c.path(), " ret=", c.ret());
      } else if (c.kind() == pb::SysCall::DLOPEN) {
        absl::StrAppend(
            &s, " ", c.path(), " flags=", Hex(static_cast<uint32_t>(c.arg())),
            p.Loaded(c.path()) ? " (loaded)" : " (not in the module map: did not load)");
      } else {
        absl::StrAppend(&s, " ret=", c.ret());
      }
      if (c.err()) absl::StrAppend(&s, " errno=", ErrnoName(c.err()));
      if (c.kind() != pb::SysCall::GETIFADDRS && c.kind() != pb::SysCall::SOCKET &&
          c.kind() != pb::SysCall::UNLINK && c.kind() != pb::SysCall::SHM_OPEN &&
          c.kind() != pb::SysCall::DLOPEN && c.kind() != pb::SysCall::VERBS) {
        absl::StrAppend(&s, " fd=", c.fd());
      }
      if (!c.path().empty() && c.kind() != pb::SysCall::DLOPEN && c.kind() != pb::SysCall::VERBS) {
        absl::StrAppend(&s, " path=", c.path());
      }
      if (c.size()) absl::StrAppend(&s, " size=", c.size());
      if (!c.addr().empty()) {
        std::optional<SocketAddress> a = ParseSocketAddress(c.addr());
        absl::StrAppend(&s, " addr=", a ? a->ToString() : "?");
      }
      if (c.in_call() != pb::CALL_UNKNOWN) absl::StrAppend(&s, " in=", CallName(c.in_call()));
      absl::StrAppend(&s, c.from_nccl() ? " from=nccl" : " from=other",
                      " caller=", Where(p, c.caller()));
      return s;
    }
    case pb::Record::kNcclError: {
      const auto& n = r.nccl_error();
      std::string s =
          absl::StrCat("nccl_error ", CallName(n.call()), " result=", ResultName(n.result()));
      if (n.comm()) absl::StrAppend(&s, " comm=", CommName(n.comm()));
      if (n.async()) absl::StrAppend(&s, " async");
      absl::StrAppend(&s, " last_error=\"", n.last_error(), "\"");
      return s;
    }
    case pb::Record::kInventory: {
      const auto& v = r.inventory();
      std::string s = absl::StrCat("inventory nccl=", NcclVersionString(v.nccl_version()), " (",
                                   v.nccl_path(), ") cuda_driver=", v.cuda_driver_version(),
                                   " cuda_runtime=", v.cuda_runtime_version());
      if (!v.framework().empty()) absl::StrAppend(&s, " framework=", v.framework());
      if (v.shm_known())
        absl::StrAppend(&s, " /dev/shm=", Bytes(v.shm_size()), " (", Bytes(v.shm_free()), " free)");
      absl::StrAppend(
          &s, " memlock=", v.memlock_soft() == UINT64_MAX ? "unlimited" : Bytes(v.memlock_soft()));
      if (!v.container().empty()) absl::StrAppend(&s, " container=", v.container());
      absl::StrAppend(&s, " interfaces=");
      for (int i = 0; i < v.interfaces_size(); ++i) {
        std::optional<SocketAddress> a = ParseSocketAddress(v.interfaces(i).addr());
        absl::StrAppend(&s, i ? "," : "", v.interfaces(i).name(), ":", a ? a->Ip() : "?", "/",
                        v.interfaces(i).prefix_len());
      }
      for (const auto& e : v.env()) absl::StrAppend(&s, " ", e.name(), "=", e.value());
      if (v.iommu_enabled()) absl::StrAppend(&s, " iommu=on");
      if (v.nvswitches()) absl::StrAppend(&s, " nvswitches=", v.nvswitches());
      for (const auto& g : v.gpus()) {
        absl::StrAppend(&s, " gpu=", g.bdf());
        if (g.iommu_group() >= 0) absl::StrAppend(&s, "(iommu_group ", g.iommu_group(), ")");
        for (const auto& b : g.bridges()) {
          absl::StrAppend(&s, "<", b.bdf(), ":acs=",
                          b.acs_ctrl() == -1   ? std::string("?")
                          : b.acs_ctrl() == -2 ? std::string("none")
                                               : Hex(static_cast<uint32_t>(b.acs_ctrl())));
        }
      }
      return s;
    }
    case pb::Record::kCudaCall: {
      const auto& c = r.cuda_call();
      const bool runtime = CudaRuntimeFunction(c.function());
      std::string s = absl::StrCat("cuda_call ", CudaFunctionName(c.function()),
                                   " result=", CudaResultName(c.result(), runtime));
      if (c.result() != 0 && !CudaResultText(c.result()).empty())
        absl::StrAppend(&s, " (", CudaResultText(c.result()), ")");
      if (c.err()) absl::StrAppend(&s, " errno=", ErrnoName(c.err()));
      static const char* const kVia[] = {"?", "runtime", "cuGetProcAddress",
                                         "cudaGetDriverEntryPoint", "dlsym"};
      absl::StrAppend(&s, " via=", c.via() < 5 ? kVia[c.via()] : "?");
      if (c.has_device()) absl::StrAppend(&s, " device=", c.device());
      if (c.has_peer()) absl::StrAppend(&s, " peer=", c.peer());
      if (c.has_can_access()) absl::StrAppend(&s, " can_access=", c.can_access());
      if (c.handle_type()) {
        const uint32_t t = c.handle_type();
        absl::StrAppend(&s, " handle_type=",
                        t == 1   ? "posix_fd"
                        : t == 8 ? "fabric"
                        : t == 2 ? "win32"
                        : t == 4 ? "win32_kmt"
                                 : absl::StrCat(t));
      }
      if (c.has_fd()) absl::StrAppend(&s, " fd=", c.fd());
      if (c.size()) absl::StrAppend(&s, " size=", c.size());
      if (c.ptr()) absl::StrAppend(&s, " ptr=", Hex(c.ptr()));
      if (c.handle()) absl::StrAppend(&s, " handle=", Hex(c.handle()));
      if (c.flags()) absl::StrAppend(&s, " flags=", Hex(c.flags()));
      if (c.num_devices()) absl::StrAppend(&s, " devices=", c.num_devices());
      if (c.in_call() != pb::CALL_UNKNOWN) absl::StrAppend(&s, " in=", CallName(c.in_call()));
      absl::StrAppend(&s, c.from_nccl() ? " from=nccl" : " from=other");
      if (c.caller()) absl::StrAppend(&s, " caller=", Where(p, c.caller()));
      return s;
    }
    case pb::Record::kCompletionTracking: {
      const auto& c = r.completion_tracking();
      if (c.mechanism() == pb::CompletionTracking::NONE)
        return absl::StrCat("completion_tracking comm=", CommName(c.comm()), " none: \"",
                            c.why_not(), "\"");
      return absl::StrCat("completion_tracking comm=", CommName(c.comm()),
                          " cuda_events=", c.markers(), " device=", c.device());
    }
    case pb::Record::kProgress: {
      const auto& g = r.progress();
      return absl::StrCat("progress comm=", CommName(g.comm()), " completed=", g.collectives(),
                          " issued=", g.issued(), " pending=", g.pending(),
                          " enqueued_t=", g.enqueued_t());
    }
    case pb::Record::kHeartbeat:
      return absl::StrCat("heartbeat #", r.heartbeat().beat(), " every ",
                          r.heartbeat().interval_ms(), " ms");
    case pb::Record::kStall: {
      const auto& st = r.stall();
      std::string s = absl::StrCat("stall comm=", CommName(st.comm()), " ", CallName(st.call()),
                                   " #", st.seq());
      if (st.call() == pb::SEND || st.call() == pb::RECV)
        absl::StrAppend(&s, st.send() ? " to " : " from ", st.peer());
      absl::StrAppend(&s, " waited=", st.waited_ms(), "ms completed=", st.completed(),
                      " pending=", st.pending());
      return s;
    }
    case pb::Record::kCudaError: {
      const auto& e = r.cuda_error();
      return absl::StrCat("cuda_error comm=", CommName(e.comm()), " ", e.name(), " (", e.result(),
                          ") \"", e.text(), "\" completed=", e.seq());
    }
    case pb::Record::kUntracked: {
      const auto& u = r.untracked();
      return absl::StrCat("untracked comm=", CommName(u.comm()), " ", CallName(u.call()), " #",
                          u.seq(),
                          u.reason() == pb::Untracked::CAPTURED ? " captured in a CUDA graph"
                                                                : " not yet enqueued");
    }
    case pb::Record::kSocketActivity: {
      const auto& a = r.socket_activity();
      std::optional<SocketAddress> addr = ParseSocketAddress(a.addr());
      std::string s = absl::StrCat("socket_activity ", pb::SocketActivity::Kind_Name(a.kind()), " ",
                                   addr ? addr->ToString() : "-", " ",
                                   a.err() != 0 ? ErrnoName(a.err()) : "ok");
      if (a.deferred()) absl::StrAppend(&s, " (outcome of a started connect)");
      absl::StrAppend(&s, " x", a.count(), " first_t=", a.first_t(), " last_t=", a.last_t(),
                      " caller=", Where(p, a.caller()));
      return s;
    }
    default:
      return absl::StrCat("unknown ", r.ShortDebugString());
  }
}

}  // namespace

int RunDump(const std::string& path, bool json, std::ostream& out, std::ostream& err) {
  // A FIFO or a device is refused before anything opens it.
  if (absl::StatusOr<std::vector<std::string>> file =
          InputFiles({path}, [](const auto&) { return false; });
      !file.ok() || file->empty()) {
    err << "ncclwatch: "
        << (file.ok() ? path + ": is a folder; dump reads one trace file"
                      : std::string(file.status().message()))
        << "\n";
    return 2;
  }
  absl::StatusOr<ProcessTrace> trace = LoadProcessTrace(path);
  if (!trace.ok()) {
    err << "ncclwatch: " << trace.status().message() << "\n";
    return 2;
  }
  // Copied, slot by slot: dump writes as it reads, to a pipe that may
  // stall (a pager), for as long as a live writer needs to lap the ring.
  absl::StatusOr<std::unique_ptr<TraceFile>> file = TraceFile::Open(path, ReadMode::kCopied);
  if (!file.ok()) {
    err << "ncclwatch: " << file.status().message() << "\n";
    return 2;
  }
  const ProcessTrace& p = *trace;
  const int64_t t0 = p.anchors.empty() ? 0 : p.MonotonicNs(p.anchors.front().t);
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  pb::Record record;
  TraceFileStats stats;
  (*file)->ForEachRecord(
      [&](bool pinned, uint64_t index, absl::Span<const uint8_t> bytes) {
        record.Clear();
        const bool parsed = record.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
        const double seconds =
            (static_cast<double>(p.MonotonicNs(record.t())) - static_cast<double>(t0)) / 1e9;
        if (json) {
          std::string body;
          if (parsed) (void)google::protobuf::util::MessageToJsonString(record, &body, options);
          out << absl::StrFormat(
              "{\"region\":\"%s\",\"index\":%u,\"seconds\":%.9f,\"record\":%s}\n",
              pinned ? "pinned" : "ring", index, seconds, parsed ? body : "null");
        } else {
          out << absl::StrFormat(
              "%-6s %7u %+13.6fs thread %-2u %s\n", pinned ? "pinned" : "ring", index, seconds,
              record.thread(), parsed ? TerminalSafe(Describe(p, record)) : "(unparseable record)");
        }
      },
      &stats);
  if (!json) {
    out << absl::StrFormat(
        "# %u records; %u torn slots; %u ring slots overwritten; %u pinned records overflowed; "
        "%u slots claimed in threads' blocks and never written\n",
        stats.records, stats.torn_slots, stats.ring_overwritten, stats.pinned_overflow,
        stats.unwritten_slots);
  }
  return 0;
}

}  // namespace ncclwatch::decoder

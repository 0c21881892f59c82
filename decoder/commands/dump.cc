#include "commands/dump.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/json_util.h>

#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "commands/input_files.h"
#include "knowledge/cuda_names.h"
#include "model/process_trace.h"
#include "ncclwatch/trace.pb.h"
#include "report/json_writer.h"
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

namespace gp = ::google::protobuf;

// One field's value, as dump prints it: NCCL's names for calls, results,
// datatypes, operators, signals and errnos, communicators as 16 hex digits,
// call sites as module+offset, addresses in hex, an enum by its value's
// name, a message in braces.
std::string FieldValue(const ProcessTrace& p, const gp::Message& m, const gp::FieldDescriptor* f,
                       int index);

std::string MessageFields(const ProcessTrace& p, const gp::Message& m) {
  std::vector<const gp::FieldDescriptor*> set;
  m.GetReflection()->ListFields(m, &set);
  std::string s;
  for (const gp::FieldDescriptor* f : set) {
    absl::StrAppend(&s, s.empty() ? "" : " ", f->name(), "=");
    if (!f->is_repeated()) {
      absl::StrAppend(&s, FieldValue(p, m, f, -1));
      continue;
    }
    const int n = m.GetReflection()->FieldSize(m, f);
    absl::StrAppend(&s, "[");
    for (int i = 0; i < n; ++i) absl::StrAppend(&s, i ? "," : "", FieldValue(p, m, f, i));
    absl::StrAppend(&s, "]");
  }
  return s;
}

std::string FieldValue(const ProcessTrace& p, const gp::Message& m, const gp::FieldDescriptor* f,
                       int index) {
  const gp::Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  const std::string& name = f->name();
  switch (f->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_MESSAGE:
      return absl::StrCat(
          "{", MessageFields(p, rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f)),
          "}");
    case gp::FieldDescriptor::CPPTYPE_ENUM: {
      const int v = rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
      if (f->enum_type() == pb::Call_descriptor()) return CallName(static_cast<uint32_t>(v));
      const gp::EnumValueDescriptor* e = f->enum_type()->FindValueByNumber(v);
      return e != nullptr ? absl::AsciiStrToLower(e->name()) : absl::StrCat(v);
    }
    case gp::FieldDescriptor::CPPTYPE_STRING: {
      const std::string v = rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
      return v.find_first_of(" \"=") == std::string::npos && !v.empty()
                 ? v
                 : absl::StrCat("\"", v, "\"");
    }
    case gp::FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
    case gp::FieldDescriptor::CPPTYPE_INT32: {
      const int32_t v = rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
      if (name == "result" && f->type() == gp::FieldDescriptor::TYPE_SFIXED32) return ResultName(v);
      if (name == "datatype") return DatatypeName(v);
      if (name == "redop") return RedopName(v);
      if (name == "signo") return SignalName(v);
      if (name == "err" && v != 0) return ErrnoName(v);
      return absl::StrCat(v);
    }
    case gp::FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
    case gp::FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
    case gp::FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t v = rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f);
      if (name == "comm" || name == "parent") return CommName(v);
      if (name == "caller") return Where(p, v);
      if (f->type() == gp::FieldDescriptor::TYPE_FIXED64) return Hex(v);  // an address, a handle
      return absl::StrCat(v);
    }
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrCat(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case gp::FieldDescriptor::CPPTYPE_FLOAT:
      return absl::StrCat(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
  }
  return "?";
}

// Any record, from trace.proto's descriptors: the body's field name in
// Record, then every field it has set. What a body without words of its own
// below gets, so that every kind the schema has is printed (a test writes
// each one); a body this ncclwatch does not know (a newer shim's) is named
// by its field number.
std::string DescribeFromDescriptor(const ProcessTrace& p, const pb::Record& r) {
  const gp::OneofDescriptor* body = pb::Record::descriptor()->FindOneofByName("body");
  if (const gp::FieldDescriptor* f = r.GetReflection()->GetOneofFieldDescriptor(r, body)) {
    const std::string fields = MessageFields(p, r.GetReflection()->GetMessage(r, f));
    return fields.empty() ? f->name() : absl::StrCat(f->name(), " ", fields);
  }
  const gp::UnknownFieldSet& unknown = r.GetReflection()->GetUnknownFields(r);
  for (int i = 0; i < unknown.field_count(); ++i) {
    if (unknown.field(i).type() == gp::UnknownField::TYPE_LENGTH_DELIMITED)
      return absl::StrCat("body ", unknown.field(i).number(), " (unknown to this ncclwatch, ",
                          unknown.field(i).length_delimited().size(), " bytes)");
  }
  return "(no body)";
}

std::string Describe(const ProcessTrace& p, const pb::Record& r) {
  switch (r.body_case()) {
    case pb::Record::kProcessStart: {
      const auto& s = r.process_start();
      return absl::StrFormat(
          "process_start pid=%u host=%s rank=%d(%s) world=%d local=%d exe=%s job=%s pidns=%u",
          s.pid(), s.host(), s.global_rank(), s.rank_source(), s.world_size(), s.local_rank(),
          s.exe(), s.job_id(), s.pid_namespace());
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
      if (b.grow_id()) absl::StrAppend(&s, " grow_id=", CommName(b.grow_id()));
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
                        a.call() == pb::GET_UNIQUE_ID || a.call() == pb::COMM_GET_UNIQUE_ID
                            ? CommName(static_cast<uint64_t>(a.value()))
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
      if (!v.command_line().empty())
        absl::StrAppend(&s, " command_line=\"", absl::CHexEscape(v.command_line()), "\"");
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
    case pb::Record::kCollConfig: {
      const auto& c = r.coll_config();
      std::string s =
          absl::StrFormat("coll_config %s comm=%s seq=%u size=%u version=%u", CallName(c.call()),
                          CommName(c.comm()), c.seq(), c.size(), c.version());
      if (!c.magic_ok()) absl::StrAppend(&s, " magic=wrong");
      auto field = [&](const char* name, bool has, int32_t v) {
        if (has && v != std::numeric_limits<int32_t>::min()) absl::StrAppend(&s, " ", name, "=", v);
      };
      field("minCTAs", c.has_min_ctas(), c.min_ctas());
      field("maxCTAs", c.has_max_ctas(), c.max_ctas());
      field("nvlsCTAs", c.has_nvls_ctas(), c.nvls_ctas());
      field("cgaClusterSize", c.has_cga_cluster_size(), c.cga_cluster_size());
      if (!c.alg_selection().empty()) absl::StrAppend(&s, " algSelection=", c.alg_selection());
      field("forceAlgSelection", c.has_force_alg_selection(), c.force_alg_selection());
      field("CTAPolicy", c.has_cta_policy(), c.cta_policy());
      if (c.user_profiler_tag()) absl::StrAppend(&s, " userProfilerTag=", c.user_profiler_tag());
      if (c.launch_completion_event()) absl::StrAppend(&s, " launchCompletionEvent");
      if (c.ext_options()) absl::StrAppend(&s, " ext=", c.ext_options());
      return s;
    }
    case pb::Record::kOneSided: {
      const auto& o = r.one_sided();
      std::string s = absl::StrFormat("one_sided %s comm=%s rank=%d", CallName(o.call()),
                                      CommName(o.comm()), o.rank());
      if (o.call() == pb::WAIT_SIGNAL) {
        for (const auto& w : o.waits()) {
          absl::StrAppendFormat(
              &s, " from=%d signals=%u..%u", w.peer(), w.seq(),
              w.seq() + static_cast<uint64_t>(w.op_cnt() > 0 ? w.op_cnt() : 1) - 1);
        }
        if (o.n_desc() > o.waits_size()) absl::StrAppend(&s, " descriptors=", o.n_desc());
      } else {
        absl::StrAppendFormat(&s, " to=%d signal=%u", o.peer(), o.seq());
        if (o.call() == pb::PUT_SIGNAL) {
          absl::StrAppendFormat(&s, " count=%u %s window=%s offset=%u buff=%s", o.count(),
                                DatatypeName(o.datatype()), Hex(o.window()), o.offset(),
                                Hex(o.buff()));
        }
      }
      absl::StrAppendFormat(&s, " stream=%s", Hex(o.stream()));
      if (o.group()) absl::StrAppend(&s, " group=", o.group());
      absl::StrAppend(&s, " result=", ResultName(o.result()), " caller=", Where(p, o.caller()));
      return s;
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
    case pb::Record::kHeldOperation: {
      const auto& h = r.held_operation();
      std::string s = absl::StrCat("held comm=", CommName(h.comm()), " rank=", h.rank(), " ",
                                   CallName(h.call()), " #", h.seq());
      if (h.call() == pb::SEND || h.call() == pb::RECV)
        absl::StrAppend(&s, h.send() ? " to " : " from ", h.peer());
      absl::StrAppend(&s, " count=", h.count(), " ", DatatypeName(h.datatype()));
      if (h.has_redop() && h.redop() >= 0) absl::StrAppend(&s, " ", RedopName(h.redop()));
      if (h.has_root() && h.root() >= 0) absl::StrAppend(&s, " root=", h.root());
      absl::StrAppend(&s, " waited=", h.waited_ms(), "ms completed=", h.completed());
      if (h.group_ops() > 0) absl::StrAppend(&s, " group_ops=", h.group_ops());
      return s;
    }
    default:
      return DescribeFromDescriptor(p, r);
  }
}

}  // namespace

int RunDump(const std::string& named, bool json, std::ostream& out, std::ostream& err) {
  // A FIFO or a device is refused before anything opens it; a link is read
  // by where it leads.
  absl::StatusOr<std::vector<std::string>> found =
      InputFiles({named}, [](const auto&) { return false; });
  if (!found.ok() || found->empty()) {
    err << "ncclwatch: "
        << OneLine(found.ok() ? named + ": is a folder; dump reads one trace file"
                              : std::string(found.status().message()))
        << "\n";
    return 2;
  }
  const std::string path = found->front();
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
  // --json: one object a line, each record in protobuf's own JSON mapping.
  JsonWriter lines(out, JsonLayout::kLines);
  (*file)->ForEachRecord(
      [&](bool pinned, uint64_t index, absl::Span<const uint8_t> bytes) {
        record.Clear();
        const bool parsed = record.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
        const double seconds =
            (static_cast<double>(p.MonotonicNs(record.t())) - static_cast<double>(t0)) / 1e9;
        if (json) {
          lines.BeginObject();
          lines.Key("region").String(pinned ? "pinned" : "ring");
          lines.Key("index").Integer(index);
          lines.Key("seconds").Fixed(seconds, 9);
          lines.Key("record");
          // The record as libprotobuf prints it: the one value not written
          // field by field here, so that it follows the schema by itself.
          std::string body;
          if (parsed && google::protobuf::util::MessageToJsonString(record, &body, options).ok())
            lines.Raw(body);
          else
            lines.Null();
          lines.EndObject();
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

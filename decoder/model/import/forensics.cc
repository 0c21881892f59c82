// What init forensics reads: the C library calls NCCL made, NCCL's error
// texts, the CUDA calls that share memory between processes and devices, and
// what the shim knows it could not see.

#include <optional>
#include <utility>
#include <vector>

#include "model/import/body_importer.h"
#include "model/import/wire_fields.h"
#include "ncclwatch/trace_fields.h"
#include "trace/socket_address.h"

namespace ncclwatch::decoder::importing {
namespace {

namespace f = ::ncclwatch::fields;

// A CudaCall body into a new row of `out`; false when it is malformed.
bool DecodeCudaCall(WireReader& r, uint64_t order, uint64_t t, std::vector<CudaCallEvent>* out) {
  namespace c = f::cuda_call;
  CudaCallEvent e;
  e.order = order;
  e.t = t;
  WireField x;
  while (r.Next(&x)) {
    switch (x.number) {
      case c::kFunction:
        if (Varint(x)) e.function = static_cast<uint32_t>(x.value);
        break;
      case c::kResult:
        if (Varint(x)) e.result = x.Zigzag32();
        break;
      case c::kVia:
        if (Varint(x)) e.via = static_cast<uint32_t>(x.value);
        break;
      case c::kDevice:
        if (Varint(x)) e.device = x.Zigzag32();
        break;
      case c::kPeer:
        if (Varint(x)) e.peer = x.Zigzag32();
        break;
      case c::kSize:
        if (Varint(x)) e.size = x.value;
        break;
      case c::kPtr:
        if (Fixed64(x)) e.ptr = x.value;
        break;
      case c::kHandle:
        if (Fixed64(x)) e.handle = x.value;
        break;
      case c::kHandleType:
        if (Varint(x)) e.handle_type = static_cast<uint32_t>(x.value);
        break;
      case c::kFlags:
        if (Varint(x)) e.flags = x.value;
        break;
      case c::kFd:
        if (Varint(x)) e.fd = x.Zigzag32();
        break;
      case c::kCanAccess:
        if (Varint(x)) e.can_access = x.Zigzag32();
        break;
      case c::kErr:
        if (Varint(x)) e.err = x.Zigzag32();
        break;
      case c::kInCall:
        if (Varint(x)) e.in_call = static_cast<uint32_t>(x.value);
        break;
      case c::kFromNccl:
        if (Varint(x)) e.from_nccl = x.value != 0;
        break;
      case c::kCaller:
        if (Fixed64(x)) e.caller = x.value;
        break;
      case c::kNumDevices:
        if (Varint(x)) e.num_devices = static_cast<uint32_t>(x.value);
        break;
      case c::kAccessFlags:
        if (Varint(x)) e.access_flags = static_cast<uint32_t>(x.value);
        break;
      default:
        break;
    }
  }
  if (!r.ok()) return false;
  out->push_back(e);
  return true;
}
bool ImportSysCall(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
  SysCallEvent e;
  e.order = order;
  e.t = t;
  e.fd = 0;
  e.offset = 0;
  int64_t size = 0;
  while (r.Next(&x)) {
    switch (x.number) {
      case f::sys_call::kKind:
        if (Varint(x)) e.kind = static_cast<uint32_t>(x.value);
        break;
      case f::sys_call::kRet:
        if (Varint(x)) e.ret = x.Zigzag();
        break;
      case f::sys_call::kErr:
        if (Varint(x)) e.err = x.Zigzag32();
        break;
      case f::sys_call::kFd:
        if (Varint(x)) e.fd = x.Zigzag32();
        break;
      case f::sys_call::kPath:
        if (Bytes(x)) e.path = Str(x);
        break;
      case f::sys_call::kSize:
        if (Varint(x)) size = x.Zigzag();
        break;
      case f::sys_call::kOffset:
        if (Varint(x)) e.offset = x.Zigzag();
        break;
      case f::sys_call::kAddr:
        if (Bytes(x)) e.addr = x.bytes.empty() ? std::nullopt : ParseSocketAddress(x.AsString());
        break;
      case f::sys_call::kArg:
        if (Varint(x)) e.arg = x.Zigzag32();
        break;
      case f::sys_call::kInCall:
        if (Varint(x)) e.in_call = static_cast<uint32_t>(x.value);
        break;
      case f::sys_call::kFromNccl:
        if (Varint(x)) e.from_nccl = x.value != 0;
        break;
      case f::sys_call::kCaller:
        if (Fixed64(x)) e.caller = x.value;
        break;
      default:
        break;
    }
  }
  e.size = size != 0 ? size : -1;
  ok = r.ok();
  if (ok) p.syscalls.push_back(std::move(e));
  return ok;
}

bool ImportNcclError(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
  NcclErrorEvent e{order, t};
  while (r.Next(&x)) {
    switch (x.number) {
      case f::nccl_error::kCall:
        if (Varint(x)) e.call = static_cast<uint32_t>(x.value);
        break;
      case f::nccl_error::kResult:
        if (Fixed32(x)) e.result = x.AsInt32();
        break;
      case f::nccl_error::kComm:
        if (Fixed64(x)) e.comm = x.value;
        break;
      case f::nccl_error::kLastError:
        if (Bytes(x)) e.text = Str(x);
        break;
      case f::nccl_error::kAsync:
        if (Varint(x)) e.async = x.value != 0;
        break;
      default:
        break;
    }
  }
  ok = r.ok();
  if (ok) p.errors.push_back(std::move(e));
  return ok;
}

bool ImportCudaCall(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  return DecodeCudaCall(r, order, t, &p.cuda_calls);
}

bool ImportNcclNotSeen(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
  NcclNotSeenEvent e;
  e.order = order;
  e.t = t;
  while (r.Next(&x)) {
    switch (x.number) {
      case f::nccl_not_seen::kReason:
        if (Varint(x)) e.reason = static_cast<uint32_t>(x.value);
        break;
      case f::nccl_not_seen::kPath:
        if (Bytes(x)) e.path = Str(x);
        break;
      case f::nccl_not_seen::kCallsSeen:
        if (Varint(x)) e.calls_seen = x.value != 0;
        break;
      default:
        break;
    }
  }
  ok = r.ok();
  if (ok) p.not_seen.push_back(std::move(e));
  return ok;
}

}  // namespace

absl::Span<const BodyImporter> ForensicsImporters() {
  static constexpr BodyImporter kImporters[] = {
      {f::record::kSysCall, ImportSysCall},
      {f::record::kNcclError, ImportNcclError},
      {f::record::kCudaCall, ImportCudaCall},
      {f::record::kNcclNotSeen, ImportNcclNotSeen},
  };
  return kImporters;
}

}  // namespace ncclwatch::decoder::importing

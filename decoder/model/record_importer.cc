#include "model/record_importer.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "ncclwatch/trace_fields.h"
#include "trace/call_slot.h"
#include "trace/wire_reader.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;

// Field accessors that check the wire type as libprotobuf does: a field with
// a wire type other than its declared one is an unknown field, skipped.
bool Varint(const WireField& x) { return x.wire_type == 0; }
bool Fixed64(const WireField& x) { return x.wire_type == 1; }
bool Fixed32(const WireField& x) { return x.wire_type == 5; }
bool Bytes(const WireField& x) { return x.wire_type == 2; }

std::string Str(const WireField& x) { return std::string(x.AsString()); }

// A repeated sint32, packed (proto3's default) or not.
bool AppendSint32s(const WireField& x, std::vector<int32_t>* out) {
  if (Varint(x)) {
    out->push_back(x.Zigzag32());
    return true;
  }
  if (!Bytes(x)) return true;
  // A packed run: bare varints back to back.
  const uint8_t* p = x.bytes.data();
  const uint8_t* end = p + x.bytes.size();
  while (p < end) {
    uint64_t v;
    if (!ReadVarint(p, end, &v)) return false;
    out->push_back(ZigzagDecode32(v));
  }
  return true;
}

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

// A SocketActivity body: the count of its (kind, address, outcome), into
// the row of `out` that has it, or a new one; false when it is malformed.
bool DecodeSocketActivity(WireReader& r, uint64_t order, uint64_t t,
                          std::vector<SocketActivityEvent>* out) {
  namespace s = f::socket_activity;
  SocketActivityEvent e;
  e.order = order;
  e.t = t;
  WireField x;
  while (r.Next(&x)) {
    switch (x.number) {
      case s::kKind:
        if (Varint(x)) e.kind = static_cast<uint32_t>(x.value);
        break;
      case s::kAddr:
        if (Bytes(x)) e.addr = Str(x);
        break;
      case s::kErr:
        if (Varint(x)) e.err = x.Zigzag32();
        break;
      case s::kDeferred:
        if (Varint(x)) e.deferred = x.value != 0;
        break;
      case s::kCount:
        if (Varint(x)) e.count = x.value;
        break;
      case s::kFirstT:
        if (Varint(x)) e.first_t = x.value;
        break;
      case s::kLastT:
        if (Varint(x)) e.last_t = x.value;
        break;
      case s::kCaller:
        if (Fixed64(x)) e.caller = x.value;
        break;
      default:
        break;
    }
  }
  if (!r.ok()) return false;
  for (SocketActivityEvent& o : *out) {
    if (o.kind == e.kind && o.err == e.err && o.deferred == e.deferred && o.addr == e.addr) {
      // The latest count holds (records of one row come in time order; a
      // torn ring may hold an older one later: keep the larger).
      if (e.count >= o.count) {
        o.order = e.order;
        o.t = e.t;
        o.count = e.count;
        o.last_t = e.last_t;
      }
      if (e.first_t != 0 && (o.first_t == 0 || e.first_t < o.first_t)) o.first_t = e.first_t;
      return true;
    }
  }
  // A crafted trace could hold many: bounded as the shim's table is.
  if (out->size() < 4096) out->push_back(std::move(e));
  return true;
}

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

// The hottest records: a switch on the whole one-byte tag (field number
// and wire type at once), so a field of the declared type costs one
// comparison and one read. Any other tag (another wire type, a field a newer
// shim added) is skipped as libprotobuf skips unknown fields.
constexpr uint8_t Tag(uint32_t field, uint32_t wire_type) {
  return static_cast<uint8_t>(field << 3 | wire_type);
}

// One field of a collective, its tag just read: the value into `e`, or
// skipped when the tag is not one of ours. Inlined with a constant tag, the
// switch folds away.
__attribute__((always_inline)) inline bool CollectiveField(uint8_t tag, const uint8_t*& p,
                                                           const uint8_t* end, CollectiveEvent* e) {
  namespace c = f::collective;
  uint64_t v = 0;
  uint32_t w = 0;
  switch (tag) {
    case Tag(c::kResult, 5):
      if (!ReadFixed32(p, end, &w)) return false;
      e->result = static_cast<int32_t>(w);
      return true;
    case Tag(c::kComm, 1):
      return ReadFixed64(p, end, &e->comm);
    case Tag(c::kSeq, 0):
      return ReadVarint(p, end, &e->seq);
    case Tag(c::kCall, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->call = static_cast<uint32_t>(v);
      return true;
    case Tag(c::kCount, 0):
      return ReadVarint(p, end, &e->count);
    case Tag(c::kDatatype, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->datatype = ZigzagDecode32(v);
      return true;
    case Tag(c::kRedop, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->redop = ZigzagDecode32(v);
      return true;
    case Tag(c::kRoot, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->root = ZigzagDecode32(v);
      return true;
    case Tag(c::kStream, 1):
      return ReadFixed64(p, end, &e->stream);
    case Tag(c::kGroup, 0):
      return ReadVarint(p, end, &e->group);
    case Tag(c::kCaller, 1):
      return ReadFixed64(p, end, &e->caller);
    case Tag(c::kRank, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->rank = ZigzagDecode32(v);
      return true;
    default:  // sendbuff, recvbuff, and fields a newer shim added
      return (tag >> 3) != 0 && SkipValue(p, end, tag & 7);
  }
}

// The shim writes a collective's fields in ascending order, the optional
// ones (redop, root, group) only when set: read them in that order first,
// with one well-predicted comparison each, then whatever is left (another
// writer's order, unknown fields, a tag of several bytes) in any order.
bool DecodeCollective(absl::Span<const uint8_t> b, CollectiveEvent* e) {
  namespace c = f::collective;
  e->result = 0;
  e->rank = 0;
  const uint8_t* p = b.data();
  const uint8_t* const end = p + b.size();
  static constexpr uint8_t kInOrder[] = {
      Tag(c::kResult, 5), Tag(c::kComm, 1),     Tag(c::kSeq, 0),      Tag(c::kCall, 0),
      Tag(c::kCount, 0),  Tag(c::kDatatype, 0), Tag(c::kRedop, 0),    Tag(c::kRoot, 0),
      Tag(c::kStream, 1), Tag(c::kSendbuff, 1), Tag(c::kRecvbuff, 1), Tag(c::kGroup, 0),
      Tag(c::kCaller, 1), Tag(c::kRank, 0)};
  // Unrolled, so that each CollectiveField call gets a constant tag.
#pragma GCC unroll 16
  for (const uint8_t tag : kInOrder) {
    if (p < end && *p == tag) {
      ++p;
      if (!CollectiveField(tag, p, end, e)) return false;
    }
  }
  while (p < end) {
    const uint8_t tag = *p;
    if (tag & 0x80) {  // a tag of two or more bytes: not one of ours
      uint64_t long_tag;
      if (!ReadVarint(p, end, &long_tag) || (long_tag >> 3) == 0 ||
          !SkipValue(p, end, long_tag & 7)) {
        return false;
      }
      continue;
    }
    ++p;
    if (!CollectiveField(tag, p, end, e)) return false;
  }
  return true;
}

bool DecodeP2p(absl::Span<const uint8_t> b, P2pEvent* e) {
  namespace q = f::p2p;
  e->result = 0;
  e->rank = 0;
  e->peer = 0;
  const uint8_t* p = b.data();
  const uint8_t* const end = p + b.size();
  uint64_t v = 0;
  uint32_t w = 0;
  while (p < end) {
    const uint8_t tag = *p;
    if (tag & 0x80) {
      uint64_t long_tag;
      if (!ReadVarint(p, end, &long_tag) || (long_tag >> 3) == 0 ||
          !SkipValue(p, end, long_tag & 7))
        return false;
      continue;
    }
    ++p;
    bool ok;
    switch (tag) {
      case Tag(q::kResult, 5):
        ok = ReadFixed32(p, end, &w);
        e->result = static_cast<int32_t>(w);
        break;
      case Tag(q::kComm, 1):
        ok = ReadFixed64(p, end, &e->comm);
        break;
      case Tag(q::kSeq, 0):
        ok = ReadVarint(p, end, &e->seq);
        break;
      case Tag(q::kSend, 0):
        ok = ReadVarint(p, end, &v);
        e->send = v != 0;
        break;
      case Tag(q::kPeer, 0):
        ok = ReadVarint(p, end, &v);
        e->peer = ZigzagDecode32(v);
        break;
      case Tag(q::kCount, 0):
        ok = ReadVarint(p, end, &e->count);
        break;
      case Tag(q::kDatatype, 0):
        ok = ReadVarint(p, end, &v);
        e->datatype = ZigzagDecode32(v);
        break;
      case Tag(q::kStream, 1):
        ok = ReadFixed64(p, end, &e->stream);
        break;
      case Tag(q::kBuff, 1):
        ok = ReadFixed64(p, end, &v);
        break;
      case Tag(q::kGroup, 0):
        ok = ReadVarint(p, end, &e->group);
        break;
      case Tag(q::kCaller, 1):
        ok = ReadFixed64(p, end, &e->caller);
        break;
      case Tag(q::kRank, 0):
        ok = ReadVarint(p, end, &v);
        e->rank = ZigzagDecode32(v);
        break;
      default:
        ok = (tag >> 3) != 0 && SkipValue(p, end, tag & 7);
        break;
    }
    if (!ok) return false;
  }
  return true;
}

bool DecodeGroup(absl::Span<const uint8_t> b, GroupEvent* e) {
  e->result = 0;
  WireReader r(b);
  WireField x;
  while (r.Next(&x)) {
    switch (x.number) {
      case f::group::kResult:
        if (Fixed32(x)) e->result = x.AsInt32();
        break;
      case f::group::kCall:
        if (Varint(x)) e->call = static_cast<uint32_t>(x.value);
        break;
      case f::group::kGroup:
        if (Varint(x)) e->group = x.value;
        break;
      case f::group::kDepth:
        if (Varint(x)) e->depth = static_cast<uint32_t>(x.value);
        break;
      case f::group::kCaller:
        if (Fixed64(x)) e->caller = x.value;
        break;
      default:
        break;
    }
  }
  return r.ok();
}

bool DecodeApi(absl::Span<const uint8_t> b, ApiEvent* e, uint64_t* caller) {
  e->result = 0;
  WireReader r(b);
  WireField x;
  while (r.Next(&x)) {
    switch (x.number) {
      case f::api::kResult:
        if (Fixed32(x)) e->result = x.AsInt32();
        break;
      case f::api::kCall:
        if (Varint(x)) e->call = static_cast<uint32_t>(x.value);
        break;
      case f::api::kComm:
        if (Fixed64(x)) e->comm = x.value;
        break;
      case f::api::kValue:
        if (Varint(x)) e->value = x.Zigzag();
        break;
      case f::api::kCaller:
        if (Fixed64(x)) *caller = x.value;
        break;
      default:
        break;
    }
  }
  return r.ok();
}

}  // namespace

void RecordImporter::Finish() {
  // An exec that returned: the process lived on after the end its exec
  // wrote (the last end written counts).
  if (p_->end && p_->end->how == f::process_end::kHowExecFailed) p_->end.reset();
  SortAnchors(p_);
  streams_.Finish(p_);
}

bool RecordImporter::ImportCallSlot(uint8_t kind, absl::Span<const uint8_t> payload) {
  if (payload.size() != NCCLWATCH_SLOT_PAYLOAD_BYTES) return false;
  const ncclwatch_call_slot s = ReadCallSlot(payload);
  ProcessTrace& p = *p_;
  const uint64_t order = p.last_order + 1;
  const bool in_group = (s.flags & NCCLWATCH_CALL_IN_GROUP) != 0;
  // As the Record the slot stands for decodes (CallSlotToRecord): optional
  // fields absent when not set, proto3 defaults otherwise.
  if (kind == NCCLWATCH_SLOT_COLLECTIVE) {
    // Built whole from the slot, every field given, where the row lies.
    const CollectiveEvent& e =
        p.collectives.emplace_back(order, s.t, s.comm, s.seq, s.count, s.call, s.datatype,
                                   s.redop >= 0 ? s.redop : -1, s.root >= 0 ? s.root : -1, s.result,
                                   s.rank, s.stream, in_group ? s.group : 0, s.caller, s.thread);
    streams_.AddCollective(p.collectives.size() - 1, e);
  } else if (kind == NCCLWATCH_SLOT_P2P) {
    P2pEvent& e = p.p2p.emplace_back();
    e.order = order;
    e.t = s.t;
    e.result = s.result;
    e.comm = s.comm;
    e.seq = s.seq;
    e.send = s.call == f::kSend;
    e.peer = s.peer;
    e.count = s.count;
    e.datatype = s.datatype;
    e.stream = s.stream;
    e.group = in_group ? s.group : 0;
    e.caller = s.caller;
    e.rank = s.rank;
    streams_.AddP2p(p.p2p.size() - 1, e);
  } else if (kind == NCCLWATCH_SLOT_GROUP) {
    GroupEvent& e = p.groups.emplace_back();
    e.order = order;
    e.t = s.t;
    e.call = s.call;
    e.group = s.group;
    e.depth = s.depth;
    e.result = s.result;
    e.caller = s.caller;
  } else {
    return false;
  }
  p.last_order = order;
  if (s.t > p.last_t) p.last_t = s.t;
  return true;
}

bool RecordImporter::Import(absl::Span<const uint8_t> bytes) {
  // The envelope: time, thread, and one body (the last one wins, as for a
  // protobuf oneof).
  uint64_t t = 0;
  uint32_t thread = 0;
  uint32_t body_kind = 0;
  absl::Span<const uint8_t> body;
  {
    const uint8_t* q = bytes.data();
    const uint8_t* const end = q + bytes.size();
    // The shim writes t, then thread, then the body: take that order first.
    if (q < end && *q == 0x08) {
      ++q;
      if (!ReadVarint(q, end, &t)) return false;
      uint64_t v;
      if (q < end && *q == 0x10) {
        ++q;
        if (!ReadVarint(q, end, &v)) return false;
        thread = static_cast<uint32_t>(v);
      }
    }
    while (q < end) {
      uint64_t tag, v;
      if (!ReadVarint(q, end, &tag) || (tag >> 3) == 0 || tag > 0xffffffffu) return false;
      const uint32_t number = static_cast<uint32_t>(tag >> 3);
      const uint32_t wire_type = static_cast<uint32_t>(tag & 7);
      if (number == f::record::kT && wire_type == 0) {
        if (!ReadVarint(q, end, &t)) return false;
      } else if (number == f::record::kThread && wire_type == 0) {
        if (!ReadVarint(q, end, &v)) return false;
        thread = static_cast<uint32_t>(v);
      } else if (((number >= f::record::kProcessStart && number <= f::record::kLastBody) ||
                  number == f::record::kCudaCall || number == f::record::kNcclNotSeen ||
                  number == f::record::kSocketActivity) &&
                 wire_type == 2) {
        if (!ReadVarint(q, end, &v) || v > static_cast<uint64_t>(end - q)) return false;
        body_kind = number;
        body = absl::MakeConstSpan(q, static_cast<size_t>(v));
        q += v;
      } else if (!SkipValue(q, end, wire_type)) {
        return false;
      }
    }
  }
  ProcessTrace& p = *p_;
  const uint64_t order = p.last_order + 1;
  bool ok = true;
  if (body_kind == f::record::kCollective) {  // the common case first
    // Copied from a blank row: plain moves, where value-initialising the row
    // in place compiles to a slow `rep stos`.
    static const CollectiveEvent kBlank{};
    CollectiveEvent& e = p.collectives.emplace_back(kBlank);
    e.order = order;
    e.t = t;
    e.thread = thread;
    ok = DecodeCollective(body, &e);
    if (!ok) {
      p.collectives.pop_back();
      return false;
    }
    streams_.AddCollective(p.collectives.size() - 1, e);
    p.last_order = order;
    if (t > p.last_t) p.last_t = t;
    return true;
  }
  WireReader r(body);
  WireField x;
  switch (body_kind) {
    case f::record::kP2p: {
      P2pEvent& e = p.p2p.emplace_back();
      e.order = order;
      e.t = t;
      ok = DecodeP2p(body, &e);
      if (ok) {
        streams_.AddP2p(p.p2p.size() - 1, e);
      } else {
        p.p2p.pop_back();
      }
      break;
    }
    case f::record::kGroup: {
      GroupEvent e;
      e.order = order;
      e.t = t;
      ok = DecodeGroup(body, &e);
      if (ok) p.groups.push_back(e);
      break;
    }
    case f::record::kApi: {
      ApiEvent e;
      e.order = order;
      e.t = t;
      uint64_t caller = 0;
      ok = DecodeApi(body, &e, &caller);
      if (ok) {
        p.apis.push_back(e);
        if (e.call == f::kGetVersion && e.result == kNcclSuccess)
          p.nccl_version = static_cast<int32_t>(e.value);
      }
      break;
    }
    case f::record::kProcessStart: {
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
        p.traced_from = s.traced_from;
      }
      break;
    }
    case f::record::kProcessEnd: {
      ProcessEndEvent e{order, t, 0, 0};
      while (r.Next(&x)) {
        if (x.number == f::process_end::kHow && Varint(x)) e.how = static_cast<uint32_t>(x.value);
        if (x.number == f::process_end::kExitCode && Varint(x)) e.exit_code = x.Zigzag32();
      }
      ok = r.ok();
      if (ok) p.end = e;
      break;
    }
    case f::record::kTimeAnchor: {
      TimeAnchorEvent a;
      while (r.Next(&x)) {
        if (!Varint(x)) continue;
        if (x.number == f::time_anchor::kT) a.t = x.value;
        if (x.number == f::time_anchor::kMonotonicNs) a.monotonic_ns = x.value;
        if (x.number == f::time_anchor::kRealtimeNs) a.realtime_ns = x.value;
      }
      ok = r.ok();
      if (ok) p.anchors.push_back(a);
      break;
    }
    case f::record::kModule: {
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
      break;
    }
    case f::record::kCommInitBegin: {
      CommMembership m;
      m.rank = m.nranks = m.begin_device = 0;
      while (r.Next(&x)) {
        switch (x.number) {
          case f::comm_init_begin::kComm:
            if (Fixed64(x)) m.comm = x.value;
            break;
          case f::comm_init_begin::kCall:
            if (Varint(x)) m.init_call = static_cast<uint32_t>(x.value);
            break;
          case f::comm_init_begin::kNranks:
            if (Varint(x)) m.nranks = x.Zigzag32();
            break;
          case f::comm_init_begin::kRank:
            if (Varint(x)) m.rank = x.Zigzag32();
            break;
          case f::comm_init_begin::kParent:
            if (Fixed64(x)) m.parent = x.value;
            break;
          case f::comm_init_begin::kColor:
            if (Varint(x)) m.color = x.Zigzag32();
            break;
          case f::comm_init_begin::kKey:
            if (Varint(x)) m.key = x.Zigzag32();
            break;
          case f::comm_init_begin::kSplitIndex:
            if (Varint(x)) m.split_index = static_cast<uint32_t>(x.value);
            break;
          case f::comm_init_begin::kExcluded:
            if (!AppendSint32s(x, &m.excluded)) ok = false;
            break;
          case f::comm_init_begin::kCaller:
            if (Fixed64(x)) m.caller = x.value;
            break;
          case f::comm_init_begin::kDevice:
            if (Varint(x)) m.begin_device = x.Zigzag32();
            break;
          case f::comm_init_begin::kBusId:
            if (Bytes(x)) m.bus_id = Str(x);
            break;
          default:
            break;
        }
      }
      ok = ok && r.ok();
      if (ok) {
        m.init_t = t;
        m.init_order = order;
        p.comms.push_back(std::move(m));
      }
      break;
    }
    case f::record::kCommInitEnd: {
      uint64_t comm = 0, handle = 0;
      int32_t result = 0, rank = 0, device = 0, nranks = 0;
      while (r.Next(&x)) {
        switch (x.number) {
          case f::comm_init_end::kComm:
            if (Fixed64(x)) comm = x.value;
            break;
          case f::comm_init_end::kResult:
            if (Fixed32(x)) result = x.AsInt32();
            break;
          case f::comm_init_end::kHandle:
            if (Fixed64(x)) handle = x.value;
            break;
          case f::comm_init_end::kRank:
            if (Varint(x)) rank = x.Zigzag32();
            break;
          case f::comm_init_end::kDevice:
            if (Varint(x)) device = x.Zigzag32();
            break;
          case f::comm_init_end::kNranks:
            if (Varint(x)) nranks = x.Zigzag32();
            break;
          default:
            break;
        }
      }
      ok = r.ok();
      if (!ok) break;
      // The earliest begin of this identity still waiting for its end (for
      // ncclCommInitAll, the one with this rank).
      for (CommMembership& m : p.comms) {
        if (m.comm == comm && !m.init_returned && (m.rank == rank || m.rank < 0 || rank < 0)) {
          m.init_returned = true;
          m.init_result = result;
          m.handle = handle;
          if (rank >= 0) m.rank = rank;
          if (nranks > 0) m.nranks = nranks;
          m.device = device;
          break;
        }
      }
      break;
    }
    case f::record::kCommEnd: {
      uint64_t comm = 0, handle = 0;
      uint32_t call = 0;
      int32_t result = 0;
      while (r.Next(&x)) {
        switch (x.number) {
          case f::comm_end::kComm:
            if (Fixed64(x)) comm = x.value;
            break;
          case f::comm_end::kHandle:
            if (Fixed64(x)) handle = x.value;
            break;
          case f::comm_end::kCall:
            if (Varint(x)) call = static_cast<uint32_t>(x.value);
            break;
          case f::comm_end::kResult:
            if (Fixed32(x)) result = x.AsInt32();
            break;
          default:
            break;
        }
      }
      ok = r.ok();
      if (!ok) break;
      for (auto it = p.comms.rbegin(); it != p.comms.rend(); ++it) {
        if ((handle != 0 && it->handle == handle) ||
            (comm != 0 && it->comm == comm && it->handle == 0)) {
          it->end_call = call;
          it->end_result = result;
          it->end_t = t;
          it->end_order = order;
          break;
        }
      }
      break;
    }
    case f::record::kFatalSignal: {
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
      break;
    }
    case f::record::kSysCall: {
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
            if (Bytes(x))
              e.addr = x.bytes.empty() ? std::nullopt : ParseSocketAddress(x.AsString());
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
      break;
    }
    case f::record::kNcclError: {
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
      break;
    }
    case f::record::kNcclNotSeen: {
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
      break;
    }
    case f::record::kCompletionTracking: {
      CompletionTrackingEvent e{order, t};
      while (r.Next(&x)) {
        switch (x.number) {
          case f::completion_tracking::kComm:
            if (Fixed64(x)) e.comm = x.value;
            break;
          case f::completion_tracking::kMechanism:
            if (Varint(x)) e.mechanism = static_cast<uint32_t>(x.value);
            break;
          case f::completion_tracking::kWhyNot:
            if (Bytes(x)) e.why_not = Str(x);
            break;
          case f::completion_tracking::kMarkers:
            if (Varint(x)) e.markers = static_cast<uint32_t>(x.value);
            break;
          case f::completion_tracking::kDevice:
            if (Varint(x)) e.device = x.Zigzag32();
            break;
          default:
            break;
        }
      }
      ok = r.ok();
      if (ok) p.tracking.push_back(std::move(e));
      break;
    }
    case f::record::kProgress: {
      ProgressEvent e{order, t};
      while (r.Next(&x)) {
        switch (x.number) {
          case f::progress::kComm:
            if (Fixed64(x)) e.comm = x.value;
            break;
          case f::progress::kCollectives:
            if (Varint(x)) e.collectives = x.value;
            break;
          case f::progress::kEnqueuedT:
            if (Varint(x)) e.enqueued_t = x.value;
            break;
          case f::progress::kPending:
            if (Varint(x)) e.pending = static_cast<uint32_t>(x.value);
            break;
          case f::progress::kIssued:
            if (Varint(x)) e.issued = x.value;
            break;
          default:
            break;
        }
      }
      ok = r.ok();
      if (ok) p.progress.push_back(e);
      break;
    }
    case f::record::kHeartbeat: {
      uint64_t beat = 0;
      uint32_t interval = 0;
      while (r.Next(&x)) {
        if (x.number == f::heartbeat::kBeat && Varint(x)) beat = x.value;
        if (x.number == f::heartbeat::kIntervalMs && Varint(x))
          interval = static_cast<uint32_t>(x.value);
      }
      ok = r.ok();
      if (ok) {
        Liveness& l = p.liveness;
        if (l.beats == 0 || t < l.first_t) l.first_t = t;
        if (l.beats == 0 || t >= l.last_t) {
          l.last_t = t;
          l.interval_ms = interval;
        }
        l.last_beat = std::max(l.last_beat, beat);
        ++l.beats;
      }
      break;
    }
    case f::record::kStall: {
      StallEvent e{order, t};
      while (r.Next(&x)) {
        switch (x.number) {
          case f::stall::kComm:
            if (Fixed64(x)) e.comm = x.value;
            break;
          case f::stall::kCall:
            if (Varint(x)) e.call = static_cast<uint32_t>(x.value);
            break;
          case f::stall::kSeq:
            if (Varint(x)) e.seq = x.value;
            break;
          case f::stall::kPeer:
            if (Varint(x)) e.peer = x.Zigzag32();
            break;
          case f::stall::kSend:
            if (Varint(x)) e.send = x.value != 0;
            break;
          case f::stall::kWaitedMs:
            if (Varint(x)) e.waited_ms = x.value;
            break;
          case f::stall::kCompleted:
            if (Varint(x)) e.completed = x.value;
            break;
          case f::stall::kPending:
            if (Varint(x)) e.pending = static_cast<uint32_t>(x.value);
            break;
          case f::stall::kGroupOps:
            if (Varint(x)) e.group_ops = static_cast<uint32_t>(x.value);
            break;
          case f::stall::kRank:
            if (Varint(x)) e.rank = x.Zigzag32();
            break;
          case f::stall::kNranks:
            if (Varint(x)) e.nranks = x.Zigzag32();
            break;
          default:
            break;
        }
      }
      ok = r.ok();
      if (ok) p.stalls.push_back(e);
      break;
    }
    case f::record::kCudaError: {
      CudaErrorEvent e{order, t};
      while (r.Next(&x)) {
        switch (x.number) {
          case f::cuda_error::kComm:
            if (Fixed64(x)) e.comm = x.value;
            break;
          case f::cuda_error::kResult:
            if (Varint(x)) e.result = x.Zigzag32();
            break;
          case f::cuda_error::kName:
            if (Bytes(x)) e.name = Str(x);
            break;
          case f::cuda_error::kText:
            if (Bytes(x)) e.text = Str(x);
            break;
          case f::cuda_error::kDevice:
            if (Varint(x)) e.device = x.Zigzag32();
            break;
          case f::cuda_error::kWhere:
            if (Varint(x)) e.where = static_cast<uint32_t>(x.value);
            break;
          case f::cuda_error::kSeq:
            if (Varint(x)) e.seq = x.value;
            break;
          default:
            break;
        }
      }
      ok = r.ok();
      if (ok) p.cuda_errors.push_back(std::move(e));
      break;
    }
    case f::record::kUntracked: {
      UntrackedEvent e{order, t};
      while (r.Next(&x)) {
        switch (x.number) {
          case f::untracked::kComm:
            if (Fixed64(x)) e.comm = x.value;
            break;
          case f::untracked::kCall:
            if (Varint(x)) e.call = static_cast<uint32_t>(x.value);
            break;
          case f::untracked::kSeq:
            if (Varint(x)) e.seq = x.value;
            break;
          case f::untracked::kReason:
            if (Varint(x)) e.reason = static_cast<uint32_t>(x.value);
            break;
          default:
            break;
        }
      }
      ok = r.ok();
      if (ok) p.untracked.push_back(e);
      break;
    }
    case f::record::kInventory: {
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
          case f::inventory::kAtLoad:
            if (Varint(x)) v.at_load = x.value != 0;
            break;
          default:
            break;
        }
      }
      ok = ok && r.ok();
      // The whole inventory of the first NCCL init holds over the one
      // written at NCCL's load, whichever the file holds first.
      if (ok && !(v.at_load && p.inventory.present && !p.inventory.at_load)) {
        if (p.nccl_version == 0) p.nccl_version = v.nccl_version;
        p.inventory = std::move(v);
      }
      break;
    }
    case f::record::kSocketActivity:
      ok = DecodeSocketActivity(r, order, t, &p.socket_activity);
      break;
    case f::record::kCudaCall:
      ok = DecodeCudaCall(r, order, t, &p.cuda_calls);
      break;
    default:
      break;  // no body, or one this version does not know: skipped, as the schema allows
  }
  if (!ok) return false;
  p.last_order = order;
  if (t > p.last_t) p.last_t = t;
  return true;
}

}  // namespace ncclwatch::decoder

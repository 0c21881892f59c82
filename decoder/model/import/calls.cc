// The calls: collectives, sends and receives, group calls and every other
// NCCL entry point (trace.proto Collective, PointToPoint, Group, ApiCall),
// decoded from protobuf. The same calls written as call slots are read by
// call_slot_import.h. Collectives and point-to-point calls go to the stream
// builder as their rows are added.

#include <cstdint>

#include "model/import/body_importer.h"
#include "model/import/collective_import.h"
#include "model/import/wire_fields.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::importing {
namespace {

namespace f = ::ncclwatch::fields;
using collective_internal::Tag;  // a one-byte tag: field number and wire type

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

bool ImportP2p(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  bool ok = true;
  p.MakeRoom(p.p2p);
  P2pEvent& e = p.p2p.emplace_back();
  e.order = order;
  e.t = t;
  ok = DecodeP2p(body, &e);
  if (ok) {
    c.streams->AddP2p(p.p2p.size() - 1, e);
  } else {
    p.p2p.pop_back();
  }
  return ok;
}

bool ImportGroup(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  bool ok = true;
  GroupEvent e;
  e.order = order;
  e.t = t;
  ok = DecodeGroup(body, &e);
  if (ok) {
    p.MakeRoom(p.groups);
    p.groups.push_back(e);
  }
  return ok;
}

bool ImportApi(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  bool ok = true;
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
  return ok;
}

// A one-sided put, signal or wait (NCCL 2.29, trace.proto OneSided).
bool ImportOneSided(ImportContext& c, absl::Span<const uint8_t> body) {
  namespace o = f::one_sided;
  OneSidedEvent e;
  e.order = c.order;
  e.t = c.t;
  WireReader r(body);
  WireField x;
  while (r.Next(&x)) {
    switch (x.number) {
      case o::kResult:
        if (Fixed32(x)) e.result = x.AsInt32();
        break;
      case o::kComm:
        if (Fixed64(x)) e.comm = x.value;
        break;
      case o::kRank:
        if (Varint(x)) e.rank = x.Zigzag32();
        break;
      case o::kCall:
        if (Varint(x)) e.call = static_cast<uint32_t>(x.value);
        break;
      case o::kPeer:
        if (Varint(x)) e.peer = x.Zigzag32();
        break;
      case o::kSeq:
        if (Varint(x)) e.seq = x.value;
        break;
      case o::kCount:
        if (Varint(x)) e.count = x.value;
        break;
      case o::kDatatype:
        if (Varint(x)) e.datatype = x.Zigzag32();
        break;
      case o::kCaller:
        if (Fixed64(x)) e.caller = x.value;
        break;
      case o::kWaits: {
        if (!Bytes(x)) break;
        OneSidedEvent::Wait w;
        WireReader wr(x.bytes);
        WireField y;
        while (wr.Next(&y)) {
          if (y.number == o::wait::kPeer && Varint(y)) w.peer = y.Zigzag32();
          if (y.number == o::wait::kOpCnt && Varint(y)) w.op_cnt = y.Zigzag32();
          if (y.number == o::wait::kSeq && Varint(y)) w.seq = y.value;
        }
        if (!wr.ok()) return false;
        e.waits.push_back(w);
        break;
      }
      default:
        break;
    }
  }
  if (!r.ok()) return false;
  c.trace->one_sided.push_back(std::move(e));
  return true;
}

// A Config collective's per-call config (NCCL 2.31, trace.proto
// CollConfig): checked to be well-formed; what it asked for is read by
// `ncclwatch dump`, no analysis uses it yet.
bool ImportCollConfig(ImportContext&, absl::Span<const uint8_t> body) {
  WireReader r(body);
  WireField x;
  while (r.Next(&x)) {
  }
  return r.ok();
}

}  // namespace

absl::Span<const BodyImporter> CallImporters() {
  static constexpr BodyImporter kImporters[] = {
      {f::record::kCollective, ImportCollective}, {f::record::kP2p, ImportP2p},
      {f::record::kGroup, ImportGroup},           {f::record::kApi, ImportApi},
      {f::record::kOneSided, ImportOneSided},     {f::record::kCollConfig, ImportCollConfig},
  };
  return kImporters;
}

}  // namespace ncclwatch::decoder::importing

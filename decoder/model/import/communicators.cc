// Communicators: an init or split begun and returned (one membership per
// communicator rank the process holds) and its end (finalize, destroy,
// abort, revoke), matched to its membership by handle or identity.

#include <utility>
#include <vector>

#include "model/import/body_importer.h"
#include "model/import/wire_fields.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::importing {
namespace {

namespace f = ::ncclwatch::fields;

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
bool ImportCommInitBegin(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
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
      case f::comm_init_begin::kGrowId:
        if (Fixed64(x)) m.grow_id = x.value;
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
  return ok;
}

bool ImportCommInitEnd(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  WireReader r(body);
  WireField x;
  bool ok = true;
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
  if (!ok) return false;
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
  return ok;
}

bool ImportCommEnd(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
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
  if (!ok) return false;
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
  return ok;
}

}  // namespace

absl::Span<const BodyImporter> CommunicatorImporters() {
  static constexpr BodyImporter kImporters[] = {
      {f::record::kCommInitBegin, ImportCommInitBegin},
      {f::record::kCommInitEnd, ImportCommInitEnd},
      {f::record::kCommEnd, ImportCommEnd},
  };
  return kImporters;
}

}  // namespace ncclwatch::decoder::importing

// Before NCCL: the rendezvous's sockets (SocketActivity), counted by the
// shim from NCCL's load to the process's first NCCL call
// (shim/core/rendezvous_sockets.h), one row per (kind, address, outcome).

#include <string>
#include <utility>

#include "model/import/body_importer.h"
#include "model/import/wire_fields.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::importing {
namespace {

namespace f = ::ncclwatch::fields;

// A body into the row of its (kind, address, outcome), or a new one: the
// latest count holds.
bool ImportSocketActivity(ImportContext& c, absl::Span<const uint8_t> body) {
  namespace s = f::socket_activity;
  std::vector<SocketActivityEvent>& out = c.trace->socket_activity;
  SocketActivityEvent e;
  e.order = c.order;
  e.t = c.t;
  WireReader r(body);
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
  for (SocketActivityEvent& o : out) {
    if (o.kind == e.kind && o.err == e.err && o.deferred == e.deferred && o.addr == e.addr) {
      // Records of one row come in time order; a torn ring may hold an older
      // one later: the larger count holds.
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
  // A crafted trace could hold many: bounded, as the shim's table is.
  if (out.size() < 4096) out.push_back(std::move(e));
  return true;
}

}  // namespace

absl::Span<const BodyImporter> RendezvousImporters() {
  static constexpr BodyImporter kImporters[] = {
      {f::record::kSocketActivity, ImportSocketActivity},
  };
  return kImporters;
}

}  // namespace ncclwatch::decoder::importing

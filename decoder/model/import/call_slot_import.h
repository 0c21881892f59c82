// The calls written as call slots (ring_format.h, format 2 on): the
// collectives, sends and receives and group calls the shim stores as a
// fixed-layout struct, read straight into the rows the protobuf records
// they stand for become (calls.cc): optional fields absent when not set,
// proto3 defaults otherwise, as CallSlotToRecord (trace/call_slot.h) would
// convert them. Inline: every call of a trace goes through here.
//
// Thread-safety: as the importers' (model/import/body_importer.h).

#ifndef NCCLWATCH_DECODER_MODEL_IMPORT_CALL_SLOT_IMPORT_H_
#define NCCLWATCH_DECODER_MODEL_IMPORT_CALL_SLOT_IMPORT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/types/span.h"
#include "model/process_trace.h"
#include "model/stream_builder.h"
#include "ncclwatch/ring_format.h"
#include "ncclwatch/trace_fields.h"
#include "trace/call_slot.h"

namespace ncclwatch::decoder::importing {

// A call slot's fields, each read on its own from the payload with a load of
// its own size. Not the whole struct at once: a summary's reader has just
// written the payload 8 bytes at a time (summary/summary_reader.cc), and a
// 16-byte load over two such stores cannot be forwarded from them, a stall
// of tens of cycles on every call.
struct CallSlotFields {
  explicit CallSlotFields(const uint8_t* d)
      : t(Get<uint64_t>(d, offsetof(ncclwatch_call_slot, t))),
        result(Get<int32_t>(d, offsetof(ncclwatch_call_slot, result))),
        thread(Get<uint32_t>(d, offsetof(ncclwatch_call_slot, thread))),
        comm(Get<uint64_t>(d, offsetof(ncclwatch_call_slot, comm))),
        seq(Get<uint64_t>(d, offsetof(ncclwatch_call_slot, seq))),
        count(Get<uint64_t>(d, offsetof(ncclwatch_call_slot, count))),
        stream(Get<uint64_t>(d, offsetof(ncclwatch_call_slot, stream))),
        group(Get<uint64_t>(d, offsetof(ncclwatch_call_slot, group))),
        caller(Get<uint64_t>(d, offsetof(ncclwatch_call_slot, caller))),
        call(Get<uint32_t>(d, offsetof(ncclwatch_call_slot, call))),
        datatype(Get<int32_t>(d, offsetof(ncclwatch_call_slot, datatype))),
        redop(Get<int32_t>(d, offsetof(ncclwatch_call_slot, redop))),
        root(Get<int32_t>(d, offsetof(ncclwatch_call_slot, root))),
        peer(Get<int32_t>(d, offsetof(ncclwatch_call_slot, peer))),
        rank(Get<int32_t>(d, offsetof(ncclwatch_call_slot, rank))),
        depth(Get<uint32_t>(d, offsetof(ncclwatch_call_slot, depth))),
        flags(Get<uint32_t>(d, offsetof(ncclwatch_call_slot, flags))) {}

  template <typename T>
  static T Get(const uint8_t* d, size_t offset) {
    T v;
    std::memcpy(&v, d + offset, sizeof(v));
    return v;
  }

  uint64_t t;
  int32_t result;
  uint32_t thread;
  uint64_t comm, seq, count, stream, group, caller;
  uint32_t call;
  int32_t datatype, redop, root, peer, rank;
  uint32_t depth, flags;
};

// A call slot (TraceFile::ForEachEntry's kind and its 112-byte payload)
// into the table its kind names; false for a kind that is not a call slot's
// or a payload of the wrong size.
inline bool ImportCallSlot(uint8_t kind, absl::Span<const uint8_t> payload, ProcessTrace& p,
                           StreamBuilder& streams) {
  if (payload.size() != NCCLWATCH_SLOT_PAYLOAD_BYTES) return false;
  const CallSlotFields s(payload.data());
  const uint64_t order = p.last_order + 1;
  const bool in_group = (s.flags & NCCLWATCH_CALL_IN_GROUP) != 0;
  if (kind == NCCLWATCH_SLOT_COLLECTIVE) {
    p.MakeRoom(p.collectives);
    // Built whole from the slot, every field given, where the row lies.
    const CollectiveEvent& e =
        p.collectives.emplace_back(order, s.t, s.comm, s.seq, s.count, s.call, s.datatype,
                                   s.redop >= 0 ? s.redop : -1, s.root >= 0 ? s.root : -1, s.result,
                                   s.rank, s.stream, in_group ? s.group : 0, s.caller, s.thread);
    streams.AddCollective(p.collectives.size() - 1, e);
  } else if (kind == NCCLWATCH_SLOT_P2P) {
    p.MakeRoom(p.p2p);
    P2pEvent& e = p.p2p.emplace_back();
    e.order = order;
    e.t = s.t;
    e.result = s.result;
    e.comm = s.comm;
    e.seq = s.seq;
    e.send = s.call == ::ncclwatch::fields::kSend;
    e.peer = s.peer;
    e.count = s.count;
    e.datatype = s.datatype;
    e.stream = s.stream;
    e.group = in_group ? s.group : 0;
    e.caller = s.caller;
    e.rank = s.rank;
    streams.AddP2p(p.p2p.size() - 1, e);
  } else if (kind == NCCLWATCH_SLOT_GROUP) {
    p.MakeRoom(p.groups);
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

}  // namespace ncclwatch::decoder::importing

#endif  // NCCLWATCH_DECODER_MODEL_IMPORT_CALL_SLOT_IMPORT_H_

// Call slots (ring_format.h, format 2): the fixed-layout slot the shim writes
// for its hottest records, read back as hostile input.
//
// A call slot stands for one trace.proto Record whose body the slot's kind
// names (collective, p2p, group). CallSlotToRecord writes that Record in the
// protobuf wire format, field for field what the shim's protobuf path wrote
// in format 1 (optional fields only when set), for readers that want
// protobuf (`ncclwatch dump`, libprotobuf in the tests); the model's importer
// reads the struct directly (RecordImporter::ImportCallSlot) and must agree
// with what libprotobuf makes of the conversion: tests/unit/process_model_test.cc
// checks both on random and extreme values.
//
// Every bit pattern is a valid call slot: nothing here trusts a value.
//
// Thread-safety: pure functions.

#ifndef NCCLWATCH_DECODER_TRACE_CALL_SLOT_H_
#define NCCLWATCH_DECODER_TRACE_CALL_SLOT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/types/span.h"
#include "ncclwatch/ring_format.h"
#include "ncclwatch/trace_fields.h"
#include "ncclwatch/wire_writer.h"

namespace ncclwatch::decoder {

// The largest Record a call slot becomes (a collective with every varint at
// its longest is ~150 bytes).
inline constexpr size_t kCallSlotRecordMax = 256;

inline bool IsCallSlotKind(uint8_t kind) {
  return kind == NCCLWATCH_SLOT_COLLECTIVE || kind == NCCLWATCH_SLOT_P2P ||
         kind == NCCLWATCH_SLOT_GROUP;
}

// The struct from a slot's payload (which must be NCCLWATCH_SLOT_PAYLOAD_BYTES
// long), copied: the payload need not be aligned.
inline ncclwatch_call_slot ReadCallSlot(absl::Span<const uint8_t> payload) {
  ncclwatch_call_slot s;
  static_assert(sizeof(s) == NCCLWATCH_SLOT_PAYLOAD_BYTES);
  std::memcpy(&s, payload.data(), sizeof(s));
  return s;
}

// The Record the slot stands for, into `out` (kCallSlotRecordMax bytes);
// returns its length (0 for a kind that is not a call slot's).
inline size_t CallSlotToRecord(uint8_t kind, const ncclwatch_call_slot& s, uint8_t* out) {
  namespace f = ::ncclwatch::fields;
  wire::WireWriter w(out, kCallSlotRecordMax);
  w.Varint(f::record::kT, s.t);
  w.Varint(f::record::kThread, s.thread);
  const bool in_group = (s.flags & NCCLWATCH_CALL_IN_GROUP) != 0;
  if (kind == NCCLWATCH_SLOT_COLLECTIVE) {
    namespace k = f::collective;
    const size_t body = w.BeginMessage(f::record::kCollective);
    w.Fixed32(k::kResult, static_cast<uint32_t>(s.result));
    w.Fixed64(k::kComm, s.comm);
    w.Varint(k::kSeq, s.seq);
    w.Varint(k::kCall, s.call);
    w.Varint(k::kCount, s.count);
    w.Sint(k::kDatatype, s.datatype);
    if (s.redop >= 0) w.Sint(k::kRedop, s.redop);
    if (s.root >= 0) w.Sint(k::kRoot, s.root);
    w.Fixed64(k::kStream, s.stream);
    w.Fixed64(k::kSendbuff, s.sendbuff);
    w.Fixed64(k::kRecvbuff, s.recvbuff);
    if (in_group) w.Varint(k::kGroup, s.group);
    w.Fixed64(k::kCaller, s.caller);
    w.Sint(k::kRank, s.rank);
    w.EndMessage(body);
  } else if (kind == NCCLWATCH_SLOT_P2P) {
    namespace k = f::p2p;
    const size_t body = w.BeginMessage(f::record::kP2p);
    w.Fixed32(k::kResult, static_cast<uint32_t>(s.result));
    w.Fixed64(k::kComm, s.comm);
    w.Varint(k::kSeq, s.seq);
    w.Varint(k::kSend, s.call == f::kSend ? 1 : 0);
    w.Sint(k::kPeer, s.peer);
    w.Varint(k::kCount, s.count);
    w.Sint(k::kDatatype, s.datatype);
    w.Fixed64(k::kStream, s.stream);
    w.Fixed64(k::kBuff, s.sendbuff);
    if (in_group) w.Varint(k::kGroup, s.group);
    w.Fixed64(k::kCaller, s.caller);
    w.Sint(k::kRank, s.rank);
    w.EndMessage(body);
  } else if (kind == NCCLWATCH_SLOT_GROUP) {
    namespace k = f::group;
    const size_t body = w.BeginMessage(f::record::kGroup);
    w.Fixed32(k::kResult, static_cast<uint32_t>(s.result));
    w.Varint(k::kCall, s.call);
    w.Varint(k::kGroup, s.group);
    w.Varint(k::kDepth, s.depth);
    w.Fixed64(k::kCaller, s.caller);
    w.EndMessage(body);
  } else {
    return 0;
  }
  return w.ok() ? w.size() : 0;
}

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_CALL_SLOT_H_

// GPU-time slots (ring_format.h, format 4): the fixed-layout slot the shim's
// watcher writes for each GpuTime record, read back as hostile input.
//
// A GPU-time slot stands for one trace.proto Record whose body is a GpuTime.
// GpuTimeSlotToRecord writes that Record in the protobuf wire format, the
// fields the watcher's protobuf path wrote up to format 3 (comm, call, seq
// and collectives always; the others when not 0, proto3's absent), for
// readers that want protobuf (`ncclwatch dump`, a summary's kept records,
// libprotobuf in the tests). The model's importer reads the struct directly
// (RecordImporter::ImportGpuTimeSlot) and must agree with what libprotobuf
// makes of the conversion: tests/unit/process_model_test.cc checks both.
//
// Every bit pattern is a valid GPU-time slot: nothing here trusts a value
// (the reserved bytes are not read).
//
// Thread-safety: pure functions.

#ifndef NCCLWATCH_DECODER_TRACE_GPU_TIME_SLOT_H_
#define NCCLWATCH_DECODER_TRACE_GPU_TIME_SLOT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/types/span.h"
#include "ncclwatch/ring_format.h"
#include "ncclwatch/trace_fields.h"
#include "ncclwatch/wire_writer.h"

namespace ncclwatch::decoder {

// The largest Record a GPU-time slot becomes (every varint at its longest:
// ~120 bytes).
inline constexpr size_t kGpuTimeSlotRecordMax = 160;

// The struct from a slot's payload (which must be NCCLWATCH_SLOT_PAYLOAD_BYTES
// long), copied: the payload need not be aligned.
inline ncclwatch_gpu_time_slot ReadGpuTimeSlot(absl::Span<const uint8_t> payload) {
  ncclwatch_gpu_time_slot s;
  static_assert(sizeof(s) == NCCLWATCH_SLOT_PAYLOAD_BYTES);
  std::memcpy(&s, payload.data(), sizeof(s));
  return s;
}

// The slot's communicator alone (what a reader that counts GPU times by
// communicator needs), from a payload of NCCLWATCH_SLOT_PAYLOAD_BYTES.
inline uint64_t GpuTimeSlotComm(absl::Span<const uint8_t> payload) {
  uint64_t comm;
  std::memcpy(&comm, payload.data() + offsetof(ncclwatch_gpu_time_slot, comm), sizeof(comm));
  return comm;
}

// The Record the slot stands for, into `out` (kGpuTimeSlotRecordMax bytes);
// returns its length.
inline size_t GpuTimeSlotToRecord(const ncclwatch_gpu_time_slot& s, uint8_t* out) {
  namespace f = ::ncclwatch::fields;
  namespace k = f::gpu_time;
  wire::WireWriter w(out, kGpuTimeSlotRecordMax);
  w.Varint(f::record::kT, s.t);
  w.Varint(f::record::kThread, s.thread);
  const size_t body = w.BeginMessage(f::record::kGpuTime);
  w.Fixed64(k::kComm, s.comm);
  w.Varint(k::kCall, s.call);
  w.Varint(k::kSeq, s.seq);
  w.Varint(k::kCollectives, s.collectives);
  if (s.group_ops != 0) w.Varint(k::kGroupOps, s.group_ops);
  if (s.begin_ns != 0) w.Varint(k::kBeginNs, s.begin_ns);
  if (s.end_ns != 0) w.Varint(k::kEndNs, s.end_ns);
  if (s.gpu_ns != 0) w.Varint(k::kGpuNs, s.gpu_ns);
  if (s.anchor_error_ns != 0) w.Varint(k::kAnchorErrorNs, s.anchor_error_ns);
  w.EndMessage(body);
  return w.ok() ? w.size() : 0;
}

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_GPU_TIME_SLOT_H_

// RecordBuilder: encodes one trace.proto Record on the stack and appends it.
//
// HOT PATH: allocates nothing, takes no lock, makes no system call, is
// async-signal-safe, and leaves errno as it was (nothing here can set it).
//
//   RecordBuilder<> r(fields::record::kCommEnd);
//   r.PendingResult(fields::comm_end::kResult);   // first, so it is cheap to find
//   r.w().Fixed64(fields::comm_end::kComm, id);
//   ...
//   CallRecord call = r.Append(Region::kPinned);
//   ... the real call ...
//   call.Finish(result);                          // patches the result in place
//
// RecordBuilder encodes on the stack and copies into the ring (any region,
// any size: identity, modules, communicator creation and end, errors, the
// watcher's records); AppendRingRecord, below, encodes straight into a ring
// slot (API calls, successful CUDA calls); AppendCallSlot stores the
// hottest ones (collectives, point-to-point, groups) as a fixed-layout call
// slot, with no encoding at all, and AppendGpuTimeSlot, last, the watcher's
// GPU times as a GPU-time slot.
//
// Writing the record before the call and its result after means a trace
// shows a call the process never returned from as entered and pending.

#ifndef NCCLWATCH_SHIM_CORE_RECORD_BUILDER_H_
#define NCCLWATCH_SHIM_CORE_RECORD_BUILDER_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/tracer.h"
#include "ncclwatch/ring_format.h"
#include "ncclwatch/trace_fields.h"
#include "ncclwatch/wire_writer.h"
#include "ring/ring_writer.h"
#include "ring/trace_clock.h"

namespace ncclwatch::shim {

// A written record whose result field can still be filled in.
struct CallRecord {
  PatchSite result;

  void Finish(int32_t r) const { result.Write4(&r); }
};

// Every 65536 ring slots, pairs the trace clock with the wall clocks again:
// when a record from the cursor took slot 65536 * k, or a claim
// (SlotClaim::anchor_due) took it or the claim block that holds it.
inline void AnchorIfDue(uint64_t ring_index) {
  if ((ring_index & 0xffff) == 0) WriteTimeAnchor(Region::kRing);
}
inline void AnchorIfDue(const SlotClaim& claim) {
  if (__builtin_expect(claim.anchor_due, 0)) WriteTimeAnchor(Region::kRing);
}

template <size_t kCapacity = 256>
class RecordBuilder {
 public:
  explicit RecordBuilder(uint32_t body_field) : w_(buf_, kCapacity) {
    w_.Varint(fields::record::kT, TraceNow());
    w_.Varint(fields::record::kThread, ThisThread().index);
    body_ = w_.BeginMessage(body_field);
  }

  wire::WireWriter& w() { return w_; }

  // Writes `field` as "still running"; Append's CallRecord fills it in.
  void PendingResult(uint32_t field) {
    result_ = w_.Fixed32(field, static_cast<uint32_t>(NCCLWATCH_RESULT_PENDING));
  }

  CallRecord Append(Region region) {
    CallRecord call;
    RecordLocation call_where;
    w_.EndMessage(body_);
    if (!w_.ok() || !g_ring.Append(region, buf_, w_.size(), &call_where)) return call;
    if (result_ != nullptr)
      call.result = RingWriter::SiteOf(call_where, static_cast<size_t>(result_ - buf_));
    if (region == Region::kRing) AnchorIfDue(call_where.index);
    return call;
  }

 private:
  uint8_t buf_[kCapacity];
  wire::WireWriter w_;
  size_t body_ = 0;
  uint8_t* result_ = nullptr;
};

// For records that hold paths and names (start-up, modules).
using LargeRecordBuilder = RecordBuilder<NCCLWATCH_MAX_RECORD_BYTES>;

// The per-call records that are not call slots (API calls, successful CUDA
// calls), encoded straight into the ring, protozero-style: claim a slot, encode into
// it, publish it. `fill(w)` writes the body's fields; when `result_field` is
// not 0 it is written first as pending, for CallRecord::Finish to fill in.
// A record that does not fit one slot (huge counts or sequence numbers) gives
// the slot up as padding and is encoded again on the stack, across slots.
//
//   CallRecord call = AppendRingRecord(fields::record::kApi, fields::api::kResult,
//                                      [&](wire::WireWriter& w) { w.Varint(...); ... });
template <typename Fill>
CallRecord AppendRingRecord(uint32_t body_field, uint32_t result_field, Fill fill) {
  CallRecord call;
  SlotClaim claim;
  if (g_ring.ClaimSlot(&claim)) {
    wire::WireWriter w(claim.payload, NCCLWATCH_SLOT_PAYLOAD_BYTES);
    w.Varint(fields::record::kT, claim.t);
    w.Varint(fields::record::kThread, ThisThread().index);
    const size_t body = w.BeginMessage(body_field);
    uint8_t* result = result_field != 0
                          ? w.Fixed32(result_field, static_cast<uint32_t>(NCCLWATCH_RESULT_PENDING))
                          : nullptr;
    fill(w);
    w.EndMessage(body);
    if (w.ok()) {
      g_ring.Publish(claim, w.size());
      if (result != nullptr)
        call.result = RingWriter::SiteOf(claim.where, static_cast<size_t>(result - claim.payload));
      AnchorIfDue(claim);
      return call;
    }
    g_ring.Discard(claim);
    if (claim.anchor_due) WriteTimeAnchor(Region::kRing);
  }
  RecordBuilder<> r(body_field);
  if (result_field != 0) r.PendingResult(result_field);
  fill(r.w());
  return r.Append(Region::kRing);
}

// The hottest records (collectives, sends and receives, group calls) as a
// call slot (ring_format.h): a fixed-layout struct stored straight into a
// ring slot, a store per field, the time stamp fixed-width, no encoding.
// The decoder turns it into the same trace.proto Record. `v` holds every
// field but t and result, which are set here (t the claim's clock read, as
// late as possible; result pending); CallRecord::Finish writes the result
// when the call returns.
// Callers load everything `v` needs before calling, so that no store into
// the slot can be taken to alias what is still to be read.
__attribute__((always_inline)) inline CallRecord AppendCallSlot(uint8_t kind,
                                                                const ncclwatch_call_slot& v) {
  CallRecord call;
  SlotClaim claim;
  if (__builtin_expect(!g_ring.ClaimSlot(&claim), 0)) return call;
  StoreCallSlot(claim.payload, v, claim.t, NCCLWATCH_RESULT_PENDING);
  g_ring.PublishCallSlot(claim, kind);
  call.result.at = claim.payload + offsetof(ncclwatch_call_slot, result);
  call.result.stamp =
      &reinterpret_cast<const ncclwatch_slot_header*>(claim.payload - NCCLWATCH_SLOT_HEADER_BYTES)
           ->stamp;
  call.result.expect = claim.where.index + 1;
  AnchorIfDue(claim);
  return call;
}

// A GPU time (trace.proto GpuTime) as a GPU-time slot (ring_format.h,
// format 4): `v` holds every field but t and thread, set here. The
// watcher's, off the hot path: from the cursor, as RecordBuilder's records
// (RingWriter::AppendFixedSlot says why).
inline void AppendGpuTimeSlot(const ncclwatch_gpu_time_slot& v) {
  ncclwatch_gpu_time_slot s = v;
  s.t = TraceNow();
  s.thread = ThisThread().index;
  memset(s.reserved, 0, sizeof(s.reserved));
  RecordLocation where;
  if (g_ring.AppendFixedSlot(NCCLWATCH_SLOT_GPU_TIME, &s, &where)) AnchorIfDue(where.index);
}

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_RECORD_BUILDER_H_

// RecordBuilder: encodes one trace.proto Record on the stack and appends it.
//
// HOT PATH: allocates nothing, takes no lock, makes no system call, is
// async-signal-safe.
//
//   RecordBuilder<> r(fields::record::kCollective);
//   r.PendingResult(fields::collective::kResult);   // first, so it is cheap to find
//   r.w().Fixed64(fields::collective::kComm, id);
//   ...
//   CallRecord call = r.Append(Region::kRing);
//   ... the real call ...
//   call.Finish(result);                           // patches the result in place
//
// Writing the record before the call and its result after means a trace
// shows a call the process never returned from as entered and pending.

#ifndef NCCLWATCH_SHIM_CORE_RECORD_BUILDER_H_
#define NCCLWATCH_SHIM_CORE_RECORD_BUILDER_H_

#include <stddef.h>
#include <stdint.h>

#include "core/tracer.h"
#include "ncclwatch/ring_format.h"
#include "ncclwatch/trace_fields.h"
#include "ncclwatch/wire_writer.h"
#include "ring/ring_writer.h"
#include "ring/trace_clock.h"

namespace ncclwatch::shim {

// A written record whose result field can still be filled in.
struct CallRecord {
  RecordLocation where;
  uint32_t result_offset = 0;
  bool has_result = false;

  void Finish(int32_t result) const {
    if (has_result) g_ring.Patch(where, result_offset, &result, sizeof(result));
  }
};

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
  void PendingResult(uint32_t field) { result_ = w_.Fixed32(field, static_cast<uint32_t>(NCCLWATCH_RESULT_PENDING)); }

  CallRecord Append(Region region) {
    CallRecord call;
    w_.EndMessage(body_);
    if (!w_.ok() || !g_ring.Append(region, buf_, w_.size(), &call.where)) return call;
    if (result_ != nullptr) {
      call.result_offset = static_cast<uint32_t>(result_ - buf_);
      call.has_result = true;
    }
    // Every 65536 ring slots, pair the trace clock with the wall clocks again.
    if (region == Region::kRing && (call.where.index & 0xffff) == 0) WriteTimeAnchor(Region::kRing);
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

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_RECORD_BUILDER_H_

#include "model/record_importer.h"

#include <array>
#include <cstddef>
#include <cstring>

#include "model/import/body_importer.h"
#include "model/import/call_slot_import.h"
#include "model/import/collective_import.h"
#include "ncclwatch/ring_format.h"
#include "ncclwatch/trace_fields.h"
#include "trace/gpu_time_slot.h"
#include "trace/wire_reader.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;
using importing::BodyImporter;
using importing::BodyImportFn;

// The importer of each body number, from the families' registrations
// (model/import/body_importer.h): a table, so that reaching a record's
// importer costs one load and one indirect call. (tests/unit/importers_test.cc
// checks that every body of trace.proto has exactly one importer, below
// kMaxBody.)
constexpr uint32_t kMaxBody = 128;
const std::array<BodyImportFn, kMaxBody>& Dispatch() {
  static const std::array<BodyImportFn, kMaxBody> table = [] {
    std::array<BodyImportFn, kMaxBody> t{};
    for (auto family : importing::kFamilies) {
      for (const BodyImporter& b : family()) {
        if (b.body < kMaxBody) t[b.body] = b.import;
      }
    }
    return t;
  }();
  return table;
}

}  // namespace

void RecordImporter::Finish(bool restore_held) {
  // An exec that returned: the process lived on after the end its exec
  // wrote (the last end written counts).
  if (p_->end && p_->end->how == f::process_end::kHowExecFailed) p_->end.reset();
  SortAnchors(p_);
  streams_.Finish(p_);
  if (restore_held) RestoreHeldOperations(p_);
}

bool RecordImporter::ImportCallSlot(uint8_t kind, absl::Span<const uint8_t> payload) {
  return importing::ImportCallSlot(kind, payload, *p_, streams_);
}

bool RecordImporter::ImportGpuTimeSlot(absl::Span<const uint8_t> payload, uint64_t* counted_comm) {
  if (payload.size() != NCCLWATCH_SLOT_PAYLOAD_BYTES) return false;
  ProcessTrace& p = *p_;
  const uint64_t order = p.last_order + 1;
  uint64_t t;
  std::memcpy(&t, payload.data() + offsetof(ncclwatch_gpu_time_slot, t), sizeof(t));
  if (counted_comm != nullptr) {
    *counted_comm = GpuTimeSlotComm(payload);
  } else {
    const ncclwatch_gpu_time_slot s = ReadGpuTimeSlot(payload);
    GpuTimeEvent& e = p.gpu_times.emplace_back();
    e.order = order;
    e.t = t;
    e.comm = s.comm;
    e.call = s.call;
    e.seq = s.seq;
    e.collectives = s.collectives;
    e.group_ops = s.group_ops;
    e.begin_ns = s.begin_ns;
    e.end_ns = s.end_ns;
    e.gpu_ns = s.gpu_ns;
    e.anchor_error_ns = s.anchor_error_ns;
  }
  p.last_order = order;
  if (t > p.last_t) p.last_t = t;
  return true;
}

bool RecordImporter::Import(absl::Span<const uint8_t> bytes) {
  return ImportRecord(bytes, nullptr, nullptr);
}

bool RecordImporter::Import(absl::Span<const uint8_t> bytes, bool* gpu_time, uint64_t* gpu_comm) {
  *gpu_time = false;
  return ImportRecord(bytes, gpu_time, gpu_comm);
}

bool RecordImporter::ImportRecord(absl::Span<const uint8_t> bytes, bool* gpu_time,
                                  uint64_t* gpu_comm) {
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
      } else if (f::record::IsBody(number) && wire_type == 2) {
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
  importing::ImportContext context{p_, &streams_, p.last_order + 1, t, thread};
  if (body_kind == f::record::kCollective) {  // the common case first, inline
    if (!importing::ImportCollective(context, body)) return false;
  } else if (body_kind == f::record::kGpuTime && gpu_comm != nullptr) {
    // Counted, not a row: its communicator alone is read (a body without
    // one is communicator 0, as its row would be).
    if (!importing::ReadGpuTimeComm(body, gpu_comm)) return false;
    *gpu_time = true;
  } else if (body_kind < kMaxBody) {
    if (const BodyImportFn import = Dispatch()[body_kind]) {
      if (!import(context, body)) return false;
    }
  }
  // A body no family registers (or none at all) is skipped, as the schema
  // allows; the record still has its place in the timeline.
  p.last_order = context.order;
  if (t > p.last_t) p.last_t = t;
  return true;
}

}  // namespace ncclwatch::decoder

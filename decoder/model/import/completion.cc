// Completion and liveness, from the shim's watcher threads: how each
// communicator's completion is tracked, its progress on the GPU, stalls,
// CUDA errors met while polling, untracked operations, the heartbeat, and
// the operations the watcher held in the pinned region.

#include <algorithm>
#include <utility>

#include "model/import/body_importer.h"
#include "model/import/wire_fields.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::importing {
namespace {

namespace f = ::ncclwatch::fields;

bool ImportCompletionTracking(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
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
  return ok;
}

bool ImportProgress(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
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
  return ok;
}

bool ImportHeartbeat(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
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
  return ok;
}

bool ImportStall(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
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
  return ok;
}

bool ImportCudaError(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
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
  return ok;
}

bool ImportUntracked(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  const uint64_t order = c.order;
  const uint64_t t = c.t;
  WireReader r(body);
  WireField x;
  bool ok = true;
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
  return ok;
}

// The oldest operation of a communicator the watcher held where the ring
// cannot lap it (restored into the trace's tables by RestoreHeldOperations
// when the ring lost it).
bool ImportHeldOperation(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  WireReader r(body);
  WireField x;
  HeldOperationEvent e{c.order, c.t};
  e.peer = e.datatype = e.rank = 0;  // proto3: a field left out is 0
  while (r.Next(&x)) {
    switch (x.number) {
      case f::held_operation::kComm:
        if (Fixed64(x)) e.comm = x.value;
        break;
      case f::held_operation::kCall:
        if (Varint(x)) e.call = static_cast<uint32_t>(x.value);
        break;
      case f::held_operation::kSeq:
        if (Varint(x)) e.seq = x.value;
        break;
      case f::held_operation::kPeer:
        if (Varint(x)) e.peer = x.Zigzag32();
        break;
      case f::held_operation::kSend:
        if (Varint(x)) e.send = x.value != 0;
        break;
      case f::held_operation::kCount:
        if (Varint(x)) e.count = x.value;
        break;
      case f::held_operation::kDatatype:
        if (Varint(x)) e.datatype = x.Zigzag32();
        break;
      case f::held_operation::kRedop:
        if (Varint(x)) e.redop = x.Zigzag32();
        break;
      case f::held_operation::kRoot:
        if (Varint(x)) e.root = x.Zigzag32();
        break;
      case f::held_operation::kCaller:
        if (Fixed64(x)) e.caller = x.value;
        break;
      case f::held_operation::kEnqueuedT:
        if (Varint(x)) e.enqueued_t = x.value;
        break;
      case f::held_operation::kCompleted:
        if (Varint(x)) e.completed = x.value;
        break;
      case f::held_operation::kGroupOps:
        if (Varint(x)) e.group_ops = static_cast<uint32_t>(x.value);
        break;
      case f::held_operation::kRank:
        if (Varint(x)) e.rank = x.Zigzag32();
        break;
      case f::held_operation::kWaitedMs:
        if (Varint(x)) e.waited_ms = x.value;
        break;
      default:
        break;
    }
  }
  if (!r.ok()) return false;
  p.held.push_back(e);
  return true;
}

// When the GPU began and finished one tracked operation: one record per
// operation (most of a real ring's records), so read as the collectives
// are (collective_import.h): a switch on the whole one-byte tag, anything
// else skipped as WireReader skips it.
constexpr uint8_t GpuTimeTag(uint32_t field, uint32_t wire_type) {
  return static_cast<uint8_t>(field << 3 | wire_type);
}

bool ImportGpuTime(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  // Read into its row where it lies (one copy less: a ring of them is
  // millions of rows), taken back where the record is malformed.
  GpuTimeEvent& e = p.gpu_times.emplace_back();
  e.order = c.order;
  e.t = c.t;
  if (ReadGpuTime(body, &e)) return true;
  p.gpu_times.pop_back();
  return false;
}

}  // namespace

bool ReadGpuTime(absl::Span<const uint8_t> body, GpuTimeEvent* row) {
  namespace g = f::gpu_time;
  GpuTimeEvent& e = *row;
  const uint8_t* q = body.data();
  const uint8_t* const end = q + body.size();
  // The shim writes the fields in number order, each once
  // (shim/core/completion.cc WriteGpuTime): read so, a field at a time
  // where its one-byte tag comes next, as the loop below would read it;
  // from the first field that does not, the loop reads the rest.
  auto field = [&](uint8_t tag, uint64_t* out) {
    if (q >= end || *q != tag) return true;
    ++q;
    return ReadVarint(q, end, out);
  };
  uint64_t call = 0, group_ops = 0;
  if (q < end && *q == GpuTimeTag(g::kComm, 1)) {
    ++q;
    if (!ReadFixed64(q, end, &e.comm)) return false;
  }
  if (q < end && *q == GpuTimeTag(g::kCall, 0)) {
    if (!field(GpuTimeTag(g::kCall, 0), &call)) return false;
    e.call = static_cast<uint32_t>(call);
  }
  if (!field(GpuTimeTag(g::kSeq, 0), &e.seq) ||
      !field(GpuTimeTag(g::kCollectives, 0), &e.collectives))
    return false;
  if (q < end && *q == GpuTimeTag(g::kGroupOps, 0)) {
    if (!field(GpuTimeTag(g::kGroupOps, 0), &group_ops)) return false;
    e.group_ops = static_cast<uint32_t>(group_ops);
  }
  if (!field(GpuTimeTag(g::kBeginNs, 0), &e.begin_ns) ||
      !field(GpuTimeTag(g::kEndNs, 0), &e.end_ns) || !field(GpuTimeTag(g::kGpuNs, 0), &e.gpu_ns) ||
      !field(GpuTimeTag(g::kAnchorErrorNs, 0), &e.anchor_error_ns))
    return false;
  while (q < end) {
    uint64_t tag;
    if (!ReadVarint(q, end, &tag) || tag > 0xffffffffu || (tag >> 3) == 0) return false;
    uint64_t v = 0;
    uint64_t* varint = nullptr;
    switch (tag) {
      case GpuTimeTag(g::kComm, 1):
        if (!ReadFixed64(q, end, &e.comm)) return false;
        continue;
      case GpuTimeTag(g::kCall, 0):
      case GpuTimeTag(g::kGroupOps, 0):
        varint = &v;
        break;
      case GpuTimeTag(g::kSeq, 0):
        varint = &e.seq;
        break;
      case GpuTimeTag(g::kCollectives, 0):
        varint = &e.collectives;
        break;
      case GpuTimeTag(g::kBeginNs, 0):
        varint = &e.begin_ns;
        break;
      case GpuTimeTag(g::kEndNs, 0):
        varint = &e.end_ns;
        break;
      case GpuTimeTag(g::kGpuNs, 0):
        varint = &e.gpu_ns;
        break;
      case GpuTimeTag(g::kAnchorErrorNs, 0):
        varint = &e.anchor_error_ns;
        break;
      default:
        if (!SkipValue(q, end, static_cast<uint32_t>(tag & 7))) return false;
        continue;
    }
    if (!ReadVarint(q, end, varint)) return false;
    if (tag == GpuTimeTag(g::kCall, 0)) e.call = static_cast<uint32_t>(v);
    if (tag == GpuTimeTag(g::kGroupOps, 0)) e.group_ops = static_cast<uint32_t>(v);
  }
  return true;
}

bool ReadGpuTimeComm(absl::Span<const uint8_t> body, uint64_t* comm) {
  const uint8_t* q = body.data();
  const uint8_t* const end = q + body.size();
  *comm = 0;
  while (q < end) {
    uint64_t tag;
    if (!ReadVarint(q, end, &tag) || tag > 0xffffffffu || (tag >> 3) == 0) return false;
    if (tag == GpuTimeTag(f::gpu_time::kComm, 1)) {
      if (!ReadFixed64(q, end, comm)) return false;
    } else if (!SkipValue(q, end, static_cast<uint32_t>(tag & 7))) {
      return false;
    }
  }
  return true;
}

absl::Span<const BodyImporter> CompletionImporters() {
  static constexpr BodyImporter kImporters[] = {
      {f::record::kCompletionTracking, ImportCompletionTracking},
      {f::record::kProgress, ImportProgress},
      {f::record::kHeartbeat, ImportHeartbeat},
      {f::record::kStall, ImportStall},
      {f::record::kCudaError, ImportCudaError},
      {f::record::kUntracked, ImportUntracked},
      {f::record::kHeldOperation, ImportHeldOperation},
      {f::record::kGpuTime, ImportGpuTime},
  };
  return kImporters;
}

}  // namespace ncclwatch::decoder::importing

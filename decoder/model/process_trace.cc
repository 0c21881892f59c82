#include "model/process_trace.h"

#include <time.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "model/record_importer.h"
#include "model/stream_builder.h"
#include "ncclwatch/trace_fields.h"
#include "trace/call_slot.h"
#include "trace/trace_file.h"
#include "util/status_macros.h"

namespace ncclwatch::decoder {

namespace f = ::ncclwatch::fields;

void BuildStreams(ProcessTrace* p) {
  // Collectives and point-to-point calls, merged in timeline order, so each
  // send or receive knows how many collectives its rank had issued before it.
  StreamBuilder builder;
  size_t c = 0;
  for (size_t i = 0; i < p->p2p.size(); ++i) {
    for (; c < p->collectives.size() && p->collectives[c].order < p->p2p[i].order; ++c)
      builder.AddCollective(c, p->collectives[c]);
    builder.AddP2p(i, p->p2p[i]);
  }
  for (; c < p->collectives.size(); ++c) builder.AddCollective(c, p->collectives[c]);
  builder.Finish(p);
}

int32_t ProcessTrace::DisplayRank() const {
  if (global_rank >= 0) return global_rank;
  for (const CommMembership& m : comms)
    if (m.rank >= 0 && m.parent == 0) return m.rank;
  return -1;
}

namespace {

// TSC ticks: ns per tick from the two anchors furthest apart (sorted by t).
double AnchorRate(const std::vector<TimeAnchorEvent>& anchors) {
  const TimeAnchorEvent& a = anchors.front();
  const TimeAnchorEvent& b = anchors.back();
  if (b.t > a.t && b.monotonic_ns > a.monotonic_ns)
    return static_cast<double>(b.monotonic_ns - a.monotonic_ns) / static_cast<double>(b.t - a.t);
  return 1.0;
}

int64_t ClampTicks(uint64_t t) { return t > INT64_MAX ? INT64_MAX : static_cast<int64_t>(t); }

// TSC tick `t` on CLOCK_MONOTONIC, offset from the nearest anchor: the one
// at `lower` (the first not before t) or the one just before it.
int64_t MonotonicNear(const std::vector<TimeAnchorEvent>& anchors, size_t lower, double rate,
                      uint64_t t) {
  const TimeAnchorEvent* near = lower == anchors.size() ? &anchors.back() : &anchors[lower];
  if (lower != 0) {
    const TimeAnchorEvent* before = &anchors[lower - 1];
    if (t - before->t < (near->t > t ? near->t - t : t - near->t)) near = before;
  }
  const double ns = static_cast<double>(near->monotonic_ns) +
                    rate * (static_cast<double>(t) - static_cast<double>(near->t));
  // Crafted anchors can put this anywhere: clamp instead of overflowing.
  if (!(ns > -9.2e18)) return INT64_MIN;
  if (!(ns < 9.2e18)) return INT64_MAX;
  return static_cast<int64_t>(ns);
}

size_t LowerAnchor(const std::vector<TimeAnchorEvent>& anchors, uint64_t t) {
  return static_cast<size_t>(
      std::lower_bound(anchors.begin(), anchors.end(), t,
                       [](const TimeAnchorEvent& x, uint64_t v) { return x.t < v; }) -
      anchors.begin());
}

// A CLOCK_MONOTONIC time on CLOCK_REALTIME, by the first anchor: realtime -
// monotonic there, then added, both in 128 bits, then clamped, so crafted
// anchors near 2^63 cannot overflow.
int64_t RealtimeOfMonotonic(const std::vector<TimeAnchorEvent>& anchors, __int128 monotonic_ns) {
  const TimeAnchorEvent& a = anchors.front();
  const __int128 v =
      monotonic_ns + static_cast<__int128>(a.realtime_ns) - static_cast<__int128>(a.monotonic_ns);
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace

int64_t ProcessTrace::MonotonicNs(uint64_t t) const {
  if (clock == NCCLWATCH_CLOCK_MONOTONIC_NS || anchors.empty()) return ClampTicks(t);
  return MonotonicNear(anchors, LowerAnchor(anchors, t), AnchorRate(anchors), t);
}

int64_t ProcessTrace::RealtimeNs(uint64_t t) const {
  if (anchors.empty()) return 0;
  return RealtimeOfMonotonic(anchors, MonotonicNs(t));
}

RealtimeClock::RealtimeClock(const ProcessTrace& trace)
    : anchors_(trace.anchors),
      ticks_(trace.clock != NCCLWATCH_CLOCK_MONOTONIC_NS && !trace.anchors.empty()),
      rate_(ticks_ ? AnchorRate(trace.anchors) : 1.0) {}

int64_t RealtimeClock::operator()(uint64_t t) {
  if (anchors_.empty()) return 0;
  if (!ticks_) return RealtimeOfMonotonic(anchors_, ClampTicks(t));
  if (t < last_t_) {
    lower_ = LowerAnchor(anchors_, t);
  } else {
    while (lower_ < anchors_.size() && anchors_[lower_].t < t) ++lower_;
  }
  last_t_ = t;
  return RealtimeOfMonotonic(anchors_, MonotonicNear(anchors_, lower_, rate_, t));
}

int64_t ProcessTrace::RealtimeOfMonotonicNs(uint64_t monotonic_ns) const {
  if (anchors.empty()) return 0;
  return RealtimeOfMonotonic(anchors, static_cast<__int128>(monotonic_ns));
}

const ModuleInfo* ProcessTrace::ModuleAt(uint64_t address) const {
  return ModuleContaining(modules, address);
}

bool ProcessTrace::Loaded(const std::string& name) const {
  const std::string base =
      name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
  if (base.empty()) return false;
  for (const ModuleInfo& m : modules) {
    const size_t slash = m.path.rfind('/');
    if (m.path.compare(slash == std::string::npos ? 0 : slash + 1, base.size(), base) == 0)
      return true;
  }
  return false;
}

const CommMembership* ProcessTrace::Membership(uint64_t comm) const {
  for (const CommMembership& m : comms)
    if (m.comm == comm) return &m;
  return nullptr;
}

const CommMembership* ProcessTrace::Membership(uint64_t comm, int32_t rank) const {
  const CommMembership* found = nullptr;
  for (const CommMembership& m : comms)
    if (m.comm == comm && m.rank == rank) found = &m;
  return found;
}

uint64_t ProcessTrace::LastCallOrder() const {
  uint64_t last = 0;
  if (!collectives.empty()) last = std::max(last, collectives.back().order);
  if (!p2p.empty()) last = std::max(last, p2p.back().order);
  if (!groups.empty()) last = std::max(last, groups.back().order);
  return last;
}

const CompletionTrackingEvent* ProcessTrace::Tracking(uint64_t comm) const {
  for (const CompletionTrackingEvent& e : tracking)
    if (e.comm == comm) return &e;
  return nullptr;
}

const ProgressEvent* ProcessTrace::LastProgress(uint64_t comm, uint64_t* reached_t) const {
  const ProgressEvent* last = nullptr;
  uint64_t reached = 0;
  for (const ProgressEvent& e : progress) {
    if (e.comm != comm) continue;
    if (last == nullptr || e.collectives > last->collectives) {
      reached = e.t;
    } else if (e.collectives == last->collectives) {
      reached = std::min(reached, e.t);
    }
    if (last == nullptr || e.collectives >= last->collectives) last = &e;
  }
  if (reached_t != nullptr) *reached_t = reached;
  return last;
}

void ProcessTrace::Reset() {
  // Tables are cleared, not freed: their capacity is reused.
  auto tables = std::make_tuple(&anchors, &modules, &comms, &collectives, &p2p, &groups, &apis,
                                &signals, &syscalls, &errors, &streams);
  std::apply([](auto*... t) { (t->clear(), ...); }, tables);
  ProcessTrace fresh;
  fresh.anchors = std::move(anchors);
  fresh.modules = std::move(modules);
  fresh.comms = std::move(comms);
  fresh.collectives = std::move(collectives);
  fresh.p2p = std::move(p2p);
  fresh.groups = std::move(groups);
  fresh.apis = std::move(apis);
  fresh.signals = std::move(signals);
  fresh.syscalls = std::move(syscalls);
  fresh.errors = std::move(errors);
  fresh.streams = std::move(streams);
  *this = std::move(fresh);
}

void SortAnchors(ProcessTrace* p) {
  std::sort(p->anchors.begin(), p->anchors.end(),
            [](const TimeAnchorEvent& a, const TimeAnchorEvent& b) { return a.t < b.t; });
}

// The collectives the watcher held (HeldOperation) that the ring lost:
// restored as rows of `p`'s table and into their stream in number order, so
// that what a hang is about is compared with the other ranks' as if the ring
// had kept it; and the GPU's count at the hold, where no later Progress says
// more (the ring may have lost those too).
void RestoreHeldOperations(ProcessTrace* p) {
  for (const HeldOperationEvent& h : p->held) {
    if (h.comm == 0 || h.rank < 0) continue;
    const bool p2p = h.call == f::kSend || h.call == f::kRecv;
    // A node's summary left this collective out (it was not lost): the
    // digests of its block stand for it, not the hold.
    bool left_out = false;
    for (const LeftOutCalls& l : p->left_out)
      left_out |=
          l.comm == h.comm && l.rank == h.rank && h.seq >= l.FirstSeq() && h.seq < l.EndSeq();
    if (!p2p && !left_out) {
      CommStream* stream = nullptr;
      for (CommStream& s : p->streams)
        if (s.comm == h.comm && s.rank == h.rank) stream = &s;
      if (stream == nullptr) continue;
      auto by_seq = [&](uint32_t i, uint64_t seq) { return p->collectives[i].seq < seq; };
      auto at =
          std::lower_bound(stream->collectives.begin(), stream->collectives.end(), h.seq, by_seq);
      if (at != stream->collectives.end() && p->collectives[*at].seq == h.seq) continue;
      if (p->collectives.size() >= UINT32_MAX) continue;
      p->collectives.emplace_back(h.order, h.enqueued_t, h.comm, h.seq, h.count, h.call, h.datatype,
                                  h.redop, h.root, 0, h.rank, 0, 0, h.caller, 0);
      stream->collectives.insert(at, static_cast<uint32_t>(p->collectives.size() - 1));
    }
    RestoreHeldProgress(p, h);
  }
}

void RestoreHeldProgress(ProcessTrace* p, const HeldOperationEvent& h) {
  const ProgressEvent* last = p->LastProgress(h.comm);
  if (last == nullptr || last->collectives < h.completed) {
    ProgressEvent e{h.order, h.t};
    e.comm = h.comm;
    e.collectives = h.completed;
    p->progress.push_back(e);
  }
}

void FinishProcessTrace(ProcessTrace* p) {
  SortAnchors(p);
  BuildStreams(p);
  RestoreHeldOperations(p);
}

void ReadProcessTrace(const TraceFile& file, ProcessTrace* trace, const LightReading& light) {
  ProcessTrace& p = *trace;
  std::vector<CommStream> old_streams = std::move(p.streams);  // their memory is reused
  p.Reset();
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  p.read_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  p.path = file.path();
  p.clock = file.header().clock;
  p.pid = file.header().pid;
  p.created_realtime_ns = file.header().created_realtime_ns;
  p.host = file.header().host;
  // Bounded at a 4 GiB ring's slots, so that a crafted header (a huge
  // sparse file) cannot ask for more.
  p.call_table_room = std::min<uint64_t>(file.SlotsInUse(), uint64_t{1} << 25);
  RecordImporter importer(&p);
  importer.Recycle(std::move(old_streams));
  std::unordered_map<uint64_t, size_t> gpu_count_of;  // index into left_out_gpu_times
  size_t last_gpu_count = SIZE_MAX;                   // the last one counted
  // A GPU time counted, not made a row (LightReading::count_gpu_times).
  auto count_gpu_time = [&](uint64_t gpu_comm) {
    if (last_gpu_count == SIZE_MAX || p.left_out_gpu_times[last_gpu_count].comm != gpu_comm) {
      auto [at, fresh] = gpu_count_of.try_emplace(gpu_comm, p.left_out_gpu_times.size());
      if (fresh) p.left_out_gpu_times.push_back({gpu_comm, 0});
      last_gpu_count = at->second;
    }
    ++p.left_out_gpu_times[last_gpu_count].count;
  };
  file.ForEachEntry(
      [&](bool pinned, uint64_t slot, uint8_t kind, absl::Span<const uint8_t> bytes) {
        bool parsed;
        const CallSlotFn* fn = kind == NCCLWATCH_SLOT_COLLECTIVE ? light.collective
                               : kind == NCCLWATCH_SLOT_P2P      ? light.p2p
                                                                 : nullptr;
        EntryRead read_as = EntryRead::kOther;
        uint64_t comm = 0;
        if (kind == NCCLWATCH_SLOT_SINGLE) {
          const size_t progress = p.progress.size();
          bool gpu_time = false;
          uint64_t gpu_comm = 0;
          if (light.count_gpu_times) {  // counted, not made a row
            parsed = importer.Import(bytes, &gpu_time, &gpu_comm);
          } else {
            const size_t gpu_times = p.gpu_times.size();
            parsed = importer.Import(bytes);
            if (p.gpu_times.size() > gpu_times) {
              gpu_time = true;
              gpu_comm = p.gpu_times.back().comm;
            }
          }
          if (gpu_time) {
            read_as = EntryRead::kGpuTime;
            comm = gpu_comm;
          } else if (p.progress.size() > progress) {
            read_as = EntryRead::kProgress;
            comm = p.progress.back().comm;
          }
          if (light.count_gpu_times && gpu_time) count_gpu_time(gpu_comm);
        } else if (kind == NCCLWATCH_SLOT_GPU_TIME) {
          // A GPU time's fixed slot (format 4): counted or made a row, as
          // the protobuf one above.
          uint64_t gpu_comm = 0;
          if (light.count_gpu_times) {
            parsed = importer.ImportGpuTimeSlot(bytes, &gpu_comm);
            if (parsed) count_gpu_time(gpu_comm);
          } else {
            parsed = importer.ImportGpuTimeSlot(bytes);
            if (parsed) gpu_comm = p.gpu_times.back().comm;
          }
          if (parsed) {
            read_as = EntryRead::kGpuTime;
            comm = gpu_comm;
          }
        } else if (fn != nullptr) {
          // The call takes its place in the timeline as a row would.
          parsed = bytes.size() == NCCLWATCH_SLOT_PAYLOAD_BYTES;
          if (parsed) {
            ++p.last_order;
            uint64_t t;  // its time alone: `fn` reads the rest
            std::memcpy(&t, bytes.data() + offsetof(ncclwatch_call_slot, t), sizeof(t));
            if (t > p.last_t) p.last_t = t;
            (*fn)(pinned, slot, bytes);
          }
        } else {
          parsed = importer.ImportCallSlot(kind, bytes);
          if (kind == NCCLWATCH_SLOT_GROUP) read_as = EntryRead::kGroup;
        }
        if (fn == nullptr && light.other != nullptr) (*light.other)(pinned, slot, read_as, comm);
        if (parsed) {
          ++p.records;
        } else {
          ++p.unparsed_records;
        }
      },
      &p.stats,
      [&](uint64_t first_slot, uint64_t slots, uint64_t cursor, TimeOrder::State* order) {
        if (light.chunk != nullptr) (*light.chunk)(first_slot, slots, cursor, *order);
        return false;
      });
  // Without the collectives' rows, which held calls the ring kept is the
  // caller's to say (RestoreHeldProgress).
  importer.Finish(/*restore_held=*/light.collective == nullptr);
}

namespace {

// One reading of the file into `p` (reset first).
absl::Status LoadOnce(const std::string& path, ReadMode mode, ProcessTrace* trace) {
  NCCLWATCH_ASSIGN_OR_RETURN(std::unique_ptr<TraceFile> file, TraceFile::Open(path, mode));
  ReadProcessTrace(*file, trace);
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadProcessTraceInto(const std::string& path, ProcessTrace* trace) {
  NCCLWATCH_RETURN_IF_ERROR(LoadOnce(path, ReadMode::kMapped, trace));
  // A live writer lapped, or the file shrank under, slots read in place
  // while they were used (trace/trace_file.h): read it all again, copied.
  if (trace->stats.read_again) return LoadOnce(path, ReadMode::kCopied, trace);
  return absl::OkStatus();
}

absl::StatusOr<ProcessTrace> LoadProcessTrace(const std::string& path) {
  ProcessTrace p;
  NCCLWATCH_RETURN_IF_ERROR(LoadProcessTraceInto(path, &p));
  return p;
}

}  // namespace ncclwatch::decoder

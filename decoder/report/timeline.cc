#include "report/timeline.h"

#include <algorithm>
#include <climits>
#include <deque>
#include <functional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "knowledge/nccl_semantics.h"
#include "ncclwatch/trace_fields.h"
#include "perfetto/perfetto_trace.pb.h"
#include "report/call_site.h"
#include "report/finding_text.h"
#include "report/names.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {
namespace {

namespace pf = ::ncclwatch::perfetto;

// SEQ_INCREMENTAL_STATE_CLEARED: the first packet of a writer's sequence.
constexpr uint32_t kSequenceStart = 1;
// Lanes of one communicator track for slices in flight together.
constexpr size_t kMaxLanes = 16;
// A call that returned, with no completion time in the trace, is drawn this long.
constexpr int64_t kReturnedCallNs = 1000;

// A 64-bit mix (splitmix64's finaliser) for uuids and flow ids: stable from
// run to run, so two timelines of one job have the same ids.
uint64_t Mix(uint64_t h, uint64_t v) {
  uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t MixString(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = Mix(h, c);
  return Mix(h, s.size());
}

// Perfetto's strings are UTF-8: text from the traced machine is escaped.
std::string Text(const std::string& s) { return TerminalSafe(s); }

uint64_t Ns(int64_t realtime_ns) {
  return realtime_ns < 0 ? 0 : static_cast<uint64_t>(realtime_ns);
}

void Annotate(pf::TrackEvent* e, const std::string& name, const std::string& value) {
  pf::DebugAnnotation* a = e->add_debug_annotations();
  a->set_name(name);
  a->set_string_value(Text(value));
}

void Annotate(pf::TrackEvent* e, const std::string& name, int64_t value) {
  pf::DebugAnnotation* a = e->add_debug_annotations();
  a->set_name(name);
  a->set_int_value(value);
}

// One event of a process, before it is written: the process's events are
// sorted by time (ends before begins at one instant) so that every track's
// slices nest.
struct PendingEvent {
  uint64_t ts = 0;
  int rank = 0;  // at one ts: 0 slice end, 1 slice begin, 2 instant
  uint64_t serial = 0;
  pf::TrackEvent event;
};

// A slice waiting for its lane.
struct SliceSpan {
  uint64_t begin = 0;
  uint64_t end = 0;
  pf::TrackEvent event;  // the begin event, track not yet set
};

}  // namespace

TimelineWriter::TimelineWriter(std::ostream& out) : out_(out) {}

void TimelineWriter::WritePacket(const pf::TracePacket& packet) {
  // Trace.packet (field 1), length-delimited: the file is a Trace written
  // one packet at a time.
  const std::string bytes = packet.SerializeAsString();
  std::string header;
  header.push_back(static_cast<char>((1 << 3) | 2));
  for (uint64_t n = bytes.size();; n >>= 7) {
    if (n < 0x80) {
      header.push_back(static_cast<char>(n));
      break;
    }
    header.push_back(static_cast<char>((n & 0x7f) | 0x80));
  }
  out_.write(header.data(), static_cast<std::streamsize>(header.size()));
  out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void TimelineWriter::MarkRootCauses(const JobAnalysis& job, const Diagnosis& d) {
  clocks_ = &job.clocks();
  const CallSiteNamer sites = TraceCallSites(job);
  const std::vector<ProcessRecord>& procs = job.processes();
  std::set<std::pair<uint64_t, int32_t>> stragglers;
  for (const Finding& f : d.findings) {
    if (f.kind == FindingKind::kStraggler && f.comm) {
      const auto& members = d.jobs.at(static_cast<size_t>(f.job));
      Mark mark;
      const auto* facts = std::get_if<StragglerFacts>(&f.facts);
      const bool link = facts != nullptr && facts->cause == StragglerFacts::Cause::kLink;
      mark.title = (link ? "SLOW LINK: rank " : "STRAGGLER: rank ") +
                   std::to_string(f.ranks.empty() ? -1 : f.ranks[0]);
      mark.detail = RenderFinding(f, sites).detail;
      mark.when_ns = f.when_ns;
      mark.category = "straggler";
      marks_.push_back(mark);
      for (int p : members) {
        if (p < 0 || static_cast<size_t>(p) >= procs.size() || f.ranks.empty() ||
            procs[p].rank != f.ranks[0])
          continue;
        process_marks_[p].push_back(marks_.size() - 1);
        for (const CommMembership& m : procs[p].comms)
          if (m.comm == *f.comm) stragglers.insert({m.comm, m.rank});
      }
      continue;
    }
    if (f.role != FindingRole::kRootCause) continue;
    const FindingText text = RenderFinding(f, sites);
    Mark mark;
    mark.title = std::string("ROOT CAUSE: ") + KindName(f.kind);
    mark.detail = text.detail;
    mark.when_ns = f.when_ns;
    const size_t index = marks_.size();
    marks_.push_back(mark);
    const std::vector<int> empty;
    const std::vector<int>& members =
        f.job >= 0 && static_cast<size_t>(f.job) < d.jobs.size() ? d.jobs[f.job] : empty;
    auto named = [&](int p) {
      if (const auto* init = std::get_if<InitFailureFacts>(&f.facts)) {
        if (init->has_pids && !init->pids.empty()) {
          return std::find(init->pids.begin(), init->pids.end(), procs[p].pid) != init->pids.end();
        }
      }
      return std::find(f.ranks.begin(), f.ranks.end(), procs[p].rank) != f.ranks.end();
    };
    auto comm_rank = [&](int p) -> int32_t {
      if (!f.comm) return -1;
      for (const CommMembership& m : procs[p].comms)
        if (m.comm == *f.comm) return m.rank;
      return -1;
    };
    if (const auto* p2p = std::get_if<P2pMismatchFacts>(&f.facts); p2p && f.comm && f.seq) {
      int sender = -1, receiver = -1;
      for (int p : members) {
        if (p < 0 || static_cast<size_t>(p) >= procs.size()) continue;
        if (procs[p].rank == p2p->sender) sender = p;
        if (procs[p].rank == p2p->receiver) receiver = p;
      }
      const int32_t sender_rank = sender >= 0 ? comm_rank(sender) : -1;
      const int32_t receiver_rank = receiver >= 0 ? comm_rank(receiver) : -1;
      if (sender >= 0) {
        process_marks_[sender].push_back(index);
        p2p_marks_[{sender, *f.comm, true, receiver_rank, *f.seq}] = index;
      }
      if (receiver >= 0) {
        process_marks_[receiver].push_back(index);
        p2p_marks_[{receiver, *f.comm, false, sender_rank, *f.seq}] = index;
      }
      continue;
    }
    for (int p : members) {
      if (p < 0 || static_cast<size_t>(p) >= procs.size() || !named(p)) continue;
      process_marks_[p].push_back(index);
      if (f.comm && f.seq) collective_marks_[{p, *f.comm, *f.seq}] = index;
    }
  }
  WriteArrivalSkew(job, stragglers);
}

void TimelineWriter::WriteArrivalSkew(const JobAnalysis& job,
                                      const std::set<std::pair<uint64_t, int32_t>>& stragglers) {
  const std::vector<ArrivalSpan> spans = job.arrivals().Spans();
  if (spans.empty()) return;
  const uint32_t sequence = next_sequence_++;
  bool first_packet = true;
  auto write = [&](pf::TracePacket& packet) {
    packet.set_trusted_packet_sequence_id(sequence);
    if (first_packet) packet.set_sequence_flags(kSequenceStart);
    first_packet = false;
    WritePacket(packet);
  };
  uint64_t comm = 0, track = 0, until = 0;
  for (const ArrivalSpan& a : spans) {
    if (a.comm != comm || track == 0) {
      comm = a.comm;
      track = Mix(Mix(0x736b6577ULL, comm), 1);
      until = 0;
      pf::TracePacket packet;
      pf::TrackDescriptor* t = packet.mutable_track_descriptor();
      t->set_uuid(track);
      t->set_name(absl::StrCat("arrival skew comm ", CommShort(comm), " (", a.members, " ranks)"));
      write(packet);
    }
    const uint64_t begin = std::max(Ns(a.first_ns), until);
    const uint64_t end = std::max(Ns(a.last_ns), begin + 1);
    until = end;
    const bool straggler = a.last >= 0 && stragglers.count({a.comm, a.last}) > 0;
    std::string name = CallName(a.call) + " #" + std::to_string(a.seq) + ": ";
    name += a.last >= 0 ? absl::StrCat("rank ", a.last, " last, ", a.gap / 1000, " us after")
                        : std::string("together");
    if (straggler) name = "STRAGGLER " + name;
    pf::TracePacket b;
    b.set_timestamp(begin);
    pf::TrackEvent* e = b.mutable_track_event();
    e->set_type(pf::TrackEvent::TYPE_SLICE_BEGIN);
    e->set_track_uuid(track);
    e->set_name(Text(name));
    e->add_categories("arrival_skew");
    if (straggler) e->add_categories("straggler");
    Annotate(e, "comm", CommName(a.comm));
    Annotate(e, "seq", static_cast<int64_t>(a.seq));
    Annotate(e, "spread_ns", a.last_ns - a.first_ns);
    if (a.last >= 0) Annotate(e, "last_rank", a.last);
    write(b);
    pf::TracePacket x;
    x.set_timestamp(end);
    x.mutable_track_event()->set_type(pf::TrackEvent::TYPE_SLICE_END);
    x.mutable_track_event()->set_track_uuid(track);
    write(x);
    ++stats_.arrival_slices;
    ++stats_.slices;
    if (straggler) ++stats_.straggler_marks;
  }
}

void TimelineWriter::AddProcess(const ProcessTrace& trace, int process) {
  // A process that never called NCCL (a launcher, a shell the job ran
  // through) has nothing to show.
  if (trace.comms.empty() && trace.collectives.empty() && trace.p2p.empty() && trace.apis.empty() &&
      trace.errors.empty() && trace.syscalls.empty() && !trace.inventory.present) {
    return;
  }
  // Its times on the reference host's clock, as the job's collectives
  // aligned the hosts' (analysis/host_clocks.h), so that the arrival
  // slices, drawn from the aligned times, line up with the processes.
  const int64_t clock = clocks_ ? clocks_->OffsetOf(process) : 0;
  auto at = [&](uint64_t t) { return Ns(HostClocks::OnReference(trace.RealtimeNs(t), clock)); };
  const uint32_t sequence = next_sequence_++;
  bool first_packet = true;
  auto write = [&](pf::TracePacket& packet) {
    packet.set_trusted_packet_sequence_id(sequence);
    if (first_packet) packet.set_sequence_flags(kSequenceStart);
    first_packet = false;
    WritePacket(packet);
  };
  ++stats_.processes;

  // The process track. Perfetto tells processes apart by pid: a pid seen
  // already (the same pid on another host) is moved out of the way.
  int64_t pid = trace.pid;
  for (int tries = 0;; ++tries) {
    if (pid <= 0 || pid > INT32_MAX) pid = 1;
    if (tries > 200) pid = static_cast<int64_t>(INT32_MAX) - next_free_pid_++;
    if (pids_used_.insert(static_cast<int32_t>(pid)).second) break;
    pid += 10'000'000;
  }
  const uint64_t process_uuid =
      Mix(MixString(Mix(0x6e63636c77617463ULL, trace.pid), trace.host), trace.created_realtime_ns);
  const int32_t rank = trace.DisplayRank();
  std::string process_name = rank >= 0 ? "rank " + std::to_string(rank) : "process";
  process_name += "  " + trace.host + ":" + std::to_string(trace.pid);
  {
    pf::TracePacket packet;
    pf::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(process_uuid);
    track->set_name(Text(process_name));
    track->mutable_process()->set_pid(static_cast<int32_t>(pid));
    track->mutable_process()->set_process_name(Text(process_name));
    if (!trace.exe.empty()) track->mutable_process()->add_cmdline(Text(trace.exe));
    write(packet);
  }

  std::deque<PendingEvent> events;  // a deque: `instant` hands out pointers into it
  uint64_t serial = 0;
  auto instant = [&](uint64_t t, const std::string& name, const std::string& category) {
    PendingEvent e;
    e.ts = at(t);
    e.rank = 2;
    e.serial = serial++;
    e.event.set_type(pf::TrackEvent::TYPE_INSTANT);
    e.event.set_track_uuid(process_uuid);
    e.event.set_name(Text(name));
    e.event.add_categories(category);
    ++stats_.instants;
    events.push_back(std::move(e));
    return &events.back().event;
  };
  // A slice on `track` from `begin` to `end`, opened by `event` (its name,
  // categories, annotations).
  auto slice = [&](uint64_t track, uint64_t begin, uint64_t end, pf::TrackEvent event) {
    PendingEvent b;
    b.ts = begin;
    b.rank = 1;
    b.serial = serial++;
    b.event = std::move(event);
    b.event.set_type(pf::TrackEvent::TYPE_SLICE_BEGIN);
    b.event.set_track_uuid(track);
    PendingEvent e;
    e.ts = end;
    e.rank = 0;
    e.serial = serial++;
    e.event.set_type(pf::TrackEvent::TYPE_SLICE_END);
    e.event.set_track_uuid(track);
    events.push_back(std::move(b));
    events.push_back(std::move(e));
    ++stats_.slices;
  };

  // When the process stopped: its end, its fatal signal, or its last record.
  uint64_t end_t = trace.last_t;
  if (trace.end) end_t = std::max(end_t, trace.end->t);

  // Communicator tracks, one per (communicator, rank), with their slices.
  std::map<std::pair<uint64_t, int32_t>, std::vector<SliceSpan>> spans;
  auto comm_slices = [&](uint64_t comm, int32_t comm_rank) -> std::vector<SliceSpan>& {
    return spans[{comm, comm_rank}];
  };
  auto nranks_of = [&](uint64_t comm, int32_t comm_rank) -> int32_t {
    const CommMembership* m = trace.Membership(comm, comm_rank);
    return m ? m->nranks : -1;
  };
  // GPU completion, where the shim tracked it: a communicator's Progress
  // records in timeline order (their counts only grow).
  std::map<uint64_t, std::vector<const ProgressEvent*>> progress;
  for (const ProgressEvent& p : trace.progress) progress[p.comm].push_back(&p);
  auto tracked = [&](uint64_t comm) {
    const CompletionTrackingEvent* e = trace.Tracking(comm);
    return e != nullptr && e->Tracked();
  };
  const uint64_t trace_end = at(end_t);
  // Where a slice ends, and the words for it. `done` finds the first
  // Progress that covers the operation.
  auto span_end = [&](uint64_t comm, uint64_t begin, int32_t result,
                      const std::function<bool(const ProgressEvent&)>& done,
                      std::string* how) -> uint64_t {
    if (tracked(comm) && Accepted(result)) {
      const auto it = progress.find(comm);
      if (it != progress.end()) {
        const auto& list = it->second;
        const auto first = std::partition_point(list.begin(), list.end(),
                                                [&](const ProgressEvent* p) { return !done(*p); });
        if (first != list.end()) {
          *how = "completed on the GPU";
          return std::max(at((*first)->t), begin + 1);
        }
      }
      *how = "not completed on the GPU when the trace ended";
      return std::max(trace_end, begin + 1);
    }
    // Not tracked: the trace times no returns. A call still pending runs to
    // the trace's end.
    if (result == kResultPending) {
      *how = "still inside the call when the trace ended";
      return std::max(trace_end, begin + 1);
    }
    *how = "returned (completion not tracked; 1 µs drawn)";
    return begin + kReturnedCallNs;
  };
  auto mark_of = [&](const std::map<std::tuple<int, uint64_t, uint64_t>, size_t>& marks,
                     uint64_t comm, uint64_t seq) -> const Mark* {
    auto it = marks.find({process, comm, seq});
    return it == marks.end() ? nullptr : &marks_[it->second];
  };

  for (const CollectiveEvent& c : trace.collectives) {
    if (!Accepted(c.result)) continue;  // refused: never enqueued, no number
    SliceSpan s;
    s.begin = at(c.t);
    std::string how;
    s.end = span_end(
        c.comm, s.begin, c.result, [&](const ProgressEvent& p) { return p.collectives > c.seq; },
        &how);
    CollectiveSignature sig = CollectiveSignature::Of(c);
    std::string name = CallName(c.call) + " #" + std::to_string(c.seq);
    pf::TrackEvent& e = s.event;
    e.add_categories("collective");
    if (const Mark* m = mark_of(collective_marks_, c.comm, c.seq)) {
      name = m->title + " " + name;
      e.add_categories("root_cause");
      Annotate(&e, "root_cause", m->detail);
      ++stats_.root_cause_marks;
    }
    e.set_name(name);
    Annotate(&e, "call", DescribeCollective(sig));
    Annotate(&e, "comm", CommName(c.comm));
    Annotate(&e, "seq", static_cast<int64_t>(c.seq));
    Annotate(&e, "rank", c.rank);
    Annotate(&e, "nranks", nranks_of(c.comm, c.rank));
    Annotate(&e, "result", ResultName(c.result));
    Annotate(&e, "end", how);
    if (c.stream) Annotate(&e, "stream", Hex(c.stream));
    if (c.caller) Annotate(&e, "call_site", CallSite(trace.modules, c.caller));
    e.add_flow_ids(Mix(Mix(0x636f6c6cULL, c.comm), c.seq));
    comm_slices(c.comm, c.rank).push_back(std::move(s));
  }
  for (const P2pEvent& p : trace.p2p) {
    if (!Accepted(p.result)) continue;
    SliceSpan s;
    s.begin = at(p.t);
    std::string how;
    s.end = span_end(
        p.comm, s.begin, p.result, [&](const ProgressEvent& pr) { return pr.enqueued_t >= p.t; },
        &how);
    pf::TrackEvent& e = s.event;
    std::string name = std::string(p.send ? "Send" : "Recv") + " #" + std::to_string(p.seq) +
                       (p.send ? " to " : " from ") + std::to_string(p.peer);
    e.add_categories("p2p");
    auto it = p2p_marks_.find({process, p.comm, p.send, p.peer, p.seq});
    if (it != p2p_marks_.end()) {
      const Mark& m = marks_[it->second];
      name = m.title + " " + name;
      e.add_categories("root_cause");
      Annotate(&e, "root_cause", m.detail);
      ++stats_.root_cause_marks;
    }
    e.set_name(name);
    Annotate(&e, "count", static_cast<int64_t>(p.count));
    Annotate(&e, "datatype", DatatypeName(p.datatype));
    Annotate(&e, "comm", CommName(p.comm));
    Annotate(&e, "seq", static_cast<int64_t>(p.seq));
    Annotate(&e, "rank", p.rank);
    Annotate(&e, "peer", p.peer);
    Annotate(&e, "result", ResultName(p.result));
    Annotate(&e, "end", how);
    if (p.caller) Annotate(&e, "call_site", CallSite(trace.modules, p.caller));
    const int32_t sender = p.send ? p.rank : p.peer;
    const int32_t receiver = p.send ? p.peer : p.rank;
    e.add_flow_ids(Mix(Mix(Mix(Mix(0x7032704ULL, p.comm), static_cast<uint32_t>(sender)),
                           static_cast<uint32_t>(receiver)),
                       p.seq));
    comm_slices(p.comm, p.rank).push_back(std::move(s));
  }
  // Memberships without a call still get their track.
  for (const CommMembership& m : trace.comms) comm_slices(m.comm, m.rank);

  for (auto& [key, list] : spans) {
    const auto [comm, comm_rank] = key;
    const uint64_t comm_uuid = Mix(Mix(process_uuid, comm), static_cast<uint32_t>(comm_rank));
    const int32_t nranks = nranks_of(comm, comm_rank);
    std::string track_name = "comm " + CommShort(comm) + " rank " + std::to_string(comm_rank);
    if (nranks > 0) track_name += "/" + std::to_string(nranks);
    {
      pf::TracePacket packet;
      pf::TrackDescriptor* track = packet.mutable_track_descriptor();
      track->set_uuid(comm_uuid);
      track->set_parent_uuid(process_uuid);
      track->set_name(track_name);
      write(packet);
    }
    ++stats_.comm_tracks;
    std::stable_sort(list.begin(), list.end(),
                     [](const SliceSpan& a, const SliceSpan& b) { return a.begin < b.begin; });
    // Lanes: the first whose last slice ended by this one's begin.
    std::vector<uint64_t> lane_end;
    std::vector<uint64_t> lane_uuid;
    for (SliceSpan& s : list) {
      size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > s.begin) ++lane;
      if (lane == kMaxLanes) {
        // More operations in flight than lanes (a crafted trace, or a GPU
        // hung under a long queue): drawn short in the lane that frees first.
        lane = static_cast<size_t>(std::min_element(lane_end.begin(), lane_end.end()) -
                                   lane_end.begin());
        s.begin = std::max(s.begin, lane_end[lane]);
        s.end = s.begin + 1;
        Annotate(&s.event, "drawn", "1 ns: more operations in flight than the timeline has lanes");
      }
      if (lane == lane_end.size()) {
        lane_end.push_back(0);
        uint64_t uuid = comm_uuid;
        if (lane > 0) {
          uuid = Mix(comm_uuid, lane);
          pf::TracePacket packet;
          pf::TrackDescriptor* track = packet.mutable_track_descriptor();
          track->set_uuid(uuid);
          track->set_parent_uuid(comm_uuid);
          track->set_name(track_name + " (in flight together " + std::to_string(lane + 1) + ")");
          write(packet);
          ++stats_.lanes;
        }
        lane_uuid.push_back(uuid);
      }
      lane_end[lane] = s.end;
      stats_.flow_events += s.event.flow_ids_size() > 0 ? 1 : 0;
      slice(lane_uuid[lane], s.begin, s.end, std::move(s.event));
    }
  }

  // The GPU's own times (GpuTime, issue 23): per communicator, a track of
  // slices from the GPU reaching each operation to its finishing it, on the
  // host's clock through the watcher's anchor. A slice that would overlap
  // the one before (two streams) is drawn from that one's end.
  if (!trace.gpu_times.empty() && !trace.anchors.empty()) {
    // On the reference host's clock, as the host's own slices are (`at`).
    auto gpu_at = [&](uint64_t monotonic_ns) {
      return Ns(HostClocks::OnReference(trace.RealtimeOfMonotonicNs(monotonic_ns), clock));
    };
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> gpu_tracks;  // comm -> (uuid, last end)
    for (const GpuTimeEvent& g : trace.gpu_times) {
      if (g.begin_ns == 0 || g.end_ns < g.begin_ns ||
          g.end_ns > static_cast<uint64_t>(INT64_MAX / 2))
        continue;
      auto [it, fresh] =
          gpu_tracks.try_emplace(g.comm, Mix(Mix(process_uuid, g.comm), 0x677075), 0);
      if (fresh) {
        pf::TracePacket packet;
        pf::TrackDescriptor* track = packet.mutable_track_descriptor();
        track->set_uuid(it->second.first);
        track->set_parent_uuid(process_uuid);
        track->set_name("GPU comm " + CommShort(g.comm));
        write(packet);
      }
      const uint64_t begin = std::max(gpu_at(g.begin_ns), it->second.second);
      const uint64_t end = std::max(gpu_at(g.end_ns), begin + 1);
      it->second.second = end;
      pf::TrackEvent gpu;
      gpu.set_name(Text(g.group_ops ? absl::StrCat("group of ", g.group_ops, " on the GPU")
                                    : CallName(g.call) + " on the GPU"));
      gpu.add_categories("gpu");
      Annotate(&gpu, "seq", static_cast<int64_t>(g.seq));
      Annotate(&gpu, "gpu_ns", static_cast<int64_t>(g.gpu_ns));
      Annotate(&gpu, "anchor_error_ns", static_cast<int64_t>(g.anchor_error_ns));
      slice(it->second.first, begin, end, std::move(gpu));
      ++stats_.gpu_slices;
    }
  }

  // Instants: the init steps and the ends of communicators.
  for (const ApiEvent& a : trace.apis) {
    if (a.call != static_cast<uint32_t>(::ncclwatch::fields::kGetUniqueId)) continue;
    instant(a.t, "ncclGetUniqueId", "init");
  }
  for (const CommMembership& m : trace.comms) {
    std::string name = CallName(m.init_call) + " " + CommShort(m.comm) + " rank " +
                       std::to_string(m.rank) + "/" + std::to_string(m.nranks);
    pf::TrackEvent* e = instant(m.init_t, name, "init");
    Annotate(e, "comm", CommName(m.comm));
    Annotate(e, "result", m.init_returned ? ResultName(m.init_result) : "never returned");
    if (m.device >= 0) Annotate(e, "device", m.device);
    if (!m.bus_id.empty()) Annotate(e, "bus_id", m.bus_id);
    if (m.parent) Annotate(e, "parent", CommName(m.parent));
    if (m.end_call != 0) {
      pf::TrackEvent* end =
          instant(m.end_t, CallName(m.end_call) + " " + CommShort(m.comm), "init");
      Annotate(end, "result", ResultName(m.end_result));
    }
  }
  for (const SysCallEvent& s : trace.syscalls) {
    if (s.err == 0) continue;
    std::string name = SysCallName(s.kind) + " failed: " + ErrnoName(s.err);
    pf::TrackEvent* e = instant(s.t, name, "syscall");
    Annotate(e, "errno", ErrnoName(s.err) + " (" + ErrnoText(s.err) + ")");
    if (!s.path.empty()) Annotate(e, "path", s.path);
    if (s.addr) Annotate(e, "address", s.addr->ToString());
    if (s.size >= 0) Annotate(e, "size", s.size);
    if (s.in_call) Annotate(e, "in_call", CallName(s.in_call));
  }
  for (const NcclErrorEvent& err : trace.errors) {
    std::string name = CallName(err.call) + " -> " + ResultName(err.result);
    if (err.async) name = "async error " + ResultName(err.result);
    pf::TrackEvent* e = instant(err.t, name, "error");
    if (!err.text.empty()) Annotate(e, "nccl_said", err.text);
    if (err.comm) Annotate(e, "comm", CommName(err.comm));
  }
  for (const FatalSignalEvent& s : trace.signals) {
    pf::TrackEvent* e = instant(s.t, SignalName(s.signo), "signal");
    if (s.sender_pid) Annotate(e, "sender_pid", s.sender_pid);
    if (s.address) Annotate(e, "address", Hex(s.address));
  }
  for (const StallEvent& st : trace.stalls) {
    pf::TrackEvent* e =
        instant(st.t,
                "STALL: " + CallName(st.call) + " #" + std::to_string(st.seq) + " " +
                    CommShort(st.comm) + " waited " + std::to_string(st.waited_ms / 1000) + " s",
                "stall");
    Annotate(e, "comm", CommName(st.comm));
    Annotate(e, "completed", static_cast<int64_t>(st.completed));
    Annotate(e, "pending", static_cast<int64_t>(st.pending));
    if (st.peer >= 0) Annotate(e, "peer", st.peer);
  }
  for (const CudaErrorEvent& ce : trace.cuda_errors) {
    pf::TrackEvent* e = instant(ce.t, "CUDA error " + ce.name, "error");
    if (!ce.text.empty()) Annotate(e, "text", ce.text);
    if (ce.comm) Annotate(e, "comm", CommName(ce.comm));
  }
  if (trace.end) {
    instant(trace.end->t, "exit " + std::to_string(trace.end->exit_code), "process");
  }
  if (auto it = process_marks_.find(process); it != process_marks_.end() && process >= 0) {
    for (size_t index : it->second) {
      const Mark& m = marks_[index];
      PendingEvent e;
      e.ts = m.when_ns > 0 ? Ns(HostClocks::OnReference(m.when_ns, clock)) : at(end_t);
      e.rank = 2;
      e.serial = serial++;
      e.event.set_type(pf::TrackEvent::TYPE_INSTANT);
      e.event.set_track_uuid(process_uuid);
      e.event.set_name(m.title);
      e.event.add_categories(m.category);
      Annotate(&e.event, "detail", m.detail);
      ++stats_.instants;
      ++(std::string(m.category) == "straggler" ? stats_.straggler_marks : stats_.root_cause_marks);
      events.push_back(std::move(e));
    }
  }

  std::sort(events.begin(), events.end(), [](const PendingEvent& a, const PendingEvent& b) {
    return std::tie(a.ts, a.rank, a.serial) < std::tie(b.ts, b.rank, b.serial);
  });
  for (PendingEvent& e : events) {
    pf::TracePacket packet;
    packet.set_timestamp(e.ts);
    *packet.mutable_track_event() = std::move(e.event);
    write(packet);
  }
}

}  // namespace ncclwatch::decoder

// The timeline writer (report/timeline.h) on synthetic processes: what it
// writes decodes with libprotobuf as a Perfetto Trace, and a point-to-point
// mismatch is marked on both sides. (Real jobs: tests/jobs/timeline_jobs_test.cc.)

#include "report/timeline.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <string>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "perfetto/perfetto_trace.pb.h"
#include "synthetic_process.h"

namespace {

using namespace ncclwatch::testing;  // NOLINT
namespace nd = ::ncclwatch::decoder;
namespace pf = ::ncclwatch::perfetto;

constexpr uint64_t kComm = 0xbeef;

bool HasCategory(const pf::TrackEvent& e, const std::string& c) {
  for (const auto& x : e.categories())
    if (x == c) return true;
  return false;
}

}  // namespace

TEST_CASE("a receive for another size: both sides marked, linked by one flow", "[timeline]") {
  SyntheticProcess r0(0), r1(1), launcher(-1);
  r0.Init(kComm, 0, 2).Collective(kComm, 0).Send(kComm, 0, 1, Sized(64)).Exit(0);
  r1.Init(kComm, 1, 2).Collective(kComm, 0).Recv(kComm, 0, 0, Sized(32)).Exit(0);
  launcher.Exit(0);
  const nd::ProcessTrace t0 = r0.Build(), t1 = r1.Build(), tl = launcher.Build();
  nd::JobAnalysis job;
  job.AddProcess(t0);
  job.AddProcess(t1);
  job.AddProcess(tl);
  job.Finish();
  const nd::Diagnosis d = nd::Diagnose(job);
  REQUIRE_FALSE(d.findings.empty());
  REQUIRE(d.findings.front().kind == nd::FindingKind::kP2pMismatch);

  std::ostringstream bytes;
  nd::TimelineWriter writer(bytes);
  writer.MarkRootCauses(job, d);
  writer.AddProcess(t0, 0);
  writer.AddProcess(t1, 1);
  writer.AddProcess(tl, 2);  // no NCCL: left out
  pf::Trace trace;
  REQUIRE(trace.ParseFromString(bytes.str()));
  CHECK(writer.stats().processes == 2);

  std::map<uint64_t, std::string> process_tracks;
  std::map<uint64_t, int> flows;
  std::map<std::string, const pf::TrackEvent*> marked;
  int begins = 0, ends = 0;
  for (const pf::TracePacket& p : trace.packet()) {
    CHECK(p.has_trusted_packet_sequence_id());
    if (p.has_track_descriptor() && p.track_descriptor().has_process())
      process_tracks[p.track_descriptor().uuid()] = p.track_descriptor().name();
    if (!p.has_track_event()) continue;
    const pf::TrackEvent& e = p.track_event();
    begins += e.type() == pf::TrackEvent::TYPE_SLICE_BEGIN;
    ends += e.type() == pf::TrackEvent::TYPE_SLICE_END;
    for (uint64_t id : e.flow_ids()) ++flows[id];
    if (e.type() == pf::TrackEvent::TYPE_SLICE_BEGIN && HasCategory(e, "root_cause"))
      marked[e.name()] = &e;
  }
  CHECK(process_tracks.size() == 2);
  // A collective and a send or receive per rank, and the collective's
  // arrival-skew slice (from the first rank's enqueue to the last's).
  CHECK(begins == 5);
  CHECK(ends == 5);
  CHECK(writer.stats().arrival_slices == 1);
  CHECK(marked.size() == 2);
  CHECK(marked.count("ROOT CAUSE: p2p_mismatch Send #0 to 1") == 1);
  CHECK(marked.count("ROOT CAUSE: p2p_mismatch Recv #0 from 0") == 1);
  // The collective's flow and the send's: each joins the two ranks.
  CHECK(flows.size() == 2);
  for (const auto& [id, uses] : flows) CHECK(uses == 2);
}

TEST_CASE("slices in flight together go to lanes, at most 16, and every track still nests",
          "[timeline]") {
  // 40 collectives that never returned (a crafted trace: NCCL blocks in one
  // at a time), each running to the trace's end.
  SyntheticProcess r0(0);
  r0.Init(kComm, 0, 1);
  for (uint64_t seq = 0; seq < 40; ++seq) r0.Collective(kComm, seq, AllReduce().Pending());
  const nd::ProcessTrace t0 = r0.Build();
  nd::JobAnalysis job;
  job.AddProcess(t0);
  job.Finish();
  std::ostringstream bytes;
  nd::TimelineWriter writer(bytes);
  writer.MarkRootCauses(job, nd::Diagnose(job));
  writer.AddProcess(t0, 0);
  CHECK(writer.stats().slices == 40);
  CHECK(writer.stats().lanes == 15);
  pf::Trace trace;
  REQUIRE(trace.ParseFromString(bytes.str()));
  // Per track, in time order: a begin never comes while the track's last
  // slice is open unless it ends first (ends sort before begins at one time).
  std::map<uint64_t, int> open;
  std::vector<const pf::TracePacket*> events;
  for (const pf::TracePacket& p : trace.packet())
    if (p.has_track_event()) events.push_back(&p);
  std::stable_sort(events.begin(), events.end(),
                   [](const auto* a, const auto* b) { return a->timestamp() < b->timestamp(); });
  int most_open = 0;
  for (const pf::TracePacket* p : events) {
    const pf::TrackEvent& e = p->track_event();
    if (e.type() == pf::TrackEvent::TYPE_SLICE_BEGIN)
      most_open = std::max(most_open, ++open[e.track_uuid()]);
    if (e.type() == pf::TrackEvent::TYPE_SLICE_END) CHECK(--open[e.track_uuid()] >= 0);
  }
  CHECK(most_open == 1);
  for (const auto& [track, n] : open) CHECK(n == 0);
}

TEST_CASE("a host whose clock runs ahead is drawn on the reference host's, as the job aligned it",
          "[timeline]") {
  // Two ranks on two hosts, node1's clock 30 ms ahead; both enqueue each of
  // 10 AllReduces at the same true moment and finish it together.
  constexpr uint64_t kMs = 1'000'000;
  SyntheticProcess r0(0), r1(1);
  r0.Init(kComm, 0, 2).Tracked(kComm);
  r1.OnHost("node1").ClockAhead(30 * kMs).Init(kComm, 1, 2).Tracked(kComm);
  for (uint64_t s = 0; s < 10; ++s) {
    const uint64_t at = 1000 * kMs + s * 20 * kMs;
    for (SyntheticProcess* p : {&r0, &r1})
      p->At(at).Collective(kComm, s).GpuTime(kComm, s, at, at + kMs);
  }
  r0.Progress(kComm, 10).Exit(0);
  r1.Progress(kComm, 10).Exit(0);
  const nd::ProcessTrace t0 = r0.Build(), t1 = r1.Build();
  nd::JobAnalysis job;
  job.AddProcess(t0);
  job.AddProcess(t1);
  job.Finish();
  REQUIRE(job.clocks().hosts().size() == 2);
  CHECK(job.clocks().hosts()[1].offset_ns == static_cast<int64_t>(30 * kMs));
  const nd::Diagnosis d = nd::Diagnose(job);

  std::ostringstream bytes;
  nd::TimelineWriter writer(bytes);
  writer.MarkRootCauses(job, d);
  writer.AddProcess(t0, 0);
  writer.AddProcess(t1, 1);
  pf::Trace trace;
  REQUIRE(trace.ParseFromString(bytes.str()));
  // Each process's first slice (its first AllReduce), by its packet sequence.
  std::map<uint32_t, uint64_t> first;
  for (const pf::TracePacket& p : trace.packet()) {
    if (!p.has_track_event() || p.track_event().type() != pf::TrackEvent::TYPE_SLICE_BEGIN)
      continue;
    auto [it, fresh] = first.try_emplace(p.trusted_packet_sequence_id(), p.timestamp());
    if (!fresh) it->second = std::min(it->second, p.timestamp());
  }
  std::vector<uint64_t> starts;
  for (const auto& [sequence, ts] : first) starts.push_back(ts);
  REQUIRE(starts.size() >= 2);
  // The two processes' first slices begin together (the arrival slice, on
  // a sequence of its own, too), not 30 ms apart.
  const auto [lo, hi] = std::minmax_element(starts.begin(), starts.end());
  CHECK(*hi - *lo < kMs);
}

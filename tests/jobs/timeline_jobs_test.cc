// `ncclwatch timeline`: real jobs on the simulator, under the shim, written
// as one Perfetto trace and read back with libprotobuf through our
// definitions of Perfetto's messages (the field numbers are Perfetto's).
// What a reader of ui.perfetto.dev relies on is checked: one process track
// per rank, a communicator track under it, every slice begun and ended on
// one track and nested, a flow through every rank's slice of a collective and
// from each send to its receive, and the root cause marked.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "perfetto/perfetto_trace.pb.h"
#include "support/traced_job.h"

namespace {

namespace pf = ::ncclwatch::perfetto;

struct Timeline {
  int exit_code = -1;
  std::string output;
  pf::Trace trace;
  bool parsed = false;

  std::map<uint64_t, const pf::TrackDescriptor*> tracks;
  std::vector<const pf::TrackDescriptor*> processes;  // process tracks
  // Slices: (track, begin packet) with their end time.
  struct Slice {
    uint64_t track = 0;
    uint64_t begin = 0, end = 0;
    const pf::TrackEvent* event = nullptr;
  };
  std::vector<Slice> slices;
  std::vector<std::pair<uint64_t, const pf::TrackEvent*>> instants;  // (ts, event)
  std::map<uint64_t, int> flow_uses;                                 // flow id -> events
  std::string errors;                                                // nesting problems

  // The process track whose name starts with "rank R ".
  uint64_t ProcessOf(int rank) const {
    for (const auto* t : processes)
      if (t->name().rfind("rank " + std::to_string(rank) + " ", 0) == 0) return t->uuid();
    return 0;
  }
  // The process track a track belongs to.
  uint64_t RootOf(uint64_t track) const {
    for (int hops = 0; hops < 8; ++hops) {
      auto it = tracks.find(track);
      if (it == tracks.end()) return 0;
      if (it->second->has_process()) return track;
      track = it->second->parent_uuid();
    }
    return 0;
  }
};

Timeline WriteTimeline(const std::string& dir) {
  Timeline t;
  const std::string file = dir + "/job.pftrace";
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(), "timeline", dir, "-o", file};
  spec.timeout_s = 120;
  jobs::JobResult r = jobs::RunJob(spec);
  if (r.ranks.empty()) return t;
  t.exit_code = r.ranks[0].exit_code;
  t.output = r.ranks[0].output;
  std::ifstream in(file, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  t.parsed = t.trace.ParseFromString(bytes.str());
  if (!t.parsed) return t;
  for (const pf::TracePacket& p : t.trace.packet()) {
    if (!p.has_track_descriptor()) continue;
    t.tracks[p.track_descriptor().uuid()] = &p.track_descriptor();
    if (p.track_descriptor().has_process()) t.processes.push_back(&p.track_descriptor());
  }
  // Per track, a stack of open slices; events in the order Perfetto sorts
  // them (by time, the file's order at one time).
  std::vector<const pf::TracePacket*> events;
  for (const pf::TracePacket& p : t.trace.packet())
    if (p.has_track_event()) events.push_back(&p);
  std::stable_sort(events.begin(), events.end(),
                   [](const auto* a, const auto* b) { return a->timestamp() < b->timestamp(); });
  std::map<uint64_t, std::vector<size_t>> open;
  for (const pf::TracePacket* p : events) {
    const pf::TrackEvent& e = p->track_event();
    if (!t.tracks.count(e.track_uuid())) t.errors += "an event on an undeclared track\n";
    for (uint64_t id : e.flow_ids()) ++t.flow_uses[id];
    if (e.type() == pf::TrackEvent::TYPE_INSTANT) {
      t.instants.push_back({p->timestamp(), &e});
    } else if (e.type() == pf::TrackEvent::TYPE_SLICE_BEGIN) {
      open[e.track_uuid()].push_back(t.slices.size());
      t.slices.push_back({e.track_uuid(), p->timestamp(), 0, &e});
    } else if (e.type() == pf::TrackEvent::TYPE_SLICE_END) {
      auto& stack = open[e.track_uuid()];
      if (stack.empty()) {
        t.errors += "an end without a begin\n";
        continue;
      }
      t.slices[stack.back()].end = p->timestamp();
      stack.pop_back();
    }
  }
  for (const auto& [track, stack] : open)
    if (!stack.empty()) t.errors += "a slice never ended\n";
  return t;
}

bool HasCategory(const pf::TrackEvent& e, const std::string& category) {
  for (const auto& c : e.categories())
    if (c == category) return true;
  return false;
}

std::string Annotation(const pf::TrackEvent& e, const std::string& name) {
  for (const auto& a : e.debug_annotations()) {
    if (a.name() != name) continue;
    if (a.has_string_value()) return a.string_value();
    if (a.has_int_value()) return std::to_string(a.int_value());
  }
  return "";
}

}  // namespace

TEST_CASE("timeline of a healthy job: tracks per rank and communicator, slices, flows",
          "[timeline]") {
  jobs::TempDir dir;
  jobs::JobSpec spec = jobs::TracedJobSpec(
      4, "train_loop", {"--steps", "6", "--pipeline", "--tensor-parallel"}, dir.path());
  jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());
  for (const auto& r : job.ranks) REQUIRE(r.exit_code == 0);

  const Timeline t = WriteTimeline(dir.path());
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  REQUIRE(t.parsed);
  CHECK(t.output.find("ui.perfetto.dev") != std::string::npos);
  CHECK(t.errors.empty());
  REQUIRE(t.processes.size() == 4);
  for (int rank = 0; rank < 4; ++rank) CHECK(t.ProcessOf(rank) != 0);

  // Each rank: the world communicator and its tensor-parallel pair, as
  // tracks under its process track.
  std::map<uint64_t, std::set<std::string>> comm_tracks;  // process -> comm track names
  for (const auto& [uuid, track] : t.tracks) {
    if (track->has_process() || track->name().rfind("comm ", 0) != 0) continue;
    if (track->name().find("in flight together") != std::string::npos) continue;
    CHECK(t.tracks.count(track->parent_uuid()) == 1);
    comm_tracks[track->parent_uuid()].insert(track->name());
  }
  const std::string world = jobs::CommId(dir.path(), 0, "ncclCommInitRank").substr(0, 6);
  for (int rank = 0; rank < 4; ++rank) {
    const auto& names = comm_tracks[t.ProcessOf(rank)];
    CHECK(names.size() == 2);
    CHECK(names.count("comm " + world + " rank " + std::to_string(rank) + "/4") == 1);
  }

  // Slices: 6 AllReduce steps on the world communicator per rank (plus the
  // broadcasts), sends and receives; each lies on its rank's tracks.
  std::map<uint64_t, int> world_allreduce;  // process -> slices
  std::map<uint64_t, int> gpu_allreduce;    // process -> GPU slices of the world's AllReduces
  int sends = 0, recvs = 0;
  std::map<std::string, int> arrivals;  // arrival-skew track name -> slices
  for (const auto& s : t.slices) {
    CHECK(s.end > s.begin);
    if (HasCategory(*s.event, "arrival_skew")) {
      CHECK(t.tracks.at(s.track)->has_process() == false);
      CHECK_FALSE(HasCategory(*s.event, "straggler"));
      ++arrivals[t.tracks.at(s.track)->name()];
      continue;
    }
    const uint64_t process = t.RootOf(s.track);
    REQUIRE(process != 0);
    if (HasCategory(*s.event, "gpu")) {  // the GPU's own times, on a track of their own
      if (t.tracks.at(s.track)->name() == "GPU comm " + world &&
          s.event->name() == "AllReduce on the GPU")
        ++gpu_allreduce[process];
      continue;
    }
    if (HasCategory(*s.event, "collective") && s.event->name().rfind("AllReduce #", 0) == 0 &&
        Annotation(*s.event, "comm").rfind(world, 0) == 0) {
      ++world_allreduce[process];
    }
    // Every operation completed on the GPU: the slice ends at its completion.
    CHECK(Annotation(*s.event, "end") == "completed on the GPU");
    if (s.event->name().rfind("Send #", 0) == 0) ++sends;
    if (s.event->name().rfind("Recv #", 0) == 0) ++recvs;
    CHECK_FALSE(HasCategory(*s.event, "root_cause"));
  }
  for (int rank = 0; rank < 4; ++rank) CHECK(world_allreduce[t.ProcessOf(rank)] == 6);
  for (int rank = 0; rank < 4; ++rank) CHECK(gpu_allreduce[t.ProcessOf(rank)] == 6);
  CHECK(sends == 24);
  CHECK(sends == recvs);
  // Arrival skew: a track per communicator (the world, two pairs), a slice
  // per collective every member issued.
  CHECK(arrivals.size() == 3);
  CHECK(arrivals["arrival skew comm " + world + " (4 ranks)"] == 7);

  // Flows: a collective's id is on its slice on every rank of its
  // communicator (4 for the world, 2 for a pair), a send's on it and its receive.
  std::map<int, int> by_uses;
  for (const auto& [id, uses] : t.flow_uses) ++by_uses[uses];
  CHECK(by_uses.count(1) == 0);  // no flow is left dangling
  CHECK(by_uses[2] > 24);        // the sends with their receives, and the pairs' collectives
  CHECK(by_uses[4] == 7);  // the world's collectives: an AllReduce per step, step 3's Broadcast

  // Init steps as instants on the process tracks.
  int inits = 0;
  for (const auto& [ts, e] : t.instants)
    if (HasCategory(*e, "init") && e->name().rfind("ncclCommInitRank", 0) == 0) ++inits;
  CHECK(inits == 4);
}

TEST_CASE("timeline of a broken job: the root cause's collective marked on the deviating rank",
          "[timeline]") {
  jobs::TempDir dir;
  jobs::JobSpec spec =
      jobs::TracedJobSpec(4, "train_loop", {"--steps", "6", "--bug", "op:2:2"}, dir.path());
  spec.env.push_back("NCCLWATCH_STALL=2");
  spec.timeout_s = 5;
  jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());

  const Timeline t = WriteTimeline(dir.path());
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  REQUIRE(t.parsed);
  CHECK(t.errors.empty());
  CHECK(t.output.find("the root cause marked") != std::string::npos);
  int marked = 0;
  for (const auto& s : t.slices) {
    if (!HasCategory(*s.event, "root_cause")) continue;
    ++marked;
    CHECK(t.RootOf(s.track) == t.ProcessOf(2));
    CHECK(s.event->name() == "ROOT CAUSE: collective_mismatch Broadcast #2");
    CHECK(Annotation(*s.event, "root_cause").find("rank 2 called Broadcast") != std::string::npos);
  }
  CHECK(marked == 1);
  // And an instant with the finding's words on rank 2's process track.
  bool instant = false;
  for (const auto& [ts, e] : t.instants) {
    if (!HasCategory(*e, "root_cause")) continue;
    instant = true;
    CHECK(e->track_uuid() == t.ProcessOf(2));
    CHECK(e->name() == "ROOT CAUSE: collective_mismatch");
  }
  CHECK(instant);
  // Collective #2's flow still joins every rank's slice of it; none of them
  // completed, so each runs to its trace's end, and #1 before it completed.
  int seq2 = 0;
  for (const auto& s : t.slices) {
    if (!HasCategory(*s.event, "collective")) continue;
    const std::string seq = Annotation(*s.event, "seq");
    if (seq == "2") {
      ++seq2;
      CHECK(Annotation(*s.event, "end") == "not completed on the GPU when the trace ended");
    }
    if (seq == "1") CHECK(Annotation(*s.event, "end") == "completed on the GPU");
  }
  CHECK(seq2 == 4);
  // The shim's stall reports, as instants.
  int stalls = 0;
  for (const auto& [ts, e] : t.instants)
    if (HasCategory(*e, "stall") && e->name().find(" #2 ") != std::string::npos) ++stalls;
  CHECK(stalls == 4);
}

TEST_CASE("timeline of a slow job: arrival skew per collective, the straggler marked",
          "[timeline][straggler]") {
  jobs::TempDir dir;
  jobs::JobSpec spec = jobs::TracedJobSpec(
      4, "train_loop", {"--steps", "40", "--step-ms", "5", "--slow-host", "1:0:40"}, dir.path());
  jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());
  for (const auto& r : job.ranks) REQUIRE(r.exit_code == 0);
  const Timeline t = WriteTimeline(dir.path());
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  REQUIRE(t.parsed);
  CHECK(t.errors.empty());
  int marked = 0, slices = 0;
  for (const auto& s : t.slices) {
    if (!HasCategory(*s.event, "arrival_skew")) continue;
    ++slices;
    if (!HasCategory(*s.event, "straggler")) continue;
    ++marked;
    CHECK(s.event->name().rfind("STRAGGLER ", 0) == 0);  // mostly AllReduces
    CHECK(s.event->name().find(": rank 1 last, ") != std::string::npos);
    CHECK(Annotation(*s.event, "last_rank") == "1");
    CHECK(s.end - s.begin >= 1'000'000);  // last by 1 ms or more (40 ms, less the others' delays)
  }
  CHECK(slices == 50);  // 40 AllReduces and 10 Broadcasts
  CHECK(marked >= 20);
  bool instant = false;
  for (const auto& [ts, e] : t.instants) {
    if (!HasCategory(*e, "straggler")) continue;
    instant = true;
    CHECK(e->track_uuid() == t.ProcessOf(1));
    CHECK(e->name() == "STRAGGLER: rank 1");
    CHECK(Annotation(*e, "detail").rfind("rank 1 enqueued last in ", 0) == 0);
  }
  CHECK(instant);
}

// A slow GPU (NCCLSIM_SLOW_GPU): the straggler instant on its process says
// its GPU came last, and every rank has its GPU's slices, the slow one's
// short (it reaches each AllReduce last and waits for no one).
TEST_CASE("timeline of a job with a slow GPU: the straggler marked, the GPU's slices drawn",
          "[timeline][straggler]") {
  jobs::TempDir dir;
  jobs::JobSpec spec =
      jobs::TracedJobSpec(4, "train_loop", {"--steps", "40", "--step-ms", "5"}, dir.path());
  spec.env.push_back("NCCLSIM_SLOW_GPU=1:0:20");
  jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());
  for (const auto& r : job.ranks) REQUIRE(r.exit_code == 0);
  const Timeline t = WriteTimeline(dir.path());
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  REQUIRE(t.parsed);
  CHECK(t.errors.empty());
  std::map<uint64_t, std::vector<uint64_t>> gpu;  // process -> its GPU AllReduce slices' lengths
  for (const auto& s : t.slices)
    if (HasCategory(*s.event, "gpu") && s.event->name() == "AllReduce on the GPU")
      gpu[t.RootOf(s.track)].push_back(s.end - s.begin);
  REQUIRE(gpu.size() == 4);
  auto median = [](std::vector<uint64_t> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (int rank : {0, 2, 3}) {
    INFO("rank " << rank);
    CHECK(gpu[t.ProcessOf(rank)].size() == 40);
    CHECK(median(gpu[t.ProcessOf(rank)]) > median(gpu[t.ProcessOf(1)]) + 10'000'000);
  }
  bool instant = false;
  for (const auto& [ts, e] : t.instants) {
    if (!HasCategory(*e, "straggler")) continue;
    instant = true;
    CHECK(e->track_uuid() == t.ProcessOf(1));
    CHECK(e->name() == "STRAGGLER: rank 1");
    CHECK(Annotation(*e, "detail").rfind("rank 1 reached the GPU last in ", 0) == 0);
  }
  CHECK(instant);
}

// A slow link (NCCLSIM_SLOW_LINK on GPU 5, in train_loop's grid of pairs):
// the instant on rank 5's process says its link is slow.
TEST_CASE("timeline of a job with a slow link: the link marked on its rank",
          "[timeline][straggler]") {
  jobs::TempDir dir;
  jobs::JobSpec spec =
      jobs::TracedJobSpec(8, "train_loop", {"--steps", "30", "--3d", "--step-ms", "5"}, dir.path());
  spec.env.push_back("NCCLSIM_SLOW_LINK=5:0:30");
  jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());
  for (const auto& r : job.ranks) REQUIRE(r.exit_code == 0);
  const Timeline t = WriteTimeline(dir.path());
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  REQUIRE(t.parsed);
  CHECK(t.errors.empty());
  int instants = 0;
  for (const auto& [ts, e] : t.instants) {
    if (!HasCategory(*e, "straggler")) continue;
    ++instants;
    CHECK(e->track_uuid() == t.ProcessOf(5));
    CHECK(e->name() == "SLOW LINK: rank 5");
    CHECK(Annotation(*e, "detail").rfind("the link of rank 5 is slow: ", 0) == 0);
    CHECK(ts > 0);
  }
  CHECK(instants == 1);
}

// timeline marks the root cause diagnose names, from the same diagnosis:
// liveness included, so on a live job with a frozen rank (SIGSTOP) both say
// rank_frozen (a post-mortem view of the same traces would call it dead).
TEST_CASE("on a live job, timeline marks the root cause diagnose names", "[timeline][live]") {
  jobs::TempDir dir;
  jobs::JobSpec spec =
      jobs::TracedJobSpec(4, "train_loop", {"--steps", "30", "--bug", "stop:1:3"}, dir.path());
  spec.timeout_s = 15;  // the job stays live (its rank 1 stopped) while both commands run
  jobs::JobResult job;
  std::thread run([&] { job = jobs::RunJob(spec); });
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  const Timeline t = WriteTimeline(dir.path());
  const jobs::DiagnosisView live = jobs::Diagnose({dir.path()});
  run.join();
  REQUIRE(job.error.empty());
  INFO("timeline: " << t.output << "\ndiagnosis:\n" << live.output);
  REQUIRE(t.exit_code == 0);
  REQUIRE(t.parsed);
  REQUIRE(live.parsed);
  const jobs::FindingView* root = live.Root();
  REQUIRE(root != nullptr);
  CHECK(root->kind == "rank_frozen");
  CHECK(root->ranks == std::vector<int>{1});
  std::set<std::string> marked;
  for (const auto& [ts, e] : t.instants)
    if (HasCategory(*e, "root_cause")) marked.insert(e->name());
  CHECK(marked == std::set<std::string>{"ROOT CAUSE: " + root->kind});
}

// The logs beside the traces are judged with them, by timeline as by
// diagnose: a node's kernel log in the traces' folder says why rank 2 died
// (the OOM killer), and the root cause timeline marks is that, not the
// death the traces alone show.
TEST_CASE("timeline marks the root cause diagnose names from the traces and the logs beside them",
          "[timeline][logs]") {
  jobs::TempDir dir;
  jobs::JobSpec spec =
      jobs::TracedJobSpec(4, "train_loop", {"--steps", "1000", "--bug", "kill-in:2:5"}, dir.path());
  spec.timeout_s = 120;
  spec.teardown_after_failure_s = 0.5;
  jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());
  REQUIRE(job.ranks[2].signal == SIGKILL);
  // The kernel's words (mm/oom_kill.c), as dmesg -T prints them.
  std::ofstream(dir.path() + "/dmesg-node1.log")
      << "[Fri Dec  4 10:00:00 2026] Out of memory: Killed process " << job.ranks[2].pid
      << " (train_loop) total-vm:4123456kB, anon-rss:3987654kB, file-rss:0kB, shmem-rss:0kB, "
         "UID:0 pgtables:8000kB oom_score_adj:0\n";
  const Timeline t = WriteTimeline(dir.path());
  const jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  INFO("timeline: " << t.output << "\ndiagnosis:\n" << d.output);
  REQUIRE(t.exit_code == 0);
  REQUIRE(t.parsed);
  REQUIRE(d.parsed);
  const jobs::FindingView* root = d.Root();
  REQUIRE(root != nullptr);
  // The victim's pid names a rank only in the host's pid numbers; in a
  // container of its own the OOM kill is a note and the death leads.
  std::error_code ec;
  const bool host_numbers =
      std::filesystem::read_symlink("/proc/self/ns/pid", ec).string() == "pid:[4026531836]";
  CHECK(root->kind == (host_numbers ? "out_of_memory" : "rank_died"));
  CHECK(root->ranks == std::vector<int>{2});
  std::set<std::string> marked;
  for (const auto& [ts, e] : t.instants)
    if (HasCategory(*e, "root_cause")) marked.insert(e->name());
  CHECK(marked == std::set<std::string>{"ROOT CAUSE: " + root->kind});
}

TEST_CASE("timeline of a failed init: the failing system call as an instant, marked",
          "[timeline]") {
  jobs::TempDir dir;
  jobs::JobSpec spec = jobs::TracedJobSpec(4, "train_loop", {"--steps", "2"}, dir.path());
  spec.shm_size = "16m";
  spec.timeout_s = 30;
  jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());

  const Timeline t = WriteTimeline(dir.path());
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  REQUIRE(t.parsed);
  CHECK(t.errors.empty());
  // Every rank whose fallocate failed is marked on its process track.
  std::set<uint64_t> failed, marked;
  for (const auto& [ts, e] : t.instants) {
    if (HasCategory(*e, "syscall") && e->name() == "fallocate failed: ENOSPC")
      failed.insert(e->track_uuid());
    if (HasCategory(*e, "root_cause") && e->name() == "ROOT CAUSE: init_failure")
      marked.insert(e->track_uuid());
  }
  CHECK_FALSE(failed.empty());
  CHECK(failed == marked);
}

TEST_CASE("a long read shows its progress on a terminal, and only there", "[timeline][progress]") {
  jobs::TempDir dir;
  jobs::JobResult job =
      jobs::RunJob(jobs::TracedJobSpec(2, "train_loop", {"--steps", "2"}, dir.path()));
  REQUIRE(job.error.empty());
  // On a terminal (script(1) gives the command one), with the delay before
  // progress shows cut to nothing.
  jobs::JobSpec spec;
  spec.argv = {"script", "-qec", jobs::NcclwatchPath() + " diagnose " + dir.path(), "/dev/null"};
  spec.env = {"NCCLWATCH_PROGRESS_DELAY_MS=0"};
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  INFO(r.ranks[0].output);
  CHECK(r.ranks[0].output.find("\rncclwatch: reading traces 1/2 (50%)") != std::string::npos);
  CHECK(r.ranks[0].output.find("HEALTHY") != std::string::npos);
  // Not on a pipe.
  spec.argv = {jobs::NcclwatchPath(), "diagnose", dir.path()};
  r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  CHECK(r.ranks[0].output.find("reading traces") == std::string::npos);
}

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.insert(e.path().filename().string());
  return names;
}

}  // namespace

// The output is written to a fresh file beside its name and renamed onto
// it: a link planted where the old code wrote (F.partial) or at F itself is
// never followed, and the traces read are never written over.
TEST_CASE("timeline -o writes through no planted link and over no input", "[timeline][security]") {
  namespace fs = std::filesystem;
  jobs::TempDir traces, out, elsewhere;
  jobs::JobResult job =
      jobs::RunJob(jobs::TracedJobSpec(2, "train_loop", {"--steps", "2"}, traces.path()));
  REQUIRE(job.error.empty());
  const std::string victim = elsewhere.path() + "/precious";
  std::ofstream(victim) << "precious\n";
  const std::string file = out.path() + "/job.pftrace";
  fs::create_symlink(victim, file + ".partial");
  auto timeline = [&](const std::string& output) {
    jobs::JobSpec spec;
    spec.argv = {jobs::NcclwatchPath(), "timeline", traces.path(), "-o", output};
    spec.timeout_s = 120;
    jobs::JobResult r = jobs::RunJob(spec);
    REQUIRE(r.ranks.size() == 1);
    return r.ranks[0];
  };

  jobs::RankResult r = timeline(file);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(ReadAll(victim) == "precious\n");
  pf::Trace written;
  CHECK(written.ParseFromString(ReadAll(file)));
  CHECK(written.packet_size() > 0);
  CHECK(fs::is_symlink(file + ".partial"));
  CHECK(Names(out.path()) == std::set<std::string>{"job.pftrace", "job.pftrace.partial"});

  // A link planted at the name itself is replaced, not followed.
  fs::remove(file);
  fs::create_symlink(victim, file);
  r = timeline(file);
  CHECK(r.exit_code == 0);
  CHECK(ReadAll(victim) == "precious\n");
  CHECK_FALSE(fs::is_symlink(file));
  CHECK(written.ParseFromString(ReadAll(file)));

  // An input, or a link to one, is refused at once with one line; nothing
  // is written and no temporary file is left.
  const std::string trace = jobs::TraceOf(traces.path(), 0);
  const std::string before = ReadAll(trace);
  const std::set<std::string> names = Names(traces.path());
  fs::create_symlink(trace, out.path() + "/link.trace");
  for (const std::string& output : {trace, out.path() + "/link.trace", out.path()}) {
    INFO(output);
    r = timeline(output);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.rfind("ncclwatch: " + output + " is ", 0) == 0);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
  CHECK(ReadAll(trace) == before);
  CHECK(Names(traces.path()) == names);
  CHECK(fs::is_symlink(out.path() + "/link.trace"));

  // A log read beside the traces is an input too: named, or in the folder.
  const std::string log = traces.path() + "/job-output.log";
  std::ofstream(log) << "step 1 loss 0.93\n";
  const std::string named = elsewhere.path() + "/job.out";
  std::ofstream(named) << "step 1 loss 0.93\n";
  for (const std::string& output : {log, named}) {
    INFO(output);
    jobs::JobSpec spec;
    spec.argv = {jobs::NcclwatchPath(), "timeline", traces.path(), named, "-o", output};
    spec.timeout_s = 120;
    jobs::JobResult refused = jobs::RunJob(spec);
    REQUIRE(refused.ranks.size() == 1);
    INFO(refused.ranks[0].output);
    CHECK(refused.ranks[0].exit_code == 2);
    CHECK(refused.ranks[0].output.rfind("ncclwatch: " + output + " is ", 0) == 0);
    CHECK(ReadAll(output) == "step 1 loss 0.93\n");
  }
}

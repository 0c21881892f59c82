// The live status (report/status_report.h) on synthetic processes whose
// completion and liveness tables are set by hand: who is stuck, who lags,
// a frozen process, and numbers a crafted trace may hold.

#include "report/status_report.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <sstream>
#include <string>

#include "synthetic_process.h"

namespace {

using namespace ncclwatch::testing;  // NOLINT
namespace nd = ::ncclwatch::decoder;

constexpr uint64_t kComm = 0xc0ffee0000000001ULL;
constexpr int64_t kSecond = 1'000'000'000;

// Completion tracked for kComm, `completed` collectives done at tick `t`,
// heartbeats until tick `beat_t`.
void Track(nd::ProcessTrace* t, uint64_t completed, uint64_t at, uint64_t beat_t) {
  nd::CompletionTrackingEvent tracking;
  tracking.comm = kComm;
  tracking.mechanism = 1;
  t->tracking.push_back(tracking);
  nd::ProgressEvent p;
  p.comm = kComm;
  p.collectives = completed;
  p.t = at;
  p.order = 1000;
  t->progress.push_back(p);
  t->liveness.beats = 10;
  t->liveness.last_t = beat_t;
  t->liveness.interval_ms = 1000;
}

std::string Render(const nd::JobStatus& s) {
  std::ostringstream out;
  nd::WriteStatus(s, out);
  return out.str();
}

}  // namespace

TEST_CASE("a rank stuck after a stall, a rank behind: STUCK, the laggard named", "[status]") {
  SyntheticProcess r0(0), r1(1);
  r0.Init(kComm, 0, 2).Collectives(kComm, 0, 5);
  r1.Init(kComm, 1, 2).Collectives(kComm, 0, 4);
  nd::ProcessTrace t0 = r0.Build(), t1 = r1.Build();
  const int64_t now = static_cast<int64_t>(kRealtimeBase) + 100 * kSecond;
  Track(&t0, 5, 200, 99 * kSecond);  // #0-#4 completed; #5 pending
  Track(&t1, 5, 200, 99 * kSecond);  // all it entered completed
  nd::StallEvent stall;
  stall.comm = kComm;
  stall.call = 1;
  stall.seq = 5;
  stall.completed = 5;
  stall.waited_ms = 300'000;
  t0.stalls.push_back(stall);

  nd::JobStatusBuilder b(now, 60 * kSecond);
  b.AddProcess(t0);
  b.AddProcess(t1);
  const nd::JobStatus s = b.Finish();
  REQUIRE(s.comms.size() == 1);
  REQUIRE(s.comms[0].ranks.size() == 2);
  const nd::RankStatus& a = s.comms[0].ranks[0];
  const nd::RankStatus& c = s.comms[0].ranks[1];
  CHECK(a.entered == 5);
  CHECK(a.completed == 4);
  CHECK(a.pending == "AllReduce #5");
  CHECK(a.stalled);
  CHECK(a.stuck);
  CHECK_FALSE(a.lagging);
  CHECK(c.entered == 4);
  CHECK(c.completed == 4);
  CHECK(c.pending.empty());
  CHECK_FALSE(c.stuck);
  CHECK(c.lagging);
  CHECK(s.ExitCode() == 1);
  const std::string text = Render(s);
  INFO(text);
  CHECK(text.rfind("STUCK: communicator c0ffee: rank 0 stuck in AllReduce #5, waiting for rank 1 "
                   "(behind)\n",
                   0) == 0);
  CHECK(text.find("STUCK in AllReduce #5 (stall reported after 300 s)") != std::string::npos);
  CHECK(text.find("idle (nothing pending); lags behind the others") != std::string::npos);
}

TEST_CASE(
    "pending work is stuck only after --stuck-after, and a silent watcher is a frozen process",
    "[status]") {
  SyntheticProcess r0(0);
  r0.Init(kComm, 0, 1).Collectives(kComm, 0, 2);
  nd::ProcessTrace t0 = r0.Build();
  Track(&t0, 2, 40, 0);  // #2 pending since tick 40; the last heartbeat at tick 0
  const int64_t base = static_cast<int64_t>(kRealtimeBase);
  {
    t0.liveness.last_t = 9 * kSecond;
    nd::JobStatusBuilder b(base + 10 * kSecond, 60 * kSecond);
    b.AddProcess(t0);
    const nd::JobStatus s = b.Finish();
    CHECK(s.ExitCode() == 0);
    CHECK(Render(s).rfind("PROGRESSING\n", 0) == 0);
  }
  {
    t0.liveness.last_t = 9 * kSecond;
    nd::JobStatusBuilder b(base + 10 * kSecond, 5 * kSecond);
    b.AddProcess(t0);
    CHECK(b.Finish().ExitCode() == 1);
  }
  {
    t0.liveness.last_t = 1 * kSecond;  // 9 s without a beat, at 1 s intervals
    nd::JobStatusBuilder b(base + 10 * kSecond, 60 * kSecond);
    b.AddProcess(t0);
    const nd::JobStatus s = b.Finish();
    CHECK(s.ExitCode() == 1);
    CHECK(Render(s).find("not beating (frozen or killed)") != std::string::npos);
  }
}

TEST_CASE("numbers a crafted trace may hold do not overflow", "[status]") {
  SyntheticProcess r0(0);
  r0.Init(kComm, 0, 2).Collective(kComm, UINT64_MAX);
  nd::ProcessTrace t0 = r0.Build();
  Track(&t0, UINT64_MAX, UINT64_MAX, UINT64_MAX);
  nd::StallEvent stall;
  stall.comm = kComm;
  stall.completed = UINT64_MAX;
  t0.stalls.push_back(stall);
  for (int64_t now : {INT64_MIN, int64_t{0}, INT64_MAX}) {
    nd::JobStatusBuilder b(now, INT64_MAX);
    b.AddProcess(t0);
    const nd::JobStatus s = b.Finish();
    CHECK_FALSE(Render(s).empty());
  }
}

TEST_CASE(
    "processes with no communicator: PROGRESSING while they beat, ENDED BADLY once ended with "
    "an error",
    "[status]") {
  // Two ranks stuck in their rendezvous (traced from NCCL's load, no NCCL call).
  SyntheticProcess r0(0), r1(1);
  nd::ProcessTrace t0 = r0.Build(), t1 = r1.Build();
  for (nd::ProcessTrace* t : {&t0, &t1}) {
    t->liveness.beats = 5;
    t->liveness.last_t = 99 * kSecond;
    t->liveness.interval_ms = 1000;
  }
  const int64_t now = static_cast<int64_t>(kRealtimeBase) + 100 * kSecond;
  {
    nd::JobStatusBuilder b(now, 60 * kSecond);
    b.AddProcess(t0);
    b.AddProcess(t1);
    const nd::JobStatus s = b.Finish();
    CHECK(s.live);
    CHECK(s.ExitCode() == 0);
    CHECK(Render(s).rfind("PROGRESSING\n", 0) == 0);
  }
  // Both exited with code 1 (the store timed out): ended, and badly.
  t0.end = nd::ProcessEndEvent{100, 99 * kSecond, 1, 1};
  t1.end = nd::ProcessEndEvent{100, 99 * kSecond, 1, 1};
  nd::JobStatusBuilder b(now, 60 * kSecond);
  b.AddProcess(t0);
  b.AddProcess(t1);
  const nd::JobStatus s = b.Finish();
  CHECK_FALSE(s.live);
  CHECK(s.ended_badly);
  CHECK(s.ExitCode() == 1);
  CHECK(Render(s).rfind("ENDED BADLY: every process has ended", 0) == 0);
}

TEST_CASE("what this host sees: a process gone is killed, one stopped frozen, at once",
          "[status]") {
  SyntheticProcess r0(0), r1(1), r2(2);
  r0.Init(kComm, 0, 3).Collectives(kComm, 0, 3);
  r1.Init(kComm, 1, 3).Collectives(kComm, 0, 3);
  r2.Init(kComm, 2, 3).Collectives(kComm, 0, 3);
  nd::ProcessTrace t0 = r0.Build(), t1 = r1.Build(), t2 = r2.Build();
  t1.pid = 101;
  t2.pid = 102;
  // Every heartbeat fresh: by the heartbeat rule all three are alive.
  const int64_t now = static_cast<int64_t>(kRealtimeBase) + 10 * kSecond;
  // Each completed all it entered (#0-#3).
  for (nd::ProcessTrace* t : {&t0, &t1, &t2}) Track(t, 4, 9 * kSecond, 9 * kSecond + 500'000'000);

  auto build = [&](const nd::LivenessObservation& seen) {
    nd::JobStatusBuilder b(now, 60 * kSecond);
    for (const nd::ProcessTrace* t : {&t0, &t1, &t2}) b.AddProcess(*t);
    REQUIRE(b.processes().size() == 3);
    CHECK(b.processes()[1].id.pid == 101);
    CHECK(b.processes()[1].ended.empty() == !t1.end.has_value());
    return b.Finish(seen);
  };
  const nd::JobStatus unseen = build({});
  CHECK(unseen.ExitCode() == 0);
  CHECK(Render(unseen).rfind("PROGRESSING\n", 0) == 0);

  nd::LivenessObservation seen;
  seen.now_ns = now;
  auto id = [](const nd::ProcessTrace& t) {
    return nd::TracedProcessId{t.host, t.pid, t.created_realtime_ns, t.pid_namespace};
  };
  using State = nd::ProcessObservation::State;
  seen.processes[id(t0)] = {State::kRunning, 'S'};
  seen.processes[id(t1)] = {State::kGone, 0};
  seen.processes[id(t2)] = {State::kStopped, 'T'};
  const nd::JobStatus s = build(seen);
  REQUIRE(s.comms.size() == 1);
  REQUIRE(s.comms[0].ranks.size() == 3);
  const nd::RankStatus &a = s.comms[0].ranks[0], &killed = s.comms[0].ranks[1],
                       &stopped = s.comms[0].ranks[2];
  CHECK(a.ended.empty());
  CHECK_FALSE(a.stuck);
  CHECK(killed.gone);
  CHECK(killed.ended == "gone with no end recorded (killed: SIGKILL, the OOM killer)");
  CHECK(killed.stuck);  // the others run on without it: the job is stuck on it
  // Stopped, but its watcher beat half a second ago: a profiler's or a
  // debugger's brief stop, not yet a frozen rank.
  CHECK_FALSE(stopped.frozen);
  CHECK_FALSE(stopped.stuck);
  CHECK(s.ExitCode() == 1);
  std::string text = Render(s);
  INFO(text);
  CHECK(text.rfind("STUCK: communicator c0ffee: rank 1 gone with no end recorded (killed)\n", 0) ==
        0);

  // Its watcher silent for 3 s (3 intervals): frozen.
  t2.liveness.last_t = 7 * kSecond;
  const nd::JobStatus later = build(seen);
  const nd::RankStatus& frozen = later.comms[0].ranks[2];
  CHECK(frozen.frozen);
  CHECK(frozen.stuck);
  CHECK(frozen.state == 'T');
  text = Render(later);
  CHECK(text.rfind("STUCK: communicator c0ffee: rank 1 gone with no end recorded (killed)\n"
                   "       communicator c0ffee: rank 2 stopped (frozen)\n",
                   0) == 0);
  CHECK(text.find("STOPPED (state T): frozen by a signal or a debugger") != std::string::npos);

  // Every process gone: ended badly (the one killed), not progressing.
  seen.processes[id(t0)] = {State::kZombie, 'Z'};
  seen.processes[id(t2)] = {State::kGone, 0};
  const nd::JobStatus over = build(seen);
  CHECK(over.ExitCode() == 1);
  CHECK(Render(over).rfind("ENDED BADLY: every process has ended", 0) == 0);

  // A process whose trace holds its end is as its trace says, whatever is seen.
  nd::ProcessEndEvent end;
  end.exit_code = 0;
  t0.end = end;
  t1.end = end;
  t2.end = end;
  const nd::JobStatus ended = build(seen);
  CHECK(ended.ExitCode() == 0);
  CHECK(Render(ended).rfind("ENDED: every process has ended\n", 0) == 0);
}

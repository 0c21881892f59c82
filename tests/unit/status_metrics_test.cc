// The live status as metrics (report/status_metrics.h): the exact text for a
// status built by hand, the counts the status builder gathers for them from
// synthetic traces, and label values from crafted traces that must not break
// the file.

#include "report/status_metrics.h"

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

std::string Metrics(const nd::JobStatus& s, const std::string& job = "run7") {
  std::ostringstream out;
  nd::WriteStatusMetrics(s, job, out);
  return out.str();
}

nd::RankStatus Rank(int rank, const std::string& host, uint32_t pid) {
  nd::RankStatus r;
  r.comm_rank = rank;
  r.global_rank = rank;
  r.host = host;
  r.pid = pid;
  return r;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("metrics: one series per rank and communicator, labelled, families whole",
          "[status][metrics]") {
  nd::JobStatus s;
  s.comms.push_back({kComm, 2, {}});
  nd::RankStatus a = Rank(0, "node1", 11);
  a.entered = 5;
  a.completed = 4;
  a.tracked = true;
  a.pending_ops = 1;
  a.since_progress_ns = 75 * kSecond + 500'000'000;
  a.since_beat_ns = kSecond / 2;
  a.stuck = true;
  a.stalls = 1;
  a.job = "4711";
  nd::RankStatus b = Rank(1, "node2", 22);
  b.entered = 3;
  b.completed = 3;
  b.tracked = true;
  b.behind = 2;
  b.async_errors = 2;
  b.overwritten_slots = 9;
  b.ended = "exited (code 0)";
  b.job = "4711";
  s.comms[0].ranks = {a, b};
  s.stuck = true;
  s.unreadable = {"x.trace: torn"};

  const std::string text = Metrics(s);
  INFO(text);
  const std::string la =
      "{job=\"4711\",host=\"node1\",rank=\"0\",communicator=\"c0ffee0000000001\",comm_rank=\"0\","
      "pid=\"11\"}";
  const std::string lb =
      "{job=\"4711\",host=\"node2\",rank=\"1\",communicator=\"c0ffee0000000001\",comm_rank=\"1\","
      "pid=\"22\"}";
  CHECK(text.rfind("# HELP ncclwatch_stuck 1 when the rank is stuck", 0) == 0);
  CHECK(text.find("# TYPE ncclwatch_stuck gauge\nncclwatch_stuck" + la + " 1\nncclwatch_stuck" +
                  lb + " 0\n") != std::string::npos);
  CHECK(text.find("ncclwatch_ended" + la + " 0\nncclwatch_ended" + lb + " 1\n") !=
        std::string::npos);
  CHECK(text.find("ncclwatch_seconds_since_progress" + la + " 75.500\n") != std::string::npos);
  // Unknown: no sample, rather than a made-up number.
  CHECK(text.find("ncclwatch_seconds_since_progress" + lb) == std::string::npos);
  CHECK(text.find("ncclwatch_heartbeat_age_seconds" + la + " 0.500\n") != std::string::npos);
  CHECK(text.find("# TYPE ncclwatch_collectives_entered_total counter\n") != std::string::npos);
  CHECK(text.find("ncclwatch_collectives_entered_total" + la + " 6\n") != std::string::npos);
  CHECK(text.find("ncclwatch_collectives_completed_total" + la + " 5\n") != std::string::npos);
  CHECK(text.find("ncclwatch_collectives_completed_total" + lb + " 4\n") != std::string::npos);
  CHECK(text.find("ncclwatch_collectives_behind" + lb + " 2\n") != std::string::npos);
  CHECK(text.find("ncclwatch_operations_pending" + la + " 1\n") != std::string::npos);
  CHECK(text.find("ncclwatch_stalls_total" + la + " 1\n") != std::string::npos);
  CHECK(text.find("ncclwatch_async_errors_total" + lb + " 2\n") != std::string::npos);
  CHECK(text.find("ncclwatch_trace_overwritten_slots_total{job=\"4711\",host=\"node2\",rank=\"1\","
                  "pid=\"22\"} 9\n") != std::string::npos);
  CHECK(text.find("ncclwatch_job_stuck{job=\"4711\"} 1\n") != std::string::npos);
  // Unreadable traces name no job: the default label.
  CHECK(text.find("ncclwatch_job_unreadable_traces{job=\"run7\"} 1\n") != std::string::npos);
  // Every family once, its samples together under its HELP and TYPE lines.
  CHECK(Count(text, "# TYPE ") == 13);
  CHECK(Count(text, "# HELP ") == 13);
  std::istringstream lines(text);
  std::string line, family;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
    } else if (line[0] != '#') {
      CHECK(line.substr(0, line.find('{')) == family);
    }
  }
}

TEST_CASE("metrics: a rank with no launcher's rank or job, completion not tracked",
          "[status][metrics]") {
  nd::JobStatus s;
  s.comms.push_back({kComm, 2, {}});
  nd::RankStatus a = Rank(0, "node1", 11);
  a.global_rank = -1;
  s.comms[0].ranks = {a};
  const std::string text = Metrics(s, "");
  INFO(text);
  CHECK(text.find("ncclwatch_stuck{job=\"\",host=\"node1\",rank=\"\",communicator=") !=
        std::string::npos);
  CHECK(text.find("ncclwatch_collectives_entered_total{job=\"\",host=\"node1\",rank=\"\",") !=
        std::string::npos);
  CHECK(text.find("} 0\n") != std::string::npos);
  CHECK(text.find("ncclwatch_collectives_completed_total") == std::string::npos);
  CHECK(text.find("ncclwatch_operations_pending") == std::string::npos);
  CHECK(text.find("ncclwatch_heartbeat_age_seconds") == std::string::npos);
}

TEST_CASE("metrics: label values from crafted traces are escaped, duplicates written once",
          "[status][metrics]") {
  CHECK(nd::MetricLabelValue("node\"1\\\n") == "node\\\"1\\\\\\n");
  CHECK(nd::MetricLabelValue(std::string("a\tb\x01\x7f", 5)) == "a\\\\x09b\\\\x01\\\\x7f");
  // Invalid UTF-8 bytes become \xNN; valid sequences stay.
  CHECK(nd::MetricLabelValue("h\xc3\xa9t\xff\xc3") == "h\xc3\xa9t\\\\xff\\\\xc3");

  nd::JobStatus s;
  s.comms.push_back({kComm, 2, {}});
  nd::RankStatus a = Rank(0, "evil\"} 1\nncclwatch_stuck{x=\"", 11);
  s.comms[0].ranks = {a, a};  // two traces of one process
  const std::string text = Metrics(s, "job\n");
  INFO(text);
  CHECK(Count(text, "\nncclwatch_stuck{") == 1);
  CHECK(text.find("host=\"evil\\\"} 1\\nncclwatch_stuck{x=\\\"\"") != std::string::npos);
  CHECK(text.find("job=\"job\\n\"") != std::string::npos);
  // Every line is a comment or a sample of a known family.
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) CHECK((line[0] == '#' || line.rfind("ncclwatch_", 0) == 0));
}

TEST_CASE("metrics: the status builder counts stalls, asynchronous errors and overwritten slots",
          "[status][metrics]") {
  SyntheticProcess r0(0), r1(1);
  r0.Init(kComm, 0, 2).Collectives(kComm, 0, 5);
  r1.Init(kComm, 1, 2).Collectives(kComm, 0, 3);
  nd::ProcessTrace t0 = r0.Build(), t1 = r1.Build();
  t0.job_id = "4711";
  t1.job_id = "4711";
  for (int i = 0; i < 2; ++i) {
    nd::StallEvent stall;
    stall.comm = kComm;
    stall.seq = 5;
    stall.completed = 5;
    t0.stalls.push_back(stall);
  }
  nd::NcclErrorEvent async;
  async.comm = kComm;
  async.async = true;
  t1.errors.push_back(async);
  nd::NcclErrorEvent sync = async;  // a call's result, not asynchronous: not counted
  sync.async = false;
  t1.errors.push_back(sync);
  nd::CudaErrorEvent cuda;
  cuda.comm = 0;  // named no communicator: counted for each of the process's
  t1.cuda_errors.push_back(cuda);
  t1.stats.ring_overwritten = 123;

  nd::JobStatusBuilder b(static_cast<int64_t>(kRealtimeBase) + 100 * kSecond, 60 * kSecond);
  b.AddProcess(t0);
  b.AddProcess(t1);
  const nd::JobStatus s = b.Finish();
  REQUIRE(s.comms.size() == 1);
  REQUIRE(s.comms[0].ranks.size() == 2);
  CHECK(s.comms[0].ranks[0].stalls == 2);
  CHECK(s.comms[0].ranks[0].async_errors == 0);
  CHECK(s.comms[0].ranks[0].behind == 0);
  CHECK(s.comms[0].ranks[1].stalls == 0);
  CHECK(s.comms[0].ranks[1].async_errors == 2);
  CHECK(s.comms[0].ranks[1].overwritten_slots == 123);
  CHECK(s.comms[0].ranks[1].behind == 2);
  const std::string text = Metrics(s);
  INFO(text);
  CHECK(text.find("ncclwatch_stalls_total{job=\"4711\",host=\"node0\",rank=\"0\",communicator="
                  "\"c0ffee0000000001\",comm_rank=\"0\",pid=\"1000\"} 2\n") != std::string::npos);
  CHECK(text.find("ncclwatch_trace_overwritten_slots_total{job=\"4711\",host=\"node0\",rank=\"1\","
                  "pid=\"1001\"} 123\n") != std::string::npos);
  // An asynchronous error makes the rank stuck, as `status` says.
  CHECK(text.find("ncclwatch_stuck{job=\"4711\",host=\"node0\",rank=\"1\",communicator="
                  "\"c0ffee0000000001\",comm_rank=\"1\",pid=\"1001\"} 1\n") != std::string::npos);
  CHECK(text.find("ncclwatch_job_stuck{job=\"4711\"} 1\n") != std::string::npos);
}

TEST_CASE("metrics: each rank's recent arrival, and the straggler flagged", "[status][metrics]") {
  nd::JobStatus s;
  s.comms.push_back({kComm, 2, {}});
  nd::RankStatus slow = Rank(0, "node1", 11);
  slow.arrivals_compared = 200;
  slow.times_last = 150;
  slow.late_median_ns = 15'000'000;
  slow.straggler = true;
  nd::RankStatus fine = Rank(1, "node2", 22);
  fine.arrivals_compared = 200;
  nd::RankStatus unknown = Rank(2, "node3", 33);  // no collective every member issued yet
  s.comms[0].ranks = {slow, fine, unknown};
  const std::string text = Metrics(s);
  INFO(text);
  const std::string labels0 =
      "{job=\"run7\",host=\"node1\",rank=\"0\",communicator=\"c0ffee0000000001\",comm_rank=\"0\","
      "pid=\"11\"}";
  const std::string labels1 =
      "{job=\"run7\",host=\"node2\",rank=\"1\",communicator=\"c0ffee0000000001\",comm_rank=\"1\","
      "pid=\"22\"}";
  CHECK(text.find("ncclwatch_arrival_last_ratio" + labels0 + " 0.750\n") != std::string::npos);
  CHECK(text.find("ncclwatch_arrival_late_seconds" + labels0 + " 0.015\n") != std::string::npos);
  CHECK(text.find("ncclwatch_straggler" + labels0 + " 1\n") != std::string::npos);
  CHECK(text.find("ncclwatch_arrival_last_ratio" + labels1 + " 0.000\n") != std::string::npos);
  CHECK(text.find("ncclwatch_straggler" + labels1 + " 0\n") != std::string::npos);
  CHECK(Count(text, "ncclwatch_straggler{") == 2);  // none for rank 2: nothing compared
  CHECK(Count(text, "# TYPE ncclwatch_straggler gauge\n") == 1);
}

#include "report/status_metrics.h"

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "knowledge/nccl_semantics.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {
namespace {

struct Family {
  const char* name;
  const char* type;
  const char* help;
};

// The families in the order they are written; each family's samples follow
// its HELP and TYPE lines, as the format requires.
constexpr Family kStuck = {"ncclwatch_stuck", "gauge",
                           "1 when the rank is stuck in the communicator (work pending with no "
                           "progress for --stuck-after seconds, a stall the shim reported, an "
                           "asynchronous error, no heartbeat, or its process seen stopped or "
                           "gone on this host), else 0"};
constexpr Family kEnded = {"ncclwatch_ended", "gauge",
                           "1 when the rank's process ended (or was seen gone on this host) or "
                           "left the communicator, else 0"};
constexpr Family kSinceProgress = {
    "ncclwatch_seconds_since_progress", "gauge",
    "seconds since the rank's GPU last completed work of the communicator"};
constexpr Family kHeartbeatAge = {"ncclwatch_heartbeat_age_seconds", "gauge",
                                  "seconds since the process's watcher last wrote a heartbeat"};
constexpr Family kEntered = {"ncclwatch_collectives_entered_total", "counter",
                             "collectives the rank entered on the communicator"};
constexpr Family kCompleted = {"ncclwatch_collectives_completed_total", "counter",
                               "collectives of the communicator the rank's GPU completed"};
constexpr Family kBehind = {
    "ncclwatch_collectives_behind", "gauge",
    "how many fewer collectives the rank entered than the communicator's furthest rank"};
constexpr Family kPending = {"ncclwatch_operations_pending", "gauge",
                             "operations the rank issued on the communicator and its GPU has "
                             "not completed"};
constexpr Family kStalls = {"ncclwatch_stalls_total", "counter",
                            "stalls the shim reported for the communicator (NCCLWATCH_STALL)"};
constexpr Family kAsyncErrors = {"ncclwatch_async_errors_total", "counter",
                                 "asynchronous NCCL errors and CUDA errors the rank's process "
                                 "recorded for the communicator"};
constexpr Family kOverwritten = {
    "ncclwatch_trace_overwritten_slots_total", "counter",
    "ring slots of the process's trace overwritten by newer records (the ring wrapped)"};
constexpr Family kLastRatio = {
    "ncclwatch_arrival_last_ratio", "gauge",
    "of the communicator's last 200 collectives every member issued, the share the rank's host "
    "enqueued last, 1 ms or more after the others"};
constexpr Family kLate = {"ncclwatch_arrival_late_seconds", "gauge",
                          "the rank's median lateness when it enqueued last (0 when never)"};
constexpr Family kStraggler = {
    "ncclwatch_straggler", "gauge",
    "1 when the rank is a straggler of the communicator: last far more often than chance allows"};
constexpr Family kJobStuck = {"ncclwatch_job_stuck", "gauge", "1 when a rank of the job is stuck"};
constexpr Family kLogsProblem = {
    "ncclwatch_job_problem_in_logs", "gauge",
    "1 when the diagnosis of the traces with the logs beside them finds a problem (only when "
    "logs were given)"};
constexpr Family kUnreadable = {"ncclwatch_job_unreadable_traces", "gauge",
                                "trace files ncclwatch status could not read, and folders and "
                                "links it did not search that may hold one"};

// The samples of one family, each written once per label set.
class Samples {
 public:
  explicit Samples(const Family& family) : family_(family) {}
  void Add(const std::string& labels, const std::string& value) {
    if (seen_.insert(labels).second) lines_.push_back(labels + " " + value);
  }
  void Write(std::ostream& out) const {
    if (lines_.empty()) return;
    out << "# HELP " << family_.name << " " << family_.help << "\n"
        << "# TYPE " << family_.name << " " << family_.type << "\n";
    for (const std::string& l : lines_) out << family_.name << l << "\n";
  }

 private:
  const Family& family_;
  std::set<std::string> seen_;
  std::vector<std::string> lines_;
};

std::string Seconds(int64_t ns) { return absl::StrFormat("%.3f", ns / 1e9); }

}  // namespace

std::string MetricLabelValue(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c == '"') {
      out += "\\\"";
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      out += absl::StrFormat("\\\\x%02x", c);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const size_t n = Utf8SequenceAt(s, i)) {
      out.append(s, i, n);
      i += n;
    } else {
      out += absl::StrFormat("\\\\x%02x", c);
      ++i;
    }
  }
  return out;
}

void WriteStatusMetrics(const JobStatus& s, const std::string& default_job, std::ostream& out) {
  Samples stuck(kStuck), ended(kEnded), since_progress(kSinceProgress), beat(kHeartbeatAge),
      entered(kEntered), completed(kCompleted), behind(kBehind), pending(kPending), stalls(kStalls),
      errors(kAsyncErrors), overwritten(kOverwritten), last_ratio(kLastRatio), late(kLate),
      straggler(kStraggler), job_stuck(kJobStuck), logs_problem(kLogsProblem),
      unreadable(kUnreadable);
  std::map<std::string, bool> jobs;  // job label -> a rank is stuck
  for (const CommStatus& c : s.comms) {
    for (const RankStatus& r : c.ranks) {
      const std::string job = r.job.empty() ? default_job : r.job;
      const std::string rank = r.global_rank >= 0 ? std::to_string(r.global_rank) : "";
      const std::string process =
          absl::StrFormat("job=\"%s\",host=\"%s\",rank=\"%s\"", MetricLabelValue(job),
                          MetricLabelValue(r.host), rank);
      const std::string pid = absl::StrFormat("pid=\"%d\"", r.pid);
      const std::string labels = absl::StrFormat("{%s,communicator=\"%s\",comm_rank=\"%d\",%s}",
                                                 process, CommName(c.comm), r.comm_rank, pid);
      stuck.Add(labels, r.stuck ? "1" : "0");
      ended.Add(labels, r.ended.empty() ? "0" : "1");
      if (r.since_progress_ns >= 0) since_progress.Add(labels, Seconds(r.since_progress_ns));
      if (r.since_beat_ns >= 0) beat.Add(labels, Seconds(r.since_beat_ns));
      entered.Add(labels, std::to_string(r.entered + 1));
      if (r.tracked) completed.Add(labels, std::to_string(r.completed + 1));
      behind.Add(labels, std::to_string(r.behind));
      if (r.tracked) pending.Add(labels, std::to_string(r.pending_ops));
      stalls.Add(labels, std::to_string(r.stalls));
      errors.Add(labels, std::to_string(r.async_errors));
      overwritten.Add("{" + process + "," + pid + "}", std::to_string(r.overwritten_slots));
      if (r.arrivals_compared > 0) {
        last_ratio.Add(labels,
                       absl::StrFormat("%.3f", static_cast<double>(r.times_last) /
                                                   static_cast<double>(r.arrivals_compared)));
        late.Add(labels, Seconds(r.late_median_ns));
        straggler.Add(labels, r.straggler ? "1" : "0");
      }
      jobs[job] = jobs[job] || r.stuck;
    }
  }
  for (const auto& [job, any_stuck] : jobs)
    job_stuck.Add("{job=\"" + MetricLabelValue(job) + "\"}", any_stuck ? "1" : "0");
  if (!s.logs.empty())
    logs_problem.Add("{job=\"" + MetricLabelValue(default_job) + "\"}",
                     s.logs_problem.empty() ? "0" : "1");
  unreadable.Add("{job=\"" + MetricLabelValue(default_job) + "\"}",
                 std::to_string(s.unreadable.size() + s.not_searched.size()));
  for (const Samples* f : {&stuck, &ended, &since_progress, &beat, &entered, &completed, &behind,
                           &pending, &stalls, &errors, &overwritten, &last_ratio, &late, &straggler,
                           &job_stuck, &logs_problem, &unreadable})
    f->Write(out);
}

}  // namespace ncclwatch::decoder

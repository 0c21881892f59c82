#include "commands/status.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

#include "commands/input_files.h"
#include "commands/on_problem.h"
#include "model/process_liveness.h"
#include "model/process_trace.h"
#include "report/finding_text.h"
#include "report/status_metrics.h"
#include "report/status_report.h"
#include "summary/job_inputs.h"
#include "trace/trace_file.h"

namespace ncclwatch::decoder {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnStop(int) { g_stop = 1; }

struct Options {
  std::vector<std::string> paths;
  bool watch = false;
  double interval_s = 2;
  double stuck_after_s = 60;
  std::string metrics;     // FILE, or "-" for standard output
  std::string on_problem;  // CMD
};

int Usage(std::ostream& err, const std::string& why) {
  err << "ncclwatch: " << why << "\n"
      << "usage: ncclwatch status PATH... [--watch] [--interval S] [--stuck-after S] "
         "[--metrics FILE|-] [--on-problem CMD]\n";
  return 2;
}

bool Seconds(const std::string& s, double* v) {
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || *end != '\0' || !(d > 0) || d > 86400 * 7) return false;
  *v = d;
  return true;
}

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The job label for traces that name no job: the first folder's name.
std::string DefaultJob(const std::vector<std::string>& paths) {
  std::filesystem::path p = std::filesystem::path(paths.front()).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  return name.empty() || name == "." || name == ".." ? "" : name;
}

// `text` into `file` as one rename, so a reader (node_exporter's textfile
// collector) never sees half of it. The new file is made beside it with a
// fresh name (mkstemp: never through a link, never over another file, in a
// folder others may write to), readable as the umask allows (the collector
// runs as another user); rename replaces a link at `file`, never what it
// points to. "" or a one-line reason.
std::string WriteAtomically(const std::string& file, const std::string& text) {
  std::string tmp = file + ".tmp.XXXXXX";
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return "cannot write beside " + file + ": " + std::strerror(errno);
  const mode_t mask = umask(0);
  umask(mask);
  bool ok = fchmod(fd, 0644 & ~mask) == 0;
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  const std::string why = std::strerror(errno);
  if (close(fd) != 0) ok = false;
  if (!ok) {
    unlink(tmp.c_str());
    return "cannot write " + tmp + ": " + why;
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) {
    const std::string rename_why = std::strerror(errno);
    unlink(tmp.c_str());
    return "cannot rename " + tmp + " to " + file + ": " + rename_why;
  }
  return "";
}

// Whether the trace at `path`, read again now, holds the process's end or a
// fatal signal (or cannot be read: then the heartbeat judges it). Its calls
// are passed over, not kept: a ring of any size costs one pass, not a row a
// call (its process is gone: no writer laps it).
bool EndedSinceRead(const std::string& path) {
  absl::StatusOr<std::unique_ptr<TraceFile>> file = TraceFile::Open(path);
  if (!file.ok()) return true;
  auto pass_over = [](bool, uint64_t, absl::Span<const uint8_t>) {};
  const CallSlotFn calls = pass_over;
  LightReading light;
  light.collective = &calls;
  light.p2p = &calls;
  light.count_gpu_times = true;
  ProcessTrace t;
  ReadProcessTrace(**file, &t, light);
  return t.end || !t.signals.empty();
}

// What this host sees now of the processes whose traces were read
// (model/process_liveness.h), for the table: one gone is killed, one
// stopped frozen. Left out, for the heartbeat to judge: a summary's (made
// some time before); one gone whose trace, read again, holds an end it did
// not hold when read (it ended well in between: the next look shows it);
// and one "gone" that a signal 0 finds alive and not ours to look at (/proc
// mounted with hidepid hides another user's processes: unseen, not dead).
// `seen`: what the diagnosis saw, with logs beside the traces (the same
// moment, right after the traces were read), else observed here.
LivenessObservation Observe(const std::vector<StatusProcess>& processes,
                            std::optional<LivenessObservation> seen) {
  if (!seen) {
    std::vector<TracedProcessId> ids;
    for (const StatusProcess& p : processes)
      if (!p.from_summary && p.ended.empty()) ids.push_back(p.id);
    seen = ObserveLiveness(ids);
  }
  for (const StatusProcess& p : processes) {
    auto it = seen->processes.find(p.id);
    if (it == seen->processes.end()) continue;
    if (p.from_summary) {
      seen->processes.erase(it);
      continue;
    }
    if (!p.ended.empty()) continue;  // Finish goes by its trace's end
    if (it->second.state == ProcessObservation::State::kRunning ||
        it->second.state == ProcessObservation::State::kStopped)
      continue;
    if (kill(static_cast<pid_t>(p.id.pid), 0) != 0 && errno == EPERM) {
      seen->processes.erase(it);
      continue;
    }
    if (EndedSinceRead(p.path)) seen->processes.erase(it);
  }
  return *std::move(seen);
}

// One look at the traces: 0 progressing, 1 stuck, 2 unusable input.
// *on_problem: whether the --on-problem command has run.
int Snapshot(const Options& o, bool* on_problem, std::ostream& out, std::ostream& err) {
  const std::vector<std::string>& paths = o.paths;
  // Logs named, or in the folders, beside the traces.
  std::vector<std::string> trace_paths, logs;
  if (absl::Status split = SplitLogs(paths, &trace_paths, &logs); !split.ok()) {
    err << "ncclwatch: " << split.message() << "\n";
    return 2;
  }
  if (trace_paths.empty()) {
    err << "ncclwatch: status needs the job's traces; for logs alone, ncclwatch explain\n";
    return 2;
  }
  std::vector<SkippedInput> skipped;  // folders not searched, links not followed
  absl::StatusOr<std::vector<std::string>> files = TraceFiles(trace_paths, &skipped);
  if (!files.ok()) {
    err << "ncclwatch: " << files.status().message() << "\n";
    return 2;
  }
  const int64_t now = NowNs();
  std::optional<JobStatusBuilder> builder;
  size_t read = 0;
  // A reading of the traces begins: the table afresh (the diagnosis with
  // logs may read them more than once; the table is its last reading's).
  auto begin = [&] {
    builder.emplace(now, static_cast<int64_t>(o.stuck_after_s * 1e9));
    read = 0;
    // What may hold a rank's trace and was not read, here or on a node
    // whose summary says so: listed, as diagnose lists it.
    for (const SkippedInput& s : skipped)
      if (s.may_hold_input) builder->AddNotSearched(s.why);
  };
  auto add = [&](const JobInput& in) {
    if (in.status.ok()) {
      ++read;
      builder->AddProcess(in.trace);
    } else if (in.may_hold_traces) {
      builder->AddNotSearched(in.name + " (" + std::string(in.status.message()) + ")");
    } else {
      builder->AddUnreadable(in.name, std::string(in.status.message()));
    }
  };
  // A trace over 64 MiB is read through its summary made in memory, as
  // diagnose reads it (summary/job_inputs.h): the table needs each
  // stream's last calls, progress, liveness and the analyses' windows, all
  // of which that keeps, and `--watch` then costs what those keep each
  // time, not the rings.
  const uint64_t summarize_over = SummarizeTracesOver();
  // With logs beside the traces, the one diagnosis (analysis/
  // diagnose_evidence.h) judges them together, as diagnose would, and the
  // table is made from the same reading of the traces.
  std::optional<EvidenceDiagnosis> judged;
  std::optional<JobStatus> looked;
  if (logs.empty()) {
    // Once through summaries made in memory; again whole where a straggler
    // was judged on fewer calls than the traces hold (as diagnose reads
    // them again: analysis/diagnose_evidence.h).
    bool summarized = false;
    for (const std::string& f : *files) summarized |= SummarizedInMemory(f, summarize_over);
    for (const uint64_t over : {summarize_over, UINT64_MAX}) {
      begin();
      if (absl::Status loaded = LoadJobInputs(*files, 0, add, over); !loaded.ok()) {
        err << "ncclwatch: " << loaded.message() << "\n";
        return 2;
      }
      if (read == 0) break;
      looked = builder->Finish(Observe(builder->processes(), std::nullopt));
      if (!summarized || !looked->stragglers_on_fewer_calls) break;
    }
  } else {
    JobEvidence evidence{*files, logs, NotRead(skipped)};
    evidence.summarize_over = summarize_over;
    absl::StatusOr<EvidenceDiagnosis> d = DiagnoseEvidence(evidence, add, begin);
    if (!d.ok()) {
      err << "ncclwatch: " << d.status().message() << "\n";
      return 2;
    }
    judged = *std::move(d);
  }
  if (read == 0) {
    err << "ncclwatch: none of the " << files->size() << " trace file(s) can be read\n";
    return 2;
  }
  JobStatus status =
      looked ? *std::move(looked)
             : builder->Finish(Observe(
                   builder->processes(),
                   judged ? std::optional<LivenessObservation>(judged->observed) : std::nullopt));
  if (judged) {
    status.logs = logs;
    for (const auto& [path, why] : judged->logs_not_read)
      status.logs_unreadable.push_back(path + ": " + why);
    if (judged->diagnosis.problem) status.logs_problem = Headline(judged->diagnosis.findings, true);
  }
  if (o.metrics == "-") {
    WriteStatusMetrics(status, DefaultJob(paths), out);
  } else {
    WriteStatus(status, out);
  }
  if (!o.metrics.empty() && o.metrics != "-") {
    std::ostringstream metrics;
    WriteStatusMetrics(status, DefaultJob(paths), metrics);
    const std::string why = WriteAtomically(o.metrics, metrics.str());
    if (!why.empty()) {
      err << "ncclwatch: " << why << "\n";
      return 2;
    }
  }
  // Stuck, or ended badly: what does the diagnosis say? CMD runs once, on
  // the first that is a problem.
  if (!o.on_problem.empty() && !*on_problem && status.ExitCode() == 1) {
    std::string error;
    const std::unique_ptr<DiagnosedTraces> t = DiagnoseTraces(paths, &error);
    if (t == nullptr) {
      err << "ncclwatch: " << error << "\n";
    } else if (t->diagnosis.problem) {
      *on_problem = true;
      FinishOnProblem(StartOnProblem(o.on_problem, *t, err), err);
    } else if (!o.watch) {
      err << "ncclwatch: the diagnosis finds no problem yet; the --on-problem command was not "
             "run\n";
    }
  }
  return status.ExitCode();
}

}  // namespace

int RunStatus(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--watch" || a == "-w") {
      o.watch = true;
    } else if (a == "--interval" || a == "--stuck-after") {
      double v = 0;
      if (i + 1 >= args.size() || !Seconds(args[++i], &v))
        return Usage(err, a + " needs a number of seconds");
      (a == "--interval" ? o.interval_s : o.stuck_after_s) = v;
    } else if (a == "--metrics" || a == "--on-problem") {
      if (i + 1 >= args.size() || args[i + 1].empty())
        return Usage(err, a + (a == "--metrics" ? " needs a file (or -)" : " needs a command"));
      (a == "--metrics" ? o.metrics : o.on_problem) = args[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage(err, "unknown option " + a);
    } else {
      o.paths.push_back(a);
    }
  }
  if (o.paths.empty()) return Usage(err, "status needs the job's trace folder");
  bool on_problem = false;
  if (!o.watch) return Snapshot(o, &on_problem, out, err);

  // --watch: redraw in place (on a terminal) until interrupted; the exit
  // code is the last look's.
  struct sigaction sa = {};
  sa.sa_handler = OnStop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  const bool tty = isatty(STDOUT_FILENO) == 1 && o.metrics != "-";
  int code = 0;
  while (!g_stop) {
    std::ostringstream frame;
    code = Snapshot(o, &on_problem, frame, err);
    if (code == 2) return 2;
    out << (tty ? "\x1b[H\x1b[2J" : "\n") << frame.str() << std::flush;
    for (double slept = 0; slept < o.interval_s && !g_stop; slept += 0.1) {
      struct timespec ts = {0, 100'000'000};
      nanosleep(&ts, nullptr);
    }
  }
  return code;
}

}  // namespace ncclwatch::decoder

#include "commands/status.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "commands/input_files.h"
#include "model/trace_loader.h"
#include "report/status_report.h"

namespace ncclwatch::decoder {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnStop(int) { g_stop = 1; }

int Usage(std::ostream& err, const std::string& why) {
  err << "ncclwatch: " << why << "\n"
      << "usage: ncclwatch status PATH... [--watch] [--interval S] [--stuck-after S]\n";
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

// One look at the traces: 0 progressing, 1 stuck, 2 unusable input.
int Snapshot(const std::vector<std::string>& paths, double stuck_after_s, std::ostream& out,
             std::ostream& err) {
  absl::StatusOr<std::vector<std::string>> files = TraceFiles(paths);
  if (!files.ok()) {
    err << "ncclwatch: " << files.status().message() << "\n";
    return 2;
  }
  JobStatusBuilder builder(NowNs(), static_cast<int64_t>(stuck_after_s * 1e9));
  size_t read = 0;
  LoadProcessTraces(*files, 0,
                    [&](const std::string& file, const absl::Status& s, const ProcessTrace& t) {
                      if (s.ok()) {
                        ++read;
                        builder.AddProcess(t);
                      } else {
                        builder.AddUnreadable(file, std::string(s.message()));
                      }
                    });
  if (read == 0) {
    err << "ncclwatch: none of the " << files->size() << " trace file(s) can be read\n";
    return 2;
  }
  const JobStatus status = builder.Finish();
  WriteStatus(status, out);
  return status.ExitCode();
}

}  // namespace

int RunStatus(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  bool watch = false;
  double interval_s = 2, stuck_after_s = 60;
  std::vector<std::string> paths;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--watch" || a == "-w") {
      watch = true;
    } else if (a == "--interval" || a == "--stuck-after") {
      double v = 0;
      if (i + 1 >= args.size() || !Seconds(args[++i], &v))
        return Usage(err, a + " needs a number of seconds");
      (a == "--interval" ? interval_s : stuck_after_s) = v;
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage(err, "unknown option " + a);
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) return Usage(err, "status needs the job's trace folder");
  if (!watch) return Snapshot(paths, stuck_after_s, out, err);

  // --watch: redraw in place (on a terminal) until interrupted; the exit
  // code is the last look's.
  struct sigaction sa = {};
  sa.sa_handler = OnStop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  const bool tty = isatty(STDOUT_FILENO) == 1;
  int code = 0;
  while (!g_stop) {
    std::ostringstream frame;
    code = Snapshot(paths, stuck_after_s, frame, err);
    if (code == 2) return 2;
    out << (tty ? "\x1b[H\x1b[2J" : "\n") << frame.str() << std::flush;
    for (double slept = 0; slept < interval_s && !g_stop; slept += 0.1) {
      struct timespec ts = {0, 100'000'000};
      nanosleep(&ts, nullptr);
    }
  }
  return code;
}

}  // namespace ncclwatch::decoder

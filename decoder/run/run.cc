#include "run/run.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "commands/explain.h"
#include "commands/input_files.h"
#include "commands/on_problem.h"
#include "model/trace_loader.h"
#include "report/names.h"
#include "report/report.h"
#include "report/terminal_text.h"
#include "run/output_copy.h"

namespace ncclwatch::decoder {
namespace {

namespace fs = std::filesystem;

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

struct Options {
  std::string dir;
  bool on_stall = false;
  std::string on_problem;  // CMD, run once when a diagnosis is a problem
  std::string shim;
  std::vector<std::string> command;
};

int Usage(std::ostream& err, const std::string& why) {
  err << "ncclwatch: " << why << "\n"
      << "usage: ncclwatch run [--dir D] [--on-stall] [--on-problem CMD] [--shim PATH] -- CMD "
         "[ARGS...]\n";
  return 2;
}

// A fresh folder for this run's traces: ncclwatch-run-YYYYmmdd-HHMMSS, with
// -2, -3, ... when that is taken.
std::string FreshDir() {
  char stamp[32];
  const time_t now = time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  const std::string base = std::string("ncclwatch-run-") + stamp;
  for (int n = 1; n < 1000; ++n) {
    const std::string name = n == 1 ? base : base + "-" + std::to_string(n);
    if (mkdir(name.c_str(), 0700) == 0) {
      chmod(name.c_str(), 0700);  // whatever the umask: the shim must write there
      return name;
    }
    if (errno != EEXIST) return "";
  }
  return "";
}

// The number of stall records in the folder's traces, and one line for each
// process's latest.
uint64_t Stalls(const std::string& dir, std::vector<std::string>* lines) {
  absl::StatusOr<std::vector<std::string>> files = InputFiles({dir}, IsTraceFile);
  if (!files.ok()) return 0;
  uint64_t n = 0;
  LoadProcessTraces(
      *files, 0, [&](const std::string&, const absl::Status& s, const ProcessTrace& t) {
        if (!s.ok() || t.stalls.empty()) return;
        n += t.stalls.size();
        const StallEvent& e = t.stalls.back();
        std::ostringstream line;
        line << "ncclwatch: rank " << t.DisplayRank() << " (" << t.host << ":" << t.pid
             << ") stalled in " << CallName(e.call) << " #" << e.seq << " of communicator "
             << CommShort(e.comm) << ": nothing completed for " << e.waited_ms / 1000.0 << " s";
        lines->push_back(TerminalSafe(line.str()));
      });
  return n;
}

// Prints the diagnosis of the run's traces on `err`; with --on-problem, the
// first diagnosis that is a problem starts CMD (*on_problem: its pid, -1
// when it could not be started, 0 until then).
void PrintDiagnosis(const Options& o, const std::string& why, pid_t* on_problem,
                    std::ostream& err) {
  err << "ncclwatch: " << why << "; the diagnosis of " << o.dir << ":\n";
  std::string error;
  const std::unique_ptr<DiagnosedTraces> t = DiagnoseTraces({o.dir}, &error);
  if (t == nullptr) {
    // No trace (the job failed before any process loaded NCCL): its output
    // may still say why, read as explain reads logs.
    std::error_code ec;
    std::vector<std::string> outputs;
    for (const auto& e : fs::directory_iterator(o.dir, ec))
      if (e.path().filename().string().rfind("job-output.", 0) == 0) outputs.push_back(e.path());
    std::ostringstream explained, refused;
    if (!outputs.empty() && RunExplain(outputs, false, explained, refused) == 1) {
      err << "ncclwatch: no trace in " << o.dir << " (no process loaded NCCL); from the job's "
          << "output:\n"
          << explained.str();
    } else {
      err << "ncclwatch: " << error << "\n";
    }
    err.flush();
    return;
  }
  WriteReport(*t, false, err);  // escaped before a terminal sees it
  err.flush();
  if (!o.on_problem.empty() && *on_problem == 0 && t->diagnosis.problem)
    *on_problem = StartOnProblem(o.on_problem, *t, err);
}

std::string StatusWords(int status) {
  if (WIFSIGNALED(status))
    return "was killed by " + SignalName(WTERMSIG(status)) +
           (WCOREDUMP(status) ? " (core dumped)" : "");
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

std::string FindShim() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path bin = exe.parent_path();
  for (const fs::path& p : {bin / "libncclwatch.so", bin / ".." / "lib" / "libncclwatch.so",
                            bin / ".." / "lib64" / "libncclwatch.so",
                            bin / ".." / "lib" / "ncclwatch" / "libncclwatch.so"}) {
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

int RunRun(const std::vector<std::string>& args, std::ostream& err) {
  Options o;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--dir" || a == "--shim" || a == "--on-problem") {
      if (i + 1 >= args.size()) return Usage(err, a + " needs a value");
      (a == "--dir" ? o.dir : a == "--shim" ? o.shim : o.on_problem) = args[++i];
      if (a == "--on-problem" && o.on_problem.empty())
        return Usage(err, "--on-problem needs a command");
    } else if (a.rfind("--on-problem=", 0) == 0) {
      o.on_problem = a.substr(13);
      if (o.on_problem.empty()) return Usage(err, "--on-problem needs a command");
    } else if (a.rfind("--dir=", 0) == 0) {
      o.dir = a.substr(6);
    } else if (a.rfind("--shim=", 0) == 0) {
      o.shim = a.substr(7);
    } else if (a == "--on-stall") {
      o.on_stall = true;
    } else if (!a.empty() && a[0] == '-') {
      return Usage(err, "unknown option " + a);
    } else {
      break;  // the command, without --
    }
  }
  o.command.assign(args.begin() + static_cast<long>(i), args.end());
  if (o.command.empty()) return Usage(err, "run needs a command (ncclwatch run -- CMD ...)");

  if (o.shim.empty()) o.shim = FindShim();
  std::error_code ec;
  if (o.shim.empty()) {
    err << "ncclwatch: libncclwatch.so is not installed next to this ncclwatch (its folder, "
           "../lib, "
           "../lib64, ../lib/ncclwatch); give it with --shim PATH\n";
    return 2;
  }
  if (!fs::is_regular_file(o.shim, ec)) {
    err << "ncclwatch: " << o.shim << ": no such file (the shim, libncclwatch.so)\n";
    return 2;
  }
  o.shim = fs::absolute(o.shim, ec).string();
  if (o.dir.empty()) {
    o.dir = FreshDir();
    if (o.dir.empty()) {
      err << "ncclwatch: cannot make a trace folder in " << fs::current_path(ec).string() << ": "
          << std::strerror(errno) << "; give one with --dir D\n";
      return 2;
    }
  } else if (!fs::exists(o.dir, ec)) {
    fs::create_directories(o.dir, ec);
    if (ec) {
      err << "ncclwatch: cannot make the trace folder " << o.dir << ": " << ec.message() << "\n";
      return 2;
    }
    fs::permissions(o.dir, fs::perms::owner_all, ec);
  } else if (!fs::is_directory(o.dir, ec)) {
    err << "ncclwatch: " << o.dir << " is not a folder\n";
    return 2;
  }
  o.dir = fs::absolute(o.dir, ec).lexically_normal().string();
  if (!o.dir.empty() && o.dir.size() > 1 && o.dir.back() == '/') o.dir.pop_back();
  err << "ncclwatch: tracing into " << o.dir << "\n";
  {
    size_t old_traces = 0;
    for (const auto& e : fs::directory_iterator(o.dir, ec))
      old_traces += e.path().extension() == ".trace";
    if (old_traces > 0) {
      err << "ncclwatch: " << o.dir << " already holds " << old_traces
          << " trace(s); the diagnosis reads them with this run's (leave out --dir for a fresh "
             "folder)\n";
    }
  }
  err.flush();

  // Signals are taken synchronously: blocked here, unblocked in the child.
  sigset_t wanted, previous;
  sigemptyset(&wanted);
  for (int s : kForwarded) sigaddset(&wanted, s);
  sigaddset(&wanted, SIGCHLD);
  sigprocmask(SIG_BLOCK, &wanted, &previous);

  std::string preload = o.shim;
  if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing)
    preload += std::string(":") + existing;
  std::vector<char*> argv;
  for (std::string& a : o.command) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The job's output, passed through and kept beside the traces, where the
  // diagnosis reads it (run/output_copy.h): only streams that are not a terminal.
  OutputCopy output;
  std::string not_copied;
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  const std::string output_file =
      o.dir + "/job-output." + (host[0] ? host : "host") + "." + std::to_string(getpid()) + ".log";
  const bool copying = output.Start(output_file, &not_copied);
  if (!copying && !isatty(STDOUT_FILENO) && !isatty(STDERR_FILENO))
    err << "ncclwatch: " << not_copied << "\n";

  const pid_t child = fork();
  if (child < 0) {
    err << "ncclwatch: cannot start " << o.command[0] << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("NCCLWATCH_DIR", o.dir.c_str(), 1);
    if (copying) output.InChild();
    execvp(argv[0], argv.data());
    const int e = errno;
    const std::string line =
        "ncclwatch: cannot run " + o.command[0] + ": " + std::strerror(e) + "\n";
    (void)!write(STDERR_FILENO, line.data(), line.size());
    _exit(e == ENOENT ? 127 : 126);
  }

  if (copying) output.InParent();
  bool diagnosed = false;
  pid_t on_problem = 0;
  uint64_t stalls_seen = 0;
  auto next_poll = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    struct timespec wait = {1, 0};
    siginfo_t info;
    const int sig = sigtimedwait(&wanted, &info, &wait);
    if (sig == SIGCHLD || sig < 0) {
      const pid_t done = waitpid(child, &status, WNOHANG);
      if (done == child) break;
      if (done < 0 && errno == ECHILD) break;
    } else {
      // A terminal's signal (si_code SI_KERNEL) already reached CMD, in our
      // process group; one sent to us alone is passed on.
      const bool from_terminal = info.si_code == SI_KERNEL;
      if (!diagnosed && (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT)) {
        diagnosed = true;
        PrintDiagnosis(o, std::string("interrupted by ") + SignalName(sig), &on_problem, err);
      }
      if (!from_terminal) kill(child, sig);
    }
    if (o.on_stall && std::chrono::steady_clock::now() >= next_poll) {
      // Every second, or less often when reading the traces takes long (a
      // big job): the reading takes at most a tenth of the time.
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::string> lines;
      const uint64_t stalls = Stalls(o.dir, &lines);
      const auto took = std::chrono::steady_clock::now() - start;
      next_poll = std::chrono::steady_clock::now() +
                  std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1), took * 10);
      if (stalls > stalls_seen) {
        if (stalls_seen == 0) {
          for (const std::string& l : lines) err << l << "\n";
          PrintDiagnosis(o, "a stall was reported", &on_problem, err);
        }
        stalls_seen = stalls;
      }
    }
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  output.Finish();  // the whole of what was kept, before the diagnosis reads it

  const int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  if (code != 0 && !diagnosed) {
    PrintDiagnosis(o, o.command[0] + " " + StatusWords(status), &on_problem, err);
  } else if (code == 0) {
    size_t traces = 0;
    for (const auto& e : fs::directory_iterator(o.dir, ec))
      traces += e.path().extension() == ".trace";
    if (traces > 0) {
      err << "ncclwatch: " << o.command[0] << " exited with status 0; traces in " << o.dir
          << " (ncclwatch diagnose " << o.dir << ")\n";
    } else {
      err << "ncclwatch: " << o.command[0] << " exited with status 0; no trace in " << o.dir
          << ": no process made an NCCL call, or the shim could not write there (its lines "
             "above say why)\n";
    }
  }
  FinishOnProblem(on_problem, err);
  return code;
}

}  // namespace ncclwatch::decoder

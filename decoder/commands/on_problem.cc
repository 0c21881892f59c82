#include "commands/on_problem.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/str_join.h"
#include "analysis/diagnose_evidence.h"
#include "commands/input_files.h"
#include "report/finding_text.h"
#include "report/names.h"
#include "report/report.h"

extern char** environ;

namespace ncclwatch::decoder {

std::unique_ptr<DiagnosedTraces> DiagnoseTraces(const std::vector<std::string>& paths,
                                                std::string* error) {
  // The logs in the folders (a run's job-output.log) are judged with the traces.
  std::vector<std::string> trace_paths, logs;
  if (absl::Status split = SplitLogs(paths, &trace_paths, &logs); !split.ok()) {
    *error = std::string(split.message());
    return nullptr;
  }
  std::vector<SkippedInput> skipped;  // folders not read, links not followed
  absl::StatusOr<std::vector<std::string>> files =
      TraceFiles(trace_paths.empty() ? paths : trace_paths, &skipped);
  if (!files.ok()) {
    *error = std::string(files.status().message());
    return nullptr;
  }
  // The one diagnosis every command makes (analysis/diagnose_evidence.h).
  absl::StatusOr<EvidenceDiagnosis> result = DiagnoseEvidence(
      JobEvidence{*files, logs, NotRead(skipped), {}, SummarizeTracesOver(), SummarizeWindow()});
  if (!result.ok()) {
    *error = std::string(result.status().message());
    return nullptr;
  }
  auto t = std::make_unique<DiagnosedTraces>();
  static_cast<EvidenceDiagnosis&>(*t) = *std::move(result);
  t->paths = paths;
  return t;
}

Culprits CulpritsOf(const DiagnosedTraces& t) {
  Culprits c;
  std::set<int> ranks;
  std::set<std::string> hosts, processes;
  const std::vector<ProcessRecord>& all = t.job.processes();
  for (const Finding& f : t.diagnosis.findings) {
    if (f.role != FindingRole::kRootCause) continue;
    const std::string kind = KindName(f.kind);
    if (std::find(c.kinds.begin(), c.kinds.end(), kind) == c.kinds.end()) c.kinds.push_back(kind);
    ranks.insert(f.ranks.begin(), f.ranks.end());
    // The processes of those ranks, in the finding's job (the rank numbers
    // of unrelated jobs in one folder overlap).
    std::vector<int> members;
    if (f.job >= 0 && static_cast<size_t>(f.job) < t.diagnosis.jobs.size()) {
      members = t.diagnosis.jobs[f.job];
    } else {
      for (size_t i = 0; i < all.size(); ++i) members.push_back(static_cast<int>(i));
    }
    for (int i : members) {
      if (i < 0 || static_cast<size_t>(i) >= all.size()) continue;
      const ProcessRecord& p = all[i];
      if (std::find(f.ranks.begin(), f.ranks.end(), p.rank) == f.ranks.end()) continue;
      hosts.insert(p.host);
      processes.insert(p.host + ":" + std::to_string(p.pid));
    }
  }
  c.ranks.assign(ranks.begin(), ranks.end());
  c.hosts.assign(hosts.begin(), hosts.end());
  c.processes.assign(processes.begin(), processes.end());
  return c;
}

pid_t StartOnProblem(const std::string& command, const DiagnosedTraces& t, std::ostream& err) {
  // The report, in a memory file that becomes CMD's standard input: CMD may
  // read it or not, and nothing waits on a pipe.
  std::ostringstream json;
  WriteReport(t, true, json);
  const std::string report = json.str();
  const int fd = memfd_create("ncclwatch-report.json", MFD_CLOEXEC);
  if (fd < 0) {
    err << "ncclwatch: cannot run the --on-problem command: memfd_create: " << std::strerror(errno)
        << "\n";
    return -1;
  }
  for (size_t done = 0; done < report.size();) {
    const ssize_t n = write(fd, report.data() + done, report.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err << "ncclwatch: cannot run the --on-problem command: writing the report: "
          << std::strerror(errno) << "\n";
      close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);

  // Everything the child needs is made before fork.
  const Culprits c = CulpritsOf(t);
  const std::vector<std::pair<std::string, std::string>> vars = {
      {"NCCLWATCH_VERDICT", t.diagnosis.problem ? "problem" : "healthy"},
      {"NCCLWATCH_KIND", absl::StrJoin(c.kinds, ",")},
      {"NCCLWATCH_RANKS", absl::StrJoin(c.ranks, ",")},
      {"NCCLWATCH_HOSTS", absl::StrJoin(c.hosts, ",")},
      {"NCCLWATCH_PROCESSES", absl::StrJoin(c.processes, ",")},
      {"NCCLWATCH_SUMMARY", Headline(t.diagnosis.findings, t.diagnosis.problem)},
      {"NCCLWATCH_TRACES", absl::StrJoin(t.paths, ":")},
  };
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const std::string name = kv.substr(0, kv.find('='));
    if (std::none_of(vars.begin(), vars.end(), [&](const auto& v) { return v.first == name; }))
      env_store.push_back(kv);
  }
  for (const auto& [name, value] : vars) env_store.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string shell = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {shell.data(), dash_c.data(), cmd.data(), nullptr};

  const pid_t pid = fork();
  if (pid < 0) {
    err << "ncclwatch: cannot run the --on-problem command: fork: " << std::strerror(errno) << "\n";
    close(fd);
    return -1;
  }
  if (pid == 0) {
    // A fresh command: no signal blocked (ncclwatch run blocks those it
    // forwards), the report on standard input.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // (fd is 0 itself when ncclwatch ran with its stdin closed.)
    if (fd == STDIN_FILENO ? fcntl(fd, F_SETFD, 0) < 0 : dup2(fd, STDIN_FILENO) < 0) _exit(126);
    execve(argv[0], argv, envp.data());
    static const char kMsg[] = "ncclwatch: cannot run /bin/sh for the --on-problem command\n";
    (void)!write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
    _exit(127);
  }
  close(fd);
  const size_t roots =
      std::count_if(t.diagnosis.findings.begin(), t.diagnosis.findings.end(),
                    [](const Finding& f) { return f.role == FindingRole::kRootCause; });
  err << "ncclwatch: running the --on-problem command (" << roots << " root cause"
      << (roots == 1 ? "" : "s") << ", ranks " << (c.ranks.empty() ? "none" : RankList(c.ranks))
      << ")\n";
  err.flush();
  return pid;
}

void FinishOnProblem(pid_t pid, std::ostream& err) {
  if (pid <= 0) return;
  int status = 0;
  pid_t done;
  do {
    done = waitpid(pid, &status, 0);
  } while (done < 0 && errno == EINTR);
  if (done != pid) return;
  if (WIFSIGNALED(status)) {
    err << "ncclwatch: the --on-problem command was killed by " << SignalName(WTERMSIG(status))
        << "\n";
  } else if (WEXITSTATUS(status) != 0) {
    err << "ncclwatch: the --on-problem command exited with status " << WEXITSTATUS(status) << "\n";
  }
  err.flush();
}

}  // namespace ncclwatch::decoder

#include "commands/diagnose.h"

#include <sstream>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "commands/input_files.h"
#include "commands/progress.h"
#include "model/process_liveness.h"
#include "model/trace_loader.h"
#include "report/finding_text.h"
#include "report/reports.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {
int RunDiagnose(const std::vector<std::string>& paths, bool json, std::ostream& out,
                std::ostream& err) {
  std::vector<SkippedInput> skipped;  // folders not read, links not followed
  absl::StatusOr<std::vector<std::string>> found = TraceFiles(paths, &skipped);
  if (!found.ok()) {
    err << "ncclwatch: " << OneLine(std::string(found.status().message())) << "\n";
    return 2;
  }
  const std::vector<std::string>& files = *found;
  JobAnalysis job;
  Progress progress("reading traces", files.size());  // on a terminal only
  LoadProcessTraces(
      files, 0,
      [&](const std::string& file, const absl::Status& status, const ProcessTrace& trace) {
        progress.Step();
        if (status.ok()) {
          job.AddProcess(trace);
        } else {
          job.AddUnreadable(file, std::string(status.message()));
        }
      });
  progress.Done();
  if (job.processes().empty()) {
    err << "ncclwatch: none of the " << files.size()
        << " trace file(s) can be read; first: " << OneLine(job.unreadable().front().error) << "\n";
    return 2;
  }
  for (const SkippedInput& s : skipped) job.AddUnreadable(s.path, s.why, s.may_hold_input);
  job.Finish();
  // What this machine sees of the traced processes now: whether the job is
  // live, and which of its processes on this host still exist, and how.
  std::vector<TracedProcessId> ids;
  for (const ProcessFacts& p : job.processes())
    ids.push_back({p.host, p.pid, p.created_ns, p.pid_namespace});
  const Diagnosis d = Diagnose(job, ObserveLiveness(ids));
  if (json) {
    WriteJsonReport(job, d, out);
  } else {
    // Text from the traces may hold any byte: escaped before a terminal sees it.
    std::ostringstream human;
    WriteHumanReport(job, d, human);
    out << TerminalSafe(human.str());
  }
  return ExitCode(d.problem);
}

}  // namespace ncclwatch::decoder

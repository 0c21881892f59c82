#include "commands/diagnose.h"

#include <sstream>

#include "analysis/diagnose_traces.h"
#include "commands/explain.h"
#include "commands/input_files.h"
#include "commands/progress.h"
#include "report/finding_text.h"
#include "report/reports.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {

int RunDiagnose(const std::vector<std::string>& paths, bool json, std::ostream& out,
                std::ostream& err) {
  // Logs and job output beside the traces (named, or *.log/*.out/*.err in
  // the folders) are judged with them; logs alone are explain's.
  std::vector<std::string> trace_paths, logs;
  if (absl::Status split = SplitLogs(paths, &trace_paths, &logs); !split.ok()) {
    err << "ncclwatch: " << OneLine(std::string(split.message())) << "\n";
    return 2;
  }
  if (trace_paths.empty()) return RunExplain(logs, json, out, err);
  std::vector<SkippedInput> skipped;  // folders not read, links not followed
  absl::StatusOr<std::vector<std::string>> found = TraceFiles(trace_paths, &skipped);
  if (!found.ok() && absl::IsNotFound(found.status()) && !logs.empty())
    return RunExplain(logs, json, out, err);  // folders of logs, no trace in them
  if (!found.ok()) {
    err << "ncclwatch: " << OneLine(std::string(found.status().message())) << "\n";
    return 2;
  }
  const std::vector<std::string>& files = *found;
  Progress progress("reading traces", files.size());  // on a terminal only
  absl::StatusOr<TraceDiagnosis> result = DiagnoseTraceFiles(
      files, [&](size_t, const ProcessTrace*) { progress.Step(); }, NotRead(skipped), logs);
  progress.Done();
  if (!result.ok()) {
    err << "ncclwatch: " << OneLine(std::string(result.status().message())) << "\n";
    return 2;
  }
  const JobAnalysis& job = result->job;
  const Diagnosis& d = result->diagnosis;
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

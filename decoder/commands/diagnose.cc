#include "commands/diagnose.h"

#include "analysis/diagnose_evidence.h"
#include "commands/input_files.h"
#include "commands/progress.h"
#include "report/report.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {

int RunDiagnose(const std::vector<std::string>& paths, bool json, std::ostream& out,
                std::ostream& err) {
  // Logs and job output beside the traces (named, or *.log/*.out/*.err in
  // the folders) are judged with them; logs alone get explain's verdict,
  // from the same pipeline.
  JobEvidence evidence;
  evidence.summarize_over = SummarizeTracesOver();
  evidence.summarize_window = SummarizeWindow();
  std::vector<std::string> trace_paths;
  if (absl::Status split = SplitLogs(paths, &trace_paths, &evidence.logs); !split.ok()) {
    err << "ncclwatch: " << OneLine(std::string(split.message())) << "\n";
    return 2;
  }
  if (!trace_paths.empty()) {
    std::vector<SkippedInput> skipped;  // folders not read, links not followed
    absl::StatusOr<std::vector<std::string>> found = TraceFiles(trace_paths, &skipped);
    const bool logs_alone =
        !found.ok() && absl::IsNotFound(found.status()) && !evidence.logs.empty();
    if (!found.ok() && !logs_alone) {
      err << "ncclwatch: " << OneLine(std::string(found.status().message())) << "\n";
      return 2;
    }
    if (found.ok()) {
      evidence.traces = *std::move(found);
      evidence.not_read = NotRead(skipped);
    }
  }
  absl::StatusOr<EvidenceDiagnosis> result;
  {
    Progress progress("reading traces", evidence.traces.size());  // on a terminal only
    result = DiagnoseEvidence(evidence, [&](const JobInput&) { progress.Step(); });
  }
  if (!result.ok()) {
    err << "ncclwatch: " << OneLine(std::string(result.status().message())) << "\n";
    return 2;
  }
  WriteReport(*result, json, out);
  return ExitCode(result->diagnosis.problem);
}

}  // namespace ncclwatch::decoder

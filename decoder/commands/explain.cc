#include "commands/explain.h"

#include <filesystem>

#include "analysis/diagnose_evidence.h"
#include "commands/input_files.h"
#include "report/finding_text.h"
#include "report/report.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {
namespace {

namespace fs = std::filesystem;

}  // namespace

int RunExplain(const std::vector<std::string>& paths, bool json, std::ostream& out,
               std::ostream& err) {
  // In folders, every file; a file named on the command line, whatever it
  // is. Traces and node summaries among them (by name, or by their first
  // bytes) are judged with the logs, as diagnose judges them: the same
  // pipeline, which with logs alone is explain's own.
  std::vector<SkippedInput> skipped;  // folders not read, links not followed
  absl::StatusOr<std::vector<std::string>> found = InputFiles(
      paths, [](const fs::path&) { return true; }, &skipped);
  if (!found.ok()) {
    err << "ncclwatch: " << OneLine(std::string(found.status().message())) << "\n";
    return 2;
  }
  const std::vector<std::string>& files = *found;
  if (files.empty()) {
    err << "ncclwatch: no log files under " << OneLine(paths.front())
        << (skipped.empty() ? ""
                            : " that could be read; first not read: " + OneLine(skipped[0].why))
        << "\n";
    return 2;
  }
  JobEvidence evidence;
  evidence.summarize_over = SummarizeTracesOver();
  evidence.summarize_window = SummarizeWindow();
  for (const std::string& f : files)
    (HoldsTraces(f) ? evidence.traces : evidence.logs).push_back(f);
  // What the walk passed over: beside traces, a folder not read or a trace
  // not followed may hold a rank's trace (the job is not called healthy
  // without it); anything else was a log, listed as not read.
  for (const UnreadableTrace& u : NotRead(skipped)) {
    std::error_code ec;
    const bool trace = !evidence.traces.empty() && u.may_hold_traces &&
                       (IsTraceFile(u.path) || fs::is_directory(fs::symlink_status(u.path, ec)));
    (trace ? evidence.not_read : evidence.logs_not_read).push_back(u);
  }
  absl::StatusOr<EvidenceDiagnosis> result = DiagnoseEvidence(evidence);
  if (!result.ok()) {
    err << "ncclwatch: " << OneLine(std::string(result.status().message())) << "\n";
    return 2;
  }
  WriteReport(*result, json, out);
  return ExitCode(result->diagnosis.problem);
}

}  // namespace ncclwatch::decoder

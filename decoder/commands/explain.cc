#include "commands/explain.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/log_diagnosis.h"
#include "commands/input_files.h"
#include "logs/nccl_log.h"
#include "report/finding_text.h"
#include "report/reports.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {
namespace {

namespace fs = std::filesystem;

}  // namespace

int RunExplain(const std::vector<std::string>& paths, bool json, std::ostream& out,
               std::ostream& err) {
  // In folders, everything but traces; a file named on the command line, whatever it is.
  std::vector<SkippedInput> skipped;  // folders not read, links not followed
  absl::StatusOr<std::vector<std::string>> found = InputFiles(
      paths, [](const fs::path& p) { return p.extension() != ".trace"; }, &skipped);
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
  NcclLog log;
  UnreadableFiles bad;
  for (const SkippedInput& s : skipped) bad.push_back({s.path, s.why});
  for (const std::string& f : files) {
    absl::Status s = log.AddFile(f);
    if (!s.ok()) bad.push_back({f, std::string(s.message())});
  }
  log.Finish();
  if (log.sources().empty()) {
    err << "ncclwatch: none of the " << files.size()
        << " file(s) can be read; first: " << OneLine(bad.front().second) << "\n";
    return 2;
  }
  const LogDiagnosis d = DiagnoseLogs(log);
  if (log.nccl_lines() == 0 && d.findings.empty()) {
    err << "ncclwatch: nothing in "
        << (files.size() == 1 ? OneLine(files.front()) : absl::StrCat(files.size(), " files"))
        << " looks like an NCCL log (NCCL_DEBUG=INFO or WARN) or a job's NCCL error output\n";
    return 2;
  }
  if (json) {
    WriteExplainJsonReport(log, d, bad, out);
  } else {
    // Text from the logs may hold any byte: escaped before a terminal sees it.
    std::ostringstream human;
    WriteExplainHumanReport(log, d, bad, human);
    out << TerminalSafe(human.str());
  }
  return ExitCode(d.problem);
}

}  // namespace ncclwatch::decoder

#include "commands/diagnose.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "report/reports.h"
#include "trace/process_trace.h"

namespace ncclwatch::decoder {
namespace {

namespace fs = std::filesystem;

bool IsTraceName(const fs::path& p) { return p.extension() == ".trace"; }

}  // namespace

int RunDiagnose(const std::vector<std::string>& paths, bool json, std::ostream& out, std::ostream& err) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) {
      err << "ncclwatch: " << path << ": no such file or folder\n";
      return 2;
    }
    if (fs::is_directory(st)) {
      for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && IsTraceName(it->path())) files.push_back(it->path().string());
      }
    } else {
      files.push_back(path);
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty()) {
    err << "ncclwatch: no trace files (*.trace) under " << paths.front() << (paths.size() > 1 ? " and the rest" : "")
        << "\n";
    return 2;
  }
  JobAnalysis job;
  for (const std::string& file : files) {
    absl::StatusOr<ProcessTrace> trace = LoadProcessTrace(file);
    if (trace.ok()) {
      job.AddProcess(std::move(*trace));
    } else {
      job.AddUnreadable(file, std::string(trace.status().message()));
    }
  }
  if (job.processes().empty()) {
    err << "ncclwatch: none of the " << files.size() << " trace file(s) can be read; first: "
        << job.unreadable().front().error << "\n";
    return 2;
  }
  job.Finish();
  const Diagnosis d = Diagnose(job);
  if (json) {
    WriteJsonReport(job, d, out);
  } else {
    WriteHumanReport(job, d, out);
  }
  return d.problem ? 1 : 0;
}

}  // namespace ncclwatch::decoder

#include "commands/timeline.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/diagnose_traces.h"
#include "commands/input_files.h"
#include "commands/progress.h"
#include "model/trace_loader.h"
#include "report/timeline.h"

namespace ncclwatch::decoder {
namespace {

namespace fs = std::filesystem;
}  // namespace

int RunTimeline(const std::vector<std::string>& paths, const std::string& output, std::ostream& out,
                std::ostream& err) {
  absl::StatusOr<std::vector<std::string>> found = TraceFiles(paths);
  if (!found.ok()) {
    err << "ncclwatch: " << found.status().message() << "\n";
    return 2;
  }
  const std::vector<std::string>& files = *found;

  // First the diagnosis, for the root cause to mark: the one diagnose
  // makes (analysis/diagnose_traces.h), liveness included.
  absl::StatusOr<TraceDiagnosis> result;
  {
    Progress progress("reading traces", files.size());
    result = DiagnoseTraceFiles(files, [&](size_t, const ProcessTrace*) { progress.Step(); });
  }
  if (!result.ok()) {
    err << "ncclwatch: " << result.status().message() << "\n";
    return 2;
  }
  const JobAnalysis& job = result->job;
  const Diagnosis& d = result->diagnosis;
  std::map<std::string, int> index_of;  // path -> process index (duplicates left out)
  for (const ProcessFacts& p : job.processes()) index_of.emplace(p.path, p.index);

  // Then the timeline, written next to the output and renamed into place, so
  // a reader never sees half a file.
  const std::string partial = output + ".partial";
  std::ofstream file(partial, std::ios::binary | std::ios::trunc);
  if (!file) {
    err << "ncclwatch: cannot write " << output << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  TimelineWriter writer(file);
  writer.MarkRootCauses(job, d);
  {
    Progress progress("writing the timeline", files.size());
    LoadProcessTraces(
        files, 0,
        [&](const std::string& path, const absl::Status& status, const ProcessTrace& trace) {
          progress.Step();
          auto it = index_of.find(path);
          if (!status.ok() || it == index_of.end()) return;
          writer.AddProcess(trace, it->second);
        });
  }
  file.close();
  if (!file) {
    err << "ncclwatch: cannot write " << output << ": " << std::strerror(errno) << "\n";
    std::remove(partial.c_str());
    return 2;
  }
  std::error_code ec;
  fs::rename(partial, output, ec);
  if (ec) {
    err << "ncclwatch: cannot write " << output << ": " << ec.message() << "\n";
    std::remove(partial.c_str());
    return 2;
  }
  const TimelineStats& s = writer.stats();
  out << "wrote " << output << ": " << s.processes << " processes, " << s.comm_tracks
      << " communicator tracks, " << s.slices << " slices, " << s.instants << " instants"
      << (s.root_cause_marks ? ", the root cause marked" : "") << "\n"
      << "open it at https://ui.perfetto.dev (Open trace file)\n";
  return 0;
}

}  // namespace ncclwatch::decoder

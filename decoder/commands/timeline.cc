#include "commands/timeline.h"

#include <map>

#include "analysis/diagnose_evidence.h"
#include "commands/input_files.h"
#include "commands/output_file.h"
#include "commands/progress.h"
#include "report/terminal_text.h"
#include "report/timeline.h"
#include "summary/job_inputs.h"

namespace ncclwatch::decoder {
int RunTimeline(const std::vector<std::string>& paths, const std::string& output, std::ostream& out,
                std::ostream& err) {
  // The logs beside the traces (named, or *.log/*.out/*.err in the
  // folders) are judged with them, as diagnose judges them: the root cause
  // marked is diagnose's.
  std::vector<std::string> trace_paths, logs;
  if (absl::Status split = SplitLogs(paths, &trace_paths, &logs); !split.ok()) {
    err << "ncclwatch: " << OneLine(std::string(split.message())) << "\n";
    return 2;
  }
  std::vector<SkippedInput> skipped;  // folders not read, links not followed
  absl::StatusOr<std::vector<std::string>> found =
      TraceFiles(trace_paths.empty() ? paths : trace_paths, &skipped);
  if (!found.ok()) {
    err << "ncclwatch: " << OneLine(std::string(found.status().message())) << "\n";
    return 2;
  }
  const std::vector<std::string>& files = *found;
  // The output first: a name that cannot be written (or is one of the
  // traces) is refused before any work. It is written beside its name and
  // renamed into place, so a reader never sees half a file.
  OutputFile timeline_file;
  std::vector<std::string> inputs = files;  // none of them may be written over
  inputs.insert(inputs.end(), logs.begin(), logs.end());
  if (absl::Status s = timeline_file.Open(output, inputs); !s.ok()) {
    err << "ncclwatch: " << OneLine(std::string(s.message())) << "\n";
    return 2;
  }

  // First the diagnosis, for the root cause to mark: the one diagnose
  // makes (analysis/diagnose_evidence.h), liveness included.
  absl::StatusOr<EvidenceDiagnosis> result;
  {
    Progress progress("reading traces", files.size());
    result = DiagnoseEvidence(
        JobEvidence{files, logs, NotRead(skipped), {}, SummarizeTracesOver(), SummarizeWindow()},
        [&](const JobInput&) { progress.Step(); });
  }
  if (!result.ok()) {
    err << "ncclwatch: " << OneLine(std::string(result.status().message())) << "\n";
    return 2;
  }
  const JobAnalysis& job = result->job;
  const Diagnosis& d = result->diagnosis;
  std::map<std::string, int> index_of;  // path -> process index (duplicates left out)
  for (const ProcessRecord& p : job.processes()) index_of.emplace(p.path, p.index);

  TimelineWriter writer(timeline_file.stream());
  writer.MarkRootCauses(job, d);
  {
    Progress progress("writing the timeline", files.size());
    const absl::Status read = LoadJobInputs(files, 0, [&](const JobInput& in) {
      progress.Step();
      auto it = index_of.find(in.name);
      if (!in.status.ok() || it == index_of.end()) return;
      writer.AddProcess(in.trace, it->second);
    });
    if (!read.ok()) {
      err << "ncclwatch: " << OneLine(std::string(read.message())) << "\n";
      return 2;
    }
  }
  if (absl::Status s = timeline_file.Commit(); !s.ok()) {
    err << "ncclwatch: " << s.message() << "\n";
    return 2;
  }
  const TimelineStats& s = writer.stats();
  out << "wrote " << output << ": " << s.processes << " processes, " << s.comm_tracks
      << " communicator tracks, " << s.slices << " slices, " << s.instants << " instants"
      << (s.root_cause_marks ? ", the root cause marked" : "")
      << (s.straggler_marks ? ", the straggler marked" : "") << "\n"
      << "open it at https://ui.perfetto.dev (Open trace file)\n";
  return 0;
}

}  // namespace ncclwatch::decoder

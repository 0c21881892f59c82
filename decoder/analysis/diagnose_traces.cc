#include "analysis/diagnose_traces.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/log_diagnosis.h"
#include "analysis/log_evidence.h"
#include "logs/nccl_log.h"
#include "model/process_liveness.h"
#include "summary/job_inputs.h"
#include "summary/summary_reader.h"

namespace ncclwatch::decoder {

absl::StatusOr<TraceDiagnosis> DiagnoseTraceFiles(const std::vector<std::string>& files,
                                                  const OnTrace& on_trace,
                                                  const std::vector<UnreadableTrace>& not_read,
                                                  const std::vector<std::string>& logs) {
  TraceDiagnosis out;
  size_t summaries = 0;
  for (const std::string& f : files) summaries += IsSummaryFile(f) ? 1 : 0;
  if (summaries > 0 && summaries < files.size()) out.job.MixesSummaries();
  size_t index = 0;
  const absl::Status read = LoadJobInputs(files, 0, [&](const JobInput& in) {
    if (in.status.ok()) {
      out.job.AddProcess(in.trace);
    } else {
      out.job.AddUnreadable(in.name, std::string(in.status.message()), in.may_hold_traces);
    }
    if (on_trace) on_trace(index, in.status.ok() ? &in.trace : nullptr);
    ++index;
  });
  if (!read.ok()) return read;
  if (out.job.processes().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "none of the ", files.size(), " trace file(s) can be read; first: ",
        out.job.unreadable().empty() ? "none given" : out.job.unreadable().front().error));
  }
  for (const UnreadableTrace& u : not_read)
    out.job.AddUnreadable(u.path, u.error, u.may_hold_traces);
  out.job.Finish();
  // What this machine sees of the traced processes now: whether the job is
  // live, and which of its processes on this host still exist, and how
  // (right after the traces, before the logs are read).
  std::vector<TracedProcessId> ids;
  for (const ProcessFacts& p : out.job.processes())
    ids.push_back({p.host, p.pid, p.created_ns, p.pid_namespace});
  const LivenessObservation observed = ObserveLiveness(ids);
  // The logs' init evidence joins the traces' before the diagnosis.
  NcclLog log;
  size_t logs_read = 0;
  for (const std::string& f : logs) logs_read += log.AddFile(f).ok() ? 1 : 0;
  std::set<int> joined;
  std::vector<InitEvidence> log_evidence;
  if (logs_read > 0) {
    log.Finish();
    log_evidence = LogInitEvidence(log);
    joined = out.job.JoinLogEvidence(log_evidence, log.timestamps());
  }
  out.diagnosis = Diagnose(out.job, observed);
  if (logs_read > 0) {
    // What the logs say beyond the init evidence judged with the traces.
    joined.insert(out.diagnosis.untraced_judged.begin(), out.diagnosis.untraced_judged.end());
    std::vector<TracedPid> traced;
    for (const ProcessFacts& p : out.job.processes())
      traced.push_back({static_cast<int>(p.pid), p.pid_namespace, p.rank});
    AddLogEvidence(DiagnoseLogs(log, joined, std::move(log_evidence)), traced, &out.diagnosis);
  }
  return out;
}

}  // namespace ncclwatch::decoder

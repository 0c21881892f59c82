#include "commands/logs_beside.h"

#include "analysis/log_diagnosis.h"
#include "analysis/log_evidence.h"
#include "logs/nccl_log.h"

namespace ncclwatch::decoder {

void JudgeLogsBeside(const std::vector<std::string>& logs, const JobAnalysis& job, Diagnosis* d) {
  if (logs.empty()) return;
  NcclLog log;
  size_t read = 0;
  for (const std::string& f : logs) read += log.AddFile(f).ok() ? 1 : 0;
  if (read == 0) return;
  log.Finish();
  std::vector<TracedPid> traced;
  for (const ProcessFacts& p : job.processes())
    traced.push_back({static_cast<int>(p.pid), p.pid_namespace, p.rank});
  AddLogEvidence(DiagnoseLogs(log), traced, d);
}

}  // namespace ncclwatch::decoder

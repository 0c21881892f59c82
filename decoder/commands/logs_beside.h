// Logs given beside a job's traces (commands/input_files.h SplitLogs: a
// job's output, NCCL's logs, a node's dmesg), read and judged with the
// traces' diagnosis as one verdict (analysis/log_evidence.h). Used by
// diagnose and by every command that diagnoses a folder (run, --on-problem).
//
// Thread-safety: plain functions.

#ifndef NCCLWATCH_DECODER_COMMANDS_LOGS_BESIDE_H_
#define NCCLWATCH_DECODER_COMMANDS_LOGS_BESIDE_H_

#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"

namespace ncclwatch::decoder {

// Files that cannot be read as logs are passed over (the traces' verdict
// stands without them).
void JudgeLogsBeside(const std::vector<std::string>& logs, const JobAnalysis& job, Diagnosis* d);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_LOGS_BESIDE_H_

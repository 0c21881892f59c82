// DiagnoseTraceFiles: "diagnose this evidence", for a job's traces. Every
// command that judges traces goes through it (diagnose, timeline, probe and
// run through diagnose, and run's and status's --on-problem), so they read
// the same model and reach the same verdict, with the same liveness:
//
//   trace files ──LoadProcessTraces──> each trace, once ──> JobAnalysis
//       (model/trace_loader.h)              │ on_trace        │ Finish
//                                           ▼                 ▼
//                                  the caller's use      ObserveLiveness (this machine's
//                                  (timeline, progress)  /proc and clock, now)
//                                                              │
//                                                              ▼
//                                                       logs' init evidence joined
//                                                       (JobAnalysis::JoinLogEvidence)
//                                                              │
//                                                              ▼
//                                                       Diagnose -> findings
//                                                              │
//                                                              ▼
//                                                       the logs' other findings
//                                                       (analysis/log_evidence.h)
//
// The job's logs (NCCL_DEBUG files, its output) are evidence of the same
// job: a log line is an observation about a rank, its host and pid, like a
// record. A traced process's own log adds to its init evidence, and a rank
// that left a log and no trace is judged in its job's init forensics with
// the traced ranks; what the logs say beyond init (an Xid, an OOM kill, a
// watchdog) is ranked with the traces' findings.
//
// Liveness is observed once, right after the traces are read: a job whose
// processes still run is judged live (running, frozen, alive in host
// code), one whose processes are gone post mortem, whichever command asks.
//
// Thread-safety: call from one thread; on_trace runs on it.

#ifndef NCCLWATCH_DECODER_ANALYSIS_DIAGNOSE_TRACES_H_
#define NCCLWATCH_DECODER_ANALYSIS_DIAGNOSE_TRACES_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

struct TraceDiagnosis {
  JobAnalysis job;
  Diagnosis diagnosis;
};

// Each file as it is read: its index among the files, and its trace (valid
// during the call only), or nullptr when it could not be read.
using OnTrace = std::function<void(size_t file, const ProcessTrace* trace)>;

// Reads every file once (on every core; a node's summary, summary/
// job_inputs.h, is each of the traces it holds), analyses the job and diagnoses it
// as this machine sees its processes now. `not_read`: what the search for
// the files passed over (a folder not read, a link not followed), added to
// the job's unreadable inputs, so that a job that may have lost a rank's
// trace there is not called healthy. An error (the message says which file
// and why, and may hold what the file's name holds: a caller prints it on
// one line) when none of the files can be read, or a summary is not whole
// or not well-formed. `logs`: the job's log files; one that cannot be read
// is passed over (the traces are the evidence that must be read).
absl::StatusOr<TraceDiagnosis> DiagnoseTraceFiles(const std::vector<std::string>& files,
                                                  const OnTrace& on_trace = {},
                                                  const std::vector<UnreadableTrace>& not_read = {},
                                                  const std::vector<std::string>& logs = {});

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_DIAGNOSE_TRACES_H_

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
//                                                       Diagnose -> findings
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

// Reads every file once (on every core), analyses the job and diagnoses it
// as this machine sees its processes now. An error (the message says which
// file and why) when none of the files can be read.
absl::StatusOr<TraceDiagnosis> DiagnoseTraceFiles(const std::vector<std::string>& files,
                                                  const OnTrace& on_trace = {});

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_DIAGNOSE_TRACES_H_

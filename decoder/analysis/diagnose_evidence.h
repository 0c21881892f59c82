// DiagnoseEvidence: "diagnose this evidence", a job's traces and its logs.
// Every command that judges a job goes through it (diagnose, explain,
// timeline, probe and run through diagnose, and run's and status's
// --on-problem), so they read the same model and reach the same verdict,
// with the same liveness:
//
//   trace files ──LoadProcessTraces──> each trace, once ──> JobAnalysis
//       (model/trace_loader.h)              │ on_trace        │ Finish
//                                           ▼                 ▼
//                                  the caller's use      ObserveLiveness (this machine's
//                                  (timeline, progress)  /proc and clock, now)
//                                                              │
//   log files ──NcclLog──> each process's init evidence ───────┤
//                          (LogInitEvidence)                   ▼
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
// watchdog) is ranked with the traces' findings. With no trace at all (a
// job that ran without the shim: `explain`), the logs' own diagnosis is the
// verdict (analysis/log_diagnosis.h): the same pipeline with no traced
// process, so nothing for the logs' findings to be ranked against.
//
// Liveness is observed once, right after the traces are read: a job whose
// processes still run is judged live (running, frozen, alive in host
// code), one whose processes are gone post mortem, whichever command asks.
// Logs alone say nothing of liveness: their verdict is post mortem.
//
// Thread-safety: call from one thread; on_trace runs on it.

#ifndef NCCLWATCH_DECODER_ANALYSIS_DIAGNOSE_EVIDENCE_H_
#define NCCLWATCH_DECODER_ANALYSIS_DIAGNOSE_EVIDENCE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "logs/nccl_log.h"
#include "model/process_liveness.h"
#include "model/process_trace.h"
#include "summary/job_inputs.h"
#include "summary/summary_format.h"

namespace ncclwatch::decoder {

// What a command found to judge.
struct JobEvidence {
  // Trace files and node summaries (summary/job_inputs.h: a summary is each
  // of the traces it holds).
  std::vector<std::string> traces;
  // NCCL_DEBUG logs, a job's output, a node's dmesg, pasted stacks.
  std::vector<std::string> logs;
  // What the search for the traces passed over (a folder not read, a link
  // not followed): the job's unreadable inputs, so that a job that may have
  // lost a rank's trace there is not called healthy.
  std::vector<UnreadableTrace> not_read;
  // What the search for the logs passed over: listed as not read.
  std::vector<UnreadableTrace> logs_not_read;
  // A trace file of more than this many bytes is read through its summary,
  // made in memory (summary/job_inputs.h: a big ring costs what the
  // analyses keep, not its size). Where the diagnosis needed what a
  // summary left out, the job is read again: through summaries that keep
  // whole the blocks it could not compare (a summary_gap's: a ring's start,
  // a block whose digests differ; at most 256 blocks), and whole where that
  // does not do (more blocks, a straggler's figures over fewer calls than
  // the traces hold, a gap in a node's summary). UINT64_MAX: every trace
  // whole (what a caller that shows every call needs). The commands that
  // judge a job set SummarizeTracesOver().
  uint64_t summarize_over = UINT64_MAX;
  // The window of those summaries (summary/summary_writer.h).
  uint32_t summarize_window = kDefaultSummaryWindow;
};

// Traces bigger than this are judged from their summaries first: 64 MiB, a
// ring four times the default's (which are always read whole).
inline constexpr uint64_t kSummarizeTracesOver = uint64_t{64} << 20;
// What the judging commands set JobEvidence::summarize_over to:
// kSummarizeTracesOver, or NCCLWATCH_SUMMARIZE_OVER (bytes; 0: every trace
// judged from its summary first, as the job suites check; a value that is
// not a number is ignored).
uint64_t SummarizeTracesOver();
// What they set JobEvidence::summarize_window to: the default window, or
// NCCLWATCH_SUMMARIZE_WINDOW (at least 1; for the job suites, which check
// a small window's verdicts against the traces' own).
uint32_t SummarizeWindow();

struct EvidenceDiagnosis {
  JobAnalysis job;  // the traced processes; none when only logs were given
  NcclLog log;      // every log that could be read
  // Logs that could not be read, each with why (path, error); with traces
  // beside them the traces are judged all the same.
  std::vector<std::pair<std::string, std::string>> logs_not_read;
  Diagnosis diagnosis;
  // What this machine saw of the traced processes, right after the traces
  // were read (empty with logs alone): the diagnosis's liveness, and
  // status's table beside it.
  LivenessObservation observed;

  // Whether the verdict rests on traces (diagnose's report), or on logs
  // alone (explain's).
  bool traced() const { return !job.processes().empty(); }
};

// Each process as it is read (summary/job_inputs.h): its file's name, and
// its trace (valid during the call only) or why it could not be read; a
// command that shows the traces too (status's table) reads them once. (Called
// again for each where the job is read again: JobEvidence::summarize_over;
// OnReading is called before each reading, the last the diagnosis's.)
using OnTrace = OnJobInput;
using OnReading = std::function<void()>;

// Reads every trace once (on every core) and every log, analyses the job
// and diagnoses it as this machine sees its processes now. Where traces
// are given and none can be read, the logs alone judge the job if they
// show a problem (the traces listed as not read); an error otherwise (the
// message says which file and why, and may hold what a file's name holds:
// a caller prints it on one line), and when a summary is not whole or not
// well-formed. With logs alone, an error when none can be read or nothing
// in them is NCCL's or a job's failure.
absl::StatusOr<EvidenceDiagnosis> DiagnoseEvidence(const JobEvidence& evidence,
                                                   const OnTrace& on_trace = {},
                                                   const OnReading& on_reading = {});

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_DIAGNOSE_EVIDENCE_H_

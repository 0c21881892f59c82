// Diagnose: from what the analyses saw to findings, root cause first.
//
// Candidates, each with the time of the event it starts from:
//   collective_mismatch  the first collective a communicator's ranks disagree on
//   missing_rank         ranks that never entered a collective the others entered,
//                        with what they did instead (exited, destroyed or aborted
//                        the communicator, kept calling other communicators, alive)
//   rank_died            the same, when the rank's process died first: a crash
//                        signal, or no end at all where the rest of the job's
//                        traces do end (SIGKILL, OOM)
//   p2p_mismatch         a send and its receive that disagree, or lack the other
//   order_inversion      two communicators' collectives ordered differently on the
//                        same stream (a certain deadlock; on different streams a warning)
// and, from the shim's completion and liveness records (model/process_completion.h):
//   gpu_fault, cuda_error  a CUDA error the watcher met (first tier: always the root)
//   nccl_async_error     an error NCCL reported asynchronously, with its text
//   rank_died, rank_frozen  a process whose life ended (or froze) well before the
//                        others': its heartbeat stopped more than 1.5 intervals earlier
//   never_completed      an operation every rank entered that the GPUs never
//                        finished, naming the ranks whose progress stopped first
// A CUDA error is the root cause wherever it is; otherwise the earliest
// candidate of a job is its root cause, never_completed only when nothing
// else is; the others are its consequences.
//
// HEALTHY only when it is: every rank exited with code 0 with its recorded
// work complete (when tracked). Live, a job where nothing is certain or
// stuck is RUNNING (every rank still makes progress, or nothing has waited
// long enough to call it stuck), with what is pending: never healthy.
// A job that is not, and where nothing above is found, gets one of:
//   rank_exit_error      a rank exited with an error code
//   trace_overwritten    the ring lost the records that could have shown why
//   hang_unexplained     it hung or was killed: what each rank was doing
//   missing_traces, nccl_calls_unseen  (otherwise notes) what could not be seen
// Hang findings carry where the hang is (`phase`).
//
// A job is the set of processes connected by the communicators they share;
// traces of several jobs in one folder are diagnosed separately.

#ifndef NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_H_
#define NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_H_

#include <set>
#include <vector>

#include "analysis/job_analysis.h"
#include "findings/finding.h"
#include "model/process_liveness.h"

namespace ncclwatch::decoder {

struct Diagnosis {
  std::vector<Finding> findings;  // per job: root cause, consequences, warnings; then notes
  bool problem = false;
  // Live and nothing certain or stuck: the verdict is `running`, never
  // healthy, with what is pending (longest first).
  bool running = false;
  std::vector<PendingOperation> pending;
  std::vector<std::vector<int>> jobs;  // process indices of each job
  int64_t end_ns = 0;                  // the last record of any process
  bool live = false;                   // some process was seen alive when diagnosed
  bool tracked = false;                // every process tracked its GPU completion
  // The log processes of ranks with no trace (JobAnalysis::untraced_init)
  // judged in a job's init forensics.
  std::set<int> untraced_judged;
};

// `observed` is what the machine saw of the processes now (diagnose fills it
// from /proc and the clock); the default is post-mortem.
Diagnosis Diagnose(const JobAnalysis& job, const LivenessObservation& observed = {});

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_H_

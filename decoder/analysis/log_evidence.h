// A job's logs beside its traces, judged as one: `diagnose TRACES LOGS`.
//
// The traces say what every rank did in NCCL; the logs say what the traces
// cannot see: a GPU's Xid, the kernel's OOM killer, a process's own crash
// report, an InfiniBand completion error, a CUDA error in a kernel. Such a
// finding of the logs (gpu_fault, out_of_memory, nvlink_fabric,
// cuda_ipc_failure, network_error, cuda_error, a crash's rank_died) is why
// the traces look as they do: it becomes the root cause, and what the
// traces concluded follows it as consequences; unless the traces made that
// finding themselves (a GPU fault their CUDA error shows), or it names no
// rank where the traces' root cause names one: a note then. A finding of the
// logs about ranks that left no trace leads too where the traces' root cause
// names those ranks (a rank that never came to the rendezvous, never entered
// a collective): the logs say why (its rendezvous or init failed, it died,
// it called another collective). What else the logs say (a
// watchdog's timeout, a rendezvous message, what their stacks wait in) is
// added as notes beside the traces' own findings, which say it better. Logs
// that show a problem never leave a job healthy.
//
// Thread-safety: plain functions.

#ifndef NCCLWATCH_DECODER_ANALYSIS_LOG_EVIDENCE_H_
#define NCCLWATCH_DECODER_ANALYSIS_LOG_EVIDENCE_H_

#include <cstdint>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/log_diagnosis.h"

namespace ncclwatch::decoder {

// Whether a finding of the logs explains what traces show (a cause the
// traces cannot see), rather than repeating it.
bool ExplainsTraces(const Finding& f);

// A traced process as the node's kernel numbers it, for the logs' pids.
struct TracedPid {
  int pid = 0;
  uint64_t pid_namespace = 0;  // the trace's; only the host's own numbers are compared
  int rank = -1;
};

// `traced`: the traces' processes. A finding of the logs that names a
// process by its pid (the OOM killer's victim) and no rank gets the rank of
// the one traced process with that pid in the host's pid namespace; none
// where a container's numbers or several hosts make it uncertain.
void AddLogEvidence(const LogDiagnosis& logs, const std::vector<TracedPid>& traced, Diagnosis* d);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_LOG_EVIDENCE_H_

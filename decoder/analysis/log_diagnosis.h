// Diagnosis from plain logs (ncclwatch explain): what a job that ran without
// the shim left in its NCCL_DEBUG logs and error output.
//
// Init failures go through the same classifier as traces (each process's
// WARN lines, versions, interface and bus id become its InitEvidence). After
// init, the logs can also show:
//   gpu_fault         an Xid (dmesg), an uncorrectable ECC error, a GPU that
//                     fell off the bus or became unavailable
//   out_of_memory     GPU (CUDA out of memory) or host (the kernel's OOM killer)
//   nvlink_fabric     NVLS / NVLink SHARP / Fabric Manager / IMEX failures
//   cuda_ipc_failure  P2P and CUDA-IPC mapping failures between local GPUs
//   cuda_error        a CUDA error in a kernel (illegal access, launch failure)
//   rank_died         the launcher's report of a rank killed or crashed
//   collective_mismatch, missing_rank, watchdog_timeout
//                     from PyTorch's watchdog lines: ranks that timed out in
//                     different collectives, ranks that never timed out, or
//                     all in the same one (or a line of it cut short, or only
//                     its stack frames)
// and every other message of the catalogue (message_catalogue.h) as its
// cause's finding: network_error (IB completion errors, async events),
// rendezvous_failure (TCPStore, c10d/etcd rendezvous: address and side),
// ddp_usage (unused parameters, a gradient ready twice, different models),
// collective_mismatch PyTorch's own check found, missing_rank for uneven
// inputs (the rank Join's skew warning names) and for a monitored barrier
// (the rank it names, not the reporter), teardown_hang, rank_died for a peer
// NCCL lost; from JAX/XLA's
// coordination service, rank_died for a task whose heartbeats stopped (or
// that restarted, or the service gone), rendezvous_failure for the
// registration barrier of jax.distributed.initialize, missing_rank for a
// barrier some tasks never reached; gpu_topology warnings for what stands
// out in an `nvidia-smi topo -m` pasted beside them (analysis/
// gpu_topology_check.h). Messages that only init forensics can
// explain (a loader's missing NCCL symbol, IB verbs) go to it as the
// process's evidence; printed under a running job, they are log_insufficient
// with the catalogue's words.
// Hardware and resource failures come first as root causes, then init and
// rendezvous failures, the framework's usage errors, deaths, mismatches, and
// last the timeouts and teardowns they cause. Where the logs cannot
// tell, a note says so and what to collect.

#ifndef NCCLWATCH_DECODER_ANALYSIS_LOG_DIAGNOSIS_H_
#define NCCLWATCH_DECODER_ANALYSIS_LOG_DIAGNOSIS_H_

#include <set>
#include <vector>

#include "findings/finding.h"
#include "knowledge/message_catalogue.h"
#include "logs/nccl_log.h"
#include "model/init_evidence.h"

namespace ncclwatch::decoder {

struct LogDiagnosis {
  std::vector<Finding> findings;  // root cause first, then consequences, then notes
  bool problem = false;
  std::vector<InitEvidence> evidence;  // per process of the log
};

// `init_elsewhere`: the processes of the log (indices into
// log.processes()) whose init evidence is judged with a job's traces
// (JobAnalysis::JoinLogEvidence): the logs' own init forensics leaves them
// out. Their evidence is in `evidence` all the same. `evidence`: the log's
// LogInitEvidence where the caller has it already; made here when empty.
LogDiagnosis DiagnoseLogs(const NcclLog& log, const std::set<int>& init_elsewhere = {},
                          std::vector<InitEvidence> evidence = {});

// Each process of the log's init evidence (its index, rank, host, pid; its
// WARN lines, versions, interface and bus id), as DiagnoseLogs judges it.
// Its times are the lines' (NcclLog::timestamps()), else their order
// numbers: a log without timestamps says what came first, not when.
std::vector<InitEvidence> LogInitEvidence(const NcclLog& log);

// The finding a message of the catalogue gives when explain sees it outside
// init forensics (kInitFailure: a cause init forensics reports).
FindingKind FindingKindOf(CatalogueCause cause);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_LOG_DIAGNOSIS_H_

// A job's live status (report/status_report.h) as metrics, in the Prometheus
// text exposition format (version 0.0.4): what node_exporter's textfile
// collector reads, and what `ncclwatch status --metrics FILE` writes.
//
// One series per rank and communicator, labelled job, host, rank (the
// global rank, "" when unknown), communicator (16 hex digits), comm_rank and
// pid:
//   ncclwatch_stuck                         1 stuck (as `status` says), else 0
//   ncclwatch_ended                         1 the process ended or left the communicator
//   ncclwatch_seconds_since_progress        since the communicator last completed work
//                                           (absent while nothing is known)
//   ncclwatch_heartbeat_age_seconds         since the watcher's last heartbeat (absent: none)
//   ncclwatch_collectives_entered_total     collectives the rank entered
//   ncclwatch_collectives_completed_total   collectives its GPU completed (absent: not tracked)
//   ncclwatch_collectives_behind            how many fewer it entered than the furthest rank
//   ncclwatch_operations_pending            operations issued and not complete
//   ncclwatch_stalls_total                  stall reports (NCCLWATCH_STALL)
//   ncclwatch_async_errors_total            asynchronous NCCL errors and CUDA errors
// one per process (job, host, rank, pid):
//   ncclwatch_trace_overwritten_slots_total ring slots the trace no longer holds
// and one per job (job):
//   ncclwatch_job_stuck                     1 when any rank is stuck
//   ncclwatch_job_processes                 traces read
//   ncclwatch_job_unreadable_traces         traces that could not be read
//
// The job label is the launcher's job id from the traces (SLURM_JOB_ID,
// TORCHELASTIC_RUN_ID, ...), else `default_job`. Label values are escaped as
// the format says (\\, \", \n), and bytes that are not UTF-8 or are control
// characters are written as \xNN, so text from a crafted trace cannot break
// the file. Two series with the same labels (two traces of one process) are
// written once, the first.
//
// Thread-safety: plain function.

#ifndef NCCLWATCH_DECODER_REPORT_STATUS_METRICS_H_
#define NCCLWATCH_DECODER_REPORT_STATUS_METRICS_H_

#include <ostream>
#include <string>

#include "report/status_report.h"

namespace ncclwatch::decoder {

void WriteStatusMetrics(const JobStatus& status, const std::string& default_job, std::ostream& out);

// `value` as a label value between the quotes.
std::string MetricLabelValue(const std::string& value);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_STATUS_METRICS_H_

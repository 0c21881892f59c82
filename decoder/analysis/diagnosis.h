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
// The earliest candidate of a job is its root cause; the others are its
// consequences. Notes (missing or unreadable traces) do not make a problem.
//
// A job is the set of processes connected by the communicators they share;
// traces of several jobs in one folder are diagnosed separately.

#ifndef NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_H_
#define NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_H_

#include <vector>

#include "analysis/finding.h"
#include "analysis/job_analysis.h"

namespace ncclwatch::decoder {

struct Diagnosis {
  std::vector<Finding> findings;  // per job: root cause, consequences, warnings; then notes
  bool problem = false;
  std::vector<std::vector<int>> jobs;  // process indices of each job
  int64_t end_ns = 0;                  // the last record of any process
};

Diagnosis Diagnose(const JobAnalysis& job);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_H_

// --on-problem CMD (ncclwatch run, ncclwatch status): acting on a verdict.
//
// When a diagnosis finds a problem, CMD runs once, with /bin/sh -c, so a
// scheduler can requeue the job, a node be drained, stacks be collected. Its
// standard input is the JSON report (`ncclwatch diagnose --json`, whose
// "schema_version" says which fields it may rely on), and its environment
// holds ncclwatch's plus:
//   NCCLWATCH_VERDICT    problem
//   NCCLWATCH_KIND       the root cause's kind (collective_mismatch, rank_died,
//                        init_failure, ...); several, comma-separated, when
//                        the traces hold several jobs
//   NCCLWATCH_RANKS      the global ranks the root cause names, comma-separated
//                        ("5", "1,3"; "" when it names none)
//   NCCLWATCH_HOSTS      the hosts of those ranks' processes, comma-separated
//   NCCLWATCH_PROCESSES  those processes as host:pid, comma-separated
//   NCCLWATCH_SUMMARY    the report's headline ("PROBLEM: collective_mismatch ...")
//   NCCLWATCH_TRACES     the trace folders diagnosed, colon-separated
// Values from the traces (host names) are the shim's record of what the OS
// said, given as they are; CMD should quote them.
//
// Thread-safety: StartOnProblem forks; call it from one thread.

#ifndef NCCLWATCH_DECODER_COMMANDS_ON_PROBLEM_H_
#define NCCLWATCH_DECODER_COMMANDS_ON_PROBLEM_H_

#include <sys/types.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/diagnose_evidence.h"

namespace ncclwatch::decoder {

// One diagnosis of trace folders (and the logs in them), kept so it can be
// written twice (for a person, and as JSON for CMD) from the same reading.
struct DiagnosedTraces : EvidenceDiagnosis {
  std::vector<std::string> paths;
};

// Reads `paths` and diagnoses them as `ncclwatch diagnose` does (what this
// host sees of the processes included). nullptr, with a one-line `error`,
// when no trace can be read.
std::unique_ptr<DiagnosedTraces> DiagnoseTraces(const std::vector<std::string>& paths,
                                                std::string* error);

// What CMD is told of the culprits: the root causes' kinds and ranks, and
// the hosts and processes of those ranks.
struct Culprits {
  std::vector<std::string> kinds;
  std::vector<int> ranks;
  std::vector<std::string> hosts;
  std::vector<std::string> processes;  // host:pid
};
Culprits CulpritsOf(const DiagnosedTraces& traces);

// Starts CMD as above; its pid, or -1 after one line on `err`.
pid_t StartOnProblem(const std::string& command, const DiagnosedTraces& traces, std::ostream& err);
// Waits for CMD and says on `err` how it ended when that was not status 0.
void FinishOnProblem(pid_t pid, std::ostream& err);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_ON_PROBLEM_H_

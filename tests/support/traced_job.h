// Test helpers for ncclwatch end to end: run a job under the preloaded shim
// into its own trace folder, run the ncclwatch command on it, and read the
// JSON diagnosis (parsed with libprotobuf's JSON support into a Struct).

#ifndef NCCLWATCH_TESTS_SUPPORT_TRACED_JOB_H_
#define NCCLWATCH_TESTS_SUPPORT_TRACED_JOB_H_

#include <google/protobuf/struct.pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/job_launcher.h"

namespace jobs {

// A folder under /tmp, removed with the object (kept, its path on standard
// error, where NCCLWATCH_TEST_KEEP=1).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ShimPath();
std::string NcclwatchPath();

// The environment of one process that runs `ncclwatch` itself as a launcher
// would be run (ncclwatch run, probe): the simulator's libraries, and
// nothing of a rank's own (the shim, the trace folder, RANK, WORLD_SIZE, the
// launcher's rendezvous) left over from the test's launcher.
std::vector<std::string> LauncherEnv();

// A job on the simulator with libncclwatch.so preloaded, tracing into `dir`.
JobSpec TracedJobSpec(int nranks, const std::string& program, const std::vector<std::string>& args,
                      const std::string& dir);

struct FindingView {
  std::string kind, role, comm, field, detail, fix;
  std::optional<int64_t> seq;
  std::vector<int> ranks;
  google::protobuf::Struct raw;
  std::string String(const std::string& key) const;  // "" when absent or not a string
  bool Bool(const std::string& key) const;           // false when absent or not a boolean
};

struct DiagnosisView {
  int exit_code = -1;
  std::string output;  // what the command printed
  bool parsed = false;
  std::string verdict;
  std::vector<FindingView> findings;
  google::protobuf::Struct raw;
  const FindingView* Root() const;  // the root cause, or nullptr
  const FindingView* First(const std::string& kind) const;
};

// Runs `ncclwatch diagnose --json` (or without --json) on `paths`.
//
// With --json, every diagnosis is also made the other way (issue 25): the
// traces among `paths` (each folder, each trace file) are summarized by
// `ncclwatch summarize`, one summary each as if each were a node, and the
// summaries, with the logs that were beside the traces, are diagnosed; a
// verdict or a finding (kind, role, communicator, number, ranks, field) that
// differs from the traces' makes the view unparsed, the differences in its
// output. A live job may move between the two diagnoses: a difference counts
// only when the traces, diagnosed again after the summaries, still say what
// they said first. NCCLWATCH_TEST_ONE_WAY=1 turns it off (to look at one
// failure quickly); NCCLWATCH_TEST_SUMMARY_WINDOW=N summarizes with
// --window N (ctest runs the failure classes again with 16).
DiagnosisView Diagnose(const std::vector<std::string>& paths, bool json = true);
// How `b` differs from `a`: its verdict, exit code and findings (kind, role,
// communicator, number, ranks, field), one line per difference; empty when
// they are the same. A finding of `b` that says a summary kept fewer calls
// than the traces hold (summary_kept) may be dated later: its number is
// not compared.
std::vector<std::string> Differences(const DiagnosisView& a, const DiagnosisView& b);
// Runs `ncclwatch explain --json` on log files or folders.
DiagnosisView Explain(const std::vector<std::string>& paths, bool json = true);
// Either, or another command, with the same output contract.
DiagnosisView RunNcclwatch(const std::string& command, const std::vector<std::string>& paths,
                           bool json);

// The identity (16 hex digits) of a communicator in a trace folder: the
// `index`-th one the process of global rank `rank` created with `call`
// ("ncclCommInitRank", "ncclCommSplit", ...).
std::string CommId(const std::string& dir, int rank, const std::string& call, int index = 0);
// The trace file of the process of global rank `rank`.
std::string TraceOf(const std::string& dir, int rank);

}  // namespace jobs

#endif  // NCCLWATCH_TESTS_SUPPORT_TRACED_JOB_H_

// The report of a job's evidence as one typed value: what diagnose, explain,
// run and --on-problem print. MakeReport builds it once from the diagnosis;
// WriteJson and WriteHuman render it, the JSON document (report.schema.json,
// written through JsonWriter) and the screen from the same facts:
//
//   EvidenceDiagnosis --MakeReport--> Report --WriteJson---> {"ncclwatch": ..., "verdict": ...}
//                                            \--WriteHuman--> PROBLEM: collective_mismatch ...
//
// A Report holds no reference into the evidence it was made from: the call
// sites its findings name are named (from each process's modules) when it
// is made, so it can be kept, built by hand in a test, or rendered twice.
//
// Thread-safety: MakeReport reads symbol tables through a cache that is not
// thread-safe (report/call_site.h); a Report, once made, is plain data.

#ifndef NCCLWATCH_DECODER_REPORT_REPORT_H_
#define NCCLWATCH_DECODER_REPORT_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "analysis/diagnose_evidence.h"
#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "findings/finding.h"
#include "logs/nccl_log.h"
#include "model/last_call.h"
#include "report/finding_text.h"

namespace ncclwatch::decoder {

// The JSON report's schema version ("schema_version"): raised when a field
// changes meaning or goes away (adding a field does not raise it), so a
// program reading the report (ncclwatch run --on-problem CMD) can tell.
// 2: the verdict "running", for a live job with no problem (1 said "healthy").
inline constexpr int kJsonSchemaVersion = 2;

// Files that could not be read: (path, why).
using UnreadableFiles = std::vector<std::pair<std::string, std::string>>;

// "healthy" (warnings and notes allowed), "running" (live, nothing certain
// or stuck yet: never healthy), "problem".
enum class Verdict { kHealthy, kRunning, kProblem };

// A process whose trace was read (an object of diagnose's "processes").
struct TracedProcess {
  std::string path;
  std::string host;
  uint32_t pid = 0;
  int rank = -1;  // -1: no rank (a launcher's agent, a helper that imported torch)
  std::string rank_source;
  int32_t nccl_version = 0;  // as ncclGetVersion reported it; 0 unknown
  Fate end;
  LastCall last;
  int64_t last_beat_ns = 0;  // its last heartbeat (realtime); 0: none
  uint64_t records = 0;
  uint64_t torn_slots = 0;  // slots torn, and records that did not parse
  uint64_t overwritten_slots = 0;
  uint64_t unwritten_slots = 0;
};

// What the traces showed: their processes, and the job around them.
struct TracesSeen {
  std::vector<TracedProcess> processes;
  size_t hosts = 0;
  size_t communicators = 0;
  size_t jobs = 0;       // separate jobs among the processes
  bool tracked = false;  // every process tracked its GPU completion
  int64_t end_ns = 0;    // the last record of any process (realtime)
};

// A process the logs showed, where no trace was read (explain's face).
struct LoggedProcess {
  enum class Init { kUnknown, kStarted, kComplete };
  std::string source;  // the first file it appears in
  std::string host;    // "": its lines name none
  int pid = -1;
  int rank = -1;
  int32_t nccl_version = 0;  // 0 unknown
  std::string bus_id;        // "" unknown
  Init init = Init::kUnknown;
  size_t lines = 0;
};

struct LogsSeen {
  std::vector<LoggedProcess> processes;
  size_t files = 0;
};

struct Report {
  Verdict verdict = Verdict::kHealthy;
  // Per job its root cause, consequences and warnings; then the notes.
  std::vector<Finding> findings;
  std::vector<PendingOperation> pending;  // a running job's, longest first
  // The traced processes (diagnose's face), or, where the verdict rests on
  // logs alone, the processes the logs showed (explain's).
  std::variant<TracesSeen, LogsSeen> seen;
  // Every call site the findings name: (process index, return address) ->
  // "libtorch_cuda.so+0x1a2b3c (c10d::ProcessGroupNCCL::allreduce)".
  std::map<std::pair<int, uint64_t>, std::string> call_sites;
  UnreadableFiles traces_not_read;  // named by a finding too; listed in the JSON
  UnreadableFiles logs_not_read;

  bool traced() const { return std::holds_alternative<TracesSeen>(seen); }
  // Names a call site from call_sites; one not there is "an unknown call
  // site". Valid while the report lives.
  CallSiteNamer Sites() const;
};

// The report of a job's evidence: traced, diagnose's face; else explain's.
Report MakeReport(const EvidenceDiagnosis& e);
// From traces (`logs_not_read`: logs given beside them that could not be read).
Report MakeTracedReport(const JobAnalysis& job, const Diagnosis& d,
                        const UnreadableFiles& logs_not_read = {});
// From logs alone (`logs_not_read`: every file not read, traces among them).
Report MakeLoggedReport(const NcclLog& log, const Diagnosis& d,
                        const UnreadableFiles& logs_not_read = {});

// One JSON object on one line of its own: report.schema.json's document.
void WriteJson(const Report& r, std::ostream& out);
// One screen for a person: the headline (report/finding_text.h), the root
// cause with each group of ranks and the fix, then consequences, what each
// rank did last, notes, and what could not be read. The text (from traces
// and logs, any byte) is escaped for a terminal.
void WriteHuman(const Report& r, std::ostream& out);

// The report of a job's evidence, as JSON or for a person.
void WriteReport(const EvidenceDiagnosis& e, bool json, std::ostream& out);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_REPORT_H_

// Findings in words: the one place that turns a Finding's facts into the
// sentences a person reads and the JSON contract carries.
//
//   RenderFinding   detail, fix and each rank group's `doing`, from the payload
//   Headline        the first line of every human report, root cause first:
//                     HEALTHY
//                     HEALTHY, 1 warning, 2 notes
//                     PROBLEM: collective_mismatch on communicator 3fa9c1 #3 (rank 5)
//                     PROBLEM: init_failure (bootstrap, ECONNREFUSED) (ranks 1-7)
//   ExitCode        0 healthy (warnings and notes allowed), 1 a problem
//
// Usage:
//   FindingText t = RenderFinding(f, sites);
//   out << t.detail << "\n  Fix: " << t.fix;
//
// Thread-safety: the functions are pure; a CallSiteNamer that reads symbol
// tables (report/call_site.h) is not thread-safe, and neither is rendering
// with it.

#ifndef NCCLWATCH_DECODER_REPORT_FINDING_TEXT_H_
#define NCCLWATCH_DECODER_REPORT_FINDING_TEXT_H_

#include <functional>
#include <string>
#include <vector>

#include "findings/finding.h"

namespace ncclwatch::decoder {

// Names a call site; for diagnose, from the process's module map
// (report/call_site.h). NoCallSites() names every one "an unknown call site".
using CallSiteNamer = std::function<std::string(const CallSiteRef&)>;
CallSiteNamer NoCallSites();

// The JSON names: "collective_mismatch", "root_cause", ...
const char* KindName(FindingKind kind);
const char* RoleName(FindingRole role);
// "op", "count", "datatype", "redop", "root", "order"; "" for kNone.
const char* FieldName(MismatchField field);

// Ranks that did the same thing, and what.
struct RankGroup {
  std::vector<int> ranks;
  std::string doing;
};

// A finding in words.
struct FindingText {
  std::string title;   // "collective mismatch", "NCCL initialisation failed: shared memory
                       // (/dev/shm) (ENOSPC)"
  std::string detail;  // the finding in one or two sentences, no final period
  std::string fix;
  std::vector<RankGroup> groups;
};

FindingText RenderFinding(const Finding& f, const CallSiteNamer& sites);

// What a missing rank did instead: "exited (code 0)", "died of SIGSEGV", ...
std::string DidInstead(const MissingRankFacts& facts, const CallSiteNamer& sites);

// The first line of a human report: see above. `problem` is the verdict.
std::string Headline(const std::vector<Finding>& findings, bool problem);
// The same for a live job that is running (no problem): "RUNNING", or
// "RUNNING: AllReduce #12 on communicator 3fa9c1 pending 6.1 s (rank 4 not
// entered)" for the operation pending longest.
std::string RunningHeadline(const std::vector<Finding>& findings,
                            const std::vector<PendingOperation>& pending);
// One pending operation in words, as the headline and the report list it.
std::string PendingText(const PendingOperation& p);

// The exit status for a verdict: 0 healthy, 1 a problem (2, input that cannot
// be used, is the commands' own).
int ExitCode(bool problem);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_FINDING_TEXT_H_

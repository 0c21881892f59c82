// The faces of a diagnosis: one screen for a person, and the JSON contract
// for programs (documented in README.md, "JSON output"), for `diagnose`
// (traces) and `explain` (plain NCCL logs) alike; WriteReport picks the face
// of a job's evidence. Every human report opens
// with the headline (report/finding_text.h); every JSON report goes through
// one envelope, WriteJsonEnvelope, written with JsonWriter (report/json_writer.h).

#ifndef NCCLWATCH_DECODER_REPORT_REPORTS_H_
#define NCCLWATCH_DECODER_REPORT_REPORTS_H_

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/diagnose_evidence.h"
#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "logs/nccl_log.h"
#include "report/finding_text.h"
#include "report/json_writer.h"

namespace ncclwatch::decoder {

// The JSON report's schema version ("schema_version"): raised when a field
// changes meaning or goes away (adding a field does not raise it), so a
// program reading the report (ncclwatch run --on-problem CMD) can tell.
// 2: the verdict "running", for a live job with no problem (1 said "healthy").
inline constexpr int kJsonSchemaVersion = 2;

// Files that could not be read: (path, why).
using UnreadableFiles = std::vector<std::pair<std::string, std::string>>;

// The report of a job's evidence (analysis/diagnose_evidence.h): traced,
// the processes its traces show; from logs alone, those the logs show.
// The human report's text (from traces and logs, any byte) is escaped for
// a terminal.
void WriteReport(const EvidenceDiagnosis& e, bool json, std::ostream& out);

// From traces (`logs_not_read`: logs given beside them that could not be read).
void WriteHumanReport(const JobAnalysis& job, const Diagnosis& d, std::ostream& out,
                      const UnreadableFiles& logs_not_read = {});
void WriteJsonReport(const JobAnalysis& job, const Diagnosis& d, std::ostream& out,
                     const UnreadableFiles& logs_not_read = {});

// From logs alone.
void WriteExplainHumanReport(const NcclLog& log, const Diagnosis& d,
                             const UnreadableFiles& unreadable, std::ostream& out);
void WriteExplainJsonReport(const NcclLog& log, const Diagnosis& d,
                            const UnreadableFiles& unreadable, std::ostream& out);

// Writes a command's own process objects, one value each, into the open
// "processes" array of the envelope.
using JsonProcesses = std::function<void(JsonWriter&)>;

// The parts both share: each root cause with its groups and fix, then
// consequences and warnings (human); the notes; one finding as a JSON object
// (the contract's fields, then its kind's facts); and the JSON envelope around
// the findings and the commands' own process objects.
void WriteFindingsHuman(const std::vector<Finding>& findings, const CallSiteNamer& sites,
                        std::ostream& out);
void WriteNotesHuman(const std::vector<Finding>& findings, const CallSiteNamer& sites,
                     std::ostream& out);
// Files not read, the first few each on a line of its own ("Not read: ...").
void WriteNotReadHuman(const UnreadableFiles& unreadable, std::ostream& out);
void WriteFindingJson(const Finding& f, const CallSiteNamer& sites, JsonWriter& w);
// `running` (a live job with no problem): the verdict is "running", and its
// pending operations follow the findings.
void WriteJsonEnvelope(bool problem, const std::vector<Finding>& findings,
                       const CallSiteNamer& sites, const JsonProcesses& processes,
                       const UnreadableFiles& unreadable, std::ostream& out,
                       const std::vector<PendingOperation>* running = nullptr);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_REPORTS_H_

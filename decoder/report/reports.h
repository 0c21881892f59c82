// The two faces of a diagnosis: one screen for a person, and the JSON
// contract for programs (documented in README.md, "JSON output").

#ifndef NCCLWATCH_DECODER_REPORT_REPORTS_H_
#define NCCLWATCH_DECODER_REPORT_REPORTS_H_

#include <ostream>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"

namespace ncclwatch::decoder {

void WriteHumanReport(const JobAnalysis& job, const Diagnosis& d, std::ostream& out);
void WriteJsonReport(const JobAnalysis& job, const Diagnosis& d, std::ostream& out);

// The parts both `diagnose` and `explain` print: the verdict with each root
// cause, its groups and fix, then consequences and warnings (human); and one
// finding as a JSON object (the contract's fields, then its extras).
void WriteFindingsHuman(const std::vector<Finding>& findings, bool problem, std::ostream& out);
void WriteNotesHuman(const std::vector<Finding>& findings, std::ostream& out);
void WriteFindingJson(const Finding& f, std::ostream& out);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_REPORTS_H_

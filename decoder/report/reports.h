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

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_REPORTS_H_

// explain's findings in words (report/log_text.cc): the detail, fix and rank
// groups of what analysis/log_diagnosis.cc saw in the log lines.

#ifndef NCCLWATCH_DECODER_REPORT_LOG_TEXT_H_
#define NCCLWATCH_DECODER_REPORT_LOG_TEXT_H_

#include "findings/finding.h"
#include "report/finding_text.h"

namespace ncclwatch::decoder {

void RenderLogFinding(const Finding& f, const LogFacts& facts, FindingText* text);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_LOG_TEXT_H_

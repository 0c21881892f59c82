// Init forensics in words (report/init_text.cc): the detail, fix and rank
// group of an init_failure, from the facts analysis/init_failure.cc measured.

#ifndef NCCLWATCH_DECODER_REPORT_INIT_TEXT_H_
#define NCCLWATCH_DECODER_REPORT_INIT_TEXT_H_

#include "findings/finding.h"
#include "report/finding_text.h"

namespace ncclwatch::decoder {

void RenderInitFailure(const Finding& f, const InitFailureFacts& facts, FindingText* text);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_INIT_TEXT_H_

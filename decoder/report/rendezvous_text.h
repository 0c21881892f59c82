// rendezvous_failure from traces (analysis/rendezvous.h) in words: the
// detail, the fix and the rank groups of the human report and the JSON
// contract alike, and the cause's JSON name.

#ifndef NCCLWATCH_DECODER_REPORT_RENDEZVOUS_TEXT_H_
#define NCCLWATCH_DECODER_REPORT_RENDEZVOUS_TEXT_H_

#include "findings/finding.h"
#include "report/finding_text.h"
#include "report/json_writer.h"

namespace ncclwatch::decoder {

// "settings_differ", "port_in_use", "refused", "unreachable", "ranks_missing".
const char* RendezvousCauseName(RendezvousFacts::Cause cause);

void RenderRendezvous(const Finding& f, const RendezvousFacts& x, FindingText* t);

// The facts after the common fields of the JSON finding: its members, into
// the finding's open object.
void WriteRendezvousJson(const RendezvousFacts& x, JsonWriter& w);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_RENDEZVOUS_TEXT_H_

// The pieces a report's two renderings share (report/report.h): findings
// for a person, each root cause with its groups and fix, then consequences
// and warnings, the notes, and the files not read; and one finding as a JSON
// object, written with JsonWriter (report/json_writer.h).

#ifndef NCCLWATCH_DECODER_REPORT_REPORT_PARTS_H_
#define NCCLWATCH_DECODER_REPORT_REPORT_PARTS_H_

#include <ostream>
#include <vector>

#include "findings/finding.h"
#include "report/finding_text.h"
#include "report/json_writer.h"
#include "report/report.h"

namespace ncclwatch::decoder {

void WriteFindingsHuman(const std::vector<Finding>& findings, const CallSiteNamer& sites,
                        std::ostream& out);
void WriteNotesHuman(const std::vector<Finding>& findings, const CallSiteNamer& sites,
                     std::ostream& out);
// Files not read, the first few each on a line of its own ("Not read: ...").
void WriteNotReadHuman(const UnreadableFiles& unreadable, std::ostream& out);
// One finding: the contract's fields, then its kind's facts.
void WriteFindingJson(const Finding& f, const CallSiteNamer& sites, JsonWriter& w);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_REPORT_PARTS_H_

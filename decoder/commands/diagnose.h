// ncclwatch diagnose [--json] PATH...: every trace under the given folders
// (recursively, files named *.trace) and files, one job or several.

#ifndef NCCLWATCH_DECODER_COMMANDS_DIAGNOSE_H_
#define NCCLWATCH_DECODER_COMMANDS_DIAGNOSE_H_

#include <ostream>
#include <string>
#include <vector>

namespace ncclwatch::decoder {

// Returns 0 when healthy, 1 when a problem was found, 2 when the input is
// unusable (one line on `err` says why).
int RunDiagnose(const std::vector<std::string>& paths, bool json, std::ostream& out,
                std::ostream& err);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_DIAGNOSE_H_

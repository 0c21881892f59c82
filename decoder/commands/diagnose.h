// ncclwatch diagnose [--json] PATH...: every trace under the given folders
// (recursively, files named *.trace) and files, one job or several; with
// the logs given beside them (files named that hold no trace, and *.log,
// *.out, *.err in the folders: a job's output, NCCL's logs, a node's dmesg)
// judged with them as one verdict (analysis/log_evidence.h). Logs alone
// are explained as `ncclwatch explain` does.

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

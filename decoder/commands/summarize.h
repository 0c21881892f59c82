// ncclwatch summarize DIR... -o FILE [--window N] [--host NAME]: one node's
// traces, reduced to one bounded summary file (summary/summary_format.h)
// that diagnose, status and timeline read beside traces. Run on each node
// by the cluster's own launcher; the merge is `ncclwatch diagnose` over the
// summaries.

#ifndef NCCLWATCH_DECODER_COMMANDS_SUMMARIZE_H_
#define NCCLWATCH_DECODER_COMMANDS_SUMMARIZE_H_

#include <ostream>
#include <string>
#include <vector>

namespace ncclwatch::decoder {

// `args`: the command line after "summarize". Returns 0 when the summary was
// written, 2 on bad usage or input, or when it cannot be written (one line
// on `err` says why). `out` gets one line: what was summarized.
int RunSummarize(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The command's usage.
extern const char kSummarizeUsage[];

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_SUMMARIZE_H_

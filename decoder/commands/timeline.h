// ncclwatch timeline PATH... -o FILE: every trace under the given folders and
// files as one Perfetto trace (report/timeline.h), with the diagnosis's root
// cause marked. Open FILE at https://ui.perfetto.dev ("Open trace file").

#ifndef NCCLWATCH_DECODER_COMMANDS_TIMELINE_H_
#define NCCLWATCH_DECODER_COMMANDS_TIMELINE_H_

#include <ostream>
#include <string>
#include <vector>

namespace ncclwatch::decoder {

// Returns 0 when the file was written, 2 when the input is unusable or the
// file cannot be written (one line on `err` says why). `out` gets a summary.
int RunTimeline(const std::vector<std::string>& paths, const std::string& output, std::ostream& out,
                std::ostream& err);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_TIMELINE_H_

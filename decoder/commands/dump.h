// ncclwatch dump [--json] FILE: every record of one trace, one per line.

#ifndef NCCLWATCH_DECODER_COMMANDS_DUMP_H_
#define NCCLWATCH_DECODER_COMMANDS_DUMP_H_

#include <ostream>
#include <string>

namespace ncclwatch::decoder {

// Writes the records of `path` to `out`; returns the process exit code
// (0, or 2 with a one-line reason on `err` when the file is unusable).
int RunDump(const std::string& path, bool json, std::ostream& out, std::ostream& err);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_DUMP_H_

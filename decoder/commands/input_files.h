// The files a command reads: the paths given, each a file or a folder
// searched recursively for the files `wanted` accepts, sorted, each once.

#ifndef NCCLWATCH_DECODER_COMMANDS_INPUT_FILES_H_
#define NCCLWATCH_DECODER_COMMANDS_INPUT_FILES_H_

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ncclwatch::decoder {

// NotFound, with "PATH: no such file or folder", for a path that is not there;
// InvalidArgument, with a one-line reason, for one that is neither a regular
// file nor a folder (a FIFO, a device, a socket). Within folders, only
// regular files are taken.
absl::StatusOr<std::vector<std::string>> InputFiles(
    const std::vector<std::string>& paths,
    const std::function<bool(const std::filesystem::path&)>& wanted);

// Whether a file is named as a trace (*.trace).
bool IsTraceFile(const std::filesystem::path& p);

// The trace files under `paths` (InputFiles with IsTraceFile), or
// NotFound "no trace files (*.trace) under PATH" when there are none.
absl::StatusOr<std::vector<std::string>> TraceFiles(const std::vector<std::string>& paths);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_INPUT_FILES_H_

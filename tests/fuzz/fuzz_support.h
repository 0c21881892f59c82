// What the fuzz targets share: a scratch folder that is gone when they are
// done, files written into it, and the one call that loads a process trace
// (so that a rename of the loader is a one-line change here).
//
// A fuzz target must leave nothing behind and must not grow with the number
// of runs: every helper here cleans up after itself.

#ifndef NCCLWATCH_TESTS_FUZZ_FUZZ_SUPPORT_H_
#define NCCLWATCH_TESTS_FUZZ_FUZZ_SUPPORT_H_

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "model/process_trace.h"

namespace ncclwatch::fuzz {

// A fresh folder under $TMPDIR (or /tmp), removed with all it holds on
// destruction.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ncclwatch-fuzz.XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
    if (path_.empty()) abort();  // no scratch space: nothing this target can do
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes `size` bytes as file `name` in the folder; returns its path.
  std::string Write(const std::string& name, const uint8_t* data, size_t size) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return file;
  }

 private:
  std::string path_;
};

// The decoder's loader of one process's trace.
inline absl::StatusOr<decoder::ProcessTrace> LoadTrace(const std::string& path) {
  return decoder::LoadProcessTrace(path);
}

}  // namespace ncclwatch::fuzz

#endif  // NCCLWATCH_TESTS_FUZZ_FUZZ_SUPPORT_H_

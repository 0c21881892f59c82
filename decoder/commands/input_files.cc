#include "commands/input_files.h"

#include <algorithm>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace ncclwatch::decoder {

namespace fs = std::filesystem;

namespace {

const char* Kind(fs::file_type t) {
  switch (t) {
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a file";
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> InputFiles(
    const std::vector<std::string>& paths, const std::function<bool(const fs::path&)>& wanted) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st))
      return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
    // Found by stat, never opened here: a FIFO cannot block us, a device
    // (/dev/zero) is never read.
    if (!fs::is_directory(st) && !fs::is_regular_file(st)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a regular file or a folder (", Kind(st.type()), ")"));
    }
    if (!fs::is_directory(st)) {
      files.push_back(path);
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(
             path, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && wanted(it->path())) files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

bool IsTraceFile(const fs::path& p) { return p.extension() == ".trace"; }

absl::StatusOr<std::vector<std::string>> TraceFiles(const std::vector<std::string>& paths) {
  absl::StatusOr<std::vector<std::string>> files = InputFiles(paths, IsTraceFile);
  if (files.ok() && files->empty()) {
    return absl::NotFoundError(absl::StrCat("no trace files (*.trace) under ", paths.front(),
                                            paths.size() > 1 ? " and the rest" : ""));
  }
  return files;
}

}  // namespace ncclwatch::decoder

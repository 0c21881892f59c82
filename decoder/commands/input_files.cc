#include "commands/input_files.h"

#include <algorithm>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace ncclwatch::decoder {

namespace fs = std::filesystem;

absl::StatusOr<std::vector<std::string>> InputFiles(const std::vector<std::string>& paths,
                                                    const std::function<bool(const fs::path&)>& wanted) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
    if (!fs::is_directory(st)) {
      files.push_back(path);
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && wanted(it->path())) files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

}  // namespace ncclwatch::decoder

#include "commands/input_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "ncclwatch/ring_format.h"
#include "summary/summary_reader.h"
#include "util/pseudo_file_system.h"

namespace ncclwatch::decoder {

namespace fs = std::filesystem;

namespace {

const char* Kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

std::string Join(const std::string& dir, const char* name) {
  return !dir.empty() && dir.back() == '/' ? absl::StrCat(dir, name) : absl::StrCat(dir, "/", name);
}

// The path a link leads to, with no link left in it; "" when it cannot be told.
std::string Resolved(const std::string& path) {
  std::unique_ptr<char, decltype(&free)> real(realpath(path.c_str(), nullptr), &free);
  return real ? std::string(real.get()) : std::string();
}

// One walk below the paths given: what it takes, what it skips, its bounds.
class Walk {
 public:
  Walk(const std::function<bool(const fs::path&)>& wanted, std::vector<std::string>* files,
       std::vector<SkippedInput>* skipped, const WalkBounds& bounds)
      : wanted_(wanted), files_(files), skipped_(skipped), bounds_(bounds) {}

  // The folder open at `fd` (taken over), named `dir`, `depth` folders below
  // `root`, the path given. False when the walk passed its bounds (status()).
  bool Folder(int fd, const std::string& dir, int depth, const std::string& root) {
    DIR* d = fdopendir(fd);
    if (d == nullptr) {
      Skip(dir, absl::StrCat("cannot be read: ", std::strerror(errno)), true);
      close(fd);
      return true;
    }
    struct Closer {
      DIR* d;
      ~Closer() { closedir(d); }
    } closer{d};
    for (;;) {
      errno = 0;
      const dirent* e = readdir(d);
      if (e == nullptr) {
        if (errno != 0)
          Skip(dir, absl::StrCat("could not be read to its end: ", std::strerror(errno)), true);
        return true;
      }
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      if (++entries_ > bounds_.entries) {
        status_ = absl::InvalidArgumentError(
            absl::StrCat("more than ", bounds_.entries, " entries under ", root,
                         ", the most ncclwatch looks at; name the folder that holds the files"));
        return false;
      }
      const std::string path = Join(dir, e->d_name);
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
      if (S_ISREG(st.st_mode)) {
        if (wanted_(path)) files_->push_back(path);
      } else if (S_ISLNK(st.st_mode)) {
        Link(dirfd(d), e->d_name, path, st);
      } else if (S_ISDIR(st.st_mode)) {
        if (depth + 1 > bounds_.depth) {
          Skip(path, absl::StrCat("more than ", bounds_.depth, " folders deep: not searched"),
               true);
          continue;
        }
        const int sub =
            openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
          Skip(path, absl::StrCat("cannot be read: ", std::strerror(errno)), true);
          continue;
        }
        if (const char* pseudo = PseudoFileSystem(sub)) {
          close(sub);
          Skip(path, absl::StrCat("on ", pseudo, ", a pseudo file system: not searched"), false);
          continue;
        }
        if (!Folder(sub, path, depth + 1, root)) return false;
      }
      // FIFOs, devices and sockets inside a folder are never read.
    }
  }

  const absl::Status& status() const { return status_; }

 private:
  void Skip(const std::string& path, const std::string& why, bool may_hold_input) {
    if (skipped_ != nullptr)
      skipped_->push_back({path, absl::StrCat(path, ": ", why), may_hold_input});
  }

  // A symbolic link met inside a folder (`st`: the link itself).
  void Link(int dir_fd, const char* name, const std::string& path, const struct stat& st) {
    struct stat target;
    if (fstatat(dir_fd, name, &target, 0) != 0) {
      if (wanted_(path)) Skip(path, "a symbolic link that leads nowhere", false);
      return;
    }
    if (S_ISDIR(target.st_mode)) {
      Skip(path, "a symbolic link to a folder: not followed", false);
      return;
    }
    if (!S_ISREG(target.st_mode) || !wanted_(path)) return;
    // The caller's own link, or one whose owner owns the file it leads to.
    if (st.st_uid != geteuid() && st.st_uid != target.st_uid) {
      Skip(path,
           absl::StrCat("a symbolic link of uid ", st.st_uid, " to a file of uid ", target.st_uid,
                        ": not followed (name it on the command line to read it)"),
           true);
      return;
    }
    const std::string real = Resolved(path);
    if (real.empty()) {
      Skip(path, absl::StrCat("a symbolic link that cannot be resolved: ", std::strerror(errno)),
           true);
      return;
    }
    files_->push_back(real);
  }

  const std::function<bool(const fs::path&)>& wanted_;
  std::vector<std::string>* files_;
  std::vector<SkippedInput>* skipped_;
  const WalkBounds bounds_;
  size_t entries_ = 0;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> InputFiles(
    const std::vector<std::string>& paths, const std::function<bool(const fs::path&)>& wanted,
    std::vector<SkippedInput>* skipped, const WalkBounds& bounds) {
  std::vector<std::string> files;
  Walk walk(wanted, &files, skipped, bounds);
  for (const std::string& path : paths) {
    // Found by stat, never opened here unless a file or a folder: a FIFO
    // cannot block us, a device (/dev/zero) is never read.
    struct stat st;
    if (stat(path.c_str(), &st) != 0)
      return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a regular file or a folder (", Kind(st.st_mode), ")"));
    }
    const int fd = open(
        path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
    if (fd < 0) {
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot be read: ", std::strerror(errno)));
    }
    if (const char* pseudo = PseudoFileSystem(fd)) {
      close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": on ", pseudo, ", a pseudo file system, not read"));
    }
    if (S_ISDIR(st.st_mode)) {
      if (!walk.Folder(fd, path, 0, path)) return walk.status();
      continue;
    }
    close(fd);
    // A link named on the command line is followed: read by where it leads.
    struct stat link;
    if (lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      const std::string real = Resolved(path);
      files.push_back(real.empty() ? path : real);
    } else {
      files.push_back(path);
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

bool IsTraceFile(const fs::path& p) { return p.extension() == ".trace"; }

bool IsTraceOrSummary(const fs::path& p) { return IsTraceFile(p) || IsSummaryFile(p.string()); }

bool IsLogFile(const fs::path& p) {
  const fs::path e = p.extension();
  return e == ".log" || e == ".out" || e == ".err";
}

namespace {

// Whether a regular file opens with a trace's magic (read without
// blocking); `unopened`, when it cannot be opened.
bool OpensAsTrace(const std::string& path, bool unopened) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return unopened;
  char magic[8];
  const bool trace = pread(fd, magic, sizeof(magic), 0) == static_cast<ssize_t>(sizeof(magic)) &&
                     std::memcmp(magic, NCCLWATCH_RING_MAGIC, sizeof(magic)) == 0;
  close(fd);
  return trace;
}

}  // namespace

bool HoldsTraces(const fs::path& p, bool unopened) {
  return IsTraceFile(p) || OpensAsTrace(p.string(), unopened) || IsSummaryFile(p.string());
}

absl::Status SplitLogs(const std::vector<std::string>& paths, std::vector<std::string>* trace_paths,
                       std::vector<std::string>* logs) {
  std::vector<std::string> folders, named;
  for (const std::string& path : paths) {
    struct stat st;
    const bool found = stat(path.c_str(), &st) == 0;
    // One that cannot be opened goes to the trace reader, to say why.
    if (found && S_ISREG(st.st_mode) && !HoldsTraces(path, true)) {
      named.push_back(path);
      continue;
    }
    if (found && S_ISDIR(st.st_mode)) folders.push_back(path);
    trace_paths->push_back(path);
  }
  // Named logs as explain takes them (a link followed, one on a pseudo file
  // system refused, each once); then those in the folders.
  absl::StatusOr<std::vector<std::string>> given =
      InputFiles(named, [](const fs::path&) { return true; });
  if (!given.ok()) return given.status();
  std::vector<std::string> found = *std::move(given);
  if (!folders.empty()) {
    std::vector<SkippedInput> ignored;  // the search for traces reports what it passes over
    absl::StatusOr<std::vector<std::string>> inside = InputFiles(folders, IsLogFile, &ignored);
    if (!inside.ok()) return inside.status();
    found.insert(found.end(), inside->begin(), inside->end());
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  logs->insert(logs->end(), found.begin(), found.end());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> TraceFiles(const std::vector<std::string>& paths,
                                                    std::vector<SkippedInput>* skipped) {
  std::vector<SkippedInput> own;
  if (skipped == nullptr) skipped = &own;
  const size_t before = skipped->size();
  absl::StatusOr<std::vector<std::string>> files = InputFiles(paths, IsTraceOrSummary, skipped);
  if (files.ok() && files->empty()) {
    std::string not_read;
    size_t n = 0;
    for (size_t i = before; i < skipped->size(); ++i) {
      if (!(*skipped)[i].may_hold_input) continue;
      if (n++ == 0) not_read = (*skipped)[i].why;
    }
    return absl::NotFoundError(absl::StrCat(
        "no trace files (*.trace) under ", paths.front(), paths.size() > 1 ? " and the rest" : "",
        n == 0 ? "" : absl::StrCat(" that could be read; ", n, " not read, first: ", not_read)));
  }
  return files;
}

std::vector<UnreadableTrace> NotRead(const std::vector<SkippedInput>& skipped) {
  std::vector<UnreadableTrace> out;
  out.reserve(skipped.size());
  for (const SkippedInput& s : skipped) out.push_back({s.path, s.why, s.may_hold_input});
  return out;
}

}  // namespace ncclwatch::decoder

#include "commands/output_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <streambuf>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ncclwatch::decoder {

// A stream buffer over a file descriptor; the first failed write is kept.
class OutputFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd), data_(64 * 1024) {
    setp(data_.data(), data_.data() + data_.size());
  }

  // 0, or the errno of the first write that failed.
  int Flush() {
    const char* p = pbase();
    while (error_ == 0 && p < pptr()) {
      const ssize_t n = write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        break;
      }
      p += n;
    }
    setp(data_.data(), data_.data() + data_.size());
    return error_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (Flush() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return Flush() == 0 ? 0 : -1; }

 private:
  int fd_;
  std::vector<char> data_;
  int error_ = 0;
};

namespace {

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

OutputFile::OutputFile() = default;

OutputFile::~OutputFile() {
  stream_.reset();
  buffer_.reset();
  if (fd_ >= 0) close(fd_);
  if (!temp_.empty()) unlink(temp_.c_str());
}

absl::Status OutputFile::Open(const std::string& path, const std::vector<std::string>& inputs) {
  path_ = path;
  struct stat target;
  const bool exists = lstat(path.c_str(), &target) == 0;
  if (exists) {
    if (S_ISDIR(target.st_mode))
      return absl::InvalidArgumentError(absl::StrCat(path, " is a folder; name a file to write"));
    // The entry itself, or what a link there leads to: neither may be an input.
    struct stat followed;
    const bool has_followed = stat(path.c_str(), &followed) == 0;
    for (const std::string& input : inputs) {
      struct stat in;
      if (stat(input.c_str(), &in) != 0) continue;
      if (SameFile(in, target) || (has_followed && SameFile(in, followed))) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, " is one of the files read (", input, "); name another file"));
      }
    }
  }
  // The temporary file: beside the target (so the rename stays within one
  // file system), hidden, random, created fresh.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string temp = absl::StrCat(dir, ".", base, ".XXXXXX.partial");
  const int fd = mkostemps(temp.data(), 8, O_CLOEXEC);  // O_CREAT|O_EXCL, mode 0600
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", path));
  fd_ = fd;
  temp_ = temp;
  // The mode a new file gets here (0666 less the umask), not mkstemp's 0600.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd_, 0666 & ~mask);
  buffer_ = std::make_unique<Buffer>(fd_);
  stream_ = std::make_unique<std::ostream>(buffer_.get());
  return absl::OkStatus();
}

std::ostream& OutputFile::stream() { return *stream_; }

absl::Status OutputFile::Commit() {
  int error = buffer_->Flush();
  if (error == 0 && close(fd_) != 0) error = errno;
  fd_ = -1;
  if (error == 0 && rename(temp_.c_str(), path_.c_str()) != 0) error = errno;
  if (error != 0) {
    unlink(temp_.c_str());
    temp_.clear();
    return absl::ErrnoToStatus(error, absl::StrCat("cannot write ", path_));
  }
  temp_.clear();
  return absl::OkStatus();
}

}  // namespace ncclwatch::decoder

#include "run/output_copy.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ncclwatch::decoder {
namespace {

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {  // a non-blocking destination: wait until it takes more
      pollfd p = {fd, POLLOUT, 0};
      poll(&p, 1, 100);
      continue;
    }
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

OutputCopy::~OutputCopy() {
  if (pump_.joinable()) Finish();
  for (Stream& s : streams_) {
    if (s.read_fd >= 0) close(s.read_fd);
    if (s.write_fd >= 0) close(s.write_fd);
  }
  if (file_ >= 0) close(file_);
}

bool OutputCopy::Start(const std::string& path, std::string* why) {
  struct stat st[2];
  bool copied[2];
  for (int fd = 1; fd <= 2; ++fd) {
    copied[fd - 1] = fstat(fd, &st[fd - 1]) == 0 && !isatty(fd);
  }
  if (!copied[0] && !copied[1]) {
    *why = "the job's output goes to a terminal: not kept (redirect it to keep a copy)";
    return false;
  }
  // stdout and stderr one file (2>&1, a batch system's output file): one pipe keeps their order.
  const bool one =
      copied[0] && copied[1] && st[0].st_dev == st[1].st_dev && st[0].st_ino == st[1].st_ino;
  file_ = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (file_ < 0) {
    *why = absl::StrCat("cannot keep the job's output in ", path, ": ", std::strerror(errno));
    return false;
  }
  for (int fd = 1; fd <= 2; ++fd) {
    if (!copied[fd - 1]) continue;
    if (fd == 2 && one) {
      streams_.back().targets.push_back(2);
      continue;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
      *why = absl::StrCat("cannot pass the job's output through: ", std::strerror(errno));
      return false;
    }
    streams_.push_back({p[0], p[1], {fd}});
  }
  return true;
}

void OutputCopy::InChild() const {
  for (const Stream& s : streams_)
    for (int fd : s.targets) dup2(s.write_fd, fd);  // dup2 leaves the new fd open across exec
}

void OutputCopy::InParent() {
  for (Stream& s : streams_) {
    close(s.write_fd);
    s.write_fd = -1;
  }
  pump_ = std::thread([this] { Pump(); });
}

void OutputCopy::Keep(const char* data, size_t n) {
  total_ += n;
  if (head_ < kHeadBytes) {
    const size_t take = std::min(n, kHeadBytes - head_);
    if (!WriteAll(file_, data, take)) {
      // The disk is full or gone: keep passing the output through, copy no more.
      close(file_);
      file_ = -1;
    }
    head_ += take;
    data += take;
    n -= take;
  }
  if (n == 0) return;
  if (tail_.empty()) tail_.resize(kTailBytes);
  for (size_t i = 0; i < n;) {
    const size_t take = std::min(n - i, kTailBytes - tail_at_ % kTailBytes);
    std::memcpy(tail_.data() + tail_at_ % kTailBytes, data + i, take);
    tail_at_ += take;
    i += take;
  }
}

void OutputCopy::Pump() {
  // A reader of our stdout that went away is the job's to find (EPIPE, then
  // its own SIGPIPE), never a signal that kills ncclwatch.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  auto quiet_since = std::chrono::steady_clock::now();
  std::vector<char> buffer(64 * 1024);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Stream*> who;
    for (Stream& s : streams_) {
      if (s.read_fd < 0) continue;
      fds.push_back({s.read_fd, POLLIN, 0});
      who.push_back(&s);
    }
    if (fds.empty()) return;
    const int ready = poll(fds.data(), fds.size(), 100);
    if (ready < 0 && errno != EINTR) return;
    bool read_any = false;
    for (size_t i = 0; i < fds.size() && ready > 0; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Stream& s = *who[i];
      const ssize_t n = read(s.read_fd, buffer.data(), buffer.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {  // every writer closed it
        close(s.read_fd);
        s.read_fd = -1;
        continue;
      }
      read_any = true;
      bool gone = false;
      for (int fd : s.targets) gone |= !WriteAll(fd, buffer.data(), static_cast<size_t>(n));
      if (file_ >= 0) Keep(buffer.data(), static_cast<size_t>(n));
      if (gone) {  // the job's next write there meets the closed pipe, as it would have
        close(s.read_fd);
        s.read_fd = -1;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (read_any) quiet_since = now;
    // After the job ended: a second of silence ends the copy (what the job
    // left running may hold the pipes for ever).
    if (ending_.load() && now - quiet_since > std::chrono::seconds(1)) return;
  }
}

void OutputCopy::Finish() {
  if (!pump_.joinable()) return;
  ending_.store(true);
  pump_.join();
  if (file_ < 0) return;
  if (tail_at_ > 0) {
    const size_t kept = std::min(tail_at_, kTailBytes);
    const uint64_t left_out = total_ - head_ - kept;
    if (left_out > 0) {
      const std::string line =
          absl::StrCat("\n[ncclwatch: ", left_out, " bytes of the job's output left out here]\n");
      WriteAll(file_, line.data(), line.size());
    }
    if (tail_at_ <= kTailBytes) {
      WriteAll(file_, tail_.data(), tail_at_);
    } else {  // the ring wrapped: its oldest byte is where the next would go
      const size_t start = tail_at_ % kTailBytes;
      WriteAll(file_, tail_.data() + start, kTailBytes - start);
      WriteAll(file_, tail_.data(), start);
    }
  }
  close(file_);
  file_ = -1;
}

}  // namespace ncclwatch::decoder

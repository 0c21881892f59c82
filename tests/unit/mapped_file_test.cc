// MappedFile (decoder/trace/mapped_file.h): a file that shrinks under its
// mapping reads as zeros past its new end and says so, never SIGBUS; a
// SIGBUS outside any mapping still does what it did before (kills, or runs
// the handler that was there); a big mapping's pages go once read, a small
// one's stay.

#include "trace/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "support/traced_job.h"

namespace {

using ncclwatch::decoder::MappedFile;

constexpr size_t kBytes = 64 << 10;

// A file of kBytes bytes, each its offset's low byte (never all zeros).
std::string MakeFile(const std::string& dir) {
  const std::string path = dir + "/mapped";
  std::vector<uint8_t> bytes(kBytes);
  for (size_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<uint8_t>(i | 1);
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, bytes.data(), kBytes) == static_cast<ssize_t>(kBytes));
  close(fd);
  return path;
}

// The resident kilobytes of the mapping that starts at `start`
// (/proc/self/smaps), -1 when not found.
long MappedRssKb(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  char head[32];
  std::snprintf(head, sizeof(head), "%lx-", reinterpret_cast<unsigned long>(start));
  bool in = false;
  for (std::string line; std::getline(smaps, line);) {
    if (line.rfind(head, 0) == 0) {
      in = true;
    } else if (in && line.rfind("Rss:", 0) == 0) {
      return std::atol(line.c_str() + 4);
    }
  }
  return -1;
}

// A file of `bytes` bytes, each 8 MiB of it written (its pages in the
// page cache, so that mapping them is not a disk read).
std::string MakeBigFile(const std::string& dir, uint64_t bytes) {
  const std::string path = dir + "/big";
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  std::vector<uint8_t> block(8 << 20, 7);
  for (uint64_t done = 0; done < bytes; done += block.size())
    REQUIRE(write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size()));
  close(fd);
  return path;
}

TEST_CASE("a big mapping's pages go once read, a small one's stay until it is unmapped",
          "[trace][map]") {
  jobs::TempDir dir;
  constexpr uint64_t kChunk = 8 << 20;
  for (const uint64_t bytes : {MappedFile::kReleaseAbove + kChunk, uint64_t{2} * kChunk}) {
    INFO("a mapping of " << bytes << " bytes");
    const std::string path = MakeBigFile(dir.path(), bytes);
    const int fd = open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    auto m = MappedFile::Map(fd, bytes);
    close(fd);
    REQUIRE(m != nullptr);
    m->Populate(0, kChunk);  // in one call where the kernel can; touched below anyway
    unsigned sum = 0;
    for (uint64_t at = 0; at < kChunk; at += 4096) sum += m->data()[at];
    CHECK(sum == 7 * (kChunk / 4096));
    const long populated = MappedRssKb(m->data());
    REQUIRE(populated >= static_cast<long>(kChunk >> 10) / 2);
    m->Release(0, kChunk);
    const long released = MappedRssKb(m->data());
    if (bytes > MappedFile::kReleaseAbove) {
      CHECK(released < populated / 4);
    } else {
      CHECK(released > populated / 2);  // kept (the kernel may reclaim a few)
    }
    CHECK(m->data()[0] == 7);  // a later read maps them again
  }
}

TEST_CASE("a mapping reads the file where it lies", "[trace][map]") {
  jobs::TempDir dir;
  const std::string path = MakeFile(dir.path());
  const int fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  auto m = MappedFile::Map(fd, kBytes);
  close(fd);  // the mapping outlives the descriptor
  REQUIRE(m != nullptr);
  CHECK(m->size() == kBytes);
  CHECK(m->data()[0] == 1);
  CHECK(m->data()[kBytes - 1] == static_cast<uint8_t>((kBytes - 1) | 1));
  CHECK(!m->shrank());
  CHECK(MappedFile::Map(fd, 0) == nullptr);  // nothing to map
}

TEST_CASE("a file that shrinks under its mapping reads as zeros past its end, not SIGBUS",
          "[trace][map]") {
  jobs::TempDir dir;
  const std::string path = MakeFile(dir.path());
  const int fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  auto m = MappedFile::Map(fd, kBytes);
  close(fd);
  REQUIRE(m != nullptr);
  REQUIRE(truncate(path.c_str(), 8192) == 0);  // two pages left
  CHECK(m->data()[100] == (100 | 1));          // before the cut: the file's bytes
  CHECK(!m->shrank());
  size_t nonzero = 0;
  for (size_t i = 8192; i < kBytes; ++i) nonzero += m->data()[i] != 0;
  CHECK(nonzero == 0);
  CHECK(m->shrank());
  CHECK(m->data()[100] == (100 | 1));  // the part still in the file is untouched
}

TEST_CASE("two mappings at once: only the one whose file shrank reads zeros", "[trace][map]") {
  jobs::TempDir a, b;
  const std::string pa = MakeFile(a.path()), pb = MakeFile(b.path());
  const int fa = open(pa.c_str(), O_RDONLY), fb = open(pb.c_str(), O_RDONLY);
  auto ma = MappedFile::Map(fa, kBytes);
  auto mb = MappedFile::Map(fb, kBytes);
  close(fa);
  close(fb);
  REQUIRE(ma != nullptr);
  REQUIRE(mb != nullptr);
  REQUIRE(truncate(pb.c_str(), 0) == 0);
  CHECK(mb->data()[kBytes / 2] == 0);
  CHECK(mb->shrank());
  CHECK(ma->data()[kBytes / 2] == static_cast<uint8_t>((kBytes / 2) | 1));
  CHECK(!ma->shrank());
}

// In a child: `fn`, then exit 0; returns how the child ended.
template <typename Fn>
int InChild(Fn fn) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

TEST_CASE("a SIGBUS outside any mapping still kills, or reaches the handler there before",
          "[trace][map]") {
  jobs::TempDir dir;
  const std::string path = MakeFile(dir.path());
  // A mapping of our own, not a MappedFile, over a file that then shrinks.
  auto touch_outside = [&] {
    const int fd = open(path.c_str(), O_RDONLY);
    auto* raw = static_cast<volatile uint8_t*>(mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd, 0));
    const int fd2 = open(path.c_str(), O_RDONLY);
    auto keep = MappedFile::Map(fd2, kBytes);  // the handler is installed
    if (truncate(path.c_str(), 0) != 0) _exit(3);
    (void)raw[kBytes - 1];  // SIGBUS: not ours
    _exit(4);               // never reached
  };
  // Each child sets what SIGBUS did before the shim's handler is installed
  // in it: the test runner's (Catch2's) or a sanitizer's would be chained to.
  SECTION("no handler before: the process dies of SIGBUS") {
    const int status = InChild([&] {
      signal(SIGBUS, SIG_DFL);
      touch_outside();
    });
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGBUS);
  }
  SECTION("a handler before: it runs") {
    const int status = InChild([&] {
      struct sigaction sa {};
      sa.sa_handler = [](int) { _exit(42); };
      sigemptyset(&sa.sa_mask);
      sigaction(SIGBUS, &sa, nullptr);
      touch_outside();
    });
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 42);
  }
  // A SIGBUS sent with kill, after SIGBUS was set to `before` and the
  // handler installed; the child exits 6 if it survives.
  auto send_after = [&](void (*before)(int)) {
    return InChild([&] {
      signal(SIGBUS, before);
      const int fd = open(path.c_str(), O_RDONLY);
      auto keep = MappedFile::Map(fd, kBytes);
      kill(getpid(), SIGBUS);
      _exit(6);
    });
  };
  SECTION("a SIGBUS sent while it was ignored is still ignored") {
    const int status = send_after(SIG_IGN);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 6);
  }
  SECTION("a SIGBUS sent with kill still kills") {
    const int status = send_after(SIG_DFL);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGBUS);
  }
}

}  // namespace

// The SIGBUS handler here runs in signal context: it allocates nothing,
// takes no lock and makes only calls that are async-signal-safe on Linux
// (sigaction and raise by POSIX; mmap, a plain system call in glibc, in
// practice), errno restored. A thread that blocks SIGBUS is still killed by
// a fault (the kernel forces it): nothing here can change that.

#include "trace/mapped_file.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>

namespace ncclwatch::decoder {
namespace {

struct Entry {
  std::atomic<uint32_t> taken{0};   // claimed by a MappedFile (or being claimed)
  std::atomic<uintptr_t> start{0};  // published once the mapping exists; 0: none
  std::atomic<uintptr_t> end{0};
  std::atomic<uint32_t> shrank{0};
};

Entry g_entries[MappedFile::kMaxMappings];
struct sigaction g_previous;  // what SIGBUS did before the handler; written once
uintptr_t g_page = 4096;

void OnSigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  if (info->si_code > 0) {  // a fault, not a signal someone sent
    for (Entry& e : g_entries) {
      const uintptr_t start = e.start.load(std::memory_order_acquire);
      const uintptr_t end = e.end.load(std::memory_order_acquire);
      // The pair of one mapping: `start` unchanged across the load of `end`
      // (another thread may have retired the entry and mapped anew).
      if (start == 0 || e.start.load(std::memory_order_acquire) != start) continue;
      if (addr < start || addr >= end) continue;
      // Past the file's end now: zeros over the rest of the mapping.
      const uintptr_t page = addr & ~(g_page - 1);
      void* z = mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (z != MAP_FAILED) {
        e.shrank.store(1, std::memory_order_relaxed);
        errno = saved_errno;
        return;
      }
      break;  // cannot mend it: as if we were not here
    }
  }
  // Not ours: what would have happened without us.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    errno = saved_errno;
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    errno = saved_errno;
    g_previous.sa_handler(sig);
    return;
  }
  if (g_previous.sa_handler == SIG_IGN && info->si_code <= 0) {  // sent, and ignored before
    errno = saved_errno;
    return;
  }
  // The default action: a fault repeats when the handler returns and then
  // kills; a signal that was sent is sent again, and kills once unblocked.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, nullptr);
  if (info->si_code <= 0) raise(SIGBUS);
  errno = saved_errno;
}

void InstallHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) g_page = static_cast<uintptr_t>(page);
    // What SIGBUS did before, read before ours is installed, so a fault on
    // another thread in between finds it filled.
    sigaction(SIGBUS, nullptr, &g_previous);
    struct sigaction sa {};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, nullptr);
  });
}

}  // namespace

std::unique_ptr<MappedFile> MappedFile::Map(int fd, uint64_t bytes) {
  if (bytes == 0 || bytes > SIZE_MAX) return nullptr;
  InstallHandler();
  size_t entry = kMaxMappings;
  for (size_t i = 0; i < kMaxMappings; ++i) {
    uint32_t free = 0;
    if (g_entries[i].taken.compare_exchange_strong(free, 1, std::memory_order_acq_rel)) {
      entry = i;
      break;
    }
  }
  if (entry == kMaxMappings) return nullptr;
  void* m = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ, MAP_SHARED, fd, 0);
  Entry& e = g_entries[entry];
  if (m == MAP_FAILED) {
    e.taken.store(0, std::memory_order_release);
    return nullptr;
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(m);
  e.shrank.store(0, std::memory_order_relaxed);
  e.end.store(start + static_cast<uintptr_t>(bytes), std::memory_order_relaxed);
  e.start.store(start, std::memory_order_release);
  return std::unique_ptr<MappedFile>(new MappedFile(static_cast<const uint8_t*>(m), bytes, entry));
}

MappedFile::~MappedFile() {
  Entry& e = g_entries[entry_];
  e.start.store(0, std::memory_order_release);  // retired before the pages go
  munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
  e.taken.store(0, std::memory_order_release);
}

void MappedFile::Populate(uint64_t offset, uint64_t len) const {
#ifdef MADV_POPULATE_READ
  if (offset >= size_) return;
  len = std::min(len, size_ - offset);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t from = offset / page * page;
  madvise(const_cast<uint8_t*>(data_) + from, static_cast<size_t>(offset + len - from),
          MADV_POPULATE_READ);
#else
  (void)offset;
  (void)len;
#endif
}

void MappedFile::Release(uint64_t offset, uint64_t len) const {
  if (size_ <= kReleaseAbove || offset >= size_) return;
  len = std::min(len, size_ - offset);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t from = (offset + page - 1) / page * page;
  const uint64_t to = (offset + len) / page * page;
  if (to > from)
    madvise(const_cast<uint8_t*>(data_) + from, static_cast<size_t>(to - from), MADV_DONTNEED);
}

bool MappedFile::shrank() const {
  return g_entries[entry_].shrank.load(std::memory_order_relaxed) != 0;
}

}  // namespace ncclwatch::decoder

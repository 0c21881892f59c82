// HOT PATH: no allocation, no lock, no system call, async-signal-safe,
// errno untouched.

#include "core/syscall_records.h"

#include <errno.h>
#include <string.h>

#include "core/record_builder.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::shim {
namespace {

namespace f = fields;

// Successful calls that go to the pinned region before the ring takes over.
constexpr uint32_t kPinnedSuccesses = 384;
uint32_t g_pinned_successes = 0;

// Direct-mapped by descriptor; a stale entry can only name a file wrongly
// for a descriptor NCCL did not open through open/shm_open/mkstemp.
constexpr int kFdSlots = 64;
struct FdPathSlot {
  int fd;  // -1 free; written last, with release ordering
  char path[120];
};
FdPathSlot g_fd_paths[kFdSlots] = {};
int g_fd_paths_ready = 0;

void InitFdSlots() {
  if (__atomic_load_n(&g_fd_paths_ready, __ATOMIC_ACQUIRE)) return;
  for (FdPathSlot& s : g_fd_paths) __atomic_store_n(&s.fd, -1, __ATOMIC_RELAXED);
  __atomic_store_n(&g_fd_paths_ready, 1, __ATOMIC_RELEASE);
}

}  // namespace

bool InDevShm(const char* path) { return path != nullptr && strncmp(path, "/dev/shm/", 9) == 0; }

void NoteFdPath(int fd, const char* path) {
  if (fd < 0 || path == nullptr) return;
  InitFdSlots();
  FdPathSlot& s = g_fd_paths[fd % kFdSlots];
  __atomic_store_n(&s.fd, -1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  size_t n = strlen(path);
  if (n >= sizeof(s.path)) n = sizeof(s.path) - 1;
  memcpy(s.path, path, n);
  s.path[n] = '\0';
  __atomic_store_n(&s.fd, fd, __ATOMIC_RELEASE);
}

const char* FdPath(int fd) {
  if (fd < 0 || !__atomic_load_n(&g_fd_paths_ready, __ATOMIC_ACQUIRE)) return nullptr;
  FdPathSlot& s = g_fd_paths[fd % kFdSlots];
  return __atomic_load_n(&s.fd, __ATOMIC_ACQUIRE) == fd ? s.path : nullptr;
}

void RecordSysCall(const SysCallEvent& e) {
  const int saved = errno;
  ThreadState& t = ThisThread();
  RecordBuilder<512> r(f::record::kSysCall);
  namespace k = f::sys_call;
  r.w().Varint(k::kKind, e.kind);
  r.w().Sint(k::kRet, e.ret);
  if (e.err != 0) r.w().Sint(k::kErr, e.err);
  if (e.fd >= 0) r.w().Sint(k::kFd, e.fd);
  if (e.path != nullptr) r.w().String(k::kPath, e.path);
  if (e.size >= 0) r.w().Sint(k::kSize, e.size);
  if (e.offset >= 0) r.w().Sint(k::kOffset, e.offset);
  if (e.addr != nullptr && e.addr_len > 0)
    r.w().Bytes(k::kAddr, e.addr, e.addr_len < 128 ? e.addr_len : 128);
  if (e.has_arg) r.w().Sint(k::kArg, e.arg);
  if (t.in_call != 0) r.w().Varint(k::kInCall, t.in_call);
  if (FromNccl(e.caller)) r.w().Varint(k::kFromNccl, 1);
  r.w().Fixed64(k::kCaller, reinterpret_cast<uint64_t>(e.caller));
  const bool pin = e.err != 0 ||
                   __atomic_fetch_add(&g_pinned_successes, 1u, __ATOMIC_RELAXED) < kPinnedSuccesses;
  r.Append(pin ? Region::kPinned : Region::kRing);
  errno = saved;
}

}  // namespace ncclwatch::shim

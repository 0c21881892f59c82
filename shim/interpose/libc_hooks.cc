// The C library calls NCCL makes on its way through initialisation, as
// libncclwatch.so exports them: sockets (socket, bind, listen, connect,
// accept, accept4, setsockopt, getifaddrs) and the shared-memory files of
// its transports (shm_open, open and unlink under /dev/shm, mkstemp,
// fallocate, posix_fallocate, ftruncate, mmap, and their 64-bit-offset
// names). Each forwards to the next definition (glibc's) with its arguments
// unchanged and returns its result and errno unchanged; a call is recorded
// (core/syscall_records.h) only when NCCL's own code made it, or when code
// NCCL drives (the CUDA driver, verbs, what NCCL loaded) made it and it
// failed inside an NCCL init or teardown call.
//
// Before NCCL: while the trace file exists because NCCL is loaded and no
// NCCL call was made yet, the TCP socket calls of any code (bind, listen,
// connect, accept, and a non-blocking connect's outcome read with
// getsockopt(SO_ERROR), also interposed here for that) are counted for the
// rendezvous (core/rendezvous_sockets.h).
//
// dlopen and dlvsym are not here: glibc resolves a dlopen's search path
// (RUNPATH, $ORIGIN, namespace) from the caller's address, which a wrapper
// like these would change. interpose/dl_hooks.cc watches them through
// trampolines that keep the caller's return address.
//
// HOT PATH (every one of these calls the process makes): no allocation, no
// lock, no system call of the shim's own, async-signal-safe, errno as glibc
// left it. glibc's definitions are looked up with dlsym in the shim's
// constructor (a definition glibc lacks is remembered as missing, not
// looked up again); the one exception is a function's first call before
// that (another library's constructor), which looks its own up: a call
// that arrives while a look-up is under way on the same thread (an
// allocator's mmap inside dlsym) goes to the kernel directly where it has a
// system call (open, mmap), and fails with ENOSYS otherwise.

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/rendezvous_sockets.h"
#include "core/syscall_records.h"
#include "ncclwatch/trace_fields.h"

using namespace ncclwatch::shim;  // NOLINT: this file is the shim's libc surface
namespace k = ncclwatch::fields::sys_call;

namespace {

__thread int t_resolving __attribute__((tls_model("initial-exec")));

// What a slot holds once glibc was asked and had no definition: remembered,
// so that a missing one is not looked up again on every call.
template <typename Fn>
Fn Missing() {
  return reinterpret_cast<Fn>(uintptr_t{1});
}

template <typename Fn>
Fn Resolve(Fn* slot, const char* name) {
  Fn fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (__builtin_expect(fn != nullptr, 1)) return fn != Missing<Fn>() ? fn : nullptr;
  if (t_resolving) return nullptr;
  t_resolving = 1;
  const int saved = errno;
  fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  errno = saved;
  t_resolving = 0;
  __atomic_store_n(slot, fn != nullptr ? fn : Missing<Fn>(), __ATOMIC_RELEASE);
  return fn;
}

// Every function hooked here, for their slots and the look-up at start.
// (clang-format would indent the list as a chain of calls.)
// clang-format off
#define NCCLWATCH_LIBC_HOOKS(X) \
  X(socket) X(bind) X(listen) X(connect) X(accept) X(accept4) X(setsockopt) X(getsockopt) \
  X(getifaddrs) X(shm_open) X(open) X(open64) X(mkstemp) X(unlink) X(fallocate) X(fallocate64) \
  X(posix_fallocate) X(posix_fallocate64) X(ftruncate) X(ftruncate64) X(mmap) X(mmap64)
// clang-format on

#define NCCLWATCH_SLOT(name) decltype(&::name) real_##name = nullptr;
NCCLWATCH_LIBC_HOOKS(NCCLWATCH_SLOT)
#undef NCCLWATCH_SLOT

// Each definition looked up in the shim's constructor, not at its first
// call: a signal handler's first call of one function while its thread was
// looking up another (t_resolving) found no definition and failed with
// ENOSYS. A call before the constructor (another library's constructor, an
// allocator's mmap) still looks its own up then.
__attribute__((constructor)) void ResolveLibcHooks() {
#define NCCLWATCH_RESOLVE(name) Resolve(&real_##name, #name);
  NCCLWATCH_LIBC_HOOKS(NCCLWATCH_RESOLVE)
#undef NCCLWATCH_RESOLVE
}

#define REAL(name) decltype(&::name) real = Resolve(&real_##name, #name)

#define CALLER __builtin_return_address(0)

// A missing glibc definition (never expected): fail as the kernel would.
int NoDefinition() {
  errno = ENOSYS;
  return -1;
}

void Record(SysCallEvent e, int64_t ret, bool failed, int err) {
  e.ret = ret;
  e.err = failed ? (err != 0 ? err : -1) : 0;
  RecordSysCall(e);
}

// A non-blocking connect under way (EINPROGRESS, EALREADY) or interrupted
// is not a failure; a non-blocking accept with nobody waiting neither (NCCL
// polls its listening sockets that way, thousands of times).
bool InProgress(int err) {
  return err == EINPROGRESS || err == EALREADY || err == EINTR || err == EAGAIN;
}

// accept and accept4, once they returned `r`: the peer's address when one came.
int AfterAccept(int r, int fd, const struct sockaddr* addr, const socklen_t* len,
                const void* caller) {
  if (RendezvousWindow()) NoteAccept(fd, r, r < 0 ? errno : 0, caller);
  if (r < 0 && InProgress(errno)) return r;
  if (WantSysCall(caller, r < 0)) {
    const int err = errno;
    SysCallEvent e;
    e.kind = k::kAccept;
    e.fd = fd;
    if (r >= 0 && addr != nullptr && len != nullptr) {
      e.addr = addr;
      e.addr_len = *len;
    }
    e.caller = caller;
    Record(e, r, r < 0, err);
  }
  return r;
}

// bind, listen, connect on socket `fd` (with the address of bind and
// connect), once they returned `r` (0, or -1 with errno).
int AfterSocketCall(uint32_t kind, int r, int fd, const struct sockaddr* addr, socklen_t len,
                    int arg, bool has_arg, const void* caller) {
  if (WantSysCall(caller, r != 0)) {
    const int err = errno;
    SysCallEvent e;
    e.kind = kind;
    e.fd = fd;
    e.addr = addr;
    e.addr_len = addr != nullptr ? len : 0;
    e.arg = arg;
    e.has_arg = has_arg;
    e.caller = caller;
    Record(e, r, r != 0, err);
  }
  return r;
}

// fallocate, posix_fallocate, ftruncate on `fd`, once they returned `r`
// (`err`: the error, from errno or, for posix_fallocate, the result).
int AfterSizeCall(uint32_t kind, int r, int err, int fd, int64_t offset, int64_t size,
                  const void* caller) {
  if (WantSysCall(caller, r != 0)) {
    SysCallEvent e;
    e.kind = kind;
    e.fd = fd;
    e.path = FdPath(fd);
    e.offset = offset;
    e.size = size;
    e.caller = caller;
    Record(e, r, r != 0, err);
  }
  return r;
}

// open, open64 under /dev/shm, once they returned `r`.
int AfterOpen(int r, const char* path, int flags, const void* caller) {
  if (InDevShm(path) && WantSysCall(caller, r < 0)) {
    const int err = errno;
    if (r >= 0) NoteFdPath(r, path);
    SysCallEvent e;
    e.kind = k::kOpen;
    e.fd = r;
    e.path = path;
    e.arg = flags;
    e.has_arg = true;
    e.caller = caller;
    Record(e, r, r < 0, err);
  }
  return r;
}

// mmap, mmap64: mappings of files, and failures (NCCL's anonymous mappings
// are its allocator's business).
void* AfterMmap(void* r, int fd, size_t len, int64_t offset, const void* caller) {
  const bool failed = r == MAP_FAILED;
  if ((fd >= 0 || failed) && WantSysCall(caller, failed)) {
    const int err = errno;
    SysCallEvent e;
    e.kind = k::kMmap;
    e.fd = fd;
    e.path = FdPath(fd);
    e.size = static_cast<int64_t>(len);
    e.offset = offset;
    e.caller = caller;
    Record(e, failed ? -1 : 0, failed, err);
  }
  return r;
}

}  // namespace

extern "C" {

// ------------------------------------------------------------ sockets

__attribute__((visibility("default"))) int socket(int domain, int type, int protocol) noexcept {
  REAL(socket);
  if (real == nullptr) return NoDefinition();
  const int r = real(domain, type, protocol);
  if (r >= 0 && RendezvousWindow()) NoteSocket(r, domain, type);
  if (WantSysCall(CALLER, r < 0) && r < 0) {
    const int err = errno;
    SysCallEvent e;
    e.kind = k::kSocket;
    e.arg = domain;
    e.has_arg = true;
    e.caller = CALLER;
    Record(e, r, true, err);
  }
  return r;
}

__attribute__((visibility("default"))) int bind(int fd, const struct sockaddr* addr,
                                                socklen_t len) noexcept {
  REAL(bind);
  if (real == nullptr) return NoDefinition();
  const int r = real(fd, addr, len);
  if (RendezvousWindow()) NoteBind(fd, addr, len, r, r != 0 ? errno : 0, CALLER);
  return AfterSocketCall(k::kBind, r, fd, addr, len, 0, false, CALLER);
}

__attribute__((visibility("default"))) int listen(int fd, int backlog) noexcept {
  REAL(listen);
  if (real == nullptr) return NoDefinition();
  const int r = real(fd, backlog);
  if (RendezvousWindow()) NoteListen(fd, r, r != 0 ? errno : 0, CALLER);
  return AfterSocketCall(k::kListen, r, fd, nullptr, 0, backlog, true, CALLER);
}

__attribute__((visibility("default"))) int connect(int fd, const struct sockaddr* addr,
                                                   socklen_t len) {
  REAL(connect);
  if (real == nullptr) return NoDefinition();
  const int r = real(fd, addr, len);
  if (RendezvousWindow()) NoteConnect(fd, addr, len, r, r != 0 ? errno : 0, CALLER);
  if (r != 0 && InProgress(errno)) return r;
  return AfterSocketCall(k::kConnect, r, fd, addr, len, 0, false, CALLER);
}

__attribute__((visibility("default"))) int accept(int fd, struct sockaddr* addr, socklen_t* len) {
  REAL(accept);
  if (real == nullptr) return NoDefinition();
  return AfterAccept(real(fd, addr, len), fd, addr, len, CALLER);
}

__attribute__((visibility("default"))) int accept4(int fd, struct sockaddr* addr, socklen_t* len,
                                                   int flags) {
  REAL(accept4);
  if (real == nullptr) return NoDefinition();
  return AfterAccept(real(fd, addr, len, flags), fd, addr, len, CALLER);
}

// Only failures: NCCL sets several options on every socket.
__attribute__((visibility("default"))) int setsockopt(int fd, int level, int name,
                                                      const void* value, socklen_t len) noexcept {
  REAL(setsockopt);
  if (real == nullptr) return NoDefinition();
  const int r = real(fd, level, name, value, len);
  if (r != 0 && WantSysCall(CALLER, true)) {
    const int err = errno;
    SysCallEvent e;
    e.kind = k::kSetsockopt;
    e.fd = fd;
    e.arg = (level << 16) | (name & 0xffff);
    e.has_arg = true;
    e.caller = CALLER;
    Record(e, r, true, err);
  }
  return r;
}

// Only for the rendezvous: the outcome of a non-blocking connect
// (SO_ERROR), read while the rendezvous window is open.
__attribute__((visibility("default"))) int getsockopt(int fd, int level, int name, void* value,
                                                      socklen_t* len) noexcept {
  REAL(getsockopt);
  if (real == nullptr) return NoDefinition();
  const int r = real(fd, level, name, value, len);
  if (r == 0 && level == SOL_SOCKET && name == SO_ERROR && RendezvousWindow() && value != nullptr &&
      len != nullptr && *len >= sizeof(int)) {
    int so_error = 0;
    memcpy(&so_error, value, sizeof(so_error));
    NoteSocketError(fd, so_error, CALLER);
  }
  return r;
}

__attribute__((visibility("default"))) int getifaddrs(struct ifaddrs** out) noexcept {
  REAL(getifaddrs);
  if (real == nullptr) return NoDefinition();
  const int r = real(out);
  if (WantSysCall(CALLER, r != 0)) {
    const int err = errno;
    SysCallEvent e;
    e.kind = k::kGetifaddrs;
    e.caller = CALLER;
    Record(e, r, r != 0, err);
  }
  return r;
}

// ------------------------------------------------------------ shared-memory files

__attribute__((visibility("default"))) int shm_open(const char* name, int oflag, mode_t mode) {
  REAL(shm_open);
  if (real == nullptr) return NoDefinition();
  const int r = real(name, oflag, mode);
  if (WantSysCall(CALLER, r < 0)) {
    const int err = errno;
    // "/dev/shm/" + the name without its leading '/', by hand (signal-safe).
    char path[128] = "/dev/shm/";
    const char* n = name != nullptr && name[0] == '/' ? name + 1 : (name ? name : "");
    size_t at = 9;
    while (*n != '\0' && at + 1 < sizeof(path)) path[at++] = *n++;
    path[at] = '\0';
    if (r >= 0) NoteFdPath(r, path);
    SysCallEvent e;
    e.kind = k::kShmOpen;
    e.fd = r;
    e.path = path;
    e.caller = CALLER;
    Record(e, r, r < 0, err);
    errno = err;
  }
  return r;
}

// open and open64 take a mode only with O_CREAT or O_TMPFILE.
#define NCCLWATCH_OPEN_MODE(flags, mode)         \
  mode_t mode = 0;                               \
  if ((flags) & (O_CREAT | O_TMPFILE)) {         \
    va_list ap;                                  \
    va_start(ap, flags);                         \
    mode = static_cast<mode_t>(va_arg(ap, int)); \
    va_end(ap);                                  \
  }

__attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
  NCCLWATCH_OPEN_MODE(flags, mode);
  REAL(open);
  const int r = real != nullptr
                    ? real(path, flags, mode)
                    : static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, flags, mode));
  return AfterOpen(r, path, flags, CALLER);
}

__attribute__((visibility("default"))) int open64(const char* path, int flags, ...) {
  NCCLWATCH_OPEN_MODE(flags, mode);
  REAL(open64);
  const int r =
      real != nullptr
          ? real(path, flags, mode)
          : static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, flags | O_LARGEFILE, mode));
  return AfterOpen(r, path, flags, CALLER);
}

__attribute__((visibility("default"))) int mkstemp(char* tmpl) {
  REAL(mkstemp);
  if (real == nullptr) return NoDefinition();
  const int r = real(tmpl);
  if (WantSysCall(CALLER, r < 0)) {
    const int err = errno;
    if (r >= 0 && InDevShm(tmpl)) NoteFdPath(r, tmpl);
    SysCallEvent e;
    e.kind = k::kMkstemp;
    e.fd = r;
    e.path = tmpl;
    e.caller = CALLER;
    Record(e, r, r < 0, err);
    errno = err;
  }
  return r;
}

__attribute__((visibility("default"))) int unlink(const char* path) noexcept {
  REAL(unlink);
  if (real == nullptr) return NoDefinition();
  const int r = real(path);
  if (InDevShm(path) && WantSysCall(CALLER, r != 0)) {
    const int err = errno;
    SysCallEvent e;
    e.kind = k::kUnlink;
    e.path = path;
    e.caller = CALLER;
    Record(e, r, r != 0, err);
  }
  return r;
}

__attribute__((visibility("default"))) int fallocate(int fd, int mode, off_t offset, off_t len) {
  REAL(fallocate);
  if (real == nullptr) return NoDefinition();
  const int r = real(fd, mode, offset, len);
  return AfterSizeCall(k::kFallocate, r, r != 0 ? errno : 0, fd, offset, len, CALLER);
}

// Returns the error number instead of setting errno.
__attribute__((visibility("default"))) int posix_fallocate(int fd, off_t offset, off_t len) {
  REAL(posix_fallocate);
  if (real == nullptr) return ENOSYS;
  const int r = real(fd, offset, len);
  return AfterSizeCall(k::kPosixFallocate, r, r, fd, offset, len, CALLER);
}

__attribute__((visibility("default"))) int ftruncate(int fd, off_t len) noexcept {
  REAL(ftruncate);
  if (real == nullptr) return NoDefinition();
  const int r = real(fd, len);
  return AfterSizeCall(k::kFtruncate, r, r != 0 ? errno : 0, fd, -1, len, CALLER);
}

__attribute__((visibility("default"))) void* mmap(void* addr, size_t len, int prot, int flags,
                                                  int fd, off_t offset) noexcept {
  REAL(mmap);
  void* r = real != nullptr
                ? real(addr, len, prot, flags, fd, offset)
                : reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, offset));
  return AfterMmap(r, fd, len, offset, CALLER);
}

__attribute__((visibility("default"))) void* mmap64(void* addr, size_t len, int prot, int flags,
                                                    int fd, off64_t offset) noexcept {
  REAL(mmap64);
  void* r = real != nullptr
                ? real(addr, len, prot, flags, fd, offset)
                : reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, offset));
  return AfterMmap(r, fd, len, offset, CALLER);
}

// The 64-bit-offset names a program built with _FILE_OFFSET_BITS=64 calls.

__attribute__((visibility("default"))) int fallocate64(int fd, int mode, off64_t offset,
                                                       off64_t len) {
  REAL(fallocate64);
  if (real == nullptr) return NoDefinition();
  const int r = real(fd, mode, offset, len);
  return AfterSizeCall(k::kFallocate, r, r != 0 ? errno : 0, fd, offset, len, CALLER);
}

__attribute__((visibility("default"))) int posix_fallocate64(int fd, off64_t offset, off64_t len) {
  REAL(posix_fallocate64);
  if (real == nullptr) return ENOSYS;
  const int r = real(fd, offset, len);
  return AfterSizeCall(k::kPosixFallocate, r, r, fd, offset, len, CALLER);
}

__attribute__((visibility("default"))) int ftruncate64(int fd, off64_t len) noexcept {
  REAL(ftruncate64);
  if (real == nullptr) return NoDefinition();
  const int r = real(fd, len);
  return AfterSizeCall(k::kFtruncate, r, r != 0 ? errno : 0, fd, -1, len, CALLER);
}

}  // extern "C"

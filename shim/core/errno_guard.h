// ErrnoGuard: keeps errno across the shim's own work, so the program sees
// the errno NCCL (or CUDA, or libc) left. HOT PATH: a load and a store, no
// allocation, lock or system call; async-signal-safe.

#ifndef NCCLWATCH_SHIM_CORE_ERRNO_GUARD_H_
#define NCCLWATCH_SHIM_CORE_ERRNO_GUARD_H_

#include <errno.h>

namespace ncclwatch::shim {

class ErrnoGuard {
 public:
  ErrnoGuard() : saved_(errno) {}
  ~ErrnoGuard() { errno = saved_; }
  ErrnoGuard(const ErrnoGuard&) = delete;
  ErrnoGuard& operator=(const ErrnoGuard&) = delete;

 private:
  int saved_;
};

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_ERRNO_GUARD_H_

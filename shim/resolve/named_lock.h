// NamedLock: a spin lock that holds its holder's name, for the shim's work
// that walks the modules (the visibility look, core/nccl_visibility.h; the
// exports update, nccl_exports.h).
//
// A name is any nonzero number a thread owns: the address of one of its
// thread-local variables, or 1 at load, when only one thread runs. Taking
// the lock and naming the holder are one instruction, so there is no moment
// when the lock is held by a thread it does not name. A thread that asks
// for the lock it holds already (a signal handler that came back to the
// work on the thread doing it) is told so at once, where waiting would wait
// for the frame it interrupted, forever.
//
// Around a fork (pthread_atfork), BeforeFork takes it and AfterFork (in the
// parent and in the child) gives it back: no fork while another thread
// does the work, whose walk holds the loader's lock, which glibc does not
// give back in a child forked while another thread held it.
//
// Not on the hot path; no system call of its own (the caller's `wait`
// decides how to wait), no allocation: usable at load, before the shim's
// PLT is bound, as long as `wait` is.

#ifndef NCCLWATCH_SHIM_RESOLVE_NAMED_LOCK_H_
#define NCCLWATCH_SHIM_RESOLVE_NAMED_LOCK_H_

#include <stdint.h>

namespace ncclwatch::shim {

class NamedLock {
 public:
  // The calling thread's name: the address of a thread-local of its own.
  // Not at load, before the shim's TLS offsets are relocated (name 1 there).
  static uintptr_t ThisThread() { return reinterpret_cast<uintptr_t>(&t_name_); }

  // Takes it as `me`, calling `wait()` between tries; false, without
  // waiting, when `me` holds it already.
  template <typename Wait>
  bool Take(uintptr_t me, Wait wait) {
    uintptr_t held = 0;
    while (!__atomic_compare_exchange_n(&holder_, &held, me, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
      if (held == me) return false;
      held = 0;
      wait();
    }
    return true;
  }
  void Give() { __atomic_store_n(&holder_, 0, __ATOMIC_RELEASE); }

  // pthread_atfork's prepare, and its parent and child handlers.
  template <typename Wait>
  void BeforeFork(uintptr_t me, Wait wait) {
    taken_for_fork_ = Take(me, wait);
  }
  void AfterFork() {
    if (!taken_for_fork_) return;
    taken_for_fork_ = false;
    Give();
  }

 private:
  uintptr_t holder_ = 0;
  bool taken_for_fork_ = false;  // written only by the holder
  static inline __thread char t_name_ __attribute__((tls_model("initial-exec")));
};

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_RESOLVE_NAMED_LOCK_H_

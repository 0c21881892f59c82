// Not on the hot path: see startup_stack.h.

#include "core/startup_stack.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <ucontext.h>

namespace ncclwatch::shim {
namespace {

constexpr size_t kGuardBytes = 4096;
constexpr size_t kStackBytes = size_t{1} << 20;

// The spare stack (its lowest usable byte), or nullptr while a thread uses it.
void* g_spare = nullptr;

struct Run {
  void (*fn)(void*);
  void* arg;
};

__thread Run* t_run __attribute__((tls_model("initial-exec")));
__thread int t_on_stack __attribute__((tls_model("initial-exec")));

void Trampoline() { t_run->fn(t_run->arg); }

void* MapStack() {
  void* m = mmap(nullptr, kGuardBytes + kStackBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  mprotect(m, kGuardBytes, PROT_NONE);
  return static_cast<char*>(m) + kGuardBytes;
}

void ReleaseStack(void* stack) {
  void* expected = nullptr;
  if (!__atomic_compare_exchange_n(&g_spare, &expected, stack, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    munmap(static_cast<char*>(stack) - kGuardBytes, kGuardBytes + kStackBytes);
  }
}

}  // namespace

bool OnStartupStack() { return t_on_stack != 0; }

void RunOnStartupStack(void (*fn)(void*), void* arg) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizers follow one stack per thread (the unit tests build the
  // shim's sources with them; the shim itself never is).
  const bool in_place = true;
#else
  const bool in_place = t_on_stack != 0;
#endif
  if (in_place) {
    fn(arg);
    return;
  }
  const int saved_errno = errno;
  void* stack = __atomic_exchange_n(&g_spare, nullptr, __ATOMIC_ACQ_REL);
  if (stack == nullptr) stack = MapStack();
  ucontext_t back, work;
  if (stack == nullptr || getcontext(&work) != 0) {
    if (stack != nullptr) ReleaseStack(stack);
    errno = saved_errno;
    fn(arg);
    return;
  }
  work.uc_stack.ss_sp = stack;
  work.uc_stack.ss_size = kStackBytes;
  work.uc_link = &back;
  makecontext(&work, Trampoline, 0);
  Run run{fn, arg};
  Run* const outer = t_run;
  t_run = &run;
  t_on_stack = 1;
  errno = saved_errno;
  const int rc = swapcontext(&back, &work);
  const int after_errno = errno;
  t_on_stack = 0;
  t_run = outer;
  ReleaseStack(stack);
  if (rc != 0) fn(arg);  // the switch failed: run it here after all
  errno = after_errno;
}

}  // namespace ncclwatch::shim

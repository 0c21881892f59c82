// HOT PATH (Get, Reset): no allocation, lock, system call or wait; async-
// signal-safe. Set is sigaction()'s: it blocks signals and may wait for
// another thread's Set (core/program_actions.h).

#include "core/program_actions.h"

#include <pthread.h>
#include <sched.h>

namespace ncclwatch::shim {
namespace {

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

union Action {
  struct sigaction act;
  uint64_t words[sizeof(struct sigaction) / sizeof(uint64_t)];
};

}  // namespace

bool ProgramActions::Read(const Copy& c, uint64_t* out, uint32_t* generation) {
  const uint32_t before = __atomic_load_n(&c.seq, __ATOMIC_ACQUIRE);
  if (before & 1) return false;
  *generation = __atomic_load_n(&c.generation, __ATOMIC_RELAXED);
  for (size_t i = 0; i < kWords; ++i) out[i] = __atomic_load_n(&c.words[i], __ATOMIC_RELAXED);
  // The words before the count read again: a write that began meanwhile
  // has made it odd, or moved it on.
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return __atomic_load_n(&c.seq, __ATOMIC_RELAXED) == before;
}

void ProgramActions::Write(Entry& e, const uint64_t* words) {
  const uint32_t next = __atomic_load_n(&e.current, __ATOMIC_RELAXED) ^ 1;
  Copy& c = e.copies[next];
  const uint32_t seq = __atomic_load_n(&c.seq, __ATOMIC_RELAXED);
  __atomic_store_n(&c.seq, seq + 1, __ATOMIC_RELAXED);
  // The odd count before any word: a reader that sees a new word sees it.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  const uint32_t generation = __atomic_load_n(&e.generation, __ATOMIC_RELAXED) + 1;
  __atomic_store_n(&c.generation, generation, __ATOMIC_RELAXED);
  for (size_t i = 0; i < kWords; ++i) __atomic_store_n(&c.words[i], words[i], __ATOMIC_RELAXED);
  __atomic_store_n(&c.seq, seq + 2, __ATOMIC_RELEASE);
  __atomic_store_n(&e.generation, generation, __ATOMIC_RELAXED);
  __atomic_store_n(&e.current, next, __ATOMIC_RELEASE);
}

struct sigaction ProgramActions::Get(int signo, uint32_t* generation) const {
  Action a = {};
  uint32_t gen = 0;
  if (signo <= 0 || signo >= NSIG) {
    if (generation != nullptr) *generation = 0;
    return a.act;
  }
  const Entry& e = entries_[signo];
  uint32_t c = __atomic_load_n(&e.current, __ATOMIC_ACQUIRE) & 1;
  // The current copy, else the other (the one current a moment before):
  // writes never touch both at once.
  for (int i = 0; i < kTries; ++i, c ^= 1)
    if (Read(e.copies[c], a.words, &gen)) break;
  // Reset since this action was written: the kernel's SA_RESETHAND puts
  // SIG_DFL in the handler and leaves the rest as it was.
  if (__atomic_load_n(&e.reset, __ATOMIC_ACQUIRE) == gen + 1) a.act.sa_handler = SIG_DFL;
  if (generation != nullptr) *generation = gen;
  return a.act;
}

void ProgramActions::Set(int signo, const struct sigaction& act) {
  if (signo <= 0 || signo >= NSIG) return;
  Entry& e = entries_[signo];
  // No handler runs on this thread while it holds the entry: one that
  // called sigaction() would wait for itself.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  uint32_t free_now = 0;
  for (int spins = 0; !__atomic_compare_exchange_n(&e.writer, &free_now, 1, false, __ATOMIC_ACQUIRE,
                                                   __ATOMIC_RELAXED);
       ++spins) {
    free_now = 0;
    // Another thread's sigaction() of this signal, a few stores long; on
    // one CPU it may need this one to give way.
    if (spins < 1000) {
      Pause();
    } else {
      sched_yield();
    }
  }
  Action a = {};
  a.act = act;
  Write(e, a.words);
  __atomic_store_n(&e.writer, 0, __ATOMIC_RELEASE);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

void ProgramActions::Reset(int signo, uint32_t generation) {
  if (signo <= 0 || signo >= NSIG) return;
  // One store, no flag taken: a Set since has a later generation, which
  // this does not name.
  __atomic_store_n(&entries_[signo].reset, generation + 1, __ATOMIC_RELEASE);
}

void ProgramActions::ForkChild() {
  for (Entry& e : entries_) {
    __atomic_store_n(&e.writer, 0, __ATOMIC_RELAXED);
    // A copy the vanished writer left half written stays not current; its
    // count is made even so that the next write makes it odd again.
    for (Copy& c : e.copies)
      if (c.seq & 1) __atomic_store_n(&c.seq, c.seq + 1, __ATOMIC_RELAXED);
  }
}

}  // namespace ncclwatch::shim

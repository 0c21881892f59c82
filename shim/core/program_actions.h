// ProgramActions: the signal actions the program believes are installed,
// for the signals whose kernel action is the shim's handler
// (interpose/process_hooks.cc). The kernel swaps a signal's action whole:
// a signal sees the action before a sigaction() or the one after, never
// half of each. This table keeps that true for the shim's copy, which the
// shim's handler reads while another thread, or the interrupted thread
// itself, may be writing it (a struct sigaction is 152 bytes: its handler,
// flags and mask copied in pieces).
//
// HOT PATH: Get() allocates nothing, takes no lock, makes no system call,
// never waits for another thread and is async-signal-safe. Each signal's
// action has two copies, each under a sequence count (odd while written);
// a write goes to the copy that is not current and then makes it current,
// so a reader that meets a copy being written reads the other, which holds
// the action current a moment before. Only a thread that rewrites the same
// signal's action without pause, twice within one 152-byte read, each
// time, for kTries reads running, could leave Get a torn copy.
//
// Set() is sigaction()'s: it blocks every signal on its thread while it
// writes (a handler there would otherwise interrupt its own write, or wait
// for it), and waits while another thread writes the same signal's action.
// Reset() is the handler's (SA_RESETHAND): one store, naming the
// generation the handler read; a sigaction() since wrote a later one,
// which stands.
//
// Thread-safety: any thread, and any signal handler, may Get, Set and
// Reset at any time (a handler's Set cannot interrupt a Set on its thread:
// that one blocks signals). ForkChild in a forked child, before anything
// else, frees what a thread of the parent held at the fork.

#ifndef NCCLWATCH_SHIM_CORE_PROGRAM_ACTIONS_H_
#define NCCLWATCH_SHIM_CORE_PROGRAM_ACTIONS_H_

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

namespace ncclwatch::shim {

class ProgramActions {
 public:
  // How many copies Get reads at most before it settles for the last.
  static constexpr int kTries = 64;

  // The program's action for `signo` (all zero, SIG_DFL, until Set), and
  // the generation it was written in (for Reset).
  struct sigaction Get(int signo, uint32_t* generation = nullptr) const;

  // The program's new action for `signo`.
  void Set(int signo, const struct sigaction& act);

  // SA_RESETHAND, from the handler that read generation `generation`: the
  // action's handler becomes SIG_DFL (its flags and mask stay, as the
  // kernel leaves them), unless the program replaced it since (or is
  // replacing it now on another thread: its new action stands, as it
  // would had it come a moment after the signal).
  void Reset(int signo, uint32_t generation);

  // In a forked child: a Set another thread of the parent was in at the
  // fork never finishes there, and must not keep the child waiting.
  void ForkChild();

 private:
  static constexpr size_t kWords = sizeof(struct sigaction) / sizeof(uint64_t);
  static_assert(sizeof(struct sigaction) % sizeof(uint64_t) == 0,
                "a struct sigaction is copied in 64-bit words");

  struct Copy {
    uint32_t seq;         // odd while written
    uint32_t generation;  // of the action it holds
    uint64_t words[kWords];
  };
  struct Entry {
    uint32_t writer;      // 1 while a Set or Reset writes
    uint32_t current;     // the copy that holds the action: 0 or 1
    uint32_t generation;  // the current copy's
    uint32_t reset;       // 1 + the generation SA_RESETHAND reset (0: none)
    Copy copies[2];
  };

  // Reads `c` whole into `*out`; false when a write tore it.
  static bool Read(const Copy& c, uint64_t* out, uint32_t* generation);
  // Writes `words` into the copy that is not current and makes it current
  // (the caller holds e.writer).
  static void Write(Entry& e, const uint64_t* words);

  Entry entries_[NSIG] = {};
};

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_PROGRAM_ACTIONS_H_

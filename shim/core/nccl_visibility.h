// What the shim cannot see, said in the trace instead of a silent "healthy".
//
// The shim sees a call to NCCL when it goes through the dynamic linker's
// global lookup (the exported hooks) or through a pointer dlsym/dlvsym
// handed out (interpose/dl_hooks.cc). It cannot see:
//
//   LINKED_IN       NCCL linked into the executable or a framework library
//                   (a module other than libnccl.so defines
//                   ncclCommInitRank): its calls to itself never reach the
//                   dynamic linker. Found from the module's dynamic symbols,
//                   and, for the executable, from its static symbol table on
//                   disk (an unstripped executable that does not export it).
//                   A stripped library with NCCL hidden inside is not found.
//   DEEPBIND        a library dlopen'ed with RTLD_DEEPBIND in a process with
//                   NCCL: it and its dependencies bind to their own
//                   definitions before the shim's.
//   SECOND_LIBRARY  a second libnccl.so (another path): the global lookup
//                   reaches only the first; dlsym lookups reach either.
//   SLOTS_FULL      a dlsym lookup found an NCCL beyond the shim's library
//                   slots (real_nccl.h) and was handed the real function.
//   ACTIVE_UNSEEN   libnccl.so's (or a plugin's) code made C library calls
//                   (sockets, /dev/shm files) before the shim saw any NCCL
//                   call: NCCL was reached some way the shim does not see
//                   (a pointer found without dlsym, RTLD_DEEPBIND). The libc
//                   hooks only note the caller (NoteUntracedCall: a flag when
//                   it is in NCCL's code already known, else its address in a
//                   small ring, judged when the modules are next looked at,
//                   for an NCCL loaded since); the record is written then.
//
// How it notices, given that the trace file only exists once the process
// makes an NCCL call (core/tracer.h), and a process whose NCCL is invisible
// makes none the shim sees: CheckNcclVisibility() looks at every module
// loaded since its last look, at start-up (the shim's constructor), on
// every dlopen (the modules the previous ones loaded), on every dlsym or
// dlvsym of an NCCL name, and at exit. Each finding is written once, to the
// pinned region, creating the trace file if there is none: such a process
// has a trace that says what could not be seen, and `diagnose` notes it.
// A process that hangs before any of these points after loading NCCL
// invisibly (a dlopen of a framework that links NCCL in, then nothing but
// NCCL calls until SIGKILL) is still found at its next dlopen or exit only.
//
// Not on the hot path: everything here walks the module list under the
// loader's lock or reads files; not async-signal-safe. A signal handler
// that reaches it (its exit(), a dlopen) on a thread that is looking
// already skips its own look rather than wait for the frame it interrupted;
// a fork waits for a look another thread is making (NcclVisibilityBeforeFork).

#ifndef NCCLWATCH_SHIM_CORE_NCCL_VISIBILITY_H_
#define NCCLWATCH_SHIM_CORE_NCCL_VISIBILITY_H_

#include <stdint.h>

#include "core/nccl_code.h"

namespace ncclwatch::shim {

enum class NcclNotSeen : uint32_t {  // trace.proto NcclNotSeen.Reason
  kLinkedIn = 1,
  kDeepBind = 2,
  kSecondLibrary = 3,
  kSlotsFull = 4,
  kActiveUnseen = 5,
};

// From the libc hooks, for a call they would record (socket, bind, ...)
// while there is no trace file. HOT PATH: a few loads and stores;
// async-signal-safe.
extern int g_nccl_code_active;
inline constexpr unsigned kUntracedCallers = 32;
extern uintptr_t g_untraced_callers[kUntracedCallers];
extern unsigned g_untraced_next;
inline void NoteUntracedCall(const void* caller) {
  if (FromNccl(caller)) {
    __atomic_store_n(&g_nccl_code_active, 1, __ATOMIC_RELAXED);
    return;
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(caller);
  const unsigned last = __atomic_load_n(&g_untraced_next, __ATOMIC_RELAXED);
  if (__atomic_load_n(&g_untraced_callers[(last - 1) % kUntracedCallers], __ATOMIC_RELAXED) == a)
    return;  // the same call site again (a loop): keep the ring for others
  const unsigned i = __atomic_fetch_add(&g_untraced_next, 1u, __ATOMIC_RELAXED);
  __atomic_store_n(&g_untraced_callers[i % kUntracedCallers], a, __ATOMIC_RELAXED);
}

// Records it (once per reason and path), creating the trace file if needed.
void NoteNcclNotSeen(NcclNotSeen reason, const char* path);

// Looks at the modules loaded since the last call (see above).
void CheckNcclVisibility();

// From the dlopen hook: `name` is being loaded with RTLD_DEEPBIND; noted
// when (or once) the process has NCCL.
void NoteDeepBindDlopen(const char* name);

// Around a fork (pthread_atfork): before it, waits for a look another
// thread is making and keeps the next from starting; after it, in the
// parent and in the child, lets them go. A look walks the modules under
// the loader's lock (dl_iterate_phdr), which glibc does not let go in a
// child forked while another thread held it: the child's first dlopen
// waited for it forever (a DataLoader's worker forked while the main
// thread was in a dlopen's look).
void NcclVisibilityBeforeFork();
void NcclVisibilityAfterFork();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_NCCL_VISIBILITY_H_

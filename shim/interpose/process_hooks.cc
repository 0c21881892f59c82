// How a traced process ends, recorded: fatal signals, exit(), _exit(), main
// returning; and fork (a child must not write its parent's trace).
//
// Signals: at start-up the shim puts its handler in front of whatever the
// program has for SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT,
// SIGQUIT, SIGHUP and SIGXCPU, and it interposes sigaction() and signal() so
// a handler the program installs later goes behind the shim's instead of
// replacing it. The program sees its own handlers through sigaction's
// oldact, exactly as it installed them. The shim's handler records the
// signal (async-signal-safe) and then does what the program asked: calls its
// handler, ignores the signal, or re-raises it with the default action.
// Signals the program ignores are left ignored.
//
// Not on the hot path, except the handler itself: HOT PATH rules apply to
// OnFatalSignal (no allocation, lock or system call before the program's
// own handler runs, beyond re-raising the signal).

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/call_records.h"
#include "core/nccl_visibility.h"
#include "core/tracer.h"
#include "core/watcher.h"
#include "interpose/real_nccl.h"
#include "ncclwatch/trace_fields.h"

using namespace ncclwatch::shim;  // NOLINT: this file is the shim's libc surface

namespace {

constexpr int kWatched[] = {SIGSEGV, SIGBUS, SIGFPE,  SIGILL, SIGABRT,
                            SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGXCPU};

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);
using ExitFn = void (*)(int);

SigactionFn g_real_sigaction = nullptr;
SignalFn g_real_signal = nullptr;
ExitFn g_real_exit = nullptr;
ExitFn g_real_underscore_exit = nullptr;
ExitFn g_real_big_exit = nullptr;

int g_hooks_installed = 0;
int g_on_exit_registered = 0;
struct sigaction g_program_action[NSIG];  // what the program believes is installed
// The process g_program_action belongs to: set by the constructor and in a
// forked child (the fork handler), never by a vfork child, which shares this
// memory with its parent until it execs or exits.
pid_t g_table_pid = 0;

// Whether the caller is a process other than the table's owner: a vfork
// child (CPython's subprocess since 3.10, posix_spawn), or a child cloned
// without fork handlers. Such a child has signal dispositions of its own in
// the kernel, but may share this memory with its parent: what it installs
// must not be written into the table the parent's handler reads. One system
// call (getpid is not cached by glibc): never on the hot path.
bool InAnotherProcess() {
  return static_cast<pid_t>(syscall(SYS_getpid)) != __atomic_load_n(&g_table_pid, __ATOMIC_ACQUIRE);
}

bool Watched(int signo) {
  for (int s : kWatched)
    if (s == signo) return true;
  return false;
}

void ResolveLibc() {
  if (g_real_sigaction == nullptr)
    g_real_sigaction = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
  if (g_real_signal == nullptr)
    g_real_signal = reinterpret_cast<SignalFn>(dlsym(RTLD_NEXT, "signal"));
  if (g_real_exit == nullptr) g_real_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "exit"));
  if (g_real_underscore_exit == nullptr)
    g_real_underscore_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
  if (g_real_big_exit == nullptr)
    g_real_big_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_Exit"));
}

uint32_t Disposition(const struct sigaction& a) {
  if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL) return 0;
  if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN) return 1;
  return 2;
}

void OnFatalSignal(int signo, siginfo_t* info, void* context) {
  const int saved = errno;
  const struct sigaction program = g_program_action[signo];
  if (TracingNow()) RecordFatalSignal(signo, info, Disposition(program));
  switch (Disposition(program)) {
    case 1:  // ignored
      break;
    case 2:  // the program's own handler
      if (program.sa_flags & SA_RESETHAND) {
        g_program_action[signo].sa_handler = SIG_DFL;
        g_program_action[signo].sa_flags &= ~SA_SIGINFO;
      }
      errno = saved;
      if (program.sa_flags & SA_SIGINFO) {
        program.sa_sigaction(signo, info, context);
      } else {
        program.sa_handler(signo);
      }
      return;
    default: {  // the default action: restore it and let it happen
      struct sigaction dfl;
      memset(&dfl, 0, sizeof(dfl));
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      g_real_sigaction(signo, &dfl, nullptr);
      // A fault re-executes the faulting instruction on return; anything else
      // is raised again (it stays pending until this handler returns).
      const bool fault =
          info != nullptr && info->si_code > 0 &&
          (signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL);
      if (!fault) raise(signo);
      break;
    }
  }
  errno = saved;
}

// Installs the shim's handler for `signo` on behalf of the program's `act`.
int InstallFor(int signo, const struct sigaction& act) {
  if (Disposition(act) == 1) return g_real_sigaction(signo, &act, nullptr);  // ignore for real
  struct sigaction ours;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = OnFatalSignal;
  ours.sa_mask = act.sa_mask;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | (act.sa_flags & (SA_RESTART | SA_NODEFER));
  return g_real_sigaction(signo, &ours, nullptr);
}

void InstallSignalHooks() {
  ResolveLibc();
  if (g_real_sigaction == nullptr) return;
  __atomic_store_n(&g_table_pid, static_cast<pid_t>(syscall(SYS_getpid)), __ATOMIC_RELEASE);
  for (int s : kWatched) {
    struct sigaction current;
    if (g_real_sigaction(s, nullptr, &current) != 0) continue;
    g_program_action[s] = current;
    InstallFor(s, current);
  }
  __atomic_store_n(&g_hooks_installed, 1, __ATOMIC_RELEASE);
}

// The child stops tracing its parent's file, and (should anything still
// write there) the forking thread's claim block, which the same thread in
// the parent goes on using, is dropped: the child never writes its slots.
void OnForkChild() {
  __atomic_store_n(&g_table_pid, static_cast<pid_t>(syscall(SYS_getpid)), __ATOMIC_RELEASE);
  g_ring.ForkChild();
  TracerForkChild();
}

// Runs inside exit(), also the one libc makes when main returns (which does
// not go through the exit() hook): it is told the exit status.
void OnExit(int status, void*) {
  CheckNcclVisibility();  // what loaded since the last look, and may not have been seen
  if (TracingNow()) {
    FinalPoll();
    RecordProcessEnd(ncclwatch::fields::process_end::kHowExit, status);
  }
}

// Arms the tracer (the file comes with the first NCCL call: core/tracer.h)
// and installs the process hooks whenever the shim is on, so that a process
// traced later still has its signals and exit recorded. Then looks at the
// modules loaded with the program for NCCL code it cannot see.
__attribute__((constructor)) void NcclwatchStart() {
  ArmTracer();
  ResolveRealNccl();
  ResolveLibc();
  if (__atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) != kOff) {
    InstallSignalHooks();
    pthread_atfork(nullptr, nullptr, OnForkChild);
    g_on_exit_registered = on_exit(OnExit, nullptr) == 0;
    CheckNcclVisibility();
  }
}

// Destructors run before OnExit (the loader registers their runner after the
// shim's constructor registered OnExit), so this records an end with an
// unknown status only when OnExit will not run.
__attribute__((destructor)) void NcclwatchStop() {
  if (!g_on_exit_registered && TracingNow())
    RecordProcessEnd(ncclwatch::fields::process_end::kHowExit, -1);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int sigaction(int signum, const struct sigaction* act,
                                                     struct sigaction* oldact) noexcept {
  ResolveLibc();
  if (g_real_sigaction == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  if (!__atomic_load_n(&g_hooks_installed, __ATOMIC_ACQUIRE) || !Watched(signum)) {
    return g_real_sigaction(signum, act, oldact);
  }
  if (InAnotherProcess()) {
    // A vfork child (e.g. resetting every handler before exec): its own
    // kernel dispositions change, the parent's table does not. Where the
    // shim's handler is still in place it reports what the program installed.
    struct sigaction kernel;
    if (g_real_sigaction(signum, act, &kernel) != 0) return -1;
    if (oldact != nullptr) {
      const bool ours = (kernel.sa_flags & SA_SIGINFO) && kernel.sa_sigaction == OnFatalSignal;
      *oldact = ours ? g_program_action[signum] : kernel;
    }
    return 0;
  }
  const struct sigaction previous = g_program_action[signum];
  if (act != nullptr) {
    if (InstallFor(signum, *act) != 0) return -1;
    g_program_action[signum] = *act;
  }
  if (oldact != nullptr) *oldact = previous;
  return 0;
}

__attribute__((visibility("default"))) sighandler_t signal(int signum,
                                                           sighandler_t handler) noexcept {
  ResolveLibc();
  if (!__atomic_load_n(&g_hooks_installed, __ATOMIC_ACQUIRE) || !Watched(signum)) {
    return g_real_signal ? g_real_signal(signum, handler) : SIG_ERR;
  }
  // glibc's signal(): BSD semantics, the handler stays, interrupted calls restart.
  struct sigaction act, old;
  memset(&act, 0, sizeof(act));
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, signum);
  if (sigaction(signum, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

__attribute__((visibility("default"), noreturn)) void exit(int status) noexcept {
  CheckNcclVisibility();  // what loaded since the last look, and may not have been seen
  if (TracingNow()) {
    FinalPoll();
    RecordProcessEnd(ncclwatch::fields::process_end::kHowExit, status);
  }
  ResolveLibc();
  if (g_real_exit != nullptr) g_real_exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  if (TracingNow()) RecordProcessEnd(ncclwatch::fields::process_end::kHowUnderscoreExit, status);
  ResolveLibc();
  if (g_real_underscore_exit != nullptr) g_real_underscore_exit(status);
  syscall(SYS_exit_group, status);  // no libc to ask: end the process directly
  __builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) noexcept {
  if (TracingNow()) RecordProcessEnd(ncclwatch::fields::process_end::kHowUnderscoreExit, status);
  ResolveLibc();
  if (g_real_big_exit != nullptr) g_real_big_exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

}  // extern "C"

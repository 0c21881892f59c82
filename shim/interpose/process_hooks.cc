// How a traced process ends, recorded: fatal signals, exit(), _exit(),
// _Exit(), quick_exit(), main returning, an exec (the process goes on as
// another program: its trace ends there); and fork (a child must not write
// its parent's trace: it gets its own if it calls NCCL, core/tracer.h).
//
// A vfork child (CPython's subprocess, posix_spawn's fallback) shares the
// parent's memory, and so its trace file, until it execs or exits: what it
// does is its own, never recorded as the parent's end (InAnotherProcess).
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
// own handler runs, beyond re-raising the signal). When the signal's
// default action will end the process, it first asks the watcher's poller
// for a last round and waits for it, at most a second (FinalPollFromSignal:
// atomics, a futex wake and nanosleep, all async-signal-safe; the handler
// itself never calls CUDA).

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/call_records.h"
#include "core/completion.h"
#include "core/nccl_visibility.h"
#include "core/program_actions.h"
#include "core/tracer.h"
#include "core/watcher.h"
#include "interpose/nccl_wrappers.h"
#include "ncclwatch/trace_fields.h"
#include "resolve/nccl_exports.h"
#include "resolve/real_nccl.h"

using namespace ncclwatch::shim;  // NOLINT: this file is the shim's libc surface

namespace {

constexpr int kWatched[] = {SIGSEGV, SIGBUS, SIGFPE,  SIGILL, SIGABRT,
                            SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGXCPU};

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);
using ExitFn = void (*)(int);
using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using ExecvFn = int (*)(const char*, char* const[]);
using FexecveFn = int (*)(int, char* const[], char* const[]);

SigactionFn g_real_sigaction = nullptr;
SignalFn g_real_signal = nullptr;
ExitFn g_real_exit = nullptr;
ExitFn g_real_underscore_exit = nullptr;
ExitFn g_real_big_exit = nullptr;
ExitFn g_real_quick_exit = nullptr;
ExecveFn g_real_execve = nullptr;
ExecvFn g_real_execv = nullptr;
ExecvFn g_real_execvp = nullptr;
ExecveFn g_real_execvpe = nullptr;
FexecveFn g_real_fexecve = nullptr;

int g_hooks_installed = 0;
int g_on_exit_registered = 0;
// What the program believes is installed, whole whoever reads it when
// (core/program_actions.h).
ProgramActions g_program_actions;
// The process g_program_actions belongs to: set by the constructor and in a
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

// glibc's definitions, looked up once: every hook here calls this first,
// and a definition glibc lacks (none is expected) is not asked for again.
int g_libc_resolved = 0;

void ResolveLibc() {
  if (__atomic_load_n(&g_libc_resolved, __ATOMIC_ACQUIRE)) return;
  if (g_real_sigaction == nullptr)
    g_real_sigaction = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
  if (g_real_signal == nullptr)
    g_real_signal = reinterpret_cast<SignalFn>(dlsym(RTLD_NEXT, "signal"));
  if (g_real_exit == nullptr) g_real_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "exit"));
  if (g_real_underscore_exit == nullptr)
    g_real_underscore_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
  if (g_real_big_exit == nullptr)
    g_real_big_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_Exit"));
  if (g_real_quick_exit == nullptr)
    g_real_quick_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "quick_exit"));
  if (g_real_execve == nullptr)
    g_real_execve = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execve"));
  if (g_real_execv == nullptr) g_real_execv = reinterpret_cast<ExecvFn>(dlsym(RTLD_NEXT, "execv"));
  if (g_real_execvp == nullptr)
    g_real_execvp = reinterpret_cast<ExecvFn>(dlsym(RTLD_NEXT, "execvp"));
  if (g_real_execvpe == nullptr)
    g_real_execvpe = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execvpe"));
  if (g_real_fexecve == nullptr)
    g_real_fexecve = reinterpret_cast<FexecveFn>(dlsym(RTLD_NEXT, "fexecve"));
  __atomic_store_n(&g_libc_resolved, 1, __ATOMIC_RELEASE);
}

// Whether this process's end goes into the trace: it is traced, and the
// caller is not a vfork child (whose exit or exec is its own, not the end
// of the parent whose memory it borrows).
bool EndIsOurs() { return TracingNow() && !InAnotherProcess(); }

// Before an exec: the trace ends here, as a handover (ProcessEnd EXEC), with
// one last completion query, as at exit. If the exec returns, it failed and
// the process lives on: a second record (EXEC_FAILED) voids the first. The
// query is the poller's (FinalPollFromSignal): exec is async-signal-safe, a
// handler may re-exec the program (on SIGHUP), and the thread it
// interrupted may hold a lock of the CUDA driver's that a query on this
// thread would wait for forever.
void BeforeExec() {
  if (!EndIsOurs()) return;
  FinalPollFromSignal();
  RecordProcessEnd(ncclwatch::fields::process_end::kHowExec, 0, false);
}
int AfterExec(int r) {
  const int err = errno;
  if (EndIsOurs()) RecordProcessEnd(ncclwatch::fields::process_end::kHowExecFailed, -1, false);
  errno = err;
  return r;
}
int NoExec() {
  errno = ENOSYS;
  return -1;
}

// As the kernel reads an action: SIG_DFL and SIG_IGN whatever the flags
// (SA_SIGINFO too: the handler and the three-argument handler are one field).
uint32_t Disposition(const struct sigaction& a) {
  if (a.sa_handler == SIG_DFL) return 0;
  if (a.sa_handler == SIG_IGN) return 1;
  return 2;
}

void OnFatalSignal(int signo, siginfo_t* info, void* context) {
  const int saved = errno;
  // A store into the trace file's mapping after the file was truncated: the
  // shim's own fault, not the program's. The mapping is patched with memory
  // and the store runs again on return (ring_writer.h, RescueFault).
  if (signo == SIGBUS && info != nullptr && info->si_code == BUS_ADRERR &&
      g_ring.RescueFault(info->si_addr)) {
    errno = saved;
    return;
  }
  uint32_t generation = 0;
  const struct sigaction program = g_program_actions.Get(signo, &generation);
  if (TracingNow()) RecordFatalSignal(signo, info, Disposition(program));
  switch (Disposition(program)) {
    case 1:  // ignored
      break;
    case 2:  // the program's own handler
      if (program.sa_flags & SA_RESETHAND) g_program_actions.Reset(signo, generation);
      errno = saved;
      if (program.sa_flags & SA_SIGINFO) {
        program.sa_sigaction(signo, info, context);
      } else {
        program.sa_handler(signo);
      }
      return;
    default: {  // the default action: restore it and let it happen
      // The process dies now: a last round of completion queries first (by
      // the poller, never here), so a CUDA error just met reaches the trace.
      if (TracingNow() && !InAnotherProcess()) FinalPollFromSignal();
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
  // The program's flags that change how the handler runs: its alternate
  // stack only where it asked for it (a handler that needs more than a small
  // sigaltstack must not be moved onto one), restarts, nesting. Where the
  // program has no handler (the default action), the shim's runs on the
  // thread's stack too: on a tiny alternate stack it could fault, and turn a
  // death by SIGTERM into one by SIGSEGV. (A thread that overflowed its
  // stack then dies of SIGSEGV unrecorded, as it dies without the shim.)
  ours.sa_flags = SA_SIGINFO | (act.sa_flags & (SA_ONSTACK | SA_RESTART | SA_NODEFER));
  return g_real_sigaction(signo, &ours, nullptr);
}

void InstallSignalHooks() {
  ResolveLibc();
  if (g_real_sigaction == nullptr) return;
  __atomic_store_n(&g_table_pid, static_cast<pid_t>(syscall(SYS_getpid)), __ATOMIC_RELEASE);
  for (int s : kWatched) {
    struct sigaction current;
    if (g_real_sigaction(s, nullptr, &current) != 0) continue;
    g_program_actions.Set(s, current);
    InstallFor(s, current);
  }
  __atomic_store_n(&g_hooks_installed, 1, __ATOMIC_RELEASE);
}

// The child stops tracing its parent's file, and (should anything still
// write there) the forking thread's claim block, which the same thread in
// the parent goes on using, is dropped: the child never writes its slots.
void OnForkChild() {
  __atomic_store_n(&g_table_pid, static_cast<pid_t>(syscall(SYS_getpid)), __ATOMIC_RELEASE);
  g_program_actions.ForkChild();
  g_ring.ForkChild();
  CompletionForkChild();
  TracerForkChild();
}

// Runs inside exit(), also the one libc makes when main returns (which does
// not go through the exit() hook): it is told the exit status.
void OnExit(int status, void*) {
  if (InAnotherProcess()) return;  // a vfork child that called exit()
  CheckNcclVisibility();           // what loaded since the last look, and may not have been seen
  if (TracingNow()) {
    FinalPoll();
    RecordProcessEnd(ncclwatch::fields::process_end::kHowExit, status);
  }
}

// The shim's locks around a fork: no fork while another thread walks the
// modules under the loader's lock for the shim (a child forked then waited
// forever for it in its first dlopen; a DataLoader forks by the dozen), and
// none the child would wait on forever. Whether the shim is on or off: the
// exports follow dlopen either way. The visibility look may update the
// exports inside it, never the other way round: taken in that order.
void LocksBeforeFork() {
  NcclVisibilityBeforeFork();
  NcclExportsBeforeFork();
}
void LocksAfterForkInParent() {
  NcclExportsAfterFork();
  NcclVisibilityAfterFork();
}
void LocksAfterForkInChild() {
  NcclExportsAfterFork();
  NcclVisibilityAfterFork();
  NcclWrappersForkChild();
}

// Arms the tracer (the file comes with the first NCCL call: core/tracer.h)
// and installs the process hooks whenever the shim is on, so that a process
// traced later still has its signals and exit recorded. Then looks at the
// modules loaded with the program for NCCL code it cannot see.
__attribute__((constructor)) void NcclwatchStart() {
  __atomic_store_n(&g_table_pid, static_cast<pid_t>(syscall(SYS_getpid)), __ATOMIC_RELEASE);
  pthread_atfork(LocksBeforeFork, LocksAfterForkInParent, LocksAfterForkInChild);
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
  if (!g_on_exit_registered && EndIsOurs())
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
      *oldact = ours ? g_program_actions.Get(signum) : kernel;
    }
    return 0;
  }
  const struct sigaction previous = g_program_actions.Get(signum);
  if (act != nullptr) {
    // Read once, here: the kernel's action and the table's are the same
    // one, and a bad pointer faults before any signal is blocked.
    const struct sigaction wanted = *act;
    if (InstallFor(signum, wanted) != 0) return -1;
    g_program_actions.Set(signum, wanted);
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
  if (!InAnotherProcess()) {
    CheckNcclVisibility();  // what loaded since the last look, and may not have been seen
    if (TracingNow()) {
      FinalPoll();
      RecordProcessEnd(ncclwatch::fields::process_end::kHowExit, status);
    }
  }
  ResolveLibc();
  if (g_real_exit != nullptr) g_real_exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

// A vfork child's _exit (after its exec failed: a subprocess of a missing
// program) is not the parent's end.
__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  if (EndIsOurs()) {
    FinalPollFromSignal();  // _exit may be called from a signal handler: only the poller queries
    RecordProcessEnd(ncclwatch::fields::process_end::kHowUnderscoreExit, status);
  }
  ResolveLibc();
  if (g_real_underscore_exit != nullptr) g_real_underscore_exit(status);
  syscall(SYS_exit_group, status);  // no libc to ask: end the process directly
  __builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) noexcept {
  if (EndIsOurs()) {
    FinalPollFromSignal();
    RecordProcessEnd(ncclwatch::fields::process_end::kHowUnderscoreExit, status);
  }
  ResolveLibc();
  if (g_real_big_exit != nullptr) g_real_big_exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

// quick_exit runs the at_quick_exit handlers and ends the process with an
// _exit of its own, inside glibc, that the _exit hook never sees. A signal
// handler may call it (C11): the last query is the poller's, as at _exit.
__attribute__((visibility("default"), noreturn)) void quick_exit(int status) noexcept {
  if (EndIsOurs()) {
    FinalPollFromSignal();
    RecordProcessEnd(ncclwatch::fields::process_end::kHowQuickExit, status);
  }
  ResolveLibc();
  if (g_real_quick_exit != nullptr) g_real_quick_exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

// The exec family. glibc's own execl, execle and execlp reach execve inside
// glibc, where no hook sees it, so each entry point is here; the list forms
// are passed on as the vector forms, as glibc does.

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[],
                                                  char* const envp[]) noexcept {
  if (g_real_execve == nullptr) return NoExec();
  BeforeExec();
  return AfterExec(g_real_execve(path, argv, envp));
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) noexcept {
  if (g_real_execv == nullptr) return NoExec();
  BeforeExec();
  return AfterExec(g_real_execv(path, argv));
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) noexcept {
  if (g_real_execvp == nullptr) return NoExec();
  BeforeExec();
  return AfterExec(g_real_execvp(file, argv));
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[],
                                                   char* const envp[]) noexcept {
  if (g_real_execvpe == nullptr) return NoExec();
  BeforeExec();
  return AfterExec(g_real_execvpe(file, argv, envp));
}

__attribute__((visibility("default"))) int fexecve(int fd, char* const argv[],
                                                   char* const envp[]) noexcept {
  if (g_real_fexecve == nullptr) return NoExec();
  BeforeExec();
  return AfterExec(g_real_fexecve(fd, argv, envp));
}

}  // extern "C"

namespace {

// The arguments of execl, execle, execlp (arg, ..., NULL) as a vector on the
// stack; `envp` takes what follows the NULL when asked (execle).
#define NCCLWATCH_EXEC_ARGS(arg, argv, envp_out)                                    \
  size_t count = 1;                                                                 \
  {                                                                                 \
    va_list ap;                                                                     \
    va_start(ap, arg);                                                              \
    while (va_arg(ap, const char*) != nullptr) ++count;                             \
    va_end(ap);                                                                     \
  }                                                                                 \
  auto** argv = static_cast<char**>(__builtin_alloca((count + 1) * sizeof(char*))); \
  {                                                                                 \
    va_list ap;                                                                     \
    va_start(ap, arg);                                                              \
    argv[0] = const_cast<char*>(arg);                                               \
    for (size_t i = 1; i <= count; ++i) argv[i] = va_arg(ap, char*);                \
    if (envp_out != nullptr) *envp_out = va_arg(ap, char* const*);                  \
    va_end(ap);                                                                     \
  }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) noexcept {
  char* const** no_envp = nullptr;
  NCCLWATCH_EXEC_ARGS(arg, argv, no_envp);
  return execv(path, argv);
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) noexcept {
  char* const** no_envp = nullptr;
  NCCLWATCH_EXEC_ARGS(arg, argv, no_envp);
  return execvp(file, argv);
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) noexcept {
  char* const* envp = nullptr;
  char* const** envp_out = &envp;
  NCCLWATCH_EXEC_ARGS(arg, argv, envp_out);
  return execve(path, argv, envp);
}

}  // extern "C"

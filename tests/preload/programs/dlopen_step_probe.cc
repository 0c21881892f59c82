// dlopen_step_probe: a signal handler that runs at every instruction of the
// shim's dlopen hook while the program loads NCCL (a framework's way: the
// program is not linked with it). The dlopen runs single-stepped (x86's
// trap flag, set from a signal handler's context); after each instruction
// that is the shim's, the SIGTRAP handler:
//
//   dlopen_step_probe LIBNCCL              calls ncclGetVersion (the shim's
//                                          export, found before NCCL was
//                                          loaded), as a handler of a
//                                          program that uses NCCL may
//   dlopen_step_probe LIBNCCL --exit-at I  calls exit(7) at the I-th of the
//                                          shim's instructions, as a
//                                          SIGTERM handler that exits does
//   dlopen_step_probe LIBNCCL --fork-at I  has another thread fork at the
//                                          I-th (a DataLoader's worker
//                                          forked while this thread was in
//                                          the hook; waits for it 200 ms at
//                                          most); the child dlopens LIBNCCL
//                                          and exits 0, or is killed after
//                                          10 s
//
// The hook looks at the modules loaded (core/nccl_visibility.h) and updates
// the shim's exports (resolve/nccl_exports.h) under locks of its own: a
// handler's call that came back to them on the same thread waited there
// forever. stdout: what the program saw (the same with and without the
// shim); stderr: how many instructions were stepped and how many were the
// shim's.

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "single_step.h"

namespace {

using single_step::Stepping;

// The executable segments of the module that exports ncclGetVersion before
// NCCL is loaded: the shim, when preloaded.
single_step::Segments g_hooks;

using GetVersion = int (*)(int*);
GetVersion g_get_version = nullptr;
long g_exit_at = -1;
long g_fork_at = -1;
const char* g_library = nullptr;
// --fork-at: the handler asks the other thread to fork (1) and waits until
// it has, and its child is done (2); the child's end: 0 it exited 0, 1 it
// ended otherwise, 2 it hung and was killed.
volatile int g_fork_state = 0;
volatile int g_child_end = -1;

void Nap() {
  timespec ms{0, 1000000};
  nanosleep(&ms, nullptr);
}

// The other thread: forks when asked; the child loads the library again.
void Forker() {
  while (__atomic_load_n(&g_fork_state, __ATOMIC_ACQUIRE) != 1) Nap();
  const pid_t child = fork();
  if (child == 0) _exit(dlopen(g_library, RTLD_NOW | RTLD_GLOBAL) != nullptr ? 0 : 3);
  int status = 0, end = 2;
  for (int waited = 0; waited < 10000; ++waited) {
    if (waitpid(child, &status, WNOHANG) == child) {
      end = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
      break;
    }
    Nap();
  }
  if (end == 2) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  g_child_end = end;
  __atomic_store_n(&g_fork_state, 2, __ATOMIC_RELEASE);
}

volatile long g_steps = 0, g_inside = 0, g_calls = 0;

void OnStep(int, siginfo_t*, void* context) {
  ++g_steps;
  if (!g_hooks.Holds(single_step::Pc(context))) return;
  const long at = g_inside++;
  if (at == g_exit_at) exit(7);
  if (at == g_fork_at) {
    // The other thread forks now, while this one is here. Waited for, but
    // not forever: a shim that makes a fork wait for the hook to finish
    // (what it must do) forks once this thread goes on.
    __atomic_store_n(&g_fork_state, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 200 && __atomic_load_n(&g_fork_state, __ATOMIC_ACQUIRE) != 2; ++i) Nap();
  }
  if (g_exit_at >= 0 || g_fork_at >= 0) return;
  const int saved = errno;
  int version = 0;
  g_get_version(&version);  // before NCCL's symbols are there, the shim's answer
  ++g_calls;
  errno = saved;
}

}  // namespace

int main(int argc, char** argv) {
  g_library = argv[argc > 1 ? 1 : 0];
  if (argc == 4 && std::strcmp(argv[2], "--exit-at") == 0) {
    g_exit_at = std::strtol(argv[3], nullptr, 10);
  } else if (argc == 4 && std::strcmp(argv[2], "--fork-at") == 0) {
    g_fork_at = std::strtol(argv[3], nullptr, 10);
  } else if (argc != 2) {
    std::fprintf(stderr, "usage: dlopen_step_probe LIBNCCL [--exit-at I | --fork-at I]\n");
    return 2;
  }
  std::thread forker;
  if (g_fork_at >= 0) forker = std::thread(Forker);
  g_get_version = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  if (g_get_version != nullptr) g_hooks.OfModuleAt(reinterpret_cast<void*>(g_get_version));
  single_step::Install(OnStep);

  Stepping(true);
  void* nccl = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  Stepping(false);
  if (g_fork_at >= 0) {
    if (__atomic_load_n(&g_fork_state, __ATOMIC_ACQUIRE) == 0) {  // never reached: fork now
      __atomic_store_n(&g_fork_state, 1, __ATOMIC_RELEASE);
      while (__atomic_load_n(&g_fork_state, __ATOMIC_ACQUIRE) != 2) Nap();
    }
    forker.join();
    std::printf("dlopen_step_probe: the child forked at %ld %s\n", g_fork_at,
                g_child_end == 0   ? "loaded NCCL and exited"
                : g_child_end == 1 ? "failed"
                                   : "hung");
  }
  if (nccl == nullptr) {
    std::printf("dlopen_step_probe: %s\n", dlerror());
    return 3;
  }
  auto get_version = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  int version = 0;
  const int r = get_version != nullptr ? get_version(&version) : -1;
  std::printf("dlopen_step_probe: NCCL loaded, ncclGetVersion -> %d\n", r);
  std::fprintf(stderr,
               "stepped: %ld instructions, %ld in the hooks' module, %ld calls from the handler\n",
               static_cast<long>(g_steps), static_cast<long>(g_inside), static_cast<long>(g_calls));
  return 0;
}

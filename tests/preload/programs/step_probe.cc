// step_probe: a signal handler that calls NCCL at every instruction of the
// shim's hot path. On the do-nothing NCCL and CUDA driver (tests/fakes/):
// after a warm-up, some NCCL calls run single-stepped (x86's trap flag, set
// from a signal handler's context), and after each instruction that is the
// shim's (the module that defines ncclAllReduce, found as the program finds
// it), the SIGTRAP handler calls NCCL itself: ncclGetVersion,
// ncclCommGetAsyncError on the interrupted call's communicator, and an
// AllReduce on a communicator of its own; and open() and accept4(), which
// the shim stands in front of too. The stepped calls: an AllReduce, a group with a
// Send, a query, a failing open and a socket, a communicator's init and
// destroy; with --from-start, the process's first listen (the handler
// then at the loader's instructions) and first NCCL call. A hot path that takes a lock, or
// waits for state its own thread leaves half-made, hangs here; one that
// loses or doubles a record shows in the trace (preload_test).
//
//   step_probe LIBCUDA [--from-start]
//
// stdout: what the program saw (the same with and without the shim);
// stderr: how many instructions were stepped, how many were the shim's, and
// how many NCCL calls the handler made.

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <nccl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "single_step.h"

namespace {

using single_step::Stepping;

// The executable segments of the module that defines ncclAllReduce, and of
// the dynamic loader.
single_step::Segments g_hooks, g_loader;

constexpr const char* kMissing = "/dev/shm/ncclwatch-step-probe-missing";

ncclComm_t g_comm = nullptr;     // the stepped calls'
ncclComm_t g_handler = nullptr;  // the handler's own AllReduces'
float g_handler_buf[4];

// The handler calls at the loader's instructions instead of the shim's
// (a first C library call: the shim's look-up of glibc's definition with
// dlsym runs in the loader).
volatile sig_atomic_t g_in_loader = 0;
// Set once each communicator's init returned: the handler uses it from then on.
volatile sig_atomic_t g_comm_ready = 0, g_handler_ready = 0;
volatile long g_steps = 0, g_inside = 0, g_nested = 0, g_handler_reduces = 0, g_failures = 0;
volatile long g_in_loader_steps = 0;  // the loader's instructions the handler ran at

void OnStep(int, siginfo_t*, void* context) {
  ++g_steps;
  if (!(g_in_loader ? g_loader : g_hooks).Holds(single_step::Pc(context))) return;
  ++(g_in_loader ? g_in_loader_steps : g_inside);
  const int saved = errno;
  int version = 0;
  g_failures += ncclGetVersion(&version) != ncclSuccess || version != NCCL_VERSION_CODE;
  ++g_nested;
  if (g_comm_ready) {
    ncclResult_t async = ncclInternalError;
    g_failures += ncclCommGetAsyncError(g_comm, &async) != ncclSuccess || async != ncclSuccess;
    ++g_nested;
  }
  if (g_handler_ready) {
    g_failures += ncclAllReduce(g_handler_buf, g_handler_buf, 4, ncclFloat32, ncclSum, g_handler,
                                nullptr) != ncclSuccess;
    ++g_nested;
    ++g_handler_reduces;
  }
  // And a C library call the shim stands in front of.
  const int fd = open(kMissing, O_RDONLY);
  g_failures += fd >= 0 || errno != ENOENT;
  errno = 0;
  g_failures += accept4(-1, nullptr, nullptr, 0) != -1 || errno != EBADF;
  g_nested += 2;
  errno = saved;
}

int Check(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return 0;
  std::printf("step_probe: %s -> %d\n", what, static_cast<int>(r));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool from_start = argc == 3 && std::strcmp(argv[2], "--from-start") == 0;
  if (argc != 2 && !from_start) {
    std::fprintf(stderr, "usage: step_probe LIBCUDA [--from-start]\n");
    return 2;
  }
  if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::fprintf(stderr, "step_probe: %s\n", dlerror());
    return 2;
  }
  // The hot path as the program reaches it: the shim's hooks when preloaded.
  if (!g_hooks.OfModuleAt(dlsym(RTLD_DEFAULT, "ncclAllReduce")) ||
      !g_loader.OfModuleNamed("ld-linux")) {
    std::fprintf(stderr, "step_probe: no module holds ncclAllReduce, or no loader\n");
    return 2;
  }
  single_step::Install(OnStep);

  int failures = 0;
  // --from-start: the process's first NCCL call stepped too, where the
  // trace turns from what came before NCCL (the rendezvous) to NCCL's
  // calls. (Not the first communicator's init: the shim starts its
  // completion thread there with every signal blocked for a moment, so
  // that the thread inherits no signal of the program's, and a trap while
  // SIGTRAP is blocked kills the process.)
  if (from_start) {
    // The process's first listen, the handler's calls at the loader's
    // instructions: the shim looked glibc's definition up there, at the
    // first call, and a handler's first accept4 then failed with ENOSYS.
    g_in_loader = 1;
    Stepping(true);
    errno = 0;
    failures += listen(-1, 0) != -1 || errno != EBADF;
    Stepping(false);
    g_in_loader = 0;
    Stepping(true);
    int version = 0;
    failures +=
        Check(ncclGetVersion(&version), "ncclGetVersion (first)") + (version != NCCL_VERSION_CODE);
    Stepping(false);
  }
  // One id for each communicator, as NCCL requires.
  ncclUniqueId id[3];
  for (int i = 0; i < 3; ++i) std::memset(&id[i], 7 + i, sizeof(id[i]));
  failures += Check(ncclCommInitRank(&g_comm, 1, id[0], 0), "ncclCommInitRank");
  g_comm_ready = 1;
  failures += Check(ncclCommInitRank(&g_handler, 1, id[1], 0), "ncclCommInitRank (handler's)");
  g_handler_ready = 1;
  float buf[4] = {1, 2, 3, 4};
  // The warm-up: every call below once, unstepped (symbols bound, the ring
  // grown, completion tracking set up).
  auto calls = [&] {
    failures +=
        Check(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, g_comm, nullptr), "ncclAllReduce");
    failures += Check(ncclGroupStart(), "ncclGroupStart");
    failures += Check(ncclSend(buf, 4, ncclFloat32, 0, g_comm, nullptr), "ncclSend");
    failures += Check(ncclGroupEnd(), "ncclGroupEnd");
    int count = 0;
    failures += Check(ncclCommCount(g_comm, &count), "ncclCommCount") + (count != 8);
    // C library calls the shim stands in front of: errno as the C library left it.
    errno = 0;
    const int fd = open(kMissing, O_RDONLY);
    failures += fd >= 0 || errno != ENOENT;
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    failures += s < 0;
    if (s >= 0) close(s);
  };
  calls();
  failures += Check(
      ncclAllReduce(g_handler_buf, g_handler_buf, 4, ncclFloat32, ncclSum, g_handler, nullptr),
      "ncclAllReduce (handler's)");

  Stepping(true);
  calls();
  // A communicator made and destroyed, stepped too.
  ncclComm_t third = nullptr;
  failures += Check(ncclCommInitRank(&third, 1, id[2], 0), "ncclCommInitRank (stepped)");
  failures += Check(ncclCommDestroy(third), "ncclCommDestroy (stepped)");
  Stepping(false);

  failures += Check(ncclCommDestroy(g_handler), "ncclCommDestroy (handler's)");
  failures += Check(ncclCommDestroy(g_comm), "ncclCommDestroy");
  std::printf("step_probe: %d failures, %ld in the handler\n", failures,
              static_cast<long>(g_failures));
  std::fprintf(stderr,
               "stepped: %ld instructions, %ld in the hooks' module, %ld calls from the handler, "
               "%ld AllReduces, %ld in the loader under the first listen\n",
               static_cast<long>(g_steps), static_cast<long>(g_inside), static_cast<long>(g_nested),
               static_cast<long>(g_handler_reduces), static_cast<long>(g_in_loader_steps));
  return 0;
}

// The tracer's one non-signal-safe moment, the making of the trace file
// (core/tracer.h): a signal handler that calls NCCL on the thread making it
// is forwarded untraced, never made to wait for the code it interrupted.
//
// The window that matters is one instruction wide: right after the thread
// claims the work (the state kInitializing). The test stops there for
// certain by single-stepping the thread (x86's trap flag, set in a signal
// handler's context): at the first instruction after which the state reads
// kInitializing, the SIGTRAP handler calls EnsureTracing(), as a program's
// handler calling NCCL would. Each run is a forked child, so the tracer
// starts from nothing and a handler that waits forever fails the test
// after 20 seconds instead of hanging it.

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "core/tracer.h"
#include "support/traced_job.h"

namespace {

namespace shim = ncclwatch::shim;

constexpr greg_t kTrapFlag = 0x100;  // EFLAGS.TF

volatile sig_atomic_t g_stepping = 0;
volatile sig_atomic_t g_probed = 0;         // the handler's EnsureTracing() ran
volatile sig_atomic_t g_probe_traced = -1;  // what it returned
volatile sig_atomic_t g_steps = 0;

void StartStepping(int, siginfo_t*, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  uc->uc_mcontext.gregs[REG_EFL] |= kTrapFlag;
  g_stepping = 1;
}

// After each instruction of the thread while it steps.
void OnStep(int, siginfo_t*, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  ++g_steps;
  if (__atomic_load_n(&shim::g_tracer_state, __ATOMIC_ACQUIRE) != shim::kInitializing) return;
  // The file is claimed and not made: here, as a program's handler would,
  // one NCCL call's look at the tracer.
  g_probe_traced = shim::EnsureTracing() ? 1 : 0;
  g_probed = 1;
  uc->uc_mcontext.gregs[REG_EFL] &= ~kTrapFlag;  // the rest runs at full speed
  g_stepping = 0;
}

// The child: steps into the tracer's first call, exits 0 when the handler
// came back untraced and the file was made after all, 3 when the window was
// never seen, 4 when the handler's call was traced.
[[noreturn]] void Child(const std::string& dir) {
  setenv("NCCLWATCH_DIR", dir.c_str(), 1);
  setenv("NCCLWATCH_RING_SIZE", "1M", 1);
  struct sigaction sa = {};
  sa.sa_flags = SA_SIGINFO;
  sa.sa_sigaction = OnStep;
  sigaction(SIGTRAP, &sa, nullptr);
  sa.sa_sigaction = StartStepping;
  sigaction(SIGUSR2, &sa, nullptr);
  raise(SIGUSR2);  // returns with the trap flag set
  const bool traced = shim::EnsureTracing();
  g_stepping = 0;
  if (!g_probed) _exit(3);
  if (g_probe_traced != 0) _exit(4);
  _exit(traced && shim::TracingNow() ? 0 : 5);
}

}  // namespace

TEST_CASE(
    "a signal handler that calls NCCL right after its thread claimed the trace file's making "
    "is forwarded untraced, not made to wait",
    "[shim][tracer][signals]") {
  // Before: the thread marked itself as the file's maker only after the
  // claim, and a handler that ran in between waited for the file, on the
  // very thread that was to make it: forever.
  jobs::TempDir dir;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) Child(dir.path());
  int status = 0;
  pid_t done = 0;
  const time_t deadline = time(nullptr) + 20;
  while ((done = waitpid(child, &status, WNOHANG)) == 0 && time(nullptr) < deadline) usleep(10000);
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  INFO(
      "0: untraced and the file made; 3: the window never seen; 4: the handler's call traced; "
      "5: no file");
  REQUIRE(done == child);  // not killed at the deadline: nothing waited forever
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

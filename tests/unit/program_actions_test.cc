// The table of the program's signal actions that the shim's handler reads
// (shim/core/program_actions.h): whoever reads it, whenever, gets an action
// the program installed, whole, as the kernel gives a signal its action.

#include "core/program_actions.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

namespace {

using ncclwatch::shim::ProgramActions;

void HandlerA(int, siginfo_t*, void*) {}
void HandlerB(int) {}

// Two actions that differ in every part: the handler, the flags, each
// word of the mask.
struct sigaction ActionA() {
  struct sigaction a;
  memset(&a, 0, sizeof(a));
  a.sa_sigaction = HandlerA;
  a.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&a.sa_mask);
  return a;
}
struct sigaction ActionB() {
  struct sigaction b;
  memset(&b, 0, sizeof(b));
  b.sa_handler = HandlerB;
  b.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&b.sa_mask);
  return b;
}

// Field by field (a copy of a struct need not copy its padding).
bool Same(const struct sigaction& x, const struct sigaction& y) {
  return x.sa_handler == y.sa_handler && x.sa_flags == y.sa_flags &&
         memcmp(&x.sa_mask, &y.sa_mask, sizeof(x.sa_mask)) == 0 && x.sa_restorer == y.sa_restorer;
}

ProgramActions g_table;
std::atomic<long> g_handled{0}, g_torn_in_handler{0};

// A signal on the thread that writes: what its handler reads is whole.
void ReadOnSignal(int) {
  const struct sigaction got = g_table.Get(SIGTERM);
  if (!Same(got, ActionA()) && !Same(got, ActionB())) ++g_torn_in_handler;
  ++g_handled;
}

}  // namespace

TEST_CASE("a reader on another thread never sees half of one action and half of another",
          "[program_actions]") {
  static ProgramActions table;
  const struct sigaction a = ActionA(), b = ActionB();
  table.Set(SIGTERM, a);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(std::memory_order_relaxed) && i < 2000000; ++i)
      table.Set(SIGTERM, (i & 1) ? a : b);
    stop = true;
  });
  long reads = 0, torn = 0, seen_a = 0, seen_b = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    const struct sigaction got = table.Get(SIGTERM);
    ++reads;
    if (Same(got, a)) {
      ++seen_a;
    } else if (Same(got, b)) {
      ++seen_b;
    } else {
      ++torn;
    }
  }
  writer.join();
  INFO(reads << " reads: " << seen_a << " of A, " << seen_b << " of B");
  CHECK(torn == 0);
  CHECK(reads > 0);
  CHECK(seen_a + seen_b == reads);
}

TEST_CASE("a signal handler on the writing thread reads a whole action", "[program_actions]") {
  const struct sigaction a = ActionA(), b = ActionB();
  g_table.Set(SIGTERM, a);
  // The test's own handler for SIGUSR1 (this process has no shim).
  struct sigaction on_usr1;
  memset(&on_usr1, 0, sizeof(on_usr1));
  on_usr1.sa_handler = ReadOnSignal;
  sigemptyset(&on_usr1.sa_mask);
  struct sigaction before;
  REQUIRE(sigaction(SIGUSR1, &on_usr1, &before) == 0);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(std::memory_order_relaxed); ++i)
      g_table.Set(SIGTERM, (i & 1) ? a : b);
  });
  const pthread_t target = writer.native_handle();
  const long wanted = 20000;
  for (long sent = 0; g_handled.load() < wanted && sent < 50 * wanted; ++sent) {
    pthread_kill(target, SIGUSR1);
    if (sent % 64 == 0) std::this_thread::yield();
  }
  stop = true;
  writer.join();
  REQUIRE(sigaction(SIGUSR1, &before, nullptr) == 0);
  INFO(g_handled.load() << " signals handled on the writing thread");
  CHECK(g_handled.load() > 0);
  CHECK(g_torn_in_handler.load() == 0);
}

TEST_CASE("SA_RESETHAND resets the action the handler read, never one installed since",
          "[program_actions]") {
  ProgramActions table;
  // Nothing set: the default action.
  uint32_t generation = 99;
  struct sigaction none = table.Get(SIGINT, &generation);
  CHECK(none.sa_handler == SIG_DFL);
  CHECK(none.sa_flags == 0);
  CHECK(generation == 0);

  struct sigaction once = ActionA();
  once.sa_flags |= SA_RESETHAND;
  table.Set(SIGINT, once);
  table.Get(SIGINT, &generation);
  table.Reset(SIGINT, generation);
  const struct sigaction reset = table.Get(SIGINT);
  CHECK(reset.sa_handler == SIG_DFL);
  // The rest of the action stays as the program gave it, as the kernel
  // leaves it: its flags and its mask.
  CHECK(reset.sa_flags == once.sa_flags);
  CHECK(memcmp(&reset.sa_mask, &once.sa_mask, sizeof(reset.sa_mask)) == 0);
  // A reset is a store, taken again as often as the signal comes.
  table.Reset(SIGINT, generation);
  CHECK(table.Get(SIGINT).sa_handler == SIG_DFL);
  // The program's next action is its own again.
  table.Set(SIGINT, once);
  CHECK(Same(table.Get(SIGINT), once));

  // Read, then replaced by the program before the handler's reset: the
  // program's new action stands.
  table.Set(SIGINT, once);
  table.Get(SIGINT, &generation);
  table.Set(SIGINT, ActionB());
  table.Reset(SIGINT, generation);
  CHECK(Same(table.Get(SIGINT), ActionB()));

  // Another signal's entry is its own.
  table.Set(SIGTERM, ActionA());
  CHECK(Same(table.Get(SIGTERM), ActionA()));
  CHECK(Same(table.Get(SIGINT), ActionB()));
  // Numbers outside the kernel's give the default action and change nothing.
  table.Set(0, ActionA());
  table.Set(NSIG, ActionA());
  CHECK(table.Get(0).sa_handler == SIG_DFL);
  CHECK(table.Get(NSIG).sa_handler == SIG_DFL);
}

// A fork while another thread is inside Set: in the child that thread is
// gone, and the child's own sigaction() must not wait for it (nor its
// SA_RESETHAND give way to it forever).
TEST_CASE("a child forked during another thread's write writes its own actions",
          "[program_actions]") {
  static ProgramActions table;
  const struct sigaction a = ActionA(), b = ActionB();
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) table.Set(SIGTERM, (i & 1) ? a : b);
  });
  int hung = 0, wrong = 0;
  for (int i = 0; i < 200; ++i) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      table.ForkChild();  // as the shim's fork handler calls it
      table.Set(SIGTERM, a);
      uint32_t generation = 0;
      const struct sigaction got = table.Get(SIGTERM, &generation);
      table.Reset(SIGTERM, generation);
      const bool reset = table.Get(SIGTERM).sa_handler == SIG_DFL;
      _exit(Same(got, a) && reset ? 0 : 1);
    }
    // Each child has 10 s to answer (it takes microseconds).
    int status = 0;
    pid_t done = 0;
    for (int waited_ms = 0; (done = waitpid(child, &status, WNOHANG)) == 0 && waited_ms < 10000;
         waited_ms += 10)
      usleep(10000);
    if (done == 0) {
      ++hung;
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      continue;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++wrong;
  }
  stop = true;
  writer.join();
  CHECK(hung == 0);
  CHECK(wrong == 0);
}

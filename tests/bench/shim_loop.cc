// The whole process, as a job runs it: a program linked against NCCL (the
// do-nothing one, libnccl.so.2) that calls ncclAllReduce in a loop on one or
// more threads, each on its own communicator, run once plain and once with
// libncclwatch.so in LD_PRELOAD (the caller does that: scripts, README).
// Prints the wall-clock nanoseconds per call of each thread (the median of
// the threads), and the process's CPU nanoseconds per call.
//
//   shim_loop [--threads T] [--calls N] [--instructions K]
//
// --instructions K: instead, counts the instructions K calls execute on one
// thread, exactly, by single-stepping them under ptrace (no PMU needed; KVM
// guests often have none), minus the same run with no calls; prints
// instructions per call.

#include <nccl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double CpuNs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
          static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec)) *
         1e3;
}

ncclComm_t MakeComm(int rank) {
  ncclUniqueId id;
  memset(&id, 7, sizeof(id));
  ncclComm_t comm = nullptr;
  ncclCommInitRank(&comm, 8, id, rank);
  return comm;
}

// N calls; `noinline` keeps the loop the same with and without the shim.
__attribute__((noinline)) void Calls(ncclComm_t comm, long n) {
  static float buf[16];
  for (long i = 0; i < n; ++i) ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, comm, nullptr);
}

// The child execs this program again (`--traced K`), so that a preloaded
// shim starts afresh in it (a forked child of a traced process is not
// traced), stops itself before and after K calls, and is single-stepped in
// between.
void Traced(long k) {
  ncclComm_t comm = MakeComm(0);
  Calls(comm, 1000);  // warm: first-call resolution done, caches filled
  raise(SIGSTOP);
  Calls(comm, k);
  raise(SIGSTOP);
}

long CountInstructions(const char* self, long k) {
  const pid_t pid = fork();
  if (pid == 0) {
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    char arg[32];
    snprintf(arg, sizeof(arg), "%ld", k);
    execl(self, self, "--traced", arg, static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  // Run (signals passed on) to the first SIGSTOP.
  for (;;) {
    if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) return -1;
    if (WSTOPSIG(status) == SIGSTOP) break;
    ptrace(PTRACE_CONT, pid, nullptr, nullptr);
  }
  long steps = 0;
  for (;;) {
    ptrace(PTRACE_SINGLESTEP, pid, nullptr, nullptr);
    waitpid(pid, &status, 0);
    if (!WIFSTOPPED(status)) return -1;
    if (WSTOPSIG(status) == SIGSTOP) break;
    ++steps;
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return steps;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  long calls = 20000000;
  long instructions = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--calls") == 0) calls = atol(argv[i + 1]);
    if (strcmp(argv[i], "--instructions") == 0) instructions = atol(argv[i + 1]);
    if (strcmp(argv[i], "--traced") == 0) {
      Traced(atol(argv[i + 1]));
      return 0;
    }
  }
  if (instructions > 0) {
    const long with = CountInstructions(argv[0], instructions);
    const long without = CountInstructions(argv[0], 0);
    if (with < 0 || without < 0) return 1;
    printf("instructions_per_call %.1f\n",
           static_cast<double>(with - without) / static_cast<double>(instructions));
    return 0;
  }
  std::vector<ncclComm_t> comms(threads);
  for (int t = 0; t < threads; ++t) comms[t] = MakeComm(t);
  std::vector<double> ns(threads);
  const double cpu0 = CpuNs();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      Calls(comms[t], calls / 100);  // warm
      const double start = Now();
      Calls(comms[t], calls);
      ns[t] = (Now() - start) / static_cast<double>(calls);
    });
  }
  for (std::thread& w : workers) w.join();
  const double cpu = (CpuNs() - cpu0) / (static_cast<double>(calls) * 1.01 * threads);
  std::sort(ns.begin(), ns.end());
  printf("threads %d calls %ld wall_ns_per_call %.2f cpu_ns_per_call %.2f\n", threads, calls,
         ns[ns.size() / 2], cpu);
  return 0;
}

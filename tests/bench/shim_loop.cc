// The whole process, as a job runs it: a program linked against NCCL (the
// do-nothing one, libnccl.so.2) that calls ncclAllReduce in a loop on one or
// more threads, each on its own communicator, run once plain and once with
// libncclwatch.so in LD_PRELOAD (the caller does that: scripts, README).
// Prints the wall-clock and the CPU nanoseconds per call of each thread's
// timed calls (the medians of the threads).
//
//   shim_loop [--threads T | --processes P] [--calls N] [--instructions K]
//
// --processes P: the same loop on one thread in each of P processes forked
// before any NCCL call (so a preloaded shim gives each its own trace file),
// for comparing T threads of one process with T processes: the cost of what
// threads share. Threads and processes start their timed calls together,
// after their warm-up; CPU time is that of the calls only, in both modes.
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

ncclComm_t MakeComm(int rank) {
  ncclUniqueId id;
  memset(&id, 7, sizeof(id));
  ncclComm_t comm = nullptr;
  ncclCommInitRank(&comm, 8, id, rank);
  return comm;
}

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
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

struct LoopResult {
  double wall_ns;  // per call
  double cpu_ns;   // per call
};

// One thread's timed loop: warm, wait for `go`, time `calls` calls.
template <typename Wait>
LoopResult TimedLoop(ncclComm_t comm, long calls, Wait wait_for_go) {
  Calls(comm, calls / 100);  // warm
  wait_for_go();
  const double cpu = ThreadCpuNs();
  const double start = Now();
  Calls(comm, calls);
  return {(Now() - start) / static_cast<double>(calls),
          (ThreadCpuNs() - cpu) / static_cast<double>(calls)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// P processes, forked before any NCCL call, one loop each; they report
// through a pipe. Returns false if one failed.
bool RunProcesses(int processes, long calls, std::vector<LoopResult>* results) {
  int report[2], ready[2], go[2];
  if (pipe(report) != 0 || pipe(ready) != 0 || pipe(go) != 0) return false;
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
      close(report[0]);
      close(ready[0]);
      close(go[1]);
      ncclComm_t comm = MakeComm(p);
      const LoopResult r = TimedLoop(comm, calls, [&] {
        const char byte = 1;
        if (write(ready[1], &byte, 1) != 1) _exit(1);
        char got;
        while (read(go[0], &got, 1) > 0) {
        }  // the parent closes it: all are ready
      });
      _exit(write(report[1], &r, sizeof(r)) == static_cast<ssize_t>(sizeof(r)) ? 0 : 1);
    }
    children.push_back(pid);
  }
  close(report[1]);
  close(ready[1]);
  close(go[0]);
  for (int p = 0; p < processes; ++p) {
    char byte;
    if (read(ready[0], &byte, 1) != 1) return false;
  }
  close(go[1]);
  bool ok = true;
  for (int p = 0; p < processes; ++p) {
    LoopResult r{};
    if (read(report[0], &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r))) ok = false;
    results->push_back(r);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  int processes = 0;
  long calls = 20000000;
  long instructions = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--processes") == 0) processes = atoi(argv[i + 1]);
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
  std::vector<LoopResult> results;
  if (processes > 0) {
    if (!RunProcesses(processes, calls, &results)) return 1;
  } else {
    std::vector<ncclComm_t> comms(threads);
    for (int t = 0; t < threads; ++t) comms[t] = MakeComm(t);
    results.resize(threads);
    std::atomic<int> ready{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        results[t] = TimedLoop(comms[t], calls, [&] {
          ready.fetch_add(1);
          while (ready.load() < threads) std::this_thread::yield();
        });
      });
    }
    for (std::thread& w : workers) w.join();
  }
  std::vector<double> wall, cpu;
  for (const LoopResult& r : results) {
    wall.push_back(r.wall_ns);
    cpu.push_back(r.cpu_ns);
  }
  printf("%s %d calls %ld wall_ns_per_call %.2f cpu_ns_per_call %.2f\n",
         processes > 0 ? "processes" : "threads", processes > 0 ? processes : threads, calls,
         Median(wall), Median(cpu));
  return 0;
}

// Runs a multi-process job the way torchrun or mpirun would, for tests and
// for the demo: N rank processes of one command, each with RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE and a rendezvous folder in its environment,
// their output captured, and every rank killed once the job outlives its
// bound (so a test can prove a job hung rather than wait for it forever).
//
// What a real cluster imposes can be imposed for real, as root:
//   shm_size     all ranks share a private mount namespace whose /dev/shm is a
//                tmpfs of this size (a container's --shm-size)
//   rank netns   a rank runs inside a network namespace made with `ip netns`
//                (another host's interfaces, or no route to the root)
//   memlock      a locked-memory limit (a container's or a scheduler's ulimit -l)
//   fsize        a file-size limit (ulimit -f); binds root as it binds a user
//
// A rank never dumps core: the crashes tests provoke on purpose would leave
// core files in the working folder (core_pattern is "core" by default).
//
// Thread-safety: RunJob may run on several threads at once (a LiveJob beside
// a diagnosis the test runs as a job of its own): each call forks its own
// children, opens its pipes close-on-exec, and waits only on its own pids.

#ifndef NCCLWATCH_TESTS_SUPPORT_JOB_LAUNCHER_H_
#define NCCLWATCH_TESTS_SUPPORT_JOB_LAUNCHER_H_

#include <sys/types.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace jobs {

struct RankOptions {
  std::vector<std::string> env;  // "KEY=VALUE", after the job's own; "KEY" unsets
  std::string netns;             // name under /var/run/netns, or empty
  // A host name of its own (a UTS namespace: needs root), as a rank on
  // another node has; empty: this machine's.
  std::string hostname;
};

struct JobSpec {
  int nranks = 1;
  std::vector<std::string> argv;  // the command every rank runs
  std::vector<std::string> env;   // "KEY=VALUE" for every rank; "KEY" unsets it
  std::map<int, RankOptions> ranks;
  std::string shm_size;  // e.g. "16m"; empty: the host's /dev/shm
  // RLIMIT_MEMLOCK for every rank, in bytes (-1: inherited). The ranks also
  // lose CAP_IPC_LOCK, so that the limit binds a root job as it binds a user's.
  long long memlock_bytes = -1;
  // RLIMIT_FSIZE (ulimit -f) for every rank, in bytes (-1: inherited).
  long long fsize_bytes = -1;
  double timeout_s = 60;         // then every rank still running gets SIGTERM,
  double term_grace_s = 1;       // and SIGKILL this long after (as torchrun, Slurm do)
  bool kill_at_timeout = false;  // SIGKILL at once instead (an OOM killer, `kill -9`)
  // When set, the bound comes as soon as it reads true (LiveJob::End).
  const std::atomic<bool>* end_now = nullptr;
  // When >= 0: once a rank fails (exits non-zero or by a signal), the rest
  // are torn down this many seconds later, SIGTERM then SIGKILL as at the
  // bound: what torchrun, srun and mpirun do when a worker dies.
  double teardown_after_failure_s = -1;
  bool tag_output = false;  // prefix lines with "[rank N] " when echoing
  bool echo = false;        // copy the ranks' output to our stdout as it comes
};

struct RankResult {
  int rank = 0;
  pid_t pid = 0;
  bool exited = false;  // exited normally (see exit_code)
  int exit_code = -1;
  int signal = 0;  // the signal that ended it, if any
  bool killed_at_timeout = false;
  std::string output;  // stdout and stderr, interleaved
};

struct JobResult {
  std::vector<RankResult> ranks;
  bool timed_out = false;  // some rank was still running at the bound
  std::string error;       // why the job could not be started, if it could not
  std::string rendezvous_dir;
};

JobResult RunJob(const JobSpec& spec);

// A job run on a thread of its own while a test watches it live. It ends at
// its bound, or sooner when End() is called: a test that diagnoses a live job
// ends it once it has seen what it needs, however slow the machine, rather
// than race a fixed bound. Leaving scope ends it too, so a failed REQUIRE
// never leaves a job running.
class LiveJob {
 public:
  explicit LiveJob(const JobSpec& spec);
  ~LiveJob();
  LiveJob(const LiveJob&) = delete;
  LiveJob& operator=(const LiveJob&) = delete;

  // The job's bound comes now (SIGTERM, the grace, SIGKILL to every rank
  // still running); waits for it and returns its result.
  const JobResult& End();
  // Waits for the job to end by itself or at its bound.
  const JobResult& Wait();

 private:
  JobSpec spec_;
  std::atomic<bool> end_now_{false};
  JobResult result_;
  std::thread thread_;  // last: it reads the members above
};

// The folder the simulated libraries were built into, and this build's job
// programs, from the environment CTest gives tests (NCCLSIM_DIR,
// NCCLWATCH_BIN_DIR), with the build-time values as fallback.
std::string SimLibDir();
std::string BinDir();

}  // namespace jobs

#endif  // NCCLWATCH_TESTS_SUPPORT_JOB_LAUNCHER_H_

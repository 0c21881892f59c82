// What every test job program shares: its place in the job (from the
// launcher's environment, as torchrun or srun sets it), the exchange of the
// ncclUniqueId through a rendezvous folder (as a file store would), and
// checks that end the rank with a clear message.
//
// Job programs use only the public NCCL and CUDA API, like user code.

#ifndef NCCLWATCH_TESTS_JOBS_COMMON_JOB_ENV_H_
#define NCCLWATCH_TESTS_JOBS_COMMON_JOB_ENV_H_

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CUDA_OK(cmd)                                                         \
  do {                                                                       \
    cudaError_t job_err = (cmd);                                             \
    if (job_err != cudaSuccess) {                                            \
      std::fprintf(stderr, "rank %d: %s failed: %s\n", jobenv::Rank(), #cmd, \
                   cudaGetErrorString(job_err));                             \
      jobenv::Die(2);                                                        \
    }                                                                        \
  } while (0)

#define NCCL_OK(cmd)                                                                  \
  do {                                                                                \
    ncclResult_t job_res = (cmd);                                                     \
    if (job_res != ncclSuccess) {                                                     \
      std::fprintf(stderr, "rank %d: %s failed: %s (%d): %s\n", jobenv::Rank(), #cmd, \
                   ncclGetErrorString(job_res), job_res, ncclGetLastError(nullptr));  \
      jobenv::Die(3);                                                                 \
    }                                                                                 \
  } while (0)

namespace jobenv {

// How a failed check ends the rank: exit(code) by default; JOB_ON_ERROR=abort
// aborts (SIGABRT, as PyTorch's NCCL watchdog ends a process), _exit skips
// the exit handlers.
[[noreturn]] inline void Die(int code) {
  const char* how = std::getenv("JOB_ON_ERROR");
  if (how != nullptr && std::strcmp(how, "abort") == 0) std::abort();
  if (how != nullptr && std::strcmp(how, "_exit") == 0) _exit(code);
  std::exit(code);
}

inline int EnvOr(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::atoi(v) : fallback;
}

// torchrun's variables, else Slurm's (srun sets SLURM_PROCID, SLURM_NTASKS
// and SLURM_LOCALID for each task), as a training script reads either.
inline int Rank() { return EnvOr("RANK", EnvOr("SLURM_PROCID", 0)); }
inline int WorldSize() { return EnvOr("WORLD_SIZE", EnvOr("SLURM_NTASKS", 1)); }
inline int LocalRank() { return EnvOr("LOCAL_RANK", EnvOr("SLURM_LOCALID", Rank())); }

// The GPU this rank uses: JOB_DEVICE if set (a test can make two ranks share
// one), else the local rank.
inline int Device() { return EnvOr("JOB_DEVICE", LocalRank()); }

// Rank 0 makes the id and publishes it as <rendezvous>/<name>; the others
// wait for it. A failure on rank 0 is published too, so nobody waits forever.
// With NCCL_COMM_ID set the id names a fixed root, so every rank makes its own.
inline ncclUniqueId ShareUniqueId(const char* name = "nccl_id") {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  const char* dir = std::getenv("JOBRUN_RENDEZVOUS");
  if (std::getenv("NCCL_COMM_ID") != nullptr) {
    NCCL_OK(ncclGetUniqueId(&id));
    return id;
  }
  if (dir == nullptr) {
    if (WorldSize() != 1) {
      std::fprintf(stderr, "rank %d: JOBRUN_RENDEZVOUS is not set; run under jobrun\n", Rank());
      std::exit(2);
    }
    NCCL_OK(ncclGetUniqueId(&id));
    return id;
  }
  const std::string path = std::string(dir) + "/" + name;
  if (Rank() == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    const std::string out = r == ncclSuccess ? path : path + ".failed";
    const std::string tmp = out + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "wb")) {
      std::fwrite(&id, sizeof(id), 1, f);
      std::fclose(f);
      std::rename(tmp.c_str(), out.c_str());
    }
    if (r != ncclSuccess) {
      std::fprintf(stderr, "rank %d: ncclGetUniqueId failed: %s (%d): %s\n", Rank(),
                   ncclGetErrorString(r), r, ncclGetLastError(nullptr));
      std::exit(3);
    }
    return id;
  }
  for (int i = 0; i < 60 * 100; ++i) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      size_t n = std::fread(&id, sizeof(id), 1, f);
      std::fclose(f);
      if (n == 1) return id;
    }
    if (access((path + ".failed").c_str(), F_OK) == 0) {
      std::fprintf(stderr, "rank %d: rank 0 could not create the ncclUniqueId\n", Rank());
      std::exit(3);
    }
    usleep(10000);
  }
  std::fprintf(stderr, "rank %d: no ncclUniqueId from rank 0 after 60 s\n", Rank());
  std::exit(3);
}

}  // namespace jobenv

#endif  // NCCLWATCH_TESTS_JOBS_COMMON_JOB_ENV_H_

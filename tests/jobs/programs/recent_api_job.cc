// recent_api_job: a job that uses what NCCL 2.29 to 2.32 added, as a
// training job would, with the ways such jobs break injected on demand.
//
//   recent_api_job config   [--steps N] [--plain RANK] [--bug count:RANK:STEP]
//       Each step: an AllReduce with a per-call config (ncclAllReduceConfig,
//       NCCL_COLLCONFIG_INITIALIZER, a profiler tag of the step), a classic
//       AllReduce, and every other step a Broadcast with a config (NULL, the
//       plain call, every other time). Results checked.
//       --plain: that rank calls the classic collectives (ncclAllReduce,
//       ncclBroadcast) where the others call the Config ones: NCCL matches them.
//       count: that rank's config AllReduce of that step has one element fewer.
//   recent_api_job onesided [--steps N] [--bug drop-put:RANK:STEP]
//       A symmetric window on every rank; each step every rank puts its values
//       into the next rank's window (ncclPutSignal), waits for the previous
//       rank's signal (ncclWaitSignal), checks what landed, and joins an
//       AllReduce. Every other step a bare ncclSignal and its wait as well.
//       drop-put: that rank skips its put at that step: the next rank waits
//       for a signal that never comes.
//   recent_api_job grow --existing N [--steps N] [--split] [--bug count:RANK:STEP]
//                       [--bug split-count:RANK:STEP]
//       Ranks 0..N-1 make a communicator and run steps; rank 0 makes a grow
//       id (ncclCommGetUniqueId), shares it; every rank, old and new, calls
//       ncclCommGrow, and all WORLD_SIZE ranks run steps on the grown
//       communicator. count: on the grown communicator. --split: then every
//       rank splits the grown communicator by rank parity (key: its rank)
//       and runs steps of AllReduces on its half; split-count: on the half.
//   recent_api_job shrink --exclude R [--steps N] [--bug count:RANK:STEP]
//       Every rank runs steps; rank R destroys its communicator and exits;
//       the others shrink it away (ncclCommShrink) and run steps on the
//       shrunk communicator. count: on the shrunk communicator.
//   recent_api_job suspend [--steps N] --suspend RANK|all:STEP [--resume]
//       Steps of one AllReduce (step k is #k). At STEP, RANK (or every rank)
//       calls ncclCommSuspend(NCCL_SUSPEND_MEM) before the step's AllReduce;
//       with --resume ncclCommResume right after, and goes on; without it
//       the rank waits (idle) until it is ended. --revoke: RANK calls
//       ncclCommRevoke instead of ncclCommSuspend, and waits.
//   recent_api_job devcomm [--steps N]
//       A window and a device-API communicator (ncclDevCommCreate) beside the
//       host's AllReduces, destroyed at the end.
//
// A step's AllReduce sums the ranks' values (each rank adds rank + step + 1).
// Prints "step K done" and at the end "recent_api_job: done".

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stddef.h>
#include <unistd.h>
// After nccl.h and stddef.h.
#include <nccl_device.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/job_env.h"

namespace {

struct Bug {
  std::string kind;
  int rank = -1;
  int step = -1;
};

struct Options {
  std::string mode;
  int steps = 4;
  int existing = 0;       // grow
  bool split = false;     // grow: split the grown communicator and run steps on it
  int suspend_rank = -1;  // suspend: the rank that suspends, -2 every rank
  int suspend_step = -1;
  bool resume = false;
  bool revoke = false;  // suspend: revoke instead
  int exclude = -1;     // shrink
  int plain = -1;       // config: the rank that calls the classic collectives
  std::vector<Bug> bugs;
};

[[noreturn]] void Usage(const char* msg) {
  std::fprintf(stderr, "recent_api_job: %s\n", msg);
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  if (argc < 2) Usage("usage: recent_api_job config|onesided|grow|shrink|devcomm [options]");
  o.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--steps") {
      o.steps = std::atoi(next().c_str());
    } else if (a == "--suspend") {
      const std::string v = next();
      const size_t c = v.find(':');
      if (c == std::string::npos) Usage("--suspend wants RANK:STEP or all:STEP");
      o.suspend_rank = v.substr(0, c) == "all" ? -2 : std::atoi(v.substr(0, c).c_str());
      o.suspend_step = std::atoi(v.c_str() + c + 1);
    } else if (a == "--revoke") {
      o.revoke = true;
    } else if (a == "--resume") {
      o.resume = true;
    } else if (a == "--split") {
      o.split = true;
    } else if (a == "--existing") {
      o.existing = std::atoi(next().c_str());
    } else if (a == "--plain") {
      o.plain = std::atoi(next().c_str());
    } else if (a == "--exclude") {
      o.exclude = std::atoi(next().c_str());
    } else if (a == "--bug") {
      const std::string v = next();
      const size_t c1 = v.find(':'), c2 = v.rfind(':');
      if (c1 == std::string::npos || c1 == c2) Usage("--bug wants KIND:RANK:STEP");
      Bug b;
      b.kind = v.substr(0, c1);
      b.rank = std::atoi(v.substr(c1 + 1, c2 - c1 - 1).c_str());
      b.step = std::atoi(v.substr(c2 + 1).c_str());
      o.bugs.push_back(b);
    } else {
      Usage(("unknown option " + a).c_str());
    }
  }
  return o;
}

bool BugAt(const Options& o, const char* kind, int rank, int step) {
  for (const Bug& b : o.bugs)
    if (b.kind == kind && b.rank == rank && b.step == step) return true;
  return false;
}

void Check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: check failed: %s\n", jobenv::Rank(), what.c_str());
  jobenv::Die(4);
}

constexpr size_t kCount = 1024;

// Device memory for `n` floats, aligned for a window.
float* DeviceFloats(size_t n) {
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, n * sizeof(float) + NCCL_WIN_REQUIRED_ALIGNMENT));
  const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + NCCL_WIN_REQUIRED_ALIGNMENT - 1) &
                      ~static_cast<uintptr_t>(NCCL_WIN_REQUIRED_ALIGNMENT - 1);
  return reinterpret_cast<float*>(a);
}

void Fill(float* dev, float value, size_t n) {
  std::vector<float> h(n, value);
  CUDA_OK(cudaMemcpy(dev, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

float First(const float* dev) {
  float v = 0;
  CUDA_OK(cudaMemcpy(&v, dev, sizeof(v), cudaMemcpyDeviceToHost));
  return v;
}

// One AllReduce (sum) of rank + step + 1 on `comm` of `nranks`, checked.
void SumStep(ncclComm_t comm, int rank, int nranks, int step, float* buf, cudaStream_t s) {
  Fill(buf, static_cast<float>(rank + step + 1), kCount);
  NCCL_OK(ncclAllReduce(buf, buf, kCount, ncclFloat32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  float want = 0;
  for (int r = 0; r < nranks; ++r) want += static_cast<float>(r + step + 1);
  Check(First(buf) == want, "AllReduce sum");
}

// A step with the per-call config AllReduce (count bug), for `comm`.
void ConfigStep(const Options& o, ncclComm_t comm, int rank, int nranks, int step, float* buf,
                cudaStream_t s) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 31, 0)
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.userProfilerTag = static_cast<uint64_t>(step + 1);
  config.minCTAs = 1;
  const size_t count = BugAt(o, "count", rank, step) ? kCount - 1 : kCount;
  Fill(buf, static_cast<float>(rank + step + 1), kCount);
  if (rank == o.plain)
    NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, s));
  else
    NCCL_OK(ncclAllReduceConfig(buf, buf, count, ncclFloat32, ncclSum, comm, s, &config));
  CUDA_OK(cudaStreamSynchronize(s));
  float want = 0;
  for (int r = 0; r < nranks; ++r) want += static_cast<float>(r + step + 1);
  Check(First(buf) == want, "AllReduceConfig sum");
#else
  (void)o;
  SumStep(comm, rank, nranks, step, buf, s);
#endif
}

ncclComm_t InitWorld(int rank, int nranks, const char* id_name) {
  ncclUniqueId id = jobenv::ShareUniqueId(id_name);
  ncclComm_t comm = nullptr;
  NCCL_OK(ncclCommInitRank(&comm, nranks, id, rank));
  return comm;
}

int Config(const Options& o) {
  const int rank = jobenv::Rank(), n = jobenv::WorldSize();
  ncclComm_t comm = InitWorld(rank, n, "nccl_id");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float* buf = DeviceFloats(kCount);
  for (int step = 0; step < o.steps; ++step) {
    ConfigStep(o, comm, rank, n, step, buf, s);
    SumStep(comm, rank, n, step, buf, s);
    if (step % 2 == 0) {
      Fill(buf, rank == 0 ? 7.0f : 0.0f, kCount);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 31, 0)
      ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
      if (rank == o.plain)
        NCCL_OK(ncclBroadcast(buf, buf, kCount, ncclFloat32, 0, comm, s));
      else
        NCCL_OK(ncclBroadcastConfig(buf, buf, kCount, ncclFloat32, 0, comm, s,
                                    step % 4 == 0 ? &config : nullptr));
#else
      NCCL_OK(ncclBroadcast(buf, buf, kCount, ncclFloat32, 0, comm, s));
#endif
      CUDA_OK(cudaStreamSynchronize(s));
      Check(First(buf) == 7.0f, "Broadcast");
    }
    std::printf("step %d done\n", step);
    std::fflush(stdout);
  }
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)

int OneSided(const Options& o) {
  const int rank = jobenv::Rank(), n = jobenv::WorldSize();
  ncclComm_t comm = InitWorld(rank, n, "nccl_id");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float* win_buf = DeviceFloats(kCount);
  float* src = DeviceFloats(kCount);
  float* sum = DeviceFloats(kCount);
  ncclWindow_t win = nullptr, src_win = nullptr;
  NCCL_OK(
      ncclCommWindowRegister(comm, win_buf, kCount * sizeof(float), &win, NCCL_WIN_COLL_SYMMETRIC));
  NCCL_OK(
      ncclCommWindowRegister(comm, src, kCount * sizeof(float), &src_win, NCCL_WIN_COLL_SYMMETRIC));
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  for (int step = 0; step < o.steps; ++step) {
    Fill(src, static_cast<float>(100 * rank + step), kCount);
    if (!BugAt(o, "drop-put", rank, step))
      NCCL_OK(ncclPutSignal(src, kCount, ncclFloat32, next, win, 0, 0, 0, 0, comm, s));
    ncclWaitSignalDesc_t wait = {1, prev, 0, 0};
    NCCL_OK(ncclWaitSignal(1, &wait, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    Check(First(win_buf) == static_cast<float>(100 * prev + step), "the previous rank's put");
    if (step % 2 == 1) {
      NCCL_OK(ncclSignal(next, 0, 0, 0, comm, s));
      NCCL_OK(ncclWaitSignal(1, &wait, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
    }
    SumStep(comm, rank, n, step, sum, s);
    std::printf("step %d done\n", step);
    std::fflush(stdout);
  }
  NCCL_OK(ncclCommWindowDeregister(comm, src_win));
  NCCL_OK(ncclCommWindowDeregister(comm, win));
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

// Shares the grow id as ShareUniqueId shares the first one.
void PublishGrowId(const ncclUniqueId& id) {
  const char* dir = std::getenv("JOBRUN_RENDEZVOUS");
  if (dir == nullptr) return;
  const std::string path = std::string(dir) + "/grow_id";
  if (FILE* f = std::fopen((path + ".tmp").c_str(), "wb")) {
    std::fwrite(&id, sizeof(id), 1, f);
    std::fclose(f);
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
}

ncclUniqueId AwaitGrowId() {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  const char* dir = std::getenv("JOBRUN_RENDEZVOUS");
  if (dir == nullptr) Usage("grow runs under jobrun");
  const std::string path = std::string(dir) + "/grow_id";
  for (int i = 0; i < 60 * 100; ++i) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t got = std::fread(&id, sizeof(id), 1, f);
      std::fclose(f);
      if (got == 1) return id;
    }
    usleep(10000);
  }
  std::fprintf(stderr, "rank %d: no grow id after 60 s\n", jobenv::Rank());
  std::exit(3);
}

int Grow(const Options& o) {
  const int rank = jobenv::Rank(), n = jobenv::WorldSize();
  if (o.existing < 1 || o.existing >= n) Usage("grow wants 0 < --existing < WORLD_SIZE");
  cudaStream_t s;
  CUDA_OK(cudaSetDevice(jobenv::Device()));
  CUDA_OK(cudaStreamCreate(&s));
  float* buf = DeviceFloats(kCount);
  ncclComm_t comm = nullptr, grown = nullptr;
  if (rank < o.existing) {
    comm = InitWorld(rank, o.existing, "nccl_id");
    for (int step = 0; step < o.steps; ++step) SumStep(comm, rank, o.existing, step, buf, s);
    ncclUniqueId id;
    if (rank == 0) {
      NCCL_OK(ncclCommGetUniqueId(comm, &id));
      PublishGrowId(id);
    }
    NCCL_OK(ncclCommGrow(comm, n, rank == 0 ? &id : nullptr, -1, &grown, nullptr));
  } else {
    const ncclUniqueId id = AwaitGrowId();
    NCCL_OK(ncclCommGrow(nullptr, n, &id, rank, &grown, nullptr));
  }
  int grown_rank = -1, grown_n = -1;
  NCCL_OK(ncclCommUserRank(grown, &grown_rank));
  NCCL_OK(ncclCommCount(grown, &grown_n));
  Check(grown_rank == rank && grown_n == n, "the grown communicator's rank and size");
  for (int step = 0; step < o.steps; ++step) {
    ConfigStep(o, grown, rank, n, step, buf, s);
    std::printf("step %d done\n", step);
    std::fflush(stdout);
  }
  if (o.split) {
    ncclComm_t half = nullptr;
    NCCL_OK(ncclCommSplit(grown, rank % 2, rank, &half, nullptr));
    for (int step = 0; step < o.steps; ++step) {
      const size_t count = BugAt(o, "split-count", rank, step) ? kCount - 1 : kCount;
      Fill(buf, static_cast<float>(rank + step + 1), kCount);
      NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, half, s));
      CUDA_OK(cudaStreamSynchronize(s));
      float want = 0;
      for (int r = rank % 2; r < n; r += 2) want += static_cast<float>(r + step + 1);
      Check(First(buf) == want, "AllReduce sum on the split");
      std::printf("split step %d done\n", step);
      std::fflush(stdout);
    }
    NCCL_OK(ncclCommDestroy(half));
  }
  NCCL_OK(ncclCommDestroy(grown));
  if (comm != nullptr) NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

int Suspend(const Options& o) {
  const int rank = jobenv::Rank(), n = jobenv::WorldSize();
  ncclComm_t comm = InitWorld(rank, n, "nccl_id");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float* buf = DeviceFloats(kCount);
  for (int step = 0; step < o.steps; ++step) {
    if (step == o.suspend_step && (o.suspend_rank == -2 || o.suspend_rank == rank)) {
      if (o.revoke) {
        NCCL_OK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
      } else {
        NCCL_OK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
      }
      std::printf("rank %d %s\n", rank, o.revoke ? "revoked" : "suspended");
      std::fflush(stdout);
      if (o.revoke || !o.resume) {
        for (;;) pause();  // waits for what never comes, until the job is ended
      }
      NCCL_OK(ncclCommResume(comm));
    }
    SumStep(comm, rank, n, step, buf, s);
    std::printf("step %d done\n", step);
    std::fflush(stdout);
  }
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

#endif  // 2.29

int Shrink(const Options& o) {
  const int rank = jobenv::Rank(), n = jobenv::WorldSize();
  if (o.exclude < 0 || o.exclude >= n) Usage("shrink wants --exclude R in 0..WORLD_SIZE-1");
  ncclComm_t comm = InitWorld(rank, n, "nccl_id");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float* buf = DeviceFloats(kCount);
  for (int step = 0; step < o.steps; ++step) SumStep(comm, rank, n, step, buf, s);
  if (rank == o.exclude) {
    NCCL_OK(ncclCommDestroy(comm));
    std::printf("recent_api_job: done\n");
    return 0;
  }
  int excluded[1] = {o.exclude};
  ncclComm_t shrunk = nullptr;
  NCCL_OK(ncclCommShrink(comm, excluded, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT));
  int r = -1, count = -1;
  NCCL_OK(ncclCommUserRank(shrunk, &r));
  NCCL_OK(ncclCommCount(shrunk, &count));
  Check(count == n - 1 && r == (rank < o.exclude ? rank : rank - 1), "the shrunk communicator");
  for (int step = 0; step < o.steps; ++step) {
    ConfigStep(o, shrunk, r, count, step, buf, s);
    std::printf("step %d done\n", step);
    std::fflush(stdout);
  }
  NCCL_OK(ncclCommDestroy(shrunk));
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

int DevComm(const Options& o) {
  const int rank = jobenv::Rank(), n = jobenv::WorldSize();
  ncclComm_t comm = InitWorld(rank, n, "nccl_id");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float* buf = DeviceFloats(kCount);
  float* sym = DeviceFloats(kCount);
  ncclWindow_t win = nullptr;
  NCCL_OK(ncclCommWindowRegister(comm, sym, kCount * sizeof(float), &win, NCCL_WIN_COLL_SYMMETRIC));
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
  ncclDevCommRequirements_t reqs;
  std::memset(static_cast<void*>(&reqs), 0, sizeof(reqs));
#endif
  reqs.lsaBarrierCount = 1;
  ncclDevComm_t dev;
  NCCL_OK(ncclDevCommCreate(comm, &reqs, &dev));
  Check(dev.rank == rank && dev.nRanks == n, "the device communicator's rank and size");
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)
  void* peer_ptr = nullptr;
  NCCL_OK(ncclGetPeerDevicePointer(win, 0, (rank + 1) % n, &peer_ptr));
  Check(peer_ptr != nullptr, "a peer's device pointer");
#endif
  for (int step = 0; step < o.steps; ++step) {
    SumStep(comm, rank, n, step, buf, s);
    std::printf("step %d done\n", step);
    std::fflush(stdout);
  }
  NCCL_OK(ncclDevCommDestroy(comm, &dev));
  NCCL_OK(ncclCommWindowDeregister(comm, win));
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  if (o.mode != "grow") CUDA_OK(cudaSetDevice(jobenv::Device()));
  int rc = 2;
  if (o.mode == "config") {
    rc = Config(o);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)
  } else if (o.mode == "onesided") {
    rc = OneSided(o);
  } else if (o.mode == "grow") {
    rc = Grow(o);
  } else if (o.mode == "suspend") {
    rc = Suspend(o);
#endif
  } else if (o.mode == "shrink") {
    rc = Shrink(o);
  } else if (o.mode == "devcomm") {
    rc = DevComm(o);
  } else {
    Usage(("mode " + o.mode + " is not built (nccl.h " + std::to_string(NCCL_VERSION_CODE) + ")")
              .c_str());
  }
  if (rc == 0) std::printf("recent_api_job: done\n");
  return rc;
}

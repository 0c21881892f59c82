// train_loop: a small data-parallel training loop, and the ways such loops
// break in practice, injected on demand.
//
// Each step: copy this rank's "gradients" to the GPU, AllReduce them (avg) on
// the world communicator, apply them, and check that every rank holds the
// same parameters; every 4th step rank 0 re-broadcasts the parameters. With
// --pipeline, each step also passes activations around a ring with grouped
// Send/Recv; with --tensor-parallel, each step also AllReduces on a second
// communicator split from the first (pairs of ranks); with --tp-stream, those
// go on a stream of their own (so issuing them in another order than the
// world's is no deadlock: the decoder warns, and the job stays healthy); with
// --tp-thread, a second thread drives the tensor-parallel communicator on its
// own stream while the first drives the world. With --id-before-cuda, the
// unique id is made before any CUDA call (as NCCL's one-device-per-process
// example does: the id first, then cudaSetDevice). With --3d (a world that is
// a multiple of 4; implies --tensor-parallel), the ranks also form
// data-parallel groups (the ranks of one tensor-parallel index within each
// half of the world: pairs 2 apart in 8 ranks) and pipeline stage pairs (the
// ranks half the world apart): each step also AllReduces on its
// data-parallel group and on its stage pair (as tied embeddings are synced
// between the first and last stage), after the tensor-parallel AllReduce.
//
//   train_loop [--steps N] [--size ELEMENTS] [--pipeline] [--tensor-parallel] [--3d] [--tp-stream]
//              [--tp-thread] [--step-ms MS] [--checkpoint-ms MS] [--no-sync]
//              [--id-before-cuda] [--slow-host RANK:STEP:MS] [--jitter PCT]
//              [--rank-steps RANK:N] [--bug KIND:RANK:STEP]...
//
// Bugs (each on one rank, at one step):
//   op        calls Broadcast where the others call AllReduce
//   count     AllReduce with one element fewer
//   dtype     AllReduce in half where the others use float
//   redop     AllReduce max where the others use avg
//   root      the step's Broadcast from rank 1 instead of 0 (a broadcast step)
//   skip      skips the step's AllReduce and carries on
//   exit      returns from main without destroying its communicators
//   destroy   destroys its communicators and exits cleanly
//   abort     aborts its communicators and exits
//   kill      SIGKILLs itself
//   segv      crashes (SIGSEGV)
//   hang      stops calling NCCL and sleeps, alive
//   stop      freezes: SIGSTOP to itself (as a debugger or a stuck page-in would)
//   exit-before-init  (step ignored) exits with status 1 after the unique id
//             is shared, before ncclCommInitRank: on rank 0, the bootstrap root dies
//   p2p-count sends one element fewer in the pipeline exchange
//   p2p-drop  posts its pipeline Recv but not its Send
//   p2p-recv-count  receives one element fewer in the pipeline exchange
//   inversion issues the tensor-parallel AllReduce before the world one
//   kill-in   issues the step's AllReduce, then SIGKILLs itself while it is
//             pending (an OOM kill inside a collective)
//   checkpoint  spends --checkpoint-ms in host code before the step (a
//             checkpoint, a data loader), outside NCCL
//   skip-split  (step ignored) does not call ncclCommSplit (--tensor-parallel)
//             and goes on to the world communicator's first collective
// --slow-host makes one rank's host slow from a step on: it spends MS in
// host code before each step (a slow data loader, a busy CPU), so its
// collectives are enqueued last. --jitter varies every rank's --step-ms at
// random, uniformly within +-PCT % each step (a healthy job's noise).
// --rank-steps gives one rank a different number of steps (uneven data).
// --step-ms sleeps that long after each step, as a step's computation would
// (a healthy job that keeps running while it is watched); --checkpoint-ms is
// the checkpoint bug's time. --no-sync waits for the GPU only at the
// end: the host enqueues step after step, as a job whose GPUs stalled goes
// on enqueuing until NCCL's queues fill.
//
// Prints "step K done" after each step and "train_loop: done" at the end.

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/job_env.h"

namespace {

struct Bug {
  std::string kind;
  int rank = -1;
  int step = -1;
};

struct Options {
  int steps = 8;
  size_t size = 4096;
  bool pipeline = false;
  bool tensor_parallel = false;
  bool grid = false;  // --3d
  bool tp_stream = false;
  bool tp_thread = false;
  bool id_before_cuda = false;
  int uneven_rank = -1;
  int uneven_steps = 0;
  int step_ms = 0;
  bool no_sync = false;
  int checkpoint_ms = 2000;
  int slow_rank = -1;
  int slow_from = 0;
  int slow_ms = 0;
  int jitter_pct = 0;
  std::vector<Bug> bugs;
};

[[noreturn]] void Usage(const char* msg) {
  std::fprintf(stderr, "train_loop: %s\n", msg);
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--steps") {
      o.steps = std::atoi(next().c_str());
    } else if (a == "--size") {
      o.size = static_cast<size_t>(std::atoll(next().c_str()));
    } else if (a == "--pipeline") {
      o.pipeline = true;
    } else if (a == "--tensor-parallel") {
      o.tensor_parallel = true;
    } else if (a == "--3d") {
      o.tensor_parallel = o.grid = true;
    } else if (a == "--tp-stream") {
      o.tp_stream = true;
    } else if (a == "--tp-thread") {
      o.tensor_parallel = o.tp_stream = o.tp_thread = true;
    } else if (a == "--step-ms") {
      o.step_ms = std::atoi(next().c_str());
    } else if (a == "--id-before-cuda") {
      o.id_before_cuda = true;
    } else if (a == "--rank-steps") {
      std::string v = next();
      if (std::sscanf(v.c_str(), "%d:%d", &o.uneven_rank, &o.uneven_steps) != 2)
        Usage("--rank-steps wants RANK:N");
    } else if (a == "--no-sync") {
      o.no_sync = true;
    } else if (a == "--slow-host") {
      std::string v = next();
      if (std::sscanf(v.c_str(), "%d:%d:%d", &o.slow_rank, &o.slow_from, &o.slow_ms) != 3)
        Usage("--slow-host wants RANK:STEP:MS");
    } else if (a == "--jitter") {
      o.jitter_pct = std::atoi(next().c_str());
    } else if (a == "--checkpoint-ms") {
      o.checkpoint_ms = std::atoi(next().c_str());
    } else if (a == "--bug") {
      std::string v = next();
      Bug b;
      size_t c1 = v.find(':'), c2 = v.rfind(':');
      if (c1 == std::string::npos || c1 == c2) Usage("--bug wants KIND:RANK:STEP");
      b.kind = v.substr(0, c1);
      b.rank = std::atoi(v.substr(c1 + 1, c2 - c1 - 1).c_str());
      b.step = std::atoi(v.substr(c2 + 1).c_str());
      o.bugs.push_back(b);
    } else {
      Usage(("unknown option " + a).c_str());
    }
  }
  if (o.size < 2) Usage("--size must be at least 2");
  return o;
}

std::string BugAt(const Options& o, int rank, int step) {
  for (const Bug& b : o.bugs)
    if (b.rank == rank && b.step == step) return b.kind;
  return "";
}

// The gradient element i of `rank` at `step`: small integers, so the average
// is exact and every rank can predict it.
float Grad(int rank, int step, size_t i) { return static_cast<float>((rank + step + i) % 4); }

}  // namespace

int main(int argc, char** argv) {
  const Options opt = Parse(argc, argv);
  const int rank = jobenv::Rank();
  const int world = jobenv::WorldSize();
  ncclUniqueId id;
  if (opt.id_before_cuda) {
    id = jobenv::ShareUniqueId();
    CUDA_OK(cudaSetDevice(jobenv::Device()));
  } else {
    CUDA_OK(cudaSetDevice(jobenv::Device()));
    id = jobenv::ShareUniqueId();
  }
  for (const Bug& b : opt.bugs) {
    if (b.kind == "exit-before-init" && b.rank == rank) {
      std::printf("rank %d exits before ncclCommInitRank\n", rank);
      return 1;
    }
  }
  ncclComm_t comm = nullptr, tp = nullptr, dp = nullptr, stage = nullptr;
  if (opt.grid && world % 4 != 0) Usage("--3d wants a world that is a multiple of 4");
  NCCL_OK(ncclCommInitRank(&comm, world, id, rank));
  bool skip_split = false;
  for (const Bug& b : opt.bugs) skip_split |= b.kind == "skip-split" && b.rank == rank;
  if (skip_split) std::printf("rank %d skips ncclCommSplit\n", rank);
  if (opt.tensor_parallel && !skip_split)
    NCCL_OK(ncclCommSplit(comm, rank / 2, rank, &tp, nullptr));
  if (opt.grid) {
    NCCL_OK(ncclCommSplit(comm, rank % 2 + 2 * (rank / (world / 2)), rank, &dp, nullptr));
    NCCL_OK(ncclCommSplit(comm, rank % (world / 2), rank, &stage, nullptr));
  }
  cudaStream_t stream, tp_stream;
  CUDA_OK(cudaStreamCreate(&stream));
  if (opt.tp_stream) {
    CUDA_OK(cudaStreamCreate(&tp_stream));
  } else {
    tp_stream = stream;
  }

  const size_t n = opt.size;
  std::vector<float> params(n, 1.0f), host(n), act(n);
  float *d_grad, *d_params, *d_half, *d_act_out, *d_act_in, *d_tp, *d_grid;
  CUDA_OK(cudaMalloc(&d_grad, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_params, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_half, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_act_out, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_act_in, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_tp, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_grid, n * sizeof(float)));

  const int steps = rank == opt.uneven_rank ? opt.uneven_steps : opt.steps;
  // --tp-thread: a second thread drives the tensor-parallel communicator, on
  // its own stream and buffers, while this one drives the world.
  std::thread tp_driver;
  float* d_tp_in = nullptr;
  if (opt.tp_thread) {
    CUDA_OK(cudaMalloc(&d_tp_in, n * sizeof(float)));
    CUDA_OK(cudaMemset(d_tp_in, 0, n * sizeof(float)));
    const int device = jobenv::Device();
    tp_driver = std::thread([&, device] {
      CUDA_OK(cudaSetDevice(device));
      for (int i = 0; i < steps; ++i) {
        NCCL_OK(ncclAllReduce(d_tp_in, d_tp, n, ncclFloat32, ncclSum, tp, tp_stream));
        CUDA_OK(cudaStreamSynchronize(tp_stream));
      }
    });
  }
  const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
  unsigned jitter_seed =
      static_cast<unsigned>(getpid()) * 2654435761u + static_cast<unsigned>(rank);
  for (int step = 0; step < steps; ++step) {
    const std::string bug = BugAt(opt, rank, step);
    if (bug == "kill") raise(SIGKILL);
    if (bug == "segv") {
      std::fflush(stdout);
      raise(SIGSEGV);
    }
    if (bug == "exit") {
      std::printf("rank %d leaves at step %d without destroying its communicators\n", rank, step);
      return 0;
    }
    if (bug == "destroy" || bug == "abort") {
      if (tp) NCCL_OK(bug == "destroy" ? ncclCommDestroy(tp) : ncclCommAbort(tp));
      NCCL_OK(bug == "destroy" ? ncclCommDestroy(comm) : ncclCommAbort(comm));
      std::printf("rank %d %s its communicators at step %d and exits\n", rank,
                  bug == "destroy" ? "destroyed" : "aborted", step);
      return 0;
    }
    if (bug == "stop") {
      std::printf("rank %d freezes at step %d\n", rank, step);
      std::fflush(stdout);
      raise(SIGSTOP);
    }
    if (bug == "hang") {
      std::printf("rank %d stops at step %d\n", rank, step);
      std::fflush(stdout);
      for (;;) pause();
    }
    if (rank == opt.slow_rank && step >= opt.slow_from)
      std::this_thread::sleep_for(std::chrono::milliseconds(opt.slow_ms));
    if (bug == "checkpoint") {
      std::printf("rank %d checkpoints at step %d\n", rank, step);
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(opt.checkpoint_ms));
    }

    for (size_t i = 0; i < n; ++i) host[i] = Grad(rank, step, i);
    CUDA_OK(
        cudaMemcpyAsync(d_grad, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));

    auto world_allreduce = [&] {
      if (bug == "skip") return;
      if (bug == "op") {
        NCCL_OK(ncclBroadcast(d_grad, d_grad, n, ncclFloat32, 0, comm, stream));
      } else if (bug == "count") {
        NCCL_OK(ncclAllReduce(d_grad, d_grad, n - 1, ncclFloat32, ncclAvg, comm, stream));
      } else if (bug == "dtype") {
        NCCL_OK(ncclAllReduce(d_half, d_half, n, ncclFloat16, ncclAvg, comm, stream));
      } else if (bug == "redop") {
        NCCL_OK(ncclAllReduce(d_grad, d_grad, n, ncclFloat32, ncclMax, comm, stream));
      } else {
        NCCL_OK(ncclAllReduce(d_grad, d_grad, n, ncclFloat32, ncclAvg, comm, stream));
      }
    };
    auto tp_allreduce = [&] {
      if (tp && !opt.tp_thread)
        NCCL_OK(ncclAllReduce(d_grad, d_tp, n, ncclFloat32, ncclSum, tp, tp_stream));
      if (dp) NCCL_OK(ncclAllReduce(d_grad, d_grid, n, ncclFloat32, ncclSum, dp, tp_stream));
      if (stage) NCCL_OK(ncclAllReduce(d_grad, d_grid, n, ncclFloat32, ncclSum, stage, tp_stream));
    };
    if (bug == "kill-in") {
      // The stream is held in host work first, so the AllReduce is still
      // pending on this rank's GPU when the process dies, however fast the
      // peers are (deterministic: the collective never completes anywhere).
      CUDA_OK(cudaLaunchHostFunc(
          stream, [](void*) { std::this_thread::sleep_for(std::chrono::seconds(60)); }, nullptr));
    }
    if (bug == "inversion") {
      tp_allreduce();
      world_allreduce();
    } else {
      world_allreduce();
      tp_allreduce();
    }
    if (bug == "kill-in") {
      std::printf("rank %d is killed inside step %d's AllReduce\n", rank, step);
      std::fflush(stdout);
      raise(SIGKILL);
    }

    if (opt.pipeline) {
      for (size_t i = 0; i < n; ++i) act[i] = static_cast<float>(rank * 100 + step);
      CUDA_OK(cudaMemcpyAsync(d_act_out, act.data(), n * sizeof(float), cudaMemcpyHostToDevice,
                              stream));
      NCCL_OK(ncclGroupStart());
      if (bug != "p2p-drop") {
        NCCL_OK(
            ncclSend(d_act_out, bug == "p2p-count" ? n - 1 : n, ncclFloat32, next, comm, stream));
      }
      NCCL_OK(
          ncclRecv(d_act_in, bug == "p2p-recv-count" ? n - 1 : n, ncclFloat32, prev, comm, stream));
      NCCL_OK(ncclGroupEnd());
    }

    if (opt.no_sync) {
      std::printf("step %d enqueued\n", step);
      std::fflush(stdout);
      continue;
    }
    CUDA_OK(
        cudaMemcpyAsync(host.data(), d_grad, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    if (opt.tp_stream) CUDA_OK(cudaStreamSynchronize(tp_stream));
    for (size_t i = 0; i < n; ++i) {
      float mean = 0;
      for (int r = 0; r < world; ++r) mean += Grad(r, step, i);
      mean /= static_cast<float>(world);
      if (std::fabs(host[i] - mean) > 1e-4f && bug.empty()) {
        std::fprintf(stderr, "rank %d step %d: averaged gradient %zu is %g, expected %g\n", rank,
                     step, i, host[i], mean);
        return 1;
      }
      params[i] -= 0.01f * host[i];
    }
    if (opt.pipeline) {
      CUDA_OK(cudaMemcpy(act.data(), d_act_in, n * sizeof(float), cudaMemcpyDeviceToHost));
      if (act[0] != static_cast<float>(prev * 100 + step)) {
        std::fprintf(stderr, "rank %d step %d: activation from rank %d is %g\n", rank, step, prev,
                     act[0]);
        return 1;
      }
    }
    if (step % 4 == 3) {
      const int root = bug == "root" ? 1 : 0;
      CUDA_OK(cudaMemcpyAsync(d_params, params.data(), n * sizeof(float), cudaMemcpyHostToDevice,
                              stream));
      NCCL_OK(ncclBroadcast(d_params, d_params, n, ncclFloat32, root, comm, stream));
      CUDA_OK(cudaMemcpyAsync(params.data(), d_params, n * sizeof(float), cudaMemcpyDeviceToHost,
                              stream));
      CUDA_OK(cudaStreamSynchronize(stream));
    }
    double loss = 0;
    for (size_t i = 0; i < n; ++i) loss += params[i] * params[i];
    std::printf("step %d done loss %.6f\n", step, loss / static_cast<double>(n));
    std::fflush(stdout);
    if (opt.step_ms > 0) {
      int64_t us = static_cast<int64_t>(opt.step_ms) * 1000;
      if (opt.jitter_pct > 0) {
        const int64_t spread = us * opt.jitter_pct / 100;
        us += static_cast<int64_t>(rand_r(&jitter_seed) % (2 * spread + 1)) - spread;
      }
      usleep(static_cast<useconds_t>(std::max<int64_t>(us, 0)));
    }
  }

  if (tp_driver.joinable()) tp_driver.join();
  // --no-sync: the host waits for the GPU once, at the end (as a loop that
  // reads a loss back every so often would).
  if (opt.no_sync) CUDA_OK(cudaStreamSynchronize(stream));
  if (stage) NCCL_OK(ncclCommDestroy(stage));
  if (dp) NCCL_OK(ncclCommDestroy(dp));
  if (tp) NCCL_OK(ncclCommDestroy(tp));
  NCCL_OK(ncclCommDestroy(comm));
  if (opt.tp_stream) CUDA_OK(cudaStreamDestroy(tp_stream));
  CUDA_OK(cudaStreamDestroy(stream));
  std::printf("train_loop: done\n");
  return 0;
}

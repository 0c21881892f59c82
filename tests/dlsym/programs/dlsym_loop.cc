// dlsym_loop: a data-parallel loop that reaches NCCL the way XLA's NCCL
// stub, TensorFlow's loaders and vLLM's pynccl (ctypes) do: it is not linked
// with -lnccl; it loads libnccl.so.2 with dlopen and gets every entry point
// with dlsym (or dlvsym), so none of its calls goes through the dynamic
// linker's global lookup.
//
//   dlsym_loop [--load global|local] [--lookup handle|default|dlvsym] [--steps N]
//              [--bug op:RANK:STEP]
//
// --load local is ctypes' CDLL (RTLD_LOCAL); --lookup default asks
// dlsym(RTLD_DEFAULT, ...) (needs --load global). Step k's AllReduce (avg,
// float32, 4096 elements) is collective #k of the world communicator; with
// --bug op:R:S, rank R calls Broadcast instead at step S, and the job hangs
// as it would on GPUs. Prints "dlsym_loop: done" at the end.

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// The entry points, as the program's own pointers; job_env.h's helpers call
// them by their usual names.
namespace {
decltype(&ncclGetUniqueId) p_ncclGetUniqueId;
decltype(&ncclGetErrorString) p_ncclGetErrorString;
decltype(&ncclGetLastError) p_ncclGetLastError;
decltype(&ncclCommInitRank) p_ncclCommInitRank;
decltype(&ncclAllReduce) p_ncclAllReduce;
decltype(&ncclBroadcast) p_ncclBroadcast;
decltype(&ncclCommDestroy) p_ncclCommDestroy;
}  // namespace
#define ncclGetUniqueId (*p_ncclGetUniqueId)
#define ncclGetErrorString (*p_ncclGetErrorString)
#define ncclGetLastError (*p_ncclGetLastError)

#include "common/job_env.h"

namespace {

[[noreturn]] void Usage(const char* msg) {
  std::fprintf(stderr, "dlsym_loop: %s\n", msg);
  std::exit(2);
}

template <typename Fn>
void Get(void* handle, const std::string& lookup, const char* name, Fn* out) {
  void* where = lookup == "default" ? RTLD_DEFAULT : handle;
  void* p = lookup == "dlvsym" ? dlvsym(where, name, "NCCL_2") : dlsym(where, name);
  if (p == nullptr && lookup == "dlvsym") p = dlsym(where, name);  // an unversioned export
  if (p == nullptr) {
    std::fprintf(stderr, "dlsym_loop: %s not found: %s\n", name, dlerror());
    std::exit(2);
  }
  *out = reinterpret_cast<Fn>(p);
}

}  // namespace

int main(int argc, char** argv) {
  std::string load = "global", lookup = "handle";
  int steps = 8, bug_rank = -1, bug_step = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) Usage(("missing value after " + a).c_str());
    const std::string v = argv[++i];
    if (a == "--load") {
      load = v;
    } else if (a == "--lookup") {
      lookup = v;
    } else if (a == "--steps") {
      steps = std::atoi(v.c_str());
    } else if (a == "--bug") {
      if (std::sscanf(v.c_str(), "op:%d:%d", &bug_rank, &bug_step) != 2)
        Usage("--bug wants op:RANK:STEP");
    } else {
      Usage(("unknown option " + a).c_str());
    }
  }
  void* nccl = dlopen("libnccl.so.2", RTLD_NOW | (load == "local" ? RTLD_LOCAL : RTLD_GLOBAL));
  if (nccl == nullptr) Usage(dlerror());
  Get(nccl, lookup, "ncclGetUniqueId", &p_ncclGetUniqueId);
  Get(nccl, lookup, "ncclGetErrorString", &p_ncclGetErrorString);
  Get(nccl, lookup, "ncclGetLastError", &p_ncclGetLastError);
  Get(nccl, lookup, "ncclCommInitRank", &p_ncclCommInitRank);
  Get(nccl, lookup, "ncclAllReduce", &p_ncclAllReduce);
  Get(nccl, lookup, "ncclBroadcast", &p_ncclBroadcast);
  Get(nccl, lookup, "ncclCommDestroy", &p_ncclCommDestroy);

  const int rank = jobenv::Rank();
  CUDA_OK(cudaSetDevice(jobenv::Device()));
  ncclUniqueId id = jobenv::ShareUniqueId();
  ncclComm_t comm = nullptr;
  NCCL_OK(p_ncclCommInitRank(&comm, jobenv::WorldSize(), id, rank));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const size_t n = 4096;
  std::vector<float> host(n);
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, n * sizeof(float)));
  for (int step = 0; step < steps; ++step) {
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>((rank + step + i) % 4);
    CUDA_OK(cudaMemcpyAsync(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
    if (rank == bug_rank && step == bug_step) {
      NCCL_OK(p_ncclBroadcast(d, d, n, ncclFloat32, 0, comm, stream));
    } else {
      NCCL_OK(p_ncclAllReduce(d, d, n, ncclFloat32, ncclAvg, comm, stream));
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    std::printf("step %d done\n", step);
    std::fflush(stdout);
  }
  NCCL_OK(p_ncclCommDestroy(comm));
  std::printf("dlsym_loop: done\n");
  return 0;
}

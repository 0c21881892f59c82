// ncclwatch-probe-worker: one rank of `ncclwatch probe`, the minimal job.
//
// It does what every training job does first, with the NCCL the job would
// use: picks its GPU, gets the ncclUniqueId (rank 0 makes it; the others
// read it from the file NCCLWATCH_PROBE_ID names, which `ncclwatch probe`
// fills, from another node when the probe spans several), initialises a
// communicator, runs an AllReduce, an AllGather and a Send/Recv ring, checks
// every element of their results, and times AllReduce for the bandwidth.
//
// It is linked against libnccl.so.2 (found as the dynamic loader finds it,
// or the library `ncclwatch probe --nccl` preloads), so the calls go through
// the shim in front of it, as a job's would. The CUDA runtime is opened at
// run time (NCCLWATCH_PROBE_CUDART, else libcudart.so.13, .12, .11.0), so one
// worker serves any CUDA major version. Only NCCL's public API and the CUDA
// runtime's are used.
//
// Environment: RANK, WORLD_SIZE, LOCAL_RANK (as torchrun sets them),
// NCCLWATCH_PROBE_ID (the id file), NCCLWATCH_PROBE_BYTES (the AllReduce's
// size, default 8 MiB), NCCLWATCH_PROBE_WAIT_S (how long to wait for the id,
// default 120).
//
// Output: human lines on stderr, and one result line on stdout:
//   NCCLWATCH_PROBE rank=R nranks=N device=D result=ok busbw_gbs=12.3 algbw_gbs=6.1
//   NCCLWATCH_PROBE rank=R nranks=N device=D result=failed step=ncclCommInitRank
// Exit codes: 0 all checks passed, 3 an NCCL or CUDA call failed, 4 wrong
// data, 2 bad environment.

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

int EnvInt(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return static_cast<int>(fallback);
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (end && *end == '\0' && n >= 0 && n < (1L << 30)) ? static_cast<int>(n)
                                                           : static_cast<int>(fallback);
}

int g_rank = 0, g_nranks = 1, g_device = -1;

void Result(const char* result, const std::string& extra) {
  std::printf("NCCLWATCH_PROBE rank=%d nranks=%d device=%d result=%s%s%s\n", g_rank, g_nranks,
              g_device, result, extra.empty() ? "" : " ", extra.c_str());
  std::fflush(stdout);
}

[[noreturn]] void Fail(int code, const std::string& step, const std::string& why) {
  std::fprintf(stderr, "probe: rank %d: %s failed: %s\n", g_rank, step.c_str(), why.c_str());
  Result("failed", "step=" + step);
  std::exit(code);
}

// The CUDA runtime, opened at run time.
struct Cuda {
  decltype(&cudaGetDeviceCount) GetDeviceCount = nullptr;
  decltype(&cudaSetDevice) SetDevice = nullptr;
  cudaError_t (*Malloc)(void**, size_t) = nullptr;
  decltype(&cudaFree) Free = nullptr;
  decltype(&cudaMemcpy) Memcpy = nullptr;
  decltype(&cudaStreamCreate) StreamCreate = nullptr;
  decltype(&cudaStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&cudaGetErrorString) GetErrorString = nullptr;
};

Cuda OpenCuda() {
  std::vector<std::string> names;
  if (const char* v = std::getenv("NCCLWATCH_PROBE_CUDART"); v && *v) names.push_back(v);
  for (const char* n : {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"})
    names.push_back(n);
  void* lib = nullptr;
  std::string tried;
  for (const std::string& n : names) {
    lib = dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (lib) break;
    tried += (tried.empty() ? "" : ", ") + n;
  }
  if (lib == nullptr) Fail(3, "loading the CUDA runtime", "none of " + tried + " could be opened");
  Cuda c;
  auto get = [&](auto* fn, const char* name) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(lib, name));
    if (*fn == nullptr) Fail(3, "loading the CUDA runtime", std::string("no ") + name);
  };
  get(&c.GetDeviceCount, "cudaGetDeviceCount");
  get(&c.SetDevice, "cudaSetDevice");
  get(&c.Malloc, "cudaMalloc");
  get(&c.Free, "cudaFree");
  get(&c.Memcpy, "cudaMemcpy");
  get(&c.StreamCreate, "cudaStreamCreate");
  get(&c.StreamSynchronize, "cudaStreamSynchronize");
  get(&c.GetErrorString, "cudaGetErrorString");
  return c;
}

Cuda g_cuda;

void CudaOk(cudaError_t e, const char* step) {
  if (e != cudaSuccess) Fail(3, step, g_cuda.GetErrorString(e));
}

void NcclOk(ncclResult_t r, const char* step) {
  if (r != ncclSuccess) {
    Fail(3, step,
         std::string(ncclGetErrorString(r)) + " (" + std::to_string(r) +
             "): " + ncclGetLastError(nullptr));
  }
}

ncclUniqueId ShareId(const std::string& path) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (g_rank == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    const std::string out = r == ncclSuccess ? path : path + ".failed";
    const std::string tmp = out + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "wb")) {
      std::fwrite(&id, sizeof(id), 1, f);
      std::fclose(f);
      std::rename(tmp.c_str(), out.c_str());
    }
    NcclOk(r, "ncclGetUniqueId");
    return id;
  }
  const int wait_s = EnvInt("NCCLWATCH_PROBE_WAIT_S", 120);
  for (int i = 0; i < wait_s * 100; ++i) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t n = std::fread(&id, sizeof(id), 1, f);
      std::fclose(f);
      if (n == 1) return id;
    }
    if (access((path + ".failed").c_str(), F_OK) == 0)
      Fail(3, "getting the ncclUniqueId", "rank 0 could not create it");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Fail(3, "getting the ncclUniqueId",
       "rank 0 did not publish it in " + std::to_string(wait_s) + " s");
}

template <typename T>
std::vector<T> Download(const void* device, size_t n) {
  std::vector<T> host(n);
  CudaOk(g_cuda.Memcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost),
         "cudaMemcpy (device to host)");
  return host;
}

template <typename T>
void Upload(void* device, const std::vector<T>& host) {
  CudaOk(g_cuda.Memcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
         "cudaMemcpy (host to device)");
}

}  // namespace

int main() {
  g_rank = EnvInt("RANK", 0);
  g_nranks = EnvInt("WORLD_SIZE", 1);
  const int local_rank = EnvInt("LOCAL_RANK", g_rank);
  const char* id_file = std::getenv("NCCLWATCH_PROBE_ID");
  if (g_nranks < 1 || g_rank >= g_nranks || id_file == nullptr || *id_file == '\0') {
    std::fprintf(stderr,
                 "probe: RANK, WORLD_SIZE and NCCLWATCH_PROBE_ID must be set (run it "
                 "through ncclwatch probe)\n");
    return 2;
  }
  const size_t bytes = static_cast<size_t>(EnvInt("NCCLWATCH_PROBE_BYTES", 8 << 20)) & ~size_t{3};
  const size_t count = std::max<size_t>(bytes / sizeof(float), 1);

  g_cuda = OpenCuda();
  // A GPU the runtime cannot use (no driver, a driver too old, no device) is
  // noted, and NCCL is still asked to form: a job would fail inside NCCL's
  // init, and there the shim records the inventory and the failure that the
  // diagnosis explains.
  std::string cuda_failure;
  int devices = 0;
  cudaError_t e = g_cuda.GetDeviceCount(&devices);
  if (e != cudaSuccess) {
    cuda_failure = std::string("cudaGetDeviceCount: ") + g_cuda.GetErrorString(e);
  } else if (devices < 1) {
    cuda_failure = "cudaGetDeviceCount: no GPU is visible";
  }
  cudaStream_t stream = nullptr;
  if (cuda_failure.empty()) {
    g_device = local_rank % devices;
    CudaOk(g_cuda.SetDevice(g_device), "cudaSetDevice");
    CudaOk(g_cuda.StreamCreate(&stream), "cudaStreamCreate");
  } else {
    std::fprintf(stderr, "probe: rank %d: %s; asking NCCL to form anyway\n", g_rank,
                 cuda_failure.c_str());
  }

  const ncclUniqueId id = ShareId(id_file);
  ncclComm_t comm;
  NcclOk(ncclCommInitRank(&comm, g_nranks, id, g_rank), "ncclCommInitRank");
  std::fprintf(stderr, "probe: rank %d: communicator formed (%d ranks, GPU %d)\n", g_rank, g_nranks,
               g_device);

  // AllReduce (sum): rank r contributes r + 1 + i % 7 at element i.
  float* buf = nullptr;
  CudaOk(g_cuda.Malloc(reinterpret_cast<void**>(&buf), count * sizeof(float)), "cudaMalloc");
  std::vector<float> mine(count);
  for (size_t i = 0; i < count; ++i) mine[i] = static_cast<float>(g_rank + 1 + i % 7);
  Upload(buf, mine);
  NcclOk(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
  CudaOk(g_cuda.StreamSynchronize(stream), "cudaStreamSynchronize (AllReduce)");
  {
    const std::vector<float> got = Download<float>(buf, count);
    const double base = g_nranks * (g_nranks + 1) / 2.0;
    for (size_t i = 0; i < count; ++i) {
      const double want = base + g_nranks * static_cast<double>(i % 7);
      if (std::fabs(got[i] - want) > 1e-3 * want) {
        Fail(4, "checking AllReduce",
             "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                 std::to_string(want));
      }
    }
  }

  // AllGather: rank r's chunk holds r * 1000003 + i.
  const size_t chunk = 4096;
  int32_t* gather_in = nullptr;
  int32_t* gather_out = nullptr;
  CudaOk(g_cuda.Malloc(reinterpret_cast<void**>(&gather_in), chunk * sizeof(int32_t)),
         "cudaMalloc");
  CudaOk(g_cuda.Malloc(reinterpret_cast<void**>(&gather_out), chunk * g_nranks * sizeof(int32_t)),
         "cudaMalloc");
  std::vector<int32_t> piece(chunk);
  for (size_t i = 0; i < chunk; ++i) piece[i] = g_rank * 1000003 + static_cast<int32_t>(i);
  Upload(gather_in, piece);
  NcclOk(ncclAllGather(gather_in, gather_out, chunk, ncclInt32, comm, stream), "ncclAllGather");
  CudaOk(g_cuda.StreamSynchronize(stream), "cudaStreamSynchronize (AllGather)");
  {
    const std::vector<int32_t> got = Download<int32_t>(gather_out, chunk * g_nranks);
    for (int r = 0; r < g_nranks; ++r) {
      for (size_t i = 0; i < chunk; ++i) {
        if (got[r * chunk + i] != r * 1000003 + static_cast<int32_t>(i)) {
          Fail(4, "checking AllGather",
               "rank " + std::to_string(r) + "'s element " + std::to_string(i) + " is wrong");
        }
      }
    }
  }

  // Send/Recv ring: send to rank + 1, receive from rank - 1.
  if (g_nranks > 1) {
    const int next = (g_rank + 1) % g_nranks;
    const int prev = (g_rank + g_nranks - 1) % g_nranks;
    int32_t* recv = nullptr;
    CudaOk(g_cuda.Malloc(reinterpret_cast<void**>(&recv), chunk * sizeof(int32_t)), "cudaMalloc");
    NcclOk(ncclGroupStart(), "ncclGroupStart");
    NcclOk(ncclSend(gather_in, chunk, ncclInt32, next, comm, stream), "ncclSend");
    NcclOk(ncclRecv(recv, chunk, ncclInt32, prev, comm, stream), "ncclRecv");
    NcclOk(ncclGroupEnd(), "ncclGroupEnd");
    CudaOk(g_cuda.StreamSynchronize(stream), "cudaStreamSynchronize (Send/Recv)");
    const std::vector<int32_t> got = Download<int32_t>(recv, chunk);
    for (size_t i = 0; i < chunk; ++i) {
      if (got[i] != prev * 1000003 + static_cast<int32_t>(i)) {
        Fail(4, "checking Send/Recv",
             "element " + std::to_string(i) + " from rank " + std::to_string(prev) + " is wrong");
      }
    }
    g_cuda.Free(recv);
  }

  // Bandwidth: AllReduce timed over a few iterations after one warm-up.
  const int iterations = 5;
  NcclOk(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
  CudaOk(g_cuda.StreamSynchronize(stream), "cudaStreamSynchronize");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i)
    NcclOk(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
  CudaOk(g_cuda.StreamSynchronize(stream), "cudaStreamSynchronize");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
  const double algbw = seconds > 0 ? count * sizeof(float) / seconds / 1e9 : 0;
  const double busbw = algbw * 2.0 * (g_nranks - 1) / g_nranks;

  g_cuda.Free(buf);
  g_cuda.Free(gather_in);
  g_cuda.Free(gather_out);
  NcclOk(ncclCommDestroy(comm), "ncclCommDestroy");
  char extra[128];
  std::snprintf(extra, sizeof(extra), "busbw_gbs=%.3f algbw_gbs=%.3f bytes=%zu", busbw, algbw,
                count * sizeof(float));
  Result("ok", extra);
  return 0;
}

// capture_probe: an AllReduce issued on a stream under CUDA graph capture,
// then one on an ordinary stream, on the do-nothing NCCL and CUDA driver
// (tests/fakes/; CUDA_NOOP_CAPTURING names the capturing stream). Under the
// shim the first must get no completion marker (an Untracked record says it
// was captured) and the second one. Loads the driver first, as the CUDA
// runtime would have, then uses NCCL as a program does.

#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: capture_probe LIBCUDA\n");
    return 2;
  }
  if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::fprintf(stderr, "capture_probe: %s\n", dlerror());
    return 2;
  }
  ncclUniqueId id;
  std::memset(&id, 5, sizeof(id));
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 3;
  float buf[4] = {1, 2, 3, 4};
  auto* captured = reinterpret_cast<cudaStream_t>(0x1000);
  if (ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, captured) != ncclSuccess) return 3;
  if (ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 3;
  if (ncclCommDestroy(comm) != ncclSuccess) return 3;
  std::printf("capture_probe: done\n");
  return 0;
}

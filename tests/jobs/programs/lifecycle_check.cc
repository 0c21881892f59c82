// lifecycle_check: communicator lifecycles and the rest of the NCCL API.
//
//   lifecycle_check initall    one process drives 4 GPUs with ncclCommInitAll
//   lifecycle_check shrink     the last rank leaves; the others shrink it away
//   lifecycle_check abort      a collective no peer joins is aborted
//   lifecycle_check revoke     a communicator is revoked, then destroyed
//   lifecycle_check scalable   init with one ncclUniqueId per two ranks
//   lifecycle_check api        every other entry point of nccl.h
//
// Prints "ok ..." per check and "lifecycle_check: <mode> passed" at the end;
// exits 1 on the first failed check. Public NCCL/CUDA API only.

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/job_env.h"

namespace {

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL %s\n", what.c_str());
    std::exit(1);
  }
  std::printf("ok %s\n", what.c_str());
}

std::vector<float> Download(const float* d, size_t n) {
  std::vector<float> h(n);
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

float* Upload(const std::vector<float>& h) {
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, h.size() * sizeof(float)));
  CUDA_OK(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

void InitAll() {
  const int ndev = 4;
  const size_t n = 10000;
  std::vector<ncclComm_t> comms(ndev);
  NCCL_OK(ncclCommInitAll(comms.data(), ndev, nullptr));
  std::vector<float*> bufs(ndev);
  std::vector<cudaStream_t> streams(ndev);
  for (int d = 0; d < ndev; ++d) {
    int dev = -1, rank = -1, count = -1;
    NCCL_OK(ncclCommCuDevice(comms[d], &dev));
    NCCL_OK(ncclCommUserRank(comms[d], &rank));
    NCCL_OK(ncclCommCount(comms[d], &count));
    Check(dev == d && rank == d && count == ndev,
          "InitAll comm " + std::to_string(d) + " on device " + std::to_string(dev));
    CUDA_OK(cudaSetDevice(d));
    CUDA_OK(cudaStreamCreate(&streams[d]));
    bufs[d] = Upload(std::vector<float>(n, static_cast<float>(d + 1)));
  }
  NCCL_OK(ncclGroupStart());
  for (int d = 0; d < ndev; ++d)
    NCCL_OK(ncclAllReduce(bufs[d], bufs[d], n, ncclFloat32, ncclSum, comms[d], streams[d]));
  NCCL_OK(ncclGroupEnd());
  for (int d = 0; d < ndev; ++d) {
    CUDA_OK(cudaSetDevice(d));
    CUDA_OK(cudaStreamSynchronize(streams[d]));
    std::vector<float> h = Download(bufs[d], n);
    Check(h[0] == 10.0f && h[n - 1] == 10.0f,
          "grouped AllReduce from one thread, device " + std::to_string(d));
  }
  for (ncclComm_t c : comms) NCCL_OK(ncclCommDestroy(c));
}

ncclComm_t WorldComm() {
  CUDA_OK(cudaSetDevice(jobenv::Device()));
  ncclUniqueId id = jobenv::ShareUniqueId();
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, jobenv::WorldSize(), id, jobenv::Rank()));
  return comm;
}

void Shrink() {
  const int rank = jobenv::Rank(), world = jobenv::WorldSize();
  ncclComm_t comm = WorldComm();
  if (rank == world - 1) {
    std::printf("rank %d leaves the job\n", rank);
    return;  // gone, as a failed node would be
  }
  int gone = world - 1;
  ncclComm_t small = nullptr;
  NCCL_OK(ncclCommShrink(comm, &gone, 1, &small, nullptr, NCCL_SHRINK_DEFAULT));
  int count = 0, me = -1;
  NCCL_OK(ncclCommCount(small, &count));
  NCCL_OK(ncclCommUserRank(small, &me));
  Check(count == world - 1 && me == rank,
        "shrunk communicator has " + std::to_string(count) + " ranks");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float* d = Upload(std::vector<float>(1000, static_cast<float>(rank)));
  NCCL_OK(ncclAllReduce(d, d, 1000, ncclFloat32, ncclSum, small, s));
  CUDA_OK(cudaStreamSynchronize(s));
  const float want = static_cast<float>((world - 1) * (world - 2) / 2);
  Check(Download(d, 1000)[999] == want, "AllReduce on the shrunk communicator");
  NCCL_OK(ncclCommDestroy(small));
  NCCL_OK(ncclCommAbort(comm));  // its last rank is gone: abort, not destroy
}

// Rank 0 starts a collective nobody else joins, then gets out of it.
void AbortOrRevoke(bool revoke) {
  const int rank = jobenv::Rank();
  ncclComm_t comm = WorldComm();
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float* d = Upload(std::vector<float>(1000, 1.0f));
  if (rank == 0) {
    NCCL_OK(ncclAllReduce(d, d, 1000, ncclFloat32, ncclSum, comm, s));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Check(cudaStreamQuery(s) == cudaErrorNotReady, "the lonely AllReduce is still running");
    ncclResult_t async = ncclInternalError;
    NCCL_OK(ncclCommGetAsyncError(comm, &async));
    Check(async == ncclSuccess, "no asynchronous error while it waits");
    if (revoke) {
      NCCL_OK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
      Check(ncclAllReduce(d, d, 1, ncclFloat32, ncclSum, comm, s) == ncclInvalidUsage,
            "a revoked communicator takes no new work");
    } else {
      NCCL_OK(ncclCommAbort(comm));
    }
    Check(cudaStreamSynchronize(s) == cudaSuccess,
          std::string(revoke ? "revoke" : "abort") + " released the stream");
    if (revoke) NCCL_OK(ncclCommDestroy(comm));
  } else {
    NCCL_OK(ncclCommAbort(comm));
  }
}

void Scalable() {
  const int rank = jobenv::Rank(), world = jobenv::WorldSize();
  CUDA_OK(cudaSetDevice(jobenv::Device()));
  const int nids = world / 2;
  std::vector<ncclUniqueId> ids;
  for (int i = 0; i < nids; ++i) {
    // Root i is made by the first rank of its block.
    const std::string name = "scalable_id_" + std::to_string(i);
    if (rank == i * world / nids) {
      ncclUniqueId id;
      NCCL_OK(ncclGetUniqueId(&id));
      const std::string dir = std::getenv("JOBRUN_RENDEZVOUS");
      FILE* f = std::fopen((dir + "/" + name + ".tmp").c_str(), "wb");
      std::fwrite(&id, sizeof(id), 1, f);
      std::fclose(f);
      std::rename((dir + "/" + name + ".tmp").c_str(), (dir + "/" + name).c_str());
    }
  }
  for (int i = 0; i < nids; ++i) {
    const std::string path =
        std::string(std::getenv("JOBRUN_RENDEZVOUS")) + "/scalable_id_" + std::to_string(i);
    ncclUniqueId id;
    for (;;) {
      FILE* f = std::fopen(path.c_str(), "rb");
      if (f && std::fread(&id, sizeof(id), 1, f) == 1) {
        std::fclose(f);
        break;
      }
      if (f) std::fclose(f);
      usleep(10000);
    }
    ids.push_back(id);
  }
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRankScalable(&comm, world, rank, nids, ids.data(), nullptr));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float* d = Upload(std::vector<float>(100, static_cast<float>(rank)));
  NCCL_OK(ncclAllReduce(d, d, 100, ncclFloat32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  Check(Download(d, 100)[0] == static_cast<float>(world * (world - 1) / 2),
        "AllReduce after init with " + std::to_string(nids) + " unique ids");
  NCCL_OK(ncclCommDestroy(comm));
}

void Api() {
  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  Check(version == NCCL_VERSION_CODE, "ncclGetVersion is " + std::to_string(version));
  Check(std::string(ncclGetErrorString(ncclSystemError)) ==
            "unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "ncclGetErrorString(ncclSystemError)");
  Check(std::string(ncclGetErrorString(static_cast<ncclResult_t>(99))) == "unknown result code",
        "ncclGetErrorString of an unknown code");
  Check(ncclGroupEnd() == ncclInvalidUsage, "ncclGroupEnd outside a group is invalid usage");
  Check(std::string(ncclGetLastError(nullptr)) == "ncclGroupEnd: not in a group call.",
        "ncclGetLastError");

  ncclComm_t comm = WorldComm();
  void* mem = nullptr;
  NCCL_OK(ncclMemAlloc(&mem, 1 << 20));
  void* reg = nullptr;
  NCCL_OK(ncclCommRegister(comm, mem, 1 << 20, &reg));
  Check(reg != nullptr, "ncclCommRegister gives a handle");
  NCCL_OK(ncclCommDeregister(comm, reg));
  ncclWindow_t win = nullptr;
  NCCL_OK(ncclCommWindowRegister(comm, mem, 1 << 20, &win, NCCL_WIN_COLL_SYMMETRIC));
  Check(win != nullptr, "ncclCommWindowRegister gives a window");
  NCCL_OK(ncclCommWindowDeregister(comm, win));
  NCCL_OK(ncclMemFree(mem));

  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float* d = Upload(std::vector<float>(1 << 16, 1.0f));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(d, d, 1 << 16, ncclFloat32, ncclSum, comm, s));
  NCCL_OK(ncclGroupSimulateEnd(&info));
  Check(info.estimatedTime > 0,
        "ncclGroupSimulateEnd estimates " + std::to_string(info.estimatedTime) + " us");
  CUDA_OK(cudaStreamSynchronize(s));
  Check(Download(d, 1)[0] == 1.0f, "a simulated group launches nothing");

  Check(ncclAllReduce(d, d, 16, static_cast<ncclDataType_t>(42), ncclSum, comm, s) ==
            ncclInvalidArgument,
        "an invalid datatype is ncclInvalidArgument");
  Check(ncclBroadcast(d, d, 16, ncclFloat32, 99, comm, s) == ncclInvalidArgument,
        "an invalid root is ncclInvalidArgument");
  Check(std::string(ncclGetLastError(comm)).find("invalid root 99") != std::string::npos,
        "the WARN names the root");
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async));
  Check(async == ncclSuccess, "a healthy communicator has no asynchronous error");
  NCCL_OK(ncclCommFinalize(comm));
  NCCL_OK(ncclCommDestroy(comm));
  Check(ncclCommDestroy(nullptr) == ncclSuccess, "destroying NULL is a no-op");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "initall")
    InitAll();
  else if (mode == "shrink")
    Shrink();
  else if (mode == "abort")
    AbortOrRevoke(false);
  else if (mode == "revoke")
    AbortOrRevoke(true);
  else if (mode == "scalable")
    Scalable();
  else if (mode == "api")
    Api();
  else {
    std::printf("usage: lifecycle_check initall|shrink|abort|revoke|scalable|api\n");
    return 2;
  }
  std::printf("lifecycle_check: %s passed\n", mode.c_str());
  return 0;
}

#include "nccl/transport.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstring>

#include "nccl/debug.h"
#include "nccl/net_ib.h"
#include "nccl/params.h"
#include "nccl/peer_info.h"

namespace ncclsim::nccl {
namespace {

constexpr size_t kPathBytes = 32;

struct IpcEntry {
  cudaIpcMemHandle_t handle;
  uint64_t ptr;
  int32_t pid;
  int32_t valid;
};

}  // namespace

ncclResult_t Transport::Setup(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank) {
  const int n = static_cast<int>(peers.size());
  send_.assign(n, Fifo());
  recv_.assign(n, Fifo());
  const size_t bytes = ConnectionBytes(SimpleBufferBytes());
  if (!ShmDisabled()) return SetupShm(bootstrap, peers, rank, bytes);
  if (!P2pDisabled()) return SetupP2p(bootstrap, peers, rank, bytes);
  const std::string hca = IbDevice();
  if (hca.empty()) {
    WARN(
        "ncclsim: no transport between local ranks: NCCL_SHM_DISABLE=1 and NCCL_P2P_DISABLE=1, "
        "and the simulator has no network transport");
    return ncclInternalError;
  }
  // Through the (simulated) NIC: register each connection's send and receive
  // buffers, as NCCL's IB transport does, then move the data as P2P does.
  INFO(kInit | kNet, "NET/IB : Using [0]%s:1/IB ; OOB %s", hca.c_str(), "lo");
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    NCCLCHECK(ib_.Register(bytes));
    NCCLCHECK(ib_.Register(bytes));
    INFO(kInit | kNet, "Channel 00/0 : %d[%d] -> %d[%d] [receive] via NET/IB/0", p,
         peers[p].cuda_dev, rank, peers[rank].cuda_dev);
  }
  return SetupP2p(bootstrap, peers, rank, bytes);
}

ncclResult_t Transport::SetupShm(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank,
                                 size_t bytes) {
  const int n = static_cast<int>(peers.size());
  // Row r of `paths`: the segments rank r created, one per sender.
  std::vector<char> paths(static_cast<size_t>(n) * n * kPathBytes, 0);
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    auto seg = std::make_unique<ShmSegment>();
    NCCLCHECK(seg->Create(bytes, 1));
    recv_[p] = Fifo(seg->data());
    recv_[p].Initialize(SimpleBufferBytes());
    std::snprintf(&paths[(static_cast<size_t>(rank) * n + p) * kPathBytes], kPathBytes, "%s",
                  seg->path().c_str());
    INFO(kInit | kShm, "Channel 00/0 : %d[%d] -> %d[%d] via SHM/direct/direct", p,
         peers[p].cuda_dev, rank, peers[rank].cuda_dev);
    segments_.push_back(std::move(seg));
  }
  NCCLCHECK(bootstrap.AllGather(paths.data(), static_cast<size_t>(n) * kPathBytes));
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    auto seg = std::make_unique<ShmSegment>();
    NCCLCHECK(seg->Attach(&paths[(static_cast<size_t>(p) * n + rank) * kPathBytes], bytes));
    send_[p] = Fifo(seg->data());
    segments_.push_back(std::move(seg));
  }
  return bootstrap.Barrier();
}

ncclResult_t Transport::SetupP2p(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank,
                                 size_t bytes) {
  const int n = static_cast<int>(peers.size());
  std::vector<IpcEntry> table(static_cast<size_t>(n) * n);
  std::memset(table.data(), 0, table.size() * sizeof(IpcEntry));
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    void* buf = nullptr;
    cudaError_t err = cudaMalloc(&buf, bytes);
    if (err == cudaSuccess) err = cudaMemset(buf, 0, kConnectionHeaderBytes);
    IpcEntry& e = table[static_cast<size_t>(rank) * n + p];
    if (err == cudaSuccess) err = cudaIpcGetMemHandle(&e.handle, buf);
    if (err != cudaSuccess) {
      WARN("Cuda failure '%s'", cudaGetErrorString(err));
      return ncclUnhandledCudaError;
    }
    device_buffers_.push_back(buf);
    recv_[p] = Fifo(static_cast<char*>(buf));
    recv_[p].Initialize(SimpleBufferBytes());
    e.ptr = reinterpret_cast<uint64_t>(buf);
    e.pid = static_cast<int32_t>(getpid());
    e.valid = 1;
    INFO(kInit | kP2p, "Channel 00/0 : %d[%d] -> %d[%d] via P2P/IPC", p, peers[p].cuda_dev, rank,
         peers[rank].cuda_dev);
  }
  NCCLCHECK(bootstrap.AllGather(table.data(), static_cast<size_t>(n) * sizeof(IpcEntry)));
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    const IpcEntry& e = table[static_cast<size_t>(p) * n + rank];
    void* remote = nullptr;
    if (e.pid == static_cast<int32_t>(getpid())) {
      remote = reinterpret_cast<void*>(e.ptr);
    } else {
      cudaError_t err = cudaIpcOpenMemHandle(&remote, e.handle, cudaIpcMemLazyEnablePeerAccess);
      if (err != cudaSuccess) {
        WARN("Cuda failure '%s'", cudaGetErrorString(err));
        return ncclUnhandledCudaError;
      }
      imported_buffers_.push_back(remote);
    }
    send_[p] = Fifo(static_cast<char*>(remote));
  }
  return bootstrap.Barrier();
}

void Transport::Close() {
  segments_.clear();
  for (void* p : imported_buffers_) (void)cudaIpcCloseMemHandle(p);
  for (void* p : device_buffers_) (void)cudaFree(p);
  imported_buffers_.clear();
  device_buffers_.clear();
  ib_.Release();
  send_.clear();
  recv_.clear();
}

}  // namespace ncclsim::nccl

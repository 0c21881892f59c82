#include "nccl/transport.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstring>

#include "nccl/cudawrap.h"
#include "nccl/debug.h"
#include "nccl/ipc_socket.h"
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

// Peers in this process on other GPUs reach this GPU's memory directly once
// peer access is enabled (NCCL's p2pMap for same-process peers).
ncclResult_t Transport::EnablePeerAccess(const std::vector<PeerInfo>& peers, int rank) {
  for (size_t p = 0; p < peers.size(); ++p) {
    const PeerInfo& o = peers[p];
    if (static_cast<int>(p) == rank || o.pid != peers[rank].pid ||
        o.cuda_dev == peers[rank].cuda_dev)
      continue;
    cudaError_t err = cudaDeviceEnablePeerAccess(o.cuda_dev, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
    } else if (err != cudaSuccess) {
      WARN("failed to peer with device %d(=%lx): %d %s", o.cuda_dev,
           static_cast<unsigned long>(o.bus_id), static_cast<int>(err), cudaGetErrorString(err));
      return ncclInternalError;
    }
  }
  return ncclSuccess;
}

ncclResult_t Transport::MapCuMem(CUmemGenericAllocationHandle handle, size_t size, int device,
                                 char** out) {
  CUdeviceptr ptr = 0;
  CUCHECK(cuMemAddressReserve, &ptr, size, 0, 0, 0);
  CUCHECK(cuMemMap, ptr, size, 0, handle, 0);
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUCHECK(cuMemSetAccess, ptr, size, &access, 1);
  cumem_.push_back({static_cast<uintptr_t>(ptr), size, handle});
  *out = reinterpret_cast<char*>(static_cast<uintptr_t>(ptr));
  return ncclSuccess;
}

// NCCL's P2P transport with cuMem (NCCL_CUMEM_ENABLE, the default): each
// receive buffer is a cuMem allocation exportable as a POSIX descriptor;
// the receiver sends the descriptor to its sender over a Unix socket, which
// imports and maps it.
ncclResult_t Transport::SetupCuMem(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers,
                                   int rank, size_t bytes) {
  struct Entry {
    uint64_t ptr;          // the buffer in its creator's address space
    uint64_t socket_hash;  // where its creator's IPC socket listens
    int32_t pid;
    int32_t valid;
  };
  const int n = static_cast<int>(peers.size());
  const int dev = peers[rank].cuda_dev;
  NCCLCHECK(EnablePeerAccess(peers, rank));
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t granularity = 0;
  CUCHECK(cuMemGetAllocationGranularity, &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  const size_t size = (bytes + granularity - 1) / granularity * granularity;
  const uint64_t hash = Fnv1a(
      &rank, sizeof(rank),
      static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(this));
  IpcSocket sock;
  NCCLCHECK(sock.Init(rank, hash, nullptr));
  std::vector<Entry> table(static_cast<size_t>(n) * n);
  std::memset(table.data(), 0, table.size() * sizeof(Entry));
  std::vector<CUmemGenericAllocationHandle> mine(n, 0);
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    CUCHECK(cuMemCreate, &mine[p], size, &prop, 0);
    char* buf = nullptr;
    NCCLCHECK(MapCuMem(mine[p], size, dev, &buf));
    recv_[p] = Fifo(buf);
    recv_[p].Initialize(SimpleBufferBytes());
    table[static_cast<size_t>(rank) * n + p] = {reinterpret_cast<uint64_t>(buf), hash,
                                                static_cast<int32_t>(getpid()), 1};
    INFO(kInit | kP2p, "Channel 00/0 : %d[%d] -> %d[%d] via P2P/CUMEM", p, peers[p].cuda_dev, rank,
         dev);
  }
  NCCLCHECK(bootstrap.AllGather(table.data(), static_cast<size_t>(n) * sizeof(Entry)));
  // Each buffer's descriptor to the rank that will write into it.
  int expected = 0;
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    const Entry& theirs = table[static_cast<size_t>(p) * n + rank];
    if (theirs.pid == static_cast<int32_t>(getpid())) {
      send_[p] = Fifo(reinterpret_cast<char*>(theirs.ptr));
      continue;
    }
    ++expected;
    int fd = -1;
    CUCHECK(cuMemExportToShareableHandle, &fd, mine[p], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0);
    const ncclResult_t sent = sock.SendFd(fd, p, theirs.socket_hash, rank);
    close(fd);
    NCCLCHECK(sent);
  }
  for (int i = 0; i < expected; ++i) {
    int fd = -1;
    int32_t from = -1;
    NCCLCHECK(sock.RecvFd(&fd, &from));
    if (from < 0 || from >= n || from == rank) {
      close(fd);
      WARN("UDS: descriptor from unexpected rank %d", from);
      return ncclInternalError;
    }
    CUmemGenericAllocationHandle handle = 0;
    const CudaDriverTable* cu = CudaDriver();
    CUresult err = cu == nullptr ? CUDA_ERROR_NOT_INITIALIZED
                                 : cu->cuMemImportFromShareableHandle(
                                       &handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(fd);
    if (err != CUDA_SUCCESS) {
      const char* text = "unknown error";
      if (cu != nullptr) (void)cu->cuGetErrorString(err, &text);
      WARN("Cuda failure %d '%s'", static_cast<int>(err), text);
      return ncclUnhandledCudaError;
    }
    char* remote = nullptr;
    NCCLCHECK(MapCuMem(handle, size, dev, &remote));
    send_[from] = Fifo(remote);
  }
  sock.Close();
  return bootstrap.Barrier();
}

ncclResult_t Transport::SetupP2p(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank,
                                 size_t bytes) {
  if (CuMemEnabled()) return SetupCuMem(bootstrap, peers, rank, bytes);
  NCCLCHECK(EnablePeerAccess(peers, rank));
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
  if (const CudaDriverTable* cu = cumem_.empty() ? nullptr : CudaDriver()) {
    for (const CuMemMapping& m : cumem_) {
      (void)cu->cuMemUnmap(static_cast<CUdeviceptr>(m.ptr), m.size);
      (void)cu->cuMemAddressFree(static_cast<CUdeviceptr>(m.ptr), m.size);
      (void)cu->cuMemRelease(m.handle);
    }
  }
  cumem_.clear();
  ib_.Release();
  send_.clear();
  recv_.clear();
}

}  // namespace ncclsim::nccl

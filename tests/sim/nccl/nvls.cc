#include "nccl/nvls.h"

#include <unistd.h>

#include <vector>

#include "common/sim_env.h"
#include "nccl/comm.h"
#include "nccl/cudawrap.h"
#include "nccl/debug.h"
#include "nccl/ipc_socket.h"
#include "nccl/params.h"

namespace ncclsim::nccl {

ncclResult_t NvlsSetup(ncclComm* comm) {
  if (EnvInt("NCCL_NVLS_ENABLE", 2, 0, 2) == 0) return ncclSuccess;
  if (comm->local_ranks < 2 || comm->nnodes > 1) return ncclSuccess;
  CUdevice dev = 0;
  CUCHECK(cuDeviceGet, &dev, comm->cuda_dev);
  int supported = 0;
  CUCHECK(cuDeviceGetAttribute, &supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev);
  if (!supported) {
    INFO(kInit | kNvls, "NVLS multicast support is not available on dev %d", comm->cuda_dev);
    return ncclSuccess;
  }
  constexpr int kChannels = 16;
  INFO(kInit | kNvls, "NVLS multicast support is available on dev %d (NVLS_NCHANNELS %d)",
       comm->cuda_dev, kChannels);
  // The local ranks, the first of them the leader.
  std::vector<int> locals;
  for (int i = 0; i < comm->nranks; ++i)
    if (comm->peers[i].host_hash == comm->peers[comm->rank].host_hash) locals.push_back(i);
  const int leader = locals.front();
  CUmulticastObjectProp prop = {};
  prop.numDevices = static_cast<unsigned>(locals.size());
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.size = SimpleBufferBytes() * kChannels;
  size_t granularity = 0;
  CUCHECK(cuMulticastGetGranularity, &granularity, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED);
  const size_t size = (prop.size + granularity - 1) / granularity * granularity;
  prop.size = size;
  const uint64_t hash = comm->comm_hash ^ 0x4e564c53ull;  // "NVLS": the same on every rank
  IpcSocket sock;
  NCCLCHECK(sock.Init(comm->rank, hash, &comm->abort_flag));
  CUmemGenericAllocationHandle mc = 0;
  int fd = -1;
  if (comm->rank == leader) {
    CUCHECK(cuMulticastCreate, &mc, &prop);
    CUCHECK(cuMemExportToShareableHandle, &fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  }
  // Every local rank has its socket bound, and the leader its object.
  int32_t ready = 1;
  std::vector<int32_t> all(comm->nranks, 0);
  all[comm->rank] = ready;
  NCCLCHECK(comm->bootstrap->AllGather(all.data(), sizeof(int32_t)));
  if (comm->rank == leader) {
    for (int r : locals) {
      if (r == leader) continue;
      const ncclResult_t sent = sock.SendFd(fd, r, hash, leader);
      if (sent != ncclSuccess) close(fd);
      NCCLCHECK(sent);
    }
    close(fd);
  } else {
    int32_t from = -1;
    NCCLCHECK(sock.RecvFd(&fd, &from));
    const CudaDriverTable* cu = CudaDriver();
    CUresult err =
        cu->cuMemImportFromShareableHandle(&mc, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(fd);
    if (err != CUDA_SUCCESS) {
      const char* text = "unknown error";
      (void)cu->cuGetErrorString(err, &text);
      WARN("Cuda failure %d '%s'", static_cast<int>(err), text);
      return ncclUnhandledCudaError;
    }
  }
  sock.Close();
  CUCHECK(cuMulticastAddDevice, mc, dev);
  CUmemAllocationProp mem_prop = {};
  mem_prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  mem_prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  mem_prop.location.id = comm->cuda_dev;
  mem_prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle mem = 0;
  CUCHECK(cuMemCreate, &mem, size, &mem_prop, 0);
  CUCHECK(cuMulticastBindMem, mc, 0, mem, 0, size, 0);
  NCCLCHECK(comm->bootstrap->Barrier());
  // The simulator moves no data through the multicast object: it is let go
  // once every rank has bound to it.
  CUCHECK(cuMulticastUnbind, mc, dev, 0, size);
  CUCHECK(cuMemRelease, mem);
  CUCHECK(cuMemRelease, mc);
  INFO(kInit | kNvls, "NVLS comm %p headRank %d nHeads %d buffSize %zu nvlsRanks %d",
       static_cast<void*>(comm), 0, 1, size, static_cast<int>(locals.size()));
  return ncclSuccess;
}

}  // namespace ncclsim::nccl

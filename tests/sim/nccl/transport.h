// The connections of one communicator's rank: for every other rank, a FIFO
// to receive from it (in this rank's memory) and one to send to it (in its).
//
//   SHM (default)         each receive buffer is a /dev/shm segment (shm_segment.h);
//                         names are all-gathered over the bootstrap, then attached.
//   P2P (NCCL_SHM_DISABLE=1)  each receive buffer is device memory shared as
//                         NCCL's P2P transport shares GPU buffers: by default
//                         a cuMem allocation (cuMemCreate with a POSIX-fd
//                         handle type, mapped with cuMemAddressReserve/
//                         cuMemMap/cuMemSetAccess) whose descriptor travels to
//                         the sender over a Unix socket (ipc_socket.h) and is
//                         imported with cuMemImportFromShareableHandle; with
//                         NCCL_CUMEM_ENABLE=0 legacy CUDA IPC
//                         (cudaIpcGetMemHandle / cudaIpcOpenMemHandle).
//                         Same-process peers use the pointer directly, after
//                         cudaDeviceEnablePeerAccess between different GPUs.
//   NET/IB (NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1, NCCLSIM_IB_HCA set)
//                         each connection's buffers are registered (pinned)
//                         with the simulated HCA (net_ib.h), then as P2P.
//
// The simulator models one host: every rank of a communicator must be on it.
//
// Thread-safety: set up and closed by the communicator's init/destroy; the
// FIFOs are then driven by its progress thread only.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_TRANSPORT_H_
#define NCCLWATCH_TESTS_SIM_NCCL_TRANSPORT_H_

#include <cuda.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "nccl/bootstrap.h"
#include "nccl/fifo.h"
#include "nccl/net_ib.h"
#include "nccl/shm_segment.h"

namespace ncclsim::nccl {

struct PeerInfo;

class Transport {
 public:
  ncclResult_t Setup(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank);
  void Close();

  Fifo& SendTo(int peer) { return send_[peer]; }
  Fifo& RecvFrom(int peer) { return recv_[peer]; }

 private:
  ncclResult_t SetupShm(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank,
                        size_t bytes);
  ncclResult_t SetupP2p(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank,
                        size_t bytes);
  ncclResult_t SetupCuMem(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank,
                          size_t bytes);
  ncclResult_t EnablePeerAccess(const std::vector<PeerInfo>& peers, int rank);
  ncclResult_t MapCuMem(CUmemGenericAllocationHandle handle, size_t size, int device, char** out);

  // A cuMem mapping this rank made: its own buffers and what it imported.
  struct CuMemMapping {
    uintptr_t ptr;
    size_t size;
    CUmemGenericAllocationHandle handle;
  };
  std::vector<CuMemMapping> cumem_;

  std::vector<Fifo> send_;
  std::vector<Fifo> recv_;
  std::vector<std::unique_ptr<ShmSegment>> segments_;  // SHM: what this rank maps
  std::vector<void*> device_buffers_;                  // P2P: what this rank allocated
  std::vector<void*> imported_buffers_;                // P2P: what it opened from peers
  IbRegistrations ib_;                                 // NET/IB: the pinned buffers
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_TRANSPORT_H_

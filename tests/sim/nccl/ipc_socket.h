// Passing file descriptors between the local ranks, as NCCL does for cuMem
// POSIX handles (src/misc/ipcsocket.cc): each rank binds a datagram Unix
// socket in the abstract namespace, "/tmp/nccl-socket-<rank>-<hash>", and a
// descriptor travels to it as SCM_RIGHTS ancillary data. Abstract sockets
// belong to the network namespace: ranks in containers that do not share one
// cannot reach each other this way, as with real NCCL.
//
// Thread-safety: one object per use, on one thread.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_IPC_SOCKET_H_
#define NCCLWATCH_TESTS_SIM_NCCL_IPC_SOCKET_H_

#include <nccl.h>

#include <cstdint>

namespace ncclsim::nccl {

class IpcSocket {
 public:
  IpcSocket() = default;
  IpcSocket(const IpcSocket&) = delete;
  IpcSocket& operator=(const IpcSocket&) = delete;
  ~IpcSocket() { Close(); }

  // Binds this rank's socket; `hash` keeps communicators and uses apart.
  ncclResult_t Init(int rank, uint64_t hash, volatile uint32_t* abort_flag);
  // Sends `fd` (and `tag`) to the socket rank `peer` bound with `peer_hash`.
  ncclResult_t SendFd(int fd, int peer, uint64_t peer_hash, int32_t tag);
  // Receives one descriptor, with the sender's tag.
  ncclResult_t RecvFd(int* fd, int32_t* tag);
  void Close();

 private:
  int fd_ = -1;
  volatile uint32_t* abort_ = nullptr;
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_IPC_SOCKET_H_

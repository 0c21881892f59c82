#include "nccl/ipc_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "nccl/debug.h"

namespace ncclsim::nccl {
namespace {

socklen_t Address(int rank, uint64_t hash, sockaddr_un* a) {
  std::memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  // Abstract namespace: the name starts with a NUL byte.
  const int n = std::snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "/tmp/nccl-socket-%d-%lx",
                              rank, static_cast<unsigned long>(hash));
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

ncclResult_t IpcSocket::Init(int rank, uint64_t hash, volatile uint32_t* abort_flag) {
  abort_ = abort_flag;
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    WARN("UDS: Socket creation error : %s (%d)", strerror(errno), errno);
    return ncclSystemError;
  }
  sockaddr_un a;
  const socklen_t len = Address(rank, hash, &a);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    WARN("UDS: Binding to socket %s failed : %s (%d)", a.sun_path + 1, strerror(errno), errno);
    Close();
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t IpcSocket::SendFd(int fd, int peer, uint64_t peer_hash, int32_t tag) {
  sockaddr_un a;
  const socklen_t len = Address(peer, peer_hash, &a);
  char control[CMSG_SPACE(sizeof(int))];
  std::memset(control, 0, sizeof(control));
  iovec iov{&tag, sizeof(tag)};
  msghdr m{};
  m.msg_name = &a;
  m.msg_namelen = len;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_len = CMSG_LEN(sizeof(int));
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  ssize_t r;
  while ((r = sendmsg(fd_, &m, 0)) < 0 &&
         (errno == EAGAIN || errno == EINTR || errno == ENOENT || errno == ECONNREFUSED)) {
    if (abort_ != nullptr && *abort_) return ncclInternalError;
    usleep(1000);  // the peer has not bound its socket yet
  }
  if (r < 0) {
    WARN("UDS: Sending data over socket %s failed : %s (%d)", a.sun_path + 1, strerror(errno),
         errno);
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t IpcSocket::RecvFd(int* fd, int32_t* tag) {
  char control[CMSG_SPACE(sizeof(int))];
  iovec iov{tag, sizeof(*tag)};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    const int n = poll(&p, 1, 100);
    if (abort_ != nullptr && *abort_) return ncclInternalError;
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (recvmsg(fd_, &m, 0) < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    if (c == nullptr || c->cmsg_type != SCM_RIGHTS) {
      WARN("UDS: Receiving data over socket failed : no descriptor");
      return ncclSystemError;
    }
    std::memcpy(fd, CMSG_DATA(c), sizeof(int));
    return ncclSuccess;
  }
  WARN("UDS: Receiving data over socket failed : %s (%d)", strerror(errno), errno);
  return ncclSystemError;
}

void IpcSocket::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace ncclsim::nccl

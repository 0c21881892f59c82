// TCP sockets for the simulated NCCL bootstrap, with NCCL's rules for picking
// an interface and NCCL's behaviour when a connection fails: so the failures a
// job meets for real (no matching interface, root unreachable, connection
// refused, peer gone) come out with the result codes and WARN lines that real
// NCCL gives.
//
// Interface selection (NCCL_SOCKET_IFNAME): a comma-separated list of name
// prefixes, each optionally ":port"; a leading '^' excludes the listed ones, a
// leading '=' matches names exactly. Only running (IFF_RUNNING) IPv4/IPv6
// interfaces count, never IPv6 loopback. Unset, the order is: ib*, then an
// interface on NCCL_COMM_ID's subnet, then anything but docker/lo/virbr, then
// docker*, lo*, virbr*.
//
// Every connection starts with the sender's 8-byte magic and a 4-byte type;
// a listener drops connections whose magic is not its own.
//
// Thread-safety: a Socket is used by one thread at a time.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_SOCKET_H_
#define NCCLWATCH_TESTS_SIM_NCCL_SOCKET_H_

#include <nccl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ncclsim::nccl {

union SocketAddress {
  sockaddr sa;
  sockaddr_in sin;
  sockaddr_in6 sin6;
};

// "192.0.2.2<33359>", as NCCL prints addresses.
std::string SocketAddressToString(const SocketAddress& addr);

struct NetInterface {
  std::string name;
  SocketAddress addr;
};

// Interfaces NCCL would use, in its order of preference (at most max_ifs).
ncclResult_t FindInterfaces(int max_ifs, std::vector<NetInterface>* out);

// The first interface on the same subnet as `remote` (how NCCL_COMM_ID picks
// the bootstrap interface); `out` stays empty when there is none.
ncclResult_t FindInterfaceMatchSubnet(const SocketAddress& remote, std::vector<NetInterface>* out);

// "ip:port", "host:port" or "[ipv6]:port" (NCCL_COMM_ID's forms).
ncclResult_t SocketAddressFromString(const char* ip_port, SocketAddress* out);

enum SocketType : int32_t { kSocketBootstrap = 1, kSocketProxy = 2 };

class Socket {
 public:
  Socket() = default;
  ~Socket() { Close(); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  Socket(Socket&& other) noexcept { *this = std::move(other); }
  Socket& operator=(Socket&& other) noexcept;

  // Binds to `local` (port 0: any port, SO_REUSEADDR when a port is forced)
  // and listens; address() then holds the bound address.
  static ncclResult_t Listen(const SocketAddress& local, uint64_t magic,
                             volatile uint32_t* abort_flag, Socket* out);

  // Connects, retrying refused/unreachable/timed-out attempts as NCCL does
  // (NCCL_SOCKET_RETRY_CNT, NCCL_SOCKET_RETRY_SLEEP_MSEC), then sends magic
  // and type.
  static ncclResult_t Connect(const SocketAddress& remote, uint64_t magic, SocketType type,
                              volatile uint32_t* abort_flag, Socket* out);

  // Accepts the next connection whose magic and type match.
  ncclResult_t Accept(Socket* out);

  ncclResult_t Send(const void* data, size_t size);
  ncclResult_t Recv(void* data, size_t size);

  void Close();
  bool valid() const { return fd_ >= 0; }
  const SocketAddress& address() const { return addr_; }
  int fd() const { return fd_; }

 private:
  // Waits until fd_ is ready for `events`, checking the abort flag.
  ncclResult_t WaitReady(short events);

  int fd_ = -1;
  SocketAddress addr_{};
  uint64_t magic_ = 0;
  SocketType type_ = kSocketBootstrap;
  volatile uint32_t* abort_flag_ = nullptr;
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_SOCKET_H_

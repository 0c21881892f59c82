#include "nccl/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "common/sim_env.h"
#include "nccl/debug.h"

namespace ncclsim::nccl {
namespace {

constexpr int kMaxIfNameSize = 16;

struct IfPattern {
  std::string prefix;
  int port = -1;
};

// "eth,ib0:1234" -> {("eth",-1), ("ib0",1234)}
std::vector<IfPattern> ParsePatterns(const char* list) {
  std::vector<IfPattern> out;
  std::string s(list ? list : "");
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(pos, comma - pos);
    IfPattern p;
    size_t colon = item.find(':');
    if (colon != std::string::npos) {
      p.port = std::atoi(item.c_str() + colon + 1);
      item.resize(colon);
    }
    if (!item.empty()) {
      p.prefix = item;
      out.push_back(p);
    }
    pos = comma + 1;
  }
  return out;
}

bool MatchesAny(const char* name, const std::vector<IfPattern>& pats, bool exact) {
  if (pats.empty()) return true;
  for (const IfPattern& p : pats) {
    if (exact ? p.prefix == name : std::strncmp(name, p.prefix.c_str(), p.prefix.size()) == 0)
      return true;
  }
  return false;
}

int SocketFamilyFromEnv() {
  const char* env = EnvRaw("NCCL_SOCKET_FAMILY");
  if (env == nullptr) return -1;
  INFO(kEnv, "NCCL_SOCKET_FAMILY set by environment to %s", env);
  if (std::strcmp(env, "AF_INET") == 0) return AF_INET;
  if (std::strcmp(env, "AF_INET6") == 0) return AF_INET6;
  return -1;
}

ncclResult_t FindMatching(const char* list, int family, int max_ifs,
                          std::vector<NetInterface>* out) {
  bool invert = list[0] == '^';
  if (invert) ++list;
  bool exact = list[0] == '=';
  if (exact) ++list;
  std::vector<IfPattern> pats = ParsePatterns(list);
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) {
    WARN("Call to getifaddrs failed: %s", strerror(errno));
    return ncclSystemError;
  }
  for (ifaddrs* i = ifs; i != nullptr && static_cast<int>(out->size()) < max_ifs; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (!(i->ifa_flags & IFF_RUNNING)) continue;
    if (family != -1 && fam != family) continue;
    if (fam == AF_INET6 &&
        IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr))
      continue;
    if (MatchesAny(i->ifa_name, pats, exact) == invert) continue;
    bool seen = false;
    for (const NetInterface& n : *out) seen |= (n.name == i->ifa_name);
    if (seen) continue;
    NetInterface n;
    n.name = std::string(i->ifa_name).substr(0, kMaxIfNameSize);
    std::memset(&n.addr, 0, sizeof(n.addr));
    std::memcpy(&n.addr, i->ifa_addr, fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    out->push_back(n);
  }
  freeifaddrs(ifs);
  return ncclSuccess;
}

bool SameSubnet(const ifaddrs& local, const SocketAddress& remote) {
  const int fam = local.ifa_addr->sa_family;
  if (fam != remote.sa.sa_family || local.ifa_netmask == nullptr) return false;
  if (fam == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(local.ifa_addr);
    auto* m = reinterpret_cast<const sockaddr_in*>(local.ifa_netmask);
    return ((a->sin_addr.s_addr ^ remote.sin.sin_addr.s_addr) & m->sin_addr.s_addr) == 0;
  }
  auto* a = reinterpret_cast<const sockaddr_in6*>(local.ifa_addr);
  auto* m = reinterpret_cast<const sockaddr_in6*>(local.ifa_netmask);
  for (int c = 0; c < 16; ++c) {
    if ((a->sin6_addr.s6_addr[c] ^ remote.sin6.sin6_addr.s6_addr[c]) & m->sin6_addr.s6_addr[c])
      return false;
  }
  return a->sin6_scope_id == remote.sin6.sin6_scope_id;
}

}  // namespace

ncclResult_t FindInterfaceMatchSubnet(const SocketAddress& remote, std::vector<NetInterface>* out) {
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) {
    WARN("Call to getifaddrs failed: %s", strerror(errno));
    return ncclSystemError;
  }
  for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (!SameSubnet(*i, remote)) continue;
    NetInterface n;
    n.name = std::string(i->ifa_name).substr(0, kMaxIfNameSize);
    std::memset(&n.addr, 0, sizeof(n.addr));
    std::memcpy(&n.addr, i->ifa_addr, fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    out->push_back(n);
    break;
  }
  freeifaddrs(ifs);
  return ncclSuccess;
}

namespace {

socklen_t AddrLen(const SocketAddress& a) {
  return a.sa.sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

void SleepMs(unsigned ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

bool Aborted(volatile uint32_t* flag) {
  return flag != nullptr && __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0;
}

}  // namespace

std::string SocketAddressToString(const SocketAddress& addr) {
  if (addr.sa.sa_family != AF_INET && addr.sa.sa_family != AF_INET6) return "";
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo(&addr.sa, sizeof(addr), host, sizeof(host), serv, sizeof(serv),
                  NI_NUMERICHOST | NI_NUMERICSERV)) {
    return "";
  }
  return std::string(host) + "<" + serv + ">";
}

ncclResult_t FindInterfaces(int max_ifs, std::vector<NetInterface>* out) {
  static bool shown = false;
  out->clear();
  const int family = SocketFamilyFromEnv();
  const char* env = EnvRaw("NCCL_SOCKET_IFNAME");
  if (env != nullptr && std::strlen(env) > 1) {
    INFO(kEnv, "NCCL_SOCKET_IFNAME set by environment to %s", env);
    if (!shown) INFO(kNet, "NCCL_SOCKET_IFNAME set to %s", env);
    shown = true;
    return FindMatching(env, family, max_ifs, out);
  }
  NCCLCHECK(FindMatching("ib", family, max_ifs, out));
  if (out->empty()) {
    const char* comm_id = EnvRaw("NCCL_COMM_ID");
    if (comm_id != nullptr && std::strlen(comm_id) > 1) {
      INFO(kEnv, "NCCL_COMM_ID set by environment to %s", comm_id);
      SocketAddress remote;
      NCCLCHECK(SocketAddressFromString(comm_id, &remote));
      NCCLCHECK(FindInterfaceMatchSubnet(remote, out));
    }
  }
  if (out->empty()) NCCLCHECK(FindMatching("^docker,lo,virbr", family, max_ifs, out));
  if (out->empty()) NCCLCHECK(FindMatching("docker", family, max_ifs, out));
  if (out->empty()) NCCLCHECK(FindMatching("lo", family, max_ifs, out));
  if (out->empty()) NCCLCHECK(FindMatching("virbr", family, max_ifs, out));
  return ncclSuccess;
}

ncclResult_t SocketAddressFromString(const char* ip_port, SocketAddress* out) {
  if (ip_port == nullptr || std::strlen(ip_port) <= 1) {
    WARN("Net : string is null");
    return ncclInvalidArgument;
  }
  std::memset(out, 0, sizeof(*out));
  std::string s(ip_port);
  if (s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      WARN("Net : No valid [IPv6]:port pair found");
      return ncclInvalidArgument;
    }
    std::string ip = s.substr(1, close - 1);
    std::string ifname;
    size_t pct = ip.find('%');
    if (pct != std::string::npos) {
      ifname = ip.substr(pct + 1);
      ip.resize(pct);
    }
    out->sin6.sin6_family = AF_INET6;
    if (inet_pton(AF_INET6, ip.c_str(), &out->sin6.sin6_addr) != 1) {
      WARN("Net : No valid [IPv6]:port pair found");
      return ncclInvalidArgument;
    }
    out->sin6.sin6_port = htons(static_cast<uint16_t>(std::atoi(s.c_str() + close + 2)));
    out->sin6.sin6_scope_id = ifname.empty() ? 0 : if_nametoindex(ifname.c_str());
    return ncclSuccess;
  }
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    WARN("Net : No valid <IPv4_or_hostname>:<port> pair found");
    return ncclInvalidArgument;
  }
  std::string host = s.substr(0, colon);
  const int port = std::atoi(s.c_str() + colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rv = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rv != 0) {
    WARN("Net : error encountered when getting address info : %s", gai_strerror(rv));
    return ncclInvalidArgument;
  }
  if (res->ai_family == AF_INET) {
    std::memcpy(&out->sin, res->ai_addr, sizeof(sockaddr_in));
    out->sin.sin_port = htons(static_cast<uint16_t>(port));
  } else if (res->ai_family == AF_INET6) {
    std::memcpy(&out->sin6, res->ai_addr, sizeof(sockaddr_in6));
    out->sin6.sin6_port = htons(static_cast<uint16_t>(port));
    out->sin6.sin6_scope_id = 0;
  } else {
    freeaddrinfo(res);
    WARN("Net : unsupported IP family");
    return ncclInvalidArgument;
  }
  freeaddrinfo(res);
  return ncclSuccess;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    addr_ = other.addr_;
    magic_ = other.magic_;
    type_ = other.type_;
    abort_flag_ = other.abort_flag_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

ncclResult_t Socket::WaitReady(short events) {
  for (;;) {
    if (Aborted(abort_flag_)) return ncclInternalError;
    pollfd pfd{fd_, events, 0};
    int rc = poll(&pfd, 1, 100);
    if (rc > 0) return ncclSuccess;
    if (rc < 0 && errno != EINTR) {
      WARN("Call to poll failed: %s", strerror(errno));
      return ncclSystemError;
    }
  }
}

ncclResult_t Socket::Listen(const SocketAddress& local, uint64_t magic,
                            volatile uint32_t* abort_flag, Socket* out) {
  out->Close();
  out->addr_ = local;
  out->magic_ = magic;
  out->abort_flag_ = abort_flag;
  out->fd_ = socket(local.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (out->fd_ < 0) {
    WARN("Call to socket failed: %s", strerror(errno));
    return ncclSystemError;
  }
  const uint16_t port =
      ntohs(local.sa.sa_family == AF_INET ? local.sin.sin_port : local.sin6.sin6_port);
  if (port != 0) {  // a port forced by NCCL_COMM_ID: make sure we get it
    int one = 1;
    setsockopt(out->fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(out->fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  }
  if (bind(out->fd_, &local.sa, AddrLen(local)) != 0) {
    WARN("Call to bind failed: %s", strerror(errno));
    out->Close();
    return ncclSystemError;
  }
  socklen_t len = sizeof(out->addr_);
  if (getsockname(out->fd_, &out->addr_.sa, &len) != 0) {
    WARN("Call to getsockname failed: %s", strerror(errno));
    out->Close();
    return ncclSystemError;
  }
  if (listen(out->fd_, 16384) != 0) {
    WARN("Call to listen failed: %s", strerror(errno));
    out->Close();
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t Socket::Connect(const SocketAddress& remote, uint64_t magic, SocketType type,
                             volatile uint32_t* abort_flag, Socket* out) {
  const int64_t retry_cnt = EnvInt("NCCL_SOCKET_RETRY_CNT", 34, 0, 1 << 20);
  const int64_t retry_ms = EnvInt("NCCL_SOCKET_RETRY_SLEEP_MSEC", 100, 0, 1 << 20);
  out->Close();
  out->addr_ = remote;
  out->magic_ = magic;
  out->type_ = type;
  out->abort_flag_ = abort_flag;
  const std::string where = SocketAddressToString(remote);
  int retries = 0;
  for (;;) {
    if (Aborted(abort_flag)) return ncclInternalError;
    int fd = socket(remote.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      WARN("Call to socket failed: %s", strerror(errno));
      return ncclSystemError;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, &remote.sa, AddrLen(remote)) == 0) {
      out->fd_ = fd;
      break;
    }
    const int err = errno;
    close(fd);
    if (err == EINTR || err == EWOULDBLOCK || err == EAGAIN || err == ETIMEDOUT ||
        err == EHOSTUNREACH || err == ECONNREFUSED) {
      if (retries++ == retry_cnt) {
        WARN(
            "socketStartConnect: connect to %s returned %s, exceeded error retry count after %d "
            "attempts",
            where.c_str(), strerror(err), retries);
        return ncclRemoteError;
      }
      const unsigned sleep_ms = static_cast<unsigned>(retries * retry_ms);
      INFO(kNet | kInit,
           "socketStartConnect: connect to %s returned %s, retrying (%d/%ld) after sleep for %u "
           "msec",
           where.c_str(), strerror(err), retries, static_cast<long>(retry_cnt), sleep_ms);
      SleepMs(sleep_ms);
      continue;
    }
    WARN("socketStartConnect: connect to %s failed : %s", where.c_str(), strerror(err));
    return ncclSystemError;
  }
  int32_t t = type;
  NCCLCHECK(out->Send(&magic, sizeof(magic)));
  NCCLCHECK(out->Send(&t, sizeof(t)));
  return ncclSuccess;
}

ncclResult_t Socket::Accept(Socket* out) {
  for (;;) {
    NCCLCHECK(WaitReady(POLLIN));
    SocketAddress peer{};
    socklen_t len = sizeof(peer);
    int fd = accept4(fd_, &peer.sa, &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      WARN("socketTryAccept: Accept failed: %s", strerror(errno));
      return ncclSystemError;
    }
    Socket conn;
    conn.fd_ = fd;
    conn.addr_ = peer;
    conn.magic_ = magic_;
    conn.abort_flag_ = abort_flag_;
    uint64_t magic = 0;
    int32_t type = 0;
    // A stray connection (wrong magic, or closed early) is dropped, not fatal.
    bool ok = true;
    size_t got = 0;
    while (ok && got < sizeof(magic)) {
      ssize_t n = recv(fd, reinterpret_cast<char*>(&magic) + got, sizeof(magic) - got, 0);
      if (n <= 0 && !(n < 0 && errno == EINTR)) ok = false;
      if (n > 0) got += static_cast<size_t>(n);
    }
    if (!ok || magic != magic_) {
      INFO(kNet | kInit, "socketFinalizeAccept: didn't receive a valid magic from %s",
           SocketAddressToString(peer).c_str());
      continue;
    }
    NCCLCHECK(conn.Recv(&type, sizeof(type)));
    if (type != kSocketBootstrap && type != kSocketProxy) {
      WARN("socketFinalizeAccept from %s: wrong type %d != %d", SocketAddressToString(peer).c_str(),
           type, static_cast<int>(kSocketBootstrap));
      return ncclInternalError;
    }
    conn.type_ = static_cast<SocketType>(type);
    *out = std::move(conn);
    return ncclSuccess;
  }
}

ncclResult_t Socket::Send(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = send(fd_, p + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      NCCLCHECK(WaitReady(POLLOUT));
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      WARN("socketProgress: Connection closed by remote peer %s",
           SocketAddressToString(addr_).c_str());
      return ncclRemoteError;
    }
    WARN("socketProgressOpt: Call to send to %s failed : %s", SocketAddressToString(addr_).c_str(),
         strerror(errno));
    return ncclRemoteError;
  }
  return ncclSuccess;
}

ncclResult_t Socket::Recv(void* data, size_t size) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    NCCLCHECK(WaitReady(POLLIN));
    ssize_t n = recv(fd_, p + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n == 0 || errno == ECONNRESET) {
      WARN("socketProgress: Connection closed by remote peer %s",
           SocketAddressToString(addr_).c_str());
      return ncclRemoteError;
    }
    WARN("socketProgressOpt: Call to recv from %s failed : %s",
         SocketAddressToString(addr_).c_str(), strerror(errno));
    return ncclRemoteError;
  }
  return ncclSuccess;
}

}  // namespace ncclsim::nccl

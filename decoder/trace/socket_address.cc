#include "trace/socket_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ncclwatch::decoder {

std::string SocketAddress::Ip() const {
  char text[INET6_ADDRSTRLEN] = "";
  if (family == AF_INET || family == AF_INET6) inet_ntop(family, ip.data(), text, sizeof(text));
  return text;
}

std::string SocketAddress::ToString() const {
  if (family == AF_UNIX) return absl::StrCat("unix:", unix_path);
  const std::string host = family == AF_INET6 ? absl::StrCat("[", Ip(), "]") : Ip();
  return port >= 0 ? absl::StrCat(host, ":", port) : host;
}

bool SocketAddress::IsLoopback() const {
  if (family == AF_INET) return ip[0] == 127;
  if (family == AF_INET6) {
    for (int i = 0; i < 15; ++i)
      if (ip[i] != 0) return false;
    return ip[15] == 1;
  }
  return false;
}

bool SocketAddress::IsLinkLocal() const {
  if (family == AF_INET) return ip[0] == 169 && ip[1] == 254;
  if (family == AF_INET6) return ip[0] == 0xfe && (ip[1] & 0xc0) == 0x80;
  return false;
}

std::optional<SocketAddress> ParseSocketAddress(std::string_view raw) {
  if (raw.size() < sizeof(sa_family_t)) return std::nullopt;
  sa_family_t family;
  std::memcpy(&family, raw.data(), sizeof(family));
  SocketAddress a;
  a.family = family;
  if (family == AF_INET && raw.size() >= sizeof(sockaddr_in)) {
    sockaddr_in in;
    std::memcpy(&in, raw.data(), sizeof(in));
    std::memcpy(a.ip.data(), &in.sin_addr, 4);
    a.port = ntohs(in.sin_port);
    return a;
  }
  if (family == AF_INET6 && raw.size() >= sizeof(sockaddr_in6)) {
    sockaddr_in6 in6;
    std::memcpy(&in6, raw.data(), sizeof(in6));
    std::memcpy(a.ip.data(), &in6.sin6_addr, 16);
    a.port = ntohs(in6.sin6_port);
    return a;
  }
  if (family == AF_UNIX) {
    std::string_view path = raw.substr(sizeof(sa_family_t));
    if (!path.empty() && path[0] == '\0') {  // the abstract namespace
      std::string_view name = path.substr(1);
      a.unix_path = "@" + std::string(name.substr(0, name.find('\0')));
    } else {
      a.unix_path = std::string(path.substr(0, path.find('\0')));
    }
    return a;
  }
  return std::nullopt;
}

std::optional<SocketAddress> ParseSocketAddressText(std::string_view text) {
  SocketAddress a;
  std::string host(text);
  std::string port;
  const size_t lt = host.find('<');
  if (lt != std::string::npos && !host.empty() && host.back() == '>') {  // NCCL's "10.0.0.1<41234>"
    port = host.substr(lt + 1, host.size() - lt - 2);
    host = host.substr(0, lt);
  } else if (!host.empty() && host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return std::nullopt;
    if (close + 1 < host.size() && host[close + 1] == ':') port = host.substr(close + 2);
    host = host.substr(1, close - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    port = host.substr(host.find(':') + 1);
    host = host.substr(0, host.find(':'));
  }
  if (inet_pton(AF_INET, host.c_str(), a.ip.data()) == 1) {
    a.family = AF_INET;
  } else if (inet_pton(AF_INET6, host.c_str(), a.ip.data()) == 1) {
    a.family = AF_INET6;
  } else {
    return std::nullopt;
  }
  int p = -1;
  if (!port.empty() && (!absl::SimpleAtoi(port, &p) || p < 0 || p > 65535)) return std::nullopt;
  a.port = p;
  return a;
}

bool InSubnet(const SocketAddress& a, const SocketAddress& net, int prefix_len) {
  if (a.family != net.family || (a.family != AF_INET && a.family != AF_INET6)) return false;
  const int bits = a.family == AF_INET ? 32 : 128;
  if (prefix_len < 0 || prefix_len > bits) return false;
  for (int i = 0; i < prefix_len; ++i) {
    const int byte = i / 8, bit = 7 - i % 8;
    if (((a.ip[byte] >> bit) & 1) != ((net.ip[byte] >> bit) & 1)) return false;
  }
  return true;
}

}  // namespace ncclwatch::decoder

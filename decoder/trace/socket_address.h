// Socket addresses as the shim records them (the raw struct sockaddr bytes
// of bind/connect/accept and of the interface list), parsed and printed.

#ifndef NCCLWATCH_DECODER_TRACE_SOCKET_ADDRESS_H_
#define NCCLWATCH_DECODER_TRACE_SOCKET_ADDRESS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ncclwatch::decoder {

struct SocketAddress {
  int family = 0;                // AF_INET, AF_INET6, AF_UNIX
  std::array<uint8_t, 16> ip{};  // the first 4 bytes for IPv4
  int port = -1;                 // -1 for AF_UNIX
  std::string unix_path;         // AF_UNIX ("@name" for the abstract namespace)

  std::string Ip() const;        // "192.0.2.2", "fe80::1"
  std::string ToString() const;  // "192.0.2.2:41234", "[fe80::1]:41234", "unix:@name"
  bool IsLoopback() const;
  bool IsLinkLocal() const;  // 169.254/16, fe80::/10
};

// From raw struct sockaddr bytes; nothing when they are not a whole IPv4,
// IPv6 or Unix address.
std::optional<SocketAddress> ParseSocketAddress(std::string_view raw);

// From "192.0.2.2", "192.0.2.2:41234", "[fe80::1]:41234", "fe80::1" or
// NCCL's "192.0.2.2<41234>".
std::optional<SocketAddress> ParseSocketAddressText(std::string_view text);

// Whether `a` lies in the network of `net` with `prefix_len` bits.
bool InSubnet(const SocketAddress& a, const SocketAddress& net, int prefix_len);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_SOCKET_ADDRESS_H_

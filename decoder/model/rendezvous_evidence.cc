#include "model/rendezvous_evidence.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

namespace ncclwatch::decoder {
namespace {

// ::ffff:a.b.c.d as a.b.c.d: a dual-stack socket connects to an IPv4
// master through it.
SocketAddress Unmapped(SocketAddress a) {
  if (a.family != AF_INET6) return a;
  for (int i = 0; i < 10; ++i)
    if (a.ip[i] != 0) return a;
  if (a.ip[10] != 0xff || a.ip[11] != 0xff) return a;
  SocketAddress v4;
  v4.family = AF_INET;
  std::copy(a.ip.begin() + 12, a.ip.end(), v4.ip.begin());
  v4.port = a.port;
  return v4;
}

}  // namespace

std::vector<RendezvousSocket> RendezvousSocketsOf(const ProcessTrace& t) {
  std::vector<RendezvousSocket> out;
  for (const SocketActivityEvent& e : t.socket_activity) {
    RendezvousSocket s;
    s.kind = e.kind;
    if (std::optional<SocketAddress> a = ParseSocketAddress(e.addr)) s.addr = Unmapped(*a);
    s.err = e.err;
    s.deferred = e.deferred;
    s.count = e.count;
    s.first_ns = e.first_t != 0 ? t.RealtimeNs(e.first_t) : 0;
    s.last_ns = e.last_t != 0 ? t.RealtimeNs(e.last_t) : s.first_ns;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ncclwatch::decoder

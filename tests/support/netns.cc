#include "support/netns.h"

#include <unistd.h>

#include <cstdlib>

namespace jobs {
namespace {

int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

}  // namespace

NetNamespace::NetNamespace(const std::string& tag)
    : name_("ncclwatch-" + tag + "-" + std::to_string(getpid())) {
  Sh("ip netns del " + name_);
  ok_ = Sh("ip netns add " + name_) == 0;
  Run("ip link set lo up");
}

NetNamespace::~NetNamespace() { Sh("ip netns del " + name_); }

bool NetNamespace::Run(const std::string& cmd) {
  ok_ = ok_ && Sh("ip netns exec " + name_ + " " + cmd) == 0;
  return ok_;
}

void NetNamespace::AddInterface(const std::string& dev, const std::string& cidr, bool up) {
  const std::string peer = "zz" + dev;
  Run("ip link add " + dev + " type veth peer name " + peer);
  Run("sysctl -q -w net.ipv6.conf." + peer + ".disable_ipv6=1");
  Run("ip link set " + peer + " up");
  Run("ip addr add " + cidr + " dev " + dev);
  if (up) Run("ip link set " + dev + " up");
}

}  // namespace jobs

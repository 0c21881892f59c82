// NCCL's choice of bootstrap interface, the simulator against real NCCL.
//
// Real NCCL 2.28 runs ncclGetUniqueId on a machine without a GPU, so both
// libraries run the same probe (uniqueid_probe) in the same network namespace,
// built here with the interfaces NCCL's rules care about, under the same
// NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY / NCCL_COMM_ID, and must agree on
// the result code, the error text and the address chosen. Needs root (ip netns).

#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/job_launcher.h"
#include "support/netns.h"

namespace {

// The interfaces NCCL's rules care about:
//   lo                          up
//   ens5     10.210.0.5/24      up      a host's real NIC
//   eth1     10.211.0.5/24      up
//   docker0  172.17.0.1/16      up      container bridge
//   virbr0   192.168.122.1/24   up      libvirt bridge
//   eth9     10.213.0.5/24      down    not running: never chosen
//   ib0      10.212.0.5/24      up      (only with `with_ib`)
class InterfaceLab : public jobs::NetNamespace {
 public:
  explicit InterfaceLab(bool with_ib) : NetNamespace(with_ib ? "ifsel-ib" : "ifsel") {
    AddInterface("ens5", "10.210.0.5/24");
    AddInterface("eth1", "10.211.0.5/24");
    AddInterface("docker0", "172.17.0.1/16");
    AddInterface("virbr0", "192.168.122.1/24");
    AddInterface("eth9", "10.213.0.5/24", false);
    if (with_ib) AddInterface("ib0", "10.212.0.5/24");
  }
};

std::string Probe(const InterfaceLab& lab, bool simulated, const std::vector<std::string>& env) {
  jobs::JobSpec spec;
  spec.argv = {jobs::BinDir() + "/uniqueid_probe"};
  spec.env = env;
  spec.env.push_back(simulated ? "LD_LIBRARY_PATH=" + jobs::SimLibDir() : "LD_LIBRARY_PATH=");
  for (const char* unset :
       {"NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY", "NCCL_COMM_ID", "NCCL_DEBUG"}) {
    bool given = false;
    for (const std::string& kv : env) given |= kv.rfind(std::string(unset) + "=", 0) == 0;
    if (!given) spec.env.push_back(unset);
  }
  spec.ranks[0].netns = lab.name();
  spec.timeout_s = 30;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  REQUIRE(r.ranks[0].exit_code == 0);
  return r.ranks[0].output;
}

void Compare(const InterfaceLab& lab, const std::vector<std::string>& env,
             const std::string& expect_root) {
  const std::string real = Probe(lab, false, env);
  const std::string sim = Probe(lab, true, env);
  std::string where;
  for (const auto& kv : env) where += kv + " ";
  INFO("environment: " << where << "\nreal NCCL:\n" << real << "simulator:\n" << sim);
  CHECK(sim == real);
  CHECK(sim.find(expect_root) != std::string::npos);
}

}  // namespace

TEST_CASE("bootstrap interface selection matches real NCCL", "[sim][net]") {
  REQUIRE(geteuid() == 0);  // network namespaces need root, as on the build machines
  InterfaceLab lab(false);
  REQUIRE(lab.ok());
  // An empty value is unset for NCCL (it takes only values of 2+ characters).
  Compare(lab, {}, "root AF_INET 10.210.0.5");
  Compare(lab, {"NCCL_SOCKET_IFNAME=e"}, "root AF_INET 10.210.0.5");
  Compare(lab, {"NCCL_SOCKET_IFNAME=eth"}, "root AF_INET 10.211.0.5");
  Compare(lab, {"NCCL_SOCKET_IFNAME==eth1"}, "root AF_INET 10.211.0.5");
  Compare(lab, {"NCCL_SOCKET_IFNAME==eth"}, "result 5 invalid usage");
  Compare(lab, {"NCCL_SOCKET_IFNAME=^ens,eth"}, "root AF_INET 127.0.0.1");
  Compare(lab, {"NCCL_SOCKET_IFNAME=^ens,eth,lo"}, "root AF_INET 172.17.0.1");
  Compare(lab, {"NCCL_SOCKET_IFNAME=docker"}, "root AF_INET 172.17.0.1");
  Compare(lab, {"NCCL_SOCKET_IFNAME=virbr,eth"}, "root AF_INET 10.211.0.5");
  Compare(lab, {"NCCL_SOCKET_IFNAME=eth1:5555"}, "root AF_INET 10.211.0.5");
  Compare(lab, {"NCCL_SOCKET_IFNAME=eth9"}, "lasterror Bootstrap : no socket interface found");
  Compare(lab, {"NCCL_SOCKET_IFNAME=nosuchif"}, "lasterror Bootstrap : no socket interface found");
  // IPv6 link-local: right after the link comes up the address is still
  // tentative and both fail to bind it; later both pick it. Either way they agree.
  Compare(lab, {"NCCL_SOCKET_FAMILY=AF_INET6", "NCCL_SOCKET_IFNAME=eth1"}, "result ");
  Compare(lab, {"NCCL_COMM_ID=10.211.0.77:5000"}, "root AF_INET 10.211.0.77");
  Compare(lab, {"NCCL_COMM_ID=10.99.0.1:5000"},
          "lasterror NET/Socket : No usable listening interface found");
  Compare(lab, {"NCCL_COMM_ID=nonsense"}, "lasterror Invalid NCCL_COMM_ID");
}

TEST_CASE("an InfiniBand interface is preferred, as in real NCCL", "[sim][net]") {
  REQUIRE(geteuid() == 0);
  InterfaceLab lab(true);
  REQUIRE(lab.ok());
  Compare(lab, {}, "root AF_INET 10.212.0.5");
  // A user's exclusion list does not exclude loopback, which comes first.
  Compare(lab, {"NCCL_SOCKET_IFNAME=^ib"}, "root AF_INET 127.0.0.1");
}

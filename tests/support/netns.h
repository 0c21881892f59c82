// Network namespaces for tests: other hosts' interface sets, made for real
// with `ip netns` and veth pairs (this kernel has no dummy driver).
//
// Each interface is one end of a veth pair whose other end ("zz<name>") is up
// with no address and IPv6 off, so NCCL's interface search never sees it.
// Nothing leaves the namespace. Needs root. The namespace is deleted when the
// object goes away.

#ifndef NCCLWATCH_TESTS_SUPPORT_NETNS_H_
#define NCCLWATCH_TESTS_SUPPORT_NETNS_H_

#include <string>

namespace jobs {

class NetNamespace {
 public:
  // Creates "ncclwatch-<tag>-<pid>" with loopback up.
  explicit NetNamespace(const std::string& tag);
  ~NetNamespace();
  NetNamespace(const NetNamespace&) = delete;
  NetNamespace& operator=(const NetNamespace&) = delete;

  // Adds `dev` with address `cidr` (e.g. "10.210.0.5/24"), up or down.
  void AddInterface(const std::string& dev, const std::string& cidr, bool up = true);

  // Runs a command inside the namespace; false if it failed.
  bool Run(const std::string& cmd);

  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  bool ok_ = false;
};

}  // namespace jobs

#endif  // NCCLWATCH_TESTS_SUPPORT_NETNS_H_

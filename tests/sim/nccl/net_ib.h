// A simulated InfiniBand HCA (NCCLSIM_IB_HCA=mlx5_0), for what NCCL's IB
// transport does at connection setup that can fail on a real cluster:
// registering its buffers with the NIC (ibv_reg_mr), which pins their pages
// against RLIMIT_MEMLOCK. The simulator pins them for real with mlock(2), so
// a real memlock limit (in a process without CAP_IPC_LOCK) refuses it as the
// kernel refuses ibv_reg_mr, and WARNs as NCCL does. The data itself then
// moves through the P2P buffers: the simulator has no network.
//
// Used when local ranks are forced onto the network transport, as with real
// NCCL: NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 and an HCA present.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_NET_IB_H_
#define NCCLWATCH_TESTS_SIM_NCCL_NET_IB_H_

#include <nccl.h>

#include <cstddef>
#include <string>
#include <vector>

namespace ncclsim::nccl {

// The HCA's name, or "" when NCCLSIM_IB_HCA is not set.
std::string IbDevice();

class IbRegistrations {
 public:
  ~IbRegistrations() { Release(); }
  // Allocates and registers (pins) `bytes` of host memory; ncclSystemError
  // with NCCL's WARN when the kernel refuses.
  ncclResult_t Register(size_t bytes);
  void Release();

 private:
  struct Region {
    void* addr;
    size_t bytes;
  };
  std::vector<Region> regions_;
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_NET_IB_H_

// NCCL's InfiniBand transport, as far as the simulator goes: at init it
// loads libibverbs the way NCCL does (dlopen "libibverbs.so", then
// "libibverbs.so.1", each function with dlvsym at IBVERBS_1.1), looks for an
// HCA, and registers each connection's buffers with it (ibv_reg_mr), which
// pins them against RLIMIT_MEMLOCK. With the simulator's libibverbs
// (tests/sim/ibverbs, an HCA when NCCLSIM_IB_HCA names one) a real memlock
// limit refuses the registration as on a cluster, and NCCL's WARN follows.
// The data then moves through the P2P buffers: the simulator has no network.
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

// The first HCA's name, or "" when libibverbs cannot be loaded or has none.
std::string IbDevice();

class IbRegistrations {
 public:
  ~IbRegistrations() { Release(); }
  // Allocates host memory and registers `bytes` of it with the HCA;
  // ncclSystemError with NCCL's WARN when the verbs library refuses.
  ncclResult_t Register(size_t bytes);
  void Release();

 private:
  struct Region {
    void* addr;
    void* mr;
  };
  std::vector<Region> regions_;
  void* context_ = nullptr;
  void* pd_ = nullptr;
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_NET_IB_H_

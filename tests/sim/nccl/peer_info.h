// What each rank tells the others at init, all-gathered over the bootstrap
// (NCCL's ncclPeerInfo, reduced to what the simulator checks and prints).

#ifndef NCCLWATCH_TESTS_SIM_NCCL_PEER_INFO_H_
#define NCCLWATCH_TESTS_SIM_NCCL_PEER_INFO_H_

#include <cstdint>

namespace ncclsim::nccl {

struct PeerInfo {
  int32_t rank;
  int32_t cuda_dev;
  int64_t bus_id;  // NCCL's int64 form of the PCI bus id, e.g. 0x18000
  uint64_t host_hash;
  int32_t version;  // ncclGetVersion() of that rank
  int32_t pid;
  uint64_t shm_dev;  // st_dev of /dev/shm
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_PEER_INFO_H_

// The environment the simulated NCCL reads: NCCL's own variables that change
// what the simulator does, and the simulator's knobs (tests/sim/README.md).
//
//   NCCL_BUFFSIZE         bytes of the Simple protocol buffer per connection (4 MiB)
//   NCCL_SHM_DISABLE=1    connect local ranks through CUDA IPC buffers instead of /dev/shm
//   NCCL_P2P_DISABLE=1    (with the above) no transport is left: init fails
//   NCCL_HOSTID           overrides the host identity, as in NCCL
//   NCCLSIM_NCCL_VERSION  the version this process reports, e.g. 2.27.3 (version skew)
//   NCCLSIM_GPU_FAULT     N[:ecc|xid79|launch]: the process's N-th collective (0-based,
//                         all communicators) hits a GPU fault (an async error)

#ifndef NCCLWATCH_TESTS_SIM_NCCL_PARAMS_H_
#define NCCLWATCH_TESTS_SIM_NCCL_PARAMS_H_

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ncclsim::nccl {

int NcclVersionCode();
std::string NcclVersionString();  // "2.28.9"
size_t SimpleBufferBytes();
bool ShmDisabled();
bool P2pDisabled();

// Hash of the host's identity (hostname + boot id, or NCCL_HOSTID).
uint64_t HostHash();

struct GpuFault {
  bool armed = false;
  int64_t at_collective = 0;
  CUresult error = CUDA_ERROR_ECC_UNCORRECTABLE;
};
const GpuFault& GpuFaultKnob();

// NCCLSIM_NET_STALL=N: from this process's N-th NCCL operation (0-based, all
// communicators, as NCCLSIM_GPU_FAULT counts), when the stream reaches it,
// the transport stops taking data in, as a NIC whose receive path died: every
// rank enters the operation, what this rank sends still reaches its peers,
// nothing it waits for arrives, and no error is reported.
struct NetStall {
  bool armed = false;
  int64_t at_operation = 0;
};
const NetStall& NetStallKnob();
// Set once the stalled operation started: receives stop (ops.cc).
bool NetReceiveDead();
void KillNetReceive();

// NCCLSIM_SLOW_LINK=D:N:MS[:US_PER_MIB]: GPU D's link to the other ranks (its
// NIC, its NVLinks) is slow, as a degraded port or a link trained down: from
// this process's N-th NCCL operation (counted as NCCLSIM_GPU_FAULT counts),
// each operation of a communicator on GPU D that moves data to or from
// another rank holds its data MS milliseconds, plus US_PER_MIB microseconds
// per MiB of its buffer, once its stream reaches it. D is the host's GPU
// index (before CUDA_VISIBLE_DEVICES), as NCCLSIM_SLOW_GPU's.
struct SlowLink {
  bool armed = false;
  int physical = -1;
  int64_t from = 0;
  int64_t ms = 0;
  int64_t us_per_mib = 0;
};
const SlowLink& SlowLinkKnob();
// How long an operation `index` (this process's count) of `bytes` on CUDA
// device `ordinal` is held (0: not slowed).
int64_t SlowLinkHoldNs(int ordinal, int64_t index, size_t bytes);

uint64_t Fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull);

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_PARAMS_H_

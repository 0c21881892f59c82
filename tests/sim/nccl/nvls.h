// NVLink SHARP (NVLS) set-up at init, as NCCL does it on NVSwitch systems
// (src/transport/nvls.cc): when the GPUs report multicast support
// (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, NCCLSIM_MULTICAST) and
// NCCL_NVLS_ENABLE is not 0, the first local rank creates a multicast object
// (cuMulticastCreate), exports it as a POSIX descriptor that travels to the
// other local ranks over a Unix socket, and every rank adds its GPU and
// binds memory to it. The simulator moves no data through it: collectives
// still go through the transport. A multicast object the fabric refuses
// (no Fabric Manager) fails init with NCCL's "Cuda failure" WARN.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_NVLS_H_
#define NCCLWATCH_TESTS_SIM_NCCL_NVLS_H_

#include <nccl.h>

struct ncclComm;

namespace ncclsim::nccl {

ncclResult_t NvlsSetup(ncclComm* comm);

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_NVLS_H_

// The simulated driver's virtual memory management (cuMem*), multicast
// objects (cuMulticast*) and peer access, with the knobs that make them fail
// as on a misconfigured machine (tests/sim/README.md):
//
//   NCCLSIM_IPC_IMPORT=eperm|invalid  importing another process's memory (a
//       cuMem POSIX-fd handle, a legacy IPC handle) fails: CUDA_ERROR_NOT_-
//       PERMITTED with errno EPERM (a container without the host's IPC/PID
//       namespace or the capability), or CUDA_ERROR_INVALID_VALUE
//   NCCLSIM_MULTICAST=ok|nofm|unsupported  the GPUs sit on an NVSwitch
//       (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 1): multicast objects
//       work (ok), or the Fabric Manager is not running (cuMulticastCreate:
//       CUDA_ERROR_SYSTEM_NOT_READY), or the fabric refuses multicast
//       (CUDA_ERROR_NOT_SUPPORTED). Unset: no NVSwitch (attribute 0,
//       cuMulticastCreate CUDA_ERROR_NOT_SUPPORTED), as on PCIe machines.
//   NCCLSIM_PEER_ACCESS=0|fail  the GPUs cannot access each other:
//       cuDeviceCanAccessPeer answers 0 (0: as across root complexes), or
//       answers 1 while enabling peer access fails with CUDA_ERROR_PEER_-
//       ACCESS_UNSUPPORTED (fail: as when PCIe ACS or an IOMMU blocks it)
//
// A cuMem allocation is a memfd of its (granularity-rounded) size; its POSIX
// shareable handle is a duplicate of that descriptor, which another process
// receives over a Unix socket (SCM_RIGHTS) and maps, so both see the same
// bytes. Thread-safety: every function may be called from any thread.

#ifndef NCCLWATCH_TESTS_SIM_DRIVER_VMM_H_
#define NCCLWATCH_TESTS_SIM_DRIVER_VMM_H_

#include <cuda.h>

namespace ncclsim::driver {

// CUDA_SUCCESS, or the result (and errno) an import of another process's
// memory gets under NCCLSIM_IPC_IMPORT.
CUresult IpcImportRefusal();

// NCCLSIM_MULTICAST is set: the devices report multicast support.
bool MulticastSupported();

// What cuDeviceCanAccessPeer answers for two different devices (not
// NCCLSIM_PEER_ACCESS=0), and whether enabling it works (neither 0 nor fail).
bool PeerAccessReported();
bool PeerAccessSupported();

}  // namespace ncclsim::driver

#endif  // NCCLWATCH_TESTS_SIM_DRIVER_VMM_H_

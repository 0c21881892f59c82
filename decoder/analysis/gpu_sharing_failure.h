// Init forensics for the CUDA calls that share GPU memory between processes
// and devices (trace.proto CudaCall): legacy CUDA IPC, cuMem shareable
// handles, NVLink SHARP multicast objects, peer access. NCCL makes them when
// it connects local ranks (P2P transport, NVLS); their failures are what its
// "unhandled cuda error" at init is often made of.
//
//   ipc     a rank could not import another process's GPU memory: a POSIX
//           file descriptor handle (cuMemImportFromShareableHandle) or a
//           legacy IPC handle (cudaIpcOpenMemHandle) refused, as in
//           containers without the host's IPC/PID namespace or the
//           capability the descriptor exchange needs
//   fabric  a multicast object (cuMulticastCreate, ...AddDevice, ...BindMem)
//           or a fabric handle refused: the NVIDIA Fabric Manager (or IMEX,
//           across nodes) is not running
//   p2p     peer access between the GPUs unsupported (with the PCIe bridges
//           whose ACS redirects peer traffic, and the IOMMU, from the
//           inventory)
//
// Called by init_failure.cc for each rank, before the causes read from
// NCCL's text. Pure functions of the evidence; thread-compatible.

#ifndef NCCLWATCH_DECODER_ANALYSIS_GPU_SHARING_FAILURE_H_
#define NCCLWATCH_DECODER_ANALYSIS_GPU_SHARING_FAILURE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "findings/finding.h"
#include "model/events.h"
#include "model/init_evidence.h"

namespace ncclwatch::decoder {

// GpuSharingFailed (model/init_evidence.h) says which calls failed.

// The PCIe bridges above the GPUs whose ACS redirects peer-to-peer requests
// (request or completion redirect enabled), "0000:15:01.0"; sorted, unique.
std::vector<std::string> AcsRedirectBridges(const std::vector<GpuPathInfo>& gpus);

// The rank's cause when one of its memory-sharing CUDA calls failed
// (subsystem ipc, fabric or p2p), or nullopt.
std::optional<InitFailureFacts> GpuSharingCause(const InitEvidence& r);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_GPU_SHARING_FAILURE_H_

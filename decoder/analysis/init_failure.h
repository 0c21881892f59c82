// Init forensics: names the subsystem behind a failed NCCL initialisation
// ("unhandled system error", "invalid usage", a hang in ncclCommInitRank),
// from every rank's InitEvidence, as a person with the checklist would:
//
//   network    no interface matches NCCL_SOCKET_IFNAME (its value, and the
//              interfaces that exist); ranks bootstrapping over different
//              networks or a container/virtual bridge
//   bootstrap  the root unreachable, refused or timing out (address and port)
//   shm        /dev/shm too small for NCCL's segments (its size and free
//              space against what NCCL asked for)
//   version    ranks with different NCCL versions; a CUDA driver older than
//              the runtime
//   gpu        two ranks on one GPU (the same PCI bus id on one host)
//   ib         InfiniBand verbs failures; a low RLIMIT_MEMLOCK
//   fabric     the NVLink fabric (Fabric Manager, NVLS multicast) not usable
//   p2p        P2P / CUDA-IPC mapping between local GPUs failed
//   cuda       a CUDA failure during init
//   unknown    a failure none of the above explains (NCCL's own text)
//   waiting    ranks that only waited for a failed one: consequences
//
// Each finding is kind "init_failure", with `subsystem`, `errno` (symbolic,
// or null), `ranks` (the first to fail first) and a concrete fix. The
// earliest cause is the root cause; the ranks that waited are consequences.

#ifndef NCCLWATCH_DECODER_ANALYSIS_INIT_FAILURE_H_
#define NCCLWATCH_DECODER_ANALYSIS_INIT_FAILURE_H_

#include <vector>

#include "findings/finding.h"
#include "model/init_evidence.h"

namespace ncclwatch::decoder {

// A finding about `process` (the evidence's source index).
struct InitFinding {
  Finding finding;
  int process = -1;
};

// The findings for one job's ranks: one per distinct cause (ranks with the
// same cause together, the first to fail first), then one for the ranks that
// only waited. Empty when no rank's initialisation went wrong.
std::vector<InitFinding> DiagnoseInit(const std::vector<InitEvidence>& ranks);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_INIT_FAILURE_H_

// Notes about how a job's ranks were set up, from their inventories: what
// does not break a job by itself but explains a hang or a slow job when
// nothing else does.
//
//   p2p_path     a host whose GPUs sit below PCIe bridges with ACS
//                redirection on (request or completion redirect): peer-to-
//                peer traffic between them goes up to the root complex, or is
//                blocked by the IOMMU, which NVIDIA's troubleshooting guide
//                names as the cause of P2P hangs and of slow P2P
//   config_skew  ranks whose NCCL_* settings, NCCL or CUDA driver versions,
//                or the interface NCCL bootstrapped over differ
//
// Both are role kNote: they leave a job healthy. Pure functions of the
// evidence; thread-compatible.

#ifndef NCCLWATCH_DECODER_ANALYSIS_SETUP_NOTES_H_
#define NCCLWATCH_DECODER_ANALYSIS_SETUP_NOTES_H_

#include <vector>

#include "findings/finding.h"
#include "model/init_evidence.h"

namespace ncclwatch::decoder {

// The notes about one job's ranks (one InitEvidence each).
std::vector<Finding> SetupNotes(const std::vector<const InitEvidence*>& ranks);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_SETUP_NOTES_H_

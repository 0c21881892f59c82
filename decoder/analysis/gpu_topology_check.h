// What stands out in a host's GPU topology (`nvidia-smi topo -m`, read by
// logs/gpu_topology.h), as a warning (gpu_topology): the job may run, and
// run slowly or hang where the path is broken.
//   - GPU pairs whose link falls below the NVLink most pairs have (two
//     thirds of them or more: an NVSwitch system, or a mesh where every
//     pair has NVLink): an NVLink down or missing ("NV16" where the others
//     have NV18, "SYS" for a GPU whose links are all down). A machine whose
//     GPUs are linked unevenly by design (DGX-1's hybrid cube mesh, PCIe
//     boxes) has no such majority and gets nothing.
//   - NICs no GPU reaches within PXB: NCCL's default limit for GPU Direct
//     RDMA (NCCL_NET_GDR_LEVEL), so every transfer through that NIC is
//     staged in host memory.
//
// Thread-safety: pure functions.

#ifndef NCCLWATCH_DECODER_ANALYSIS_GPU_TOPOLOGY_CHECK_H_
#define NCCLWATCH_DECODER_ANALYSIS_GPU_TOPOLOGY_CHECK_H_

#include <optional>
#include <string>

#include "findings/finding.h"
#include "logs/gpu_topology.h"

namespace ncclwatch::decoder {

// `where`: the matrix's place, "FILE:LINE". nullopt when nothing stands out.
std::optional<Finding> GpuTopologyWarning(const GpuTopology& t, const std::string& where);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_GPU_TOPOLOGY_CHECK_H_

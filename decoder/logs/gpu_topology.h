// GPU topology matrices in a job's output: `nvidia-smi topo -m` as people
// paste it beside a failure, read from the lines NcclLog kept as "other".
//
//         GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID
//   GPU0   X      NV18    PXB     0-55            0               N/A
//   GPU1  NV18     X      SYS     56-111          1               N/A
//   NIC0  PXB     SYS      X
//   Legend: ...
//   NIC Legend:
//     NIC0: mlx5_0
//
// The header names the devices (GPUn, NICn, or, before the NIC legend
// existed, the NIC's own name: mlx5_0), then "CPU Affinity" and the rest;
// each row is a device and its link to every column: X (itself), NV# (a
// bonded set of # NVLinks), PIX, PXB, PHB, NODE, SYS (SOC in old drivers).
// Columns are separated by tabs, or by blanks where a paste turned them into
// spaces; a row's cells are taken in order. A matrix is kept when every GPU
// has its row (NICs' rows are optional: old drivers print none).
//
// Thread-safety: single-threaded.

#ifndef NCCLWATCH_DECODER_LOGS_GPU_TOPOLOGY_H_
#define NCCLWATCH_DECODER_LOGS_GPU_TOPOLOGY_H_

#include <string>
#include <vector>

#include "logs/nccl_log.h"

namespace ncclwatch::decoder {

// Bounds on hostile input: devices of one matrix, matrices kept.
constexpr size_t kMaxTopologyDevices = 256;
constexpr size_t kMaxTopologies = 16;

struct GpuTopology {
  int source = -1;   // the file (NcclLog::sources())
  int line = 0;      // its header's line number there
  int process = -1;  // who printed it (NcclLog::processes()), -1 unknown
  int rank = -1;     // ... its rank, or the launcher's tag, -1 unknown
  // The devices in column order: "GPU0", "NIC0", "mlx5_0"; a NIC's name
  // from the NIC legend where there is one ("NIC0" -> "mlx5_0").
  std::vector<std::string> devices;
  std::vector<bool> gpu;  // devices[i] is a GPU
  // links[i][j]: the link from device i to device j as printed ("NV18",
  // "SYS", "X"), "" where row i was not printed.
  std::vector<std::vector<std::string>> links;
};

std::vector<GpuTopology> FindGpuTopologies(const NcclLog& log);

// How far a link is, nearest first, in the order NCCL ranks its path types
// (graph/topo.h PATH_*): X 0, NV# 1, PIX 2, PXB 3, PHB 4, NODE 5, SYS 6
// (SOC, old drivers' name for it, too); -1 unknown. NCCL uses GPU Direct
// RDMA between a GPU and a NIC up to PXB by default (NCCL_NET_GDR_LEVEL),
// and P2P between GPUs up to PXB (NCCL_P2P_LEVEL).
int LinkDistance(const std::string& link);
// The number of NVLinks of an "NV#" link, 0 for any other.
int NvlinkCount(const std::string& link);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_LOGS_GPU_TOPOLOGY_H_

// logs/gpu_topology.h and analysis/gpu_topology_check.h: `nvidia-smi topo
// -m` matrices read from a job's output, and what stands out in them. The
// corpus (tests/data/logs/quoted/nvidia_smi_topo_*.log) has whole pastes;
// here, each rule and the machines it must leave alone.

#include "logs/gpu_topology.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/gpu_topology_check.h"
#include "logs/nccl_log.h"
#include "support/traced_job.h"

namespace ncclwatch::decoder {
namespace {

std::vector<GpuTopology> Read(const std::string& text) {
  jobs::TempDir dir;
  const std::string path = dir.path() + "/topo.log";
  std::ofstream(path) << text;
  NcclLog log;
  REQUIRE(log.AddFile(path).ok());
  log.Finish();
  return FindGpuTopologies(log);
}

const GpuTopologyFacts& Facts(const Finding& f) { return std::get<GpuTopologyFacts>(f.facts); }

// DGX-1 (V100): the hybrid cube mesh, NV1/NV2 between some pairs and SYS
// between the others, by design.
constexpr char kDgx1[] =
    "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tmlx5_0\tmlx5_2\tmlx5_1\tmlx5_3\tCPU "
    "Affinity\n"
    "GPU0\t X \tNV1\tNV1\tNV2\tNV2\tSYS\tSYS\tSYS\tPIX\tSYS\tPHB\tSYS\t0-19,40-59\n"
    "GPU1\tNV1\t X \tNV2\tNV1\tSYS\tNV2\tSYS\tSYS\tPIX\tSYS\tPHB\tSYS\t0-19,40-59\n"
    "GPU2\tNV1\tNV2\t X \tNV2\tSYS\tSYS\tNV1\tSYS\tPHB\tSYS\tPIX\tSYS\t0-19,40-59\n"
    "GPU3\tNV2\tNV1\tNV2\t X \tSYS\tSYS\tSYS\tNV1\tPHB\tSYS\tPIX\tSYS\t0-19,40-59\n"
    "GPU4\tNV2\tSYS\tSYS\tSYS\t X \tNV1\tNV1\tNV2\tSYS\tPIX\tSYS\tPHB\t20-39,60-79\n"
    "GPU5\tSYS\tNV2\tSYS\tSYS\tNV1\t X \tNV2\tNV1\tSYS\tPIX\tSYS\tPHB\t20-39,60-79\n"
    "GPU6\tSYS\tSYS\tNV1\tSYS\tNV1\tNV2\t X \tNV2\tSYS\tPHB\tSYS\tPIX\t20-39,60-79\n"
    "GPU7\tSYS\tSYS\tSYS\tNV1\tNV2\tNV1\tNV2\t X \tSYS\tPHB\tSYS\tPIX\t20-39,60-79\n"
    "mlx5_0\tPIX\tPIX\tPHB\tPHB\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tPHB\tSYS\n"
    "mlx5_2\tSYS\tSYS\tSYS\tSYS\tPIX\tPIX\tPHB\tPHB\tSYS\t X \tSYS\tPHB\n"
    "mlx5_1\tPHB\tPHB\tPIX\tPIX\tSYS\tSYS\tSYS\tSYS\tPHB\tSYS\t X \tSYS\n"
    "mlx5_3\tSYS\tSYS\tSYS\tSYS\tPHB\tPHB\tPIX\tPIX\tSYS\tPHB\tSYS\t X \n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n";

}  // namespace

TEST_CASE("gpu topology: a DGX-1's uneven mesh is read whole and warns of nothing") {
  const std::vector<GpuTopology> t = Read(kDgx1);
  REQUIRE(t.size() == 1);
  CHECK(t[0].line == 1);
  REQUIRE(t[0].devices.size() == 12);
  CHECK(t[0].devices[8] == "mlx5_0");
  CHECK(t[0].gpu[7]);
  CHECK_FALSE(t[0].gpu[8]);
  CHECK(t[0].links[0][3] == "NV2");
  CHECK(t[0].links[11][7] == "PIX");
  CHECK_FALSE(GpuTopologyWarning(t[0], "x:1").has_value());
}

TEST_CASE("gpu topology: one pair with fewer NVLinks than all the others is named") {
  // Four GPUs all NV12 (an A100 NVSwitch board, cut down), GPU1-GPU2 NV10.
  const std::string text =
      "GPU0 GPU1 GPU2 GPU3 CPU Affinity NUMA Affinity\n"
      "GPU0  X  NV12 NV12 NV12 0-31 0\n"
      "GPU1 NV12  X  NV10 NV12 0-31 0\n"
      "GPU2 NV12 NV10  X  NV12 32-63 1\n"
      "GPU3 NV12 NV12 NV12  X  32-63 1\n";
  const std::vector<GpuTopology> t = Read(text);  // blanks for tabs, as pasted
  REQUIRE(t.size() == 1);
  const auto f = GpuTopologyWarning(t[0], "job.log:1");
  REQUIRE(f.has_value());
  CHECK(f->kind == FindingKind::kGpuTopology);
  CHECK(f->role == FindingRole::kWarning);
  CHECK(f->ranks.empty());  // a host's hardware, no rank's doing
  const GpuTopologyFacts& x = Facts(*f);
  CHECK(x.usual == "NV12");
  CHECK(x.usual_pairs == 5);
  REQUIRE(x.weak.size() == 1);
  CHECK(x.weak[0].a == "GPU1");
  CHECK(x.weak[0].b == "GPU2");
  CHECK(x.weak[0].link == "NV10");
  CHECK(x.far_nics.empty());
}

TEST_CASE("gpu topology: PCIe GPUs with no NVLink warn only of a NIC beyond PXB") {
  const std::string text =
      "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tSYS\tPIX\tSYS\t0-15\t0\t\tN/A\n"
      "GPU1\tSYS\t X \tSYS\tNODE\t16-31\t1\t\tN/A\n"
      "NIC0\tPIX\tSYS\t X \tSYS\n"
      "NIC1\tSYS\tNODE\tSYS\t X \n"
      "\n"
      "NIC Legend:\n"
      "\n"
      "  NIC0: mlx5_0\n"
      "  NIC1: mlx5_bond_1\n";
  const std::vector<GpuTopology> t = Read(text);
  REQUIRE(t.size() == 1);
  CHECK(t[0].devices[2] == "mlx5_0");
  CHECK(t[0].devices[3] == "mlx5_bond_1");
  const auto f = GpuTopologyWarning(t[0], "job.log:1");
  REQUIRE(f.has_value());
  const GpuTopologyFacts& x = Facts(*f);
  CHECK(x.weak.empty());  // SYS between PCIe GPUs is how the box is built
  REQUIRE(x.far_nics.size() == 1);
  CHECK(x.far_nics[0].a == "mlx5_bond_1");
  CHECK(x.far_nics[0].b == "GPU1");
  CHECK(x.far_nics[0].link == "NODE");
}

TEST_CASE("gpu topology: what is not a whole matrix is not read") {
  // A GPU's row missing, a cell that is no link, a header alone, one GPU.
  CHECK(Read("GPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\n").empty());
  CHECK(Read("GPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\nGPU1\tNV4\t X? \n").empty());
  CHECK(Read("GPU0\tGPU1\tCPU Affinity\n").empty());
  CHECK(Read("\tGPU0\tCPU Affinity\nGPU0\t X \t0-7\n").empty());
  CHECK(Read("GPU0 failed with error GPU1 lost\nGPU0 X\n").empty());
  // Rows out of order still fill their own lines.
  const auto t = Read("GPU0 GPU1 CPU Affinity\nGPU1 NV2 X 0-7\nGPU0 X NV2 0-7\n");
  REQUIRE(t.size() == 1);
  CHECK(t[0].links[1][0] == "NV2");
}

TEST_CASE("gpu topology: link distances in NCCL's order") {
  CHECK(LinkDistance("X") == 0);
  CHECK(LinkDistance("NV18") == 1);
  CHECK(LinkDistance("PIX") < LinkDistance("PXB"));
  CHECK(LinkDistance("PXB") < LinkDistance("PHB"));
  CHECK(LinkDistance("PHB") < LinkDistance("NODE"));
  CHECK(LinkDistance("NODE") < LinkDistance("SYS"));
  CHECK(LinkDistance("SOC") == LinkDistance("SYS"));
  CHECK(LinkDistance("NV") == -1);
  CHECK(LinkDistance("NV0") == -1);
  CHECK(NvlinkCount("NV12") == 12);
  CHECK(NvlinkCount("PIX") == 0);
}

}  // namespace ncclwatch::decoder

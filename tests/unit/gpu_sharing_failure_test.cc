// Init forensics from the CUDA calls that share GPU memory, as facts and
// words: which failed call means which subsystem (ipc, fabric, p2p), what a
// benign answer is, and the notes on the P2P hardware path (PCIe ACS) and on
// ranks set up differently.

#include "analysis/gpu_sharing_failure.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "analysis/init_failure.h"
#include "analysis/setup_notes.h"
#include "knowledge/cuda_names.h"
#include "ncclwatch/trace_fields.h"
#include "report/finding_text.h"

namespace {

using namespace ncclwatch::decoder;
namespace f = ncclwatch::fields;

InitEvidence Rank(int rank, uint32_t function, int32_t result, uint32_t handle_type = 0,
                  int err = 0) {
  InitEvidence e;
  e.process = rank;
  e.rank = rank;
  e.host = "node1";
  e.pid = static_cast<uint32_t>(100 + rank);
  e.cuda_failures.push_back({50 + rank, function, result, handle_type, err, 0, 1, true});
  e.failures.push_back(
      {60 + rank, "ncclCommInitRank", 1, "Cuda failure " + std::to_string(result), false});
  return e;
}

const InitFailureFacts& Facts(const InitFinding& f) {
  return std::get<InitFailureFacts>(f.finding.facts);
}

}  // namespace

TEST_CASE("gpu sharing: a POSIX-fd import refused is ipc, with the capability fix", "[init]") {
  InitEvidence a = Rank(0, f::kCuMemImportFromShareableHandle, 800, 1, EPERM);
  InitEvidence b = Rank(1, f::kCuMemImportFromShareableHandle, 800, 1, EPERM);
  a.container = b.container = "docker";
  const std::vector<InitFinding> found = DiagnoseInit({a, b});
  REQUIRE(found.size() == 1);
  CHECK(found[0].finding.ranks == std::vector<int>{0, 1});
  CHECK(Facts(found[0]).cause == InitCause::kIpcImportRefused);
  CHECK(Facts(found[0]).subsystem == Area::kIpc);
  CHECK(Facts(found[0]).err == EPERM);
  const FindingText t = RenderFinding(found[0].finding, NoCallSites());
  CHECK(t.detail ==
        "Ranks 0-1 could not import another local rank's GPU memory during init in a container "
        "(docker): cuMemImportFromShareableHandle failed with CUDA_ERROR_NOT_PERMITTED (operation "
        "not permitted), errno EPERM; NCCL shares its buffers between local ranks as cuMem POSIX "
        "file descriptors passed over a Unix socket, which needs the ranks to share the host's IPC "
        "and PID namespaces (and, for NCCL versions that fetch the descriptor with pidfd_getfd, "
        "CAP_SYS_PTRACE)");
  CHECK(t.fix.find("NCCL_CUMEM_ENABLE=0") != std::string::npos);
}

TEST_CASE("gpu sharing: multicast refused is the fabric, a fabric handle too", "[init]") {
  std::vector<InitFinding> found = DiagnoseInit({Rank(0, f::kCuMulticastCreate, 802)});
  REQUIRE(found.size() == 1);
  CHECK(Facts(found[0]).cause == InitCause::kFabricManager);
  CHECK(Facts(found[0]).subsystem == Area::kFabric);
  CHECK(RenderFinding(found[0].finding, NoCallSites()).fix.find("NCCL_NVLS_ENABLE=0") !=
        std::string::npos);
  found = DiagnoseInit({Rank(0, f::kCuMemImportFromShareableHandle, 1, 8)});
  REQUIRE(found.size() == 1);
  CHECK(Facts(found[0]).cause == InitCause::kFabricManager);
  CHECK(RenderFinding(found[0].finding, NoCallSites()).detail.find("fabric handle") !=
        std::string::npos);
}

TEST_CASE("gpu sharing: peer access unsupported is p2p, with the ACS bridges", "[init]") {
  InitEvidence r = Rank(0, f::kCudaDeviceEnablePeerAccess, 217);
  r.gpus.push_back({"0000:18:00.0", 12, {{"0000:17:00.0", 0x1d}, {"0000:16:00.0", -2}}});
  r.iommu_enabled = true;
  const std::vector<InitFinding> found = DiagnoseInit({r});
  REQUIRE(found.size() == 1);
  CHECK(Facts(found[0]).cause == InitCause::kPeerAccessUnsupported);
  CHECK(Facts(found[0]).subsystem == Area::kP2p);
  const std::string detail = RenderFinding(found[0].finding, NoCallSites()).detail;
  CHECK(detail.find("cudaDeviceEnablePeerAccess failed with cudaErrorPeerAccessUnsupported") !=
        std::string::npos);
  CHECK(detail.find("PCIe ACS redirects peer traffic on bridge 0000:17:00.0") != std::string::npos);
  CHECK(detail.find("an IOMMU is enabled") != std::string::npos);
}

TEST_CASE("gpu sharing: answers are not failures, other calls fall through", "[init]") {
  CHECK_FALSE(GpuSharingFailed(f::kCudaDeviceEnablePeerAccess, 704));
  CHECK_FALSE(GpuSharingFailed(f::kCuCtxEnablePeerAccess, 704));
  CHECK(GpuSharingFailed(f::kCuMemImportFromShareableHandle, 704));
  CHECK_FALSE(GpuSharingFailed(f::kCuMemCreate, 0));
  // Out of memory in cuMemCreate is not about sharing: NCCL's text decides.
  CHECK_FALSE(GpuSharingCause(Rank(0, f::kCuMemCreate, 2)).has_value());
  CHECK(CudaResultName(802, false) == "CUDA_ERROR_SYSTEM_NOT_READY");
  CHECK(CudaResultName(800, true) == "cudaErrorNotPermitted");
  CHECK(CudaResultName(4242, true) == "CUDA error 4242");
  CHECK(CudaFunctionName(f::kCuMulticastBindMem) == "cuMulticastBindMem");
}

TEST_CASE("gpu sharing: NCCL's own failed call counts before the program's", "[init]") {
  InitEvidence r = Rank(0, f::kCuMulticastCreate, 802);
  r.cuda_failures.insert(r.cuda_failures.begin(),
                         {10, f::kCudaIpcOpenMemHandle, 1, 0, 0, -1, -1, false});
  const std::optional<InitFailureFacts> c = GpuSharingCause(r);
  REQUIRE(c.has_value());
  CHECK(c->cause == InitCause::kFabricManager);
}

TEST_CASE("setup notes: ACS redirection above a host's GPUs, once per host", "[notes]") {
  InitEvidence a, b, c;
  a.rank = 0;
  b.rank = 1;
  c.rank = 2;
  a.host = b.host = "node1";
  c.host = "node2";
  a.gpus = {{"0000:18:00.0", 3, {{"0000:17:00.0", 0x0c}}},
            {"0000:2a:00.0", 4, {{"0000:29:00.0", 0}}}};
  b.gpus = a.gpus;
  c.gpus = {{"0000:18:00.0", 3, {{"0000:17:00.0", -1}}}};  // unreadable: no claim
  const std::vector<Finding> notes = SetupNotes({&a, &b, &c});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].kind == FindingKind::kP2pPath);
  CHECK(notes[0].role == FindingRole::kNote);
  CHECK(notes[0].ranks == std::vector<int>{0, 1});
  const FindingText t = RenderFinding(notes[0], NoCallSites());
  CHECK(t.detail.find("on node1, PCIe ACS redirects peer-to-peer requests on bridge 0000:17:00.0 "
                      "above GPU 0000:18:00.0") != std::string::npos);
  CHECK(t.fix.find("iommu=pt") != std::string::npos);
}

TEST_CASE("setup notes: ranks whose NCCL settings and versions differ", "[notes]") {
  std::vector<InitEvidence> ranks(4);
  for (int i = 0; i < 4; ++i) {
    ranks[i].rank = i;
    ranks[i].driver_known = true;
    ranks[i].nccl_version = 22809;
    ranks[i].env = {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_FILE", "/tmp/nccl." + std::to_string(i)}};
  }
  ranks[3].env["NCCL_SOCKET_IFNAME"] = "eth1";
  ranks[2].nccl_version = 22703;
  const std::vector<Finding> notes = SetupNotes({&ranks[0], &ranks[1], &ranks[2], &ranks[3]});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].kind == FindingKind::kConfigSkew);
  CHECK(notes[0].ranks == std::vector<int>{2, 3});
  CHECK(RenderFinding(notes[0], NoCallSites()).detail ==
        "the ranks differ in how NCCL is set up: NCCL_SOCKET_IFNAME: unset on ranks 0-2, eth1 on "
        "rank 3; NCCL version: 2.28.9 on ranks 0-1,3, 2.27.3 on rank 2");
  // The same everywhere: no note.
  ranks[3].env.erase("NCCL_SOCKET_IFNAME");
  ranks[2].nccl_version = 22809;
  CHECK(SetupNotes({&ranks[0], &ranks[1], &ranks[2], &ranks[3]}).empty());
}

TEST_CASE("setup notes: a rank that never reached NCCL's bootstrap or version is no difference",
          "[notes]") {
  // A 2-rank init that failed: rank 0 chose eth0 for its bootstrap, rank 1
  // failed before choosing one and never asked NCCL's version. It was
  // "bootstrap interface: unset on rank 1, eth0 on rank 0", blaming rank 1.
  std::vector<InitEvidence> ranks(2);
  for (int i = 0; i < 2; ++i) {
    ranks[i].rank = i;
    ranks[i].driver_known = true;
  }
  ranks[0].bootstrap_iface = "eth0";
  ranks[0].nccl_version = 22809;
  CHECK(SetupNotes({&ranks[0], &ranks[1]}).empty());
  // Two ranks that reached it and differ still do.
  ranks[1].bootstrap_iface = "ib0";
  const std::vector<Finding> notes = SetupNotes({&ranks[0], &ranks[1]});
  REQUIRE(notes.size() == 1);
  CHECK(
      RenderFinding(notes[0], NoCallSites()).detail ==
      "the ranks differ in how NCCL is set up: bootstrap interface: eth0 on rank 0, ib0 on rank 1");
}

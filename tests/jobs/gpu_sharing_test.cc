// The CUDA calls that share GPU memory between processes and devices, for
// real: a program's own IPC and cuMem calls (reached directly, through
// cudaGetDriverEntryPointByVersion and through cuGetProcAddress) are in
// `ncclwatch dump`; and the simulated NCCL, which gets its driver functions
// as NCCL does and shares its P2P buffers through cuMem POSIX descriptors
// passed over a Unix socket (or legacy CUDA IPC), fails its init the ways a
// container without the host's IPC namespace and a node without its Fabric
// Manager make real NCCL fail, and `ncclwatch diagnose --json` names the
// subsystem, the CUDA call, its result and the fix.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/process_trace.h"
#include "ncclwatch/trace_fields.h"
#include "support/traced_job.h"

namespace {

namespace f = ncclwatch::fields;

struct Scenario {
  jobs::TempDir dir;
  jobs::JobResult job;
  jobs::DiagnosisView diagnosis;
};

// train_loop on `nranks` ranks under the shim, with `env` added.
void RunTrainLoop(Scenario* s, int nranks, const std::vector<std::string>& env) {
  jobs::JobSpec spec = jobs::TracedJobSpec(nranks, "train_loop", {"--steps", "2"}, s->dir.path());
  spec.timeout_s = 20;
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  s->job = jobs::RunJob(spec);
  REQUIRE(s->job.error.empty());
  s->diagnosis = jobs::Diagnose({s->dir.path()});
  INFO("diagnosis:\n" << s->diagnosis.output);
  REQUIRE(s->diagnosis.parsed);
}

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

const jobs::FindingView& RequireInitRoot(const Scenario& s, const std::string& subsystem) {
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 1);
  CHECK(s.diagnosis.verdict == "problem");
  const jobs::FindingView* root = s.diagnosis.Root();
  REQUIRE(root != nullptr);
  CHECK(&s.diagnosis.findings.front() == root);
  REQUIRE(root->kind == "init_failure");
  CHECK(root->String("subsystem") == subsystem);
  CHECK_FALSE(root->detail.empty());
  CHECK_FALSE(root->fix.empty());
  return *root;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The rank's recorded call of `function` that failed with `result`.
const ncclwatch::decoder::CudaCallEvent* FailedCall(const ncclwatch::decoder::ProcessTrace& t,
                                                    uint32_t function, int32_t result) {
  for (const auto& c : t.cuda_calls)
    if (c.function == function && c.result == result) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("a program's IPC and cuMem calls, however reached, are in dump", "[cuda][dump]") {
  jobs::TempDir dir;
  jobs::JobSpec spec = jobs::TracedJobSpec(1, "cuda_ipc_probe", {}, dir.path());
  jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());
  INFO(job.ranks.at(0).output);
  REQUIRE(job.ranks.at(0).exit_code == 0);
  // The same results and errno without the shim.
  jobs::JobSpec plain;
  plain.argv = {jobs::BinDir() + "/cuda_ipc_probe"};
  plain.env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir()};
  const jobs::JobResult untraced = jobs::RunJob(plain);
  REQUIRE(untraced.error.empty());
  CHECK(untraced.ranks.at(0).output == job.ranks.at(0).output);
  CHECK(Contains(job.ranks.at(0).output,
                 "errno after cudaIpcOpenMemHandle: " + std::to_string(EDOM)));
  const std::string trace = jobs::TraceOf(dir.path(), 0);
  REQUIRE_FALSE(trace.empty());
  jobs::DiagnosisView dump = jobs::RunNcclwatch("dump", {trace}, false);
  const std::string& out = dump.output;
  INFO(out);
  CHECK(dump.exit_code == 0);
  // The runtime function the program called, failing.
  CHECK(Contains(out,
                 "cuda_call cudaIpcOpenMemHandle result=cudaErrorInvalidValue (invalid argument) "
                 "via=runtime"));
  // The cuMem functions from cudaGetDriverEntryPointByVersion: the round trip
  // that worked, then the import that failed, with its handle type and fd.
  CHECK(Contains(out, "cuda_call cuMemCreate result=CUDA_SUCCESS via=cudaGetDriverEntryPoint"));
  CHECK(Contains(out,
                 "cuda_call cuMemExportToShareableHandle result=CUDA_SUCCESS "
                 "via=cudaGetDriverEntryPoint handle_type=posix_fd fd="));
  CHECK(Contains(out,
                 "cuda_call cuMemImportFromShareableHandle result=CUDA_ERROR_INVALID_VALUE "
                 "(invalid argument) via=cudaGetDriverEntryPoint"));
  CHECK(Contains(out, "handle_type=posix_fd fd=-1"));
  // Through cuGetProcAddress.
  CHECK(Contains(out,
                 "cuda_call cuDeviceCanAccessPeer result=CUDA_SUCCESS via=cuGetProcAddress "
                 "device=0 peer=1 can_access=1"));
  CHECK(Contains(out,
                 "cuda_call cuIpcOpenMemHandle result=CUDA_ERROR_INVALID_VALUE "
                 "(invalid argument) via=cuGetProcAddress"));
  // Through dlsym on libcuda's handle.
  CHECK(Contains(out, "cuda_call cuIpcCloseMemHandle result=CUDA_ERROR_"));
  CHECK(Contains(out, "via=dlsym"));
  // The model has them too, the failures with their caller.
  auto t = ncclwatch::decoder::LoadProcessTrace(trace);
  REQUIRE(t.ok());
  const auto* import = FailedCall(*t, f::kCuMemImportFromShareableHandle, 1);
  REQUIRE(import != nullptr);
  CHECK(import->fd == -1);
  CHECK(import->handle_type == 1);
  CHECK(import->via == f::cuda_call::kDriverEntryPoint);
  CHECK(import->caller != 0);
  CHECK_FALSE(import->from_nccl);
  CHECK(FailedCall(*t, f::kCudaIpcOpenMemHandle, 1) != nullptr);
}

TEST_CASE("NCCL's cuMem import refused (a container without the host's IPC namespace): ipc",
          "[cuda][init]") {
  Scenario s;
  RunTrainLoop(&s, 2, {"NCCL_SHM_DISABLE=1", "NCCLSIM_IPC_IMPORT=eperm"});
  const auto& root = RequireInitRoot(s, "ipc");
  CHECK(Sorted(root.ranks) == std::vector<int>{0, 1});
  CHECK(root.String("errno") == "EPERM");
  CHECK(root.String("cuda_call") == "cuMemImportFromShareableHandle");
  CHECK(root.raw.fields().at("cuda_result").number_value() == 800);
  CHECK(Contains(root.detail,
                 "cuMemImportFromShareableHandle failed with CUDA_ERROR_NOT_PERMITTED "
                 "(operation not permitted)"));
  CHECK(Contains(root.fix, "--ipc=host"));
  CHECK(Contains(root.fix, "NCCL_CUMEM_ENABLE=0"));
  // NCCL reached the import through cudaGetDriverEntryPointByVersion, inside its init.
  auto t = ncclwatch::decoder::LoadProcessTrace(jobs::TraceOf(s.dir.path(), 1));
  REQUIRE(t.ok());
  const auto* c = FailedCall(*t, f::kCuMemImportFromShareableHandle, 800);
  REQUIRE(c != nullptr);
  CHECK(c->from_nccl);
  CHECK(c->via == f::cuda_call::kDriverEntryPoint);
  CHECK(c->in_call == f::kCommInitRank);
  CHECK(c->err == EPERM);
  CHECK(c->handle_type == 1);
}

TEST_CASE("NCCL's legacy CUDA IPC open refused (NCCL_CUMEM_ENABLE=0): ipc", "[cuda][init]") {
  Scenario s;
  RunTrainLoop(&s, 2, {"NCCL_SHM_DISABLE=1", "NCCL_CUMEM_ENABLE=0", "NCCLSIM_IPC_IMPORT=eperm"});
  const auto& root = RequireInitRoot(s, "ipc");
  CHECK(Sorted(root.ranks) == std::vector<int>{0, 1});
  CHECK(root.String("cuda_call") == "cudaIpcOpenMemHandle");
  CHECK(root.raw.fields().at("cuda_result").number_value() == 800);
  CHECK(Contains(root.detail, "legacy CUDA IPC handle"));
  CHECK(Contains(root.fix, "--ipc=host --pid=host"));
}

TEST_CASE("NVLS multicast without a Fabric Manager: fabric on the rank that creates it",
          "[cuda][init]") {
  Scenario s;
  RunTrainLoop(&s, 4, {"NCCLSIM_MULTICAST=nofm"});
  const auto& root = RequireInitRoot(s, "fabric");
  CHECK(root.ranks == std::vector<int>{0});
  CHECK(root.String("cuda_call") == "cuMulticastCreate");
  CHECK(root.raw.fields().at("cuda_result").number_value() == 802);
  CHECK(Contains(root.detail,
                 "cuMulticastCreate failed with CUDA_ERROR_SYSTEM_NOT_READY "
                 "(system not yet initialized)"));
  CHECK(Contains(root.fix, "nvidia-fabricmanager"));
  CHECK(Contains(root.fix, "NCCL_NVLS_ENABLE=0"));
  std::vector<int> waited;
  for (const jobs::FindingView& x : s.diagnosis.findings)
    if (x.String("subsystem") == "waiting") waited = Sorted(x.ranks);
  CHECK(waited == std::vector<int>{1, 2, 3});
}

TEST_CASE("NVLS with a Fabric Manager, and P2P through cuMem: a healthy job", "[cuda]") {
  Scenario s;
  RunTrainLoop(&s, 4, {"NCCLSIM_MULTICAST=ok", "NCCL_SHM_DISABLE=1"});
  INFO(s.diagnosis.output);
  CHECK(s.diagnosis.verdict == "healthy");
  CHECK(s.diagnosis.findings.empty());
  for (const jobs::RankResult& r : s.job.ranks) CHECK(r.exit_code == 0);
  auto t = ncclwatch::decoder::LoadProcessTrace(jobs::TraceOf(s.dir.path(), 2));
  REQUIRE(t.ok());
  int imports = 0, multicast = 0;
  for (const auto& c : t->cuda_calls) {
    CHECK(c.result == 0);
    imports += c.function == f::kCuMemImportFromShareableHandle;
    multicast += c.function == f::kCuMulticastAddDevice;
  }
  CHECK(imports == 4);  // three peers' buffers and the multicast object
  CHECK(multicast == 1);
}

namespace {

void WriteFile(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// A host's sysfs as the shim reads it: GPU 0000:18:00.0 below bridge
// 0000:16:00.0 (ACS with request and completion redirect on, extended config
// space readable) below root port 0000:15:01.0 (only the first 64 bytes of
// config space readable, as for an unprivileged process), in IOMMU group 12;
// an IOMMU; one NVSwitch.
void FakeSysfs(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  const fs::path port = root / "devices/pci0000:15/0000:15:01.0";
  const fs::path bridge = port / "0000:16:00.0";
  const fs::path gpu = bridge / "0000:18:00.0";
  const fs::path nvswitch = root / "devices/pci0000:00/0000:05:00.0";
  WriteFile(gpu / "vendor", "0x10de\n");
  WriteFile(gpu / "class", "0x030200\n");
  WriteFile(nvswitch / "vendor", "0x10de\n");
  WriteFile(nvswitch / "class", "0x068000\n");
  WriteFile(port / "config", std::string(64, '\0'));
  std::string config(4096, '\0');
  const unsigned char acs[8] = {0x0d, 0x00, 0x01, 0x00, 0x1f, 0x00, 0x1d, 0x00};  // id, ver|next
  config.replace(0x100, sizeof(acs), reinterpret_cast<const char*>(acs), sizeof(acs));
  WriteFile(bridge / "config", config);
  fs::create_directories(root / "kernel/iommu_groups/12");
  fs::create_directory_symlink(root / "kernel/iommu_groups/12", gpu / "iommu_group");
  fs::create_directories(root / "class/iommu/dmar0");
  fs::create_directories(root / "bus/pci/devices");
  for (const fs::path& d : {port, bridge, gpu, nvswitch})
    fs::create_directory_symlink(d, root / "bus/pci/devices" / d.filename());
}

}  // namespace

TEST_CASE("the P2P hardware path is inventoried, ACS redirection above the GPUs is a note",
          "[cuda][inventory]") {
  Scenario s;
  const std::string sysfs = s.dir.path() + "/sysfs";
  FakeSysfs(sysfs);
  jobs::JobSpec spec = jobs::TracedJobSpec(2, "train_loop", {"--steps", "2"}, s.dir.path());
  spec.timeout_s = 20;
  spec.env.push_back("NCCLWATCH_TEST_SYSFS=" + sysfs);
  s.job = jobs::RunJob(spec);
  REQUIRE(s.job.error.empty());
  for (const jobs::RankResult& r : s.job.ranks) CHECK(r.exit_code == 0);
  std::vector<std::string> traces;
  for (const auto& e : std::filesystem::directory_iterator(s.dir.path()))
    if (e.path().extension() == ".trace") traces.push_back(e.path().string());
  REQUIRE(traces.size() == 2);
  s.diagnosis = jobs::Diagnose(traces);
  INFO(s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 0);
  CHECK(s.diagnosis.verdict == "healthy");
  REQUIRE(s.diagnosis.findings.size() == 1);
  const jobs::FindingView& note = s.diagnosis.findings.front();
  CHECK(note.kind == "p2p_path");
  CHECK(note.role == "note");
  CHECK(note.ranks == std::vector<int>{0, 1});
  CHECK(Contains(note.detail,
                 "PCIe ACS redirects peer-to-peer requests on bridge 0000:16:00.0 "
                 "above GPU 0000:18:00.0 (an IOMMU is enabled)"));
  CHECK(Contains(note.fix, "iommu=pt"));
  auto t = ncclwatch::decoder::LoadProcessTrace(traces[0]);
  REQUIRE(t.ok());
  const auto& inv = t->inventory;
  CHECK(inv.iommu_enabled);
  CHECK(inv.nvswitches == 1);
  REQUIRE(inv.gpus.size() == 1);
  CHECK(inv.gpus[0].bdf == "0000:18:00.0");
  CHECK(inv.gpus[0].iommu_group == 12);
  REQUIRE(inv.gpus[0].bridges.size() == 2);
  CHECK(inv.gpus[0].bridges[0].bdf == "0000:16:00.0");
  CHECK(inv.gpus[0].bridges[0].acs_ctrl == 0x1d);
  CHECK(inv.gpus[0].bridges[1].bdf == "0000:15:01.0");
  CHECK(inv.gpus[0].bridges[1].acs_ctrl == -1);  // extended config space not readable
  jobs::DiagnosisView dump = jobs::RunNcclwatch("dump", {traces[0]}, false);
  CHECK(Contains(dump.output,
                 "gpu=0000:18:00.0(iommu_group 12)<0000:16:00.0:acs=0x1d<0000:15:01.0:acs=?"));
}

TEST_CASE("peer access that cannot be enabled between one process's GPUs: p2p", "[cuda][init]") {
  Scenario s;
  jobs::JobSpec spec = jobs::TracedJobSpec(1, "lifecycle_check", {"initall"}, s.dir.path());
  spec.timeout_s = 20;
  spec.env.push_back("NCCL_SHM_DISABLE=1");
  spec.env.push_back("NCCLSIM_PEER_ACCESS=fail");
  s.job = jobs::RunJob(spec);
  REQUIRE(s.job.error.empty());
  INFO(s.job.ranks.at(0).output);
  CHECK(s.job.ranks.at(0).exit_code != 0);  // ncclCommInitAll failed
  s.diagnosis = jobs::Diagnose({s.dir.path()});
  REQUIRE(s.diagnosis.parsed);
  const auto& root = RequireInitRoot(s, "p2p");
  CHECK(root.String("cuda_call") == "cudaDeviceEnablePeerAccess");
  CHECK(root.raw.fields().at("cuda_result").number_value() == 217);
  CHECK(Contains(root.detail,
                 "cudaDeviceEnablePeerAccess failed with "
                 "cudaErrorPeerAccessUnsupported (peer access is not supported "
                 "between these two devices)"));
  CHECK(Contains(root.fix, "NCCL_P2P_DISABLE=1"));
}

TEST_CASE("a runtime loaded in a local scope: the shim's cudaIpcOpenMemHandle still forwards",
          "[cuda][preload]") {
  jobs::TempDir dir;
  const std::string plugin = jobs::BinDir() + "/libcuda_local_plugin.so";
  jobs::JobSpec plain;
  plain.argv = {jobs::BinDir() + "/cuda_local_main", plugin};
  plain.env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir()};
  jobs::JobSpec traced = jobs::TracedJobSpec(1, "cuda_local_main", {plugin}, dir.path());
  const jobs::JobResult a = jobs::RunJob(plain);
  const jobs::JobResult b = jobs::RunJob(traced);
  REQUIRE(a.error.empty());
  REQUIRE(b.error.empty());
  INFO(a.ranks.at(0).output << "\n---\n" << b.ranks.at(0).output);
  CHECK(Contains(a.ranks.at(0).output, "cudaIpcOpenMemHandle returned 1"));
  CHECK(b.ranks.at(0).output == a.ranks.at(0).output);
  auto t = ncclwatch::decoder::LoadProcessTrace(jobs::TraceOf(dir.path(), 0));
  REQUIRE(t.ok());
  CHECK(FailedCall(*t, f::kCudaIpcOpenMemHandle, 1) != nullptr);
}

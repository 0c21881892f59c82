// Init forensics, for real: every init failure ncclwatch names is made to
// happen, with real NCCL where it runs on this GPU-less machine (its
// bootstrap, and its CUDA init failing for lack of a driver) and on the
// simulator for multi-rank jobs (a small /dev/shm in a private mount
// namespace, a bad NCCL_SOCKET_IFNAME, a rank in a network namespace that
// cannot reach the root, a root nobody listens at, version skew, two ranks
// on one GPU, InfiniBand registration over a real RLIMIT_MEMLOCK, GPU memory
// exhausted at init), and `ncclwatch diagnose --json`
// must name the subsystem, errno, ranks and fix. Every job also writes its
// NCCL_DEBUG=INFO logs and output, and `ncclwatch explain` must reach the
// same verdict from them alone.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/process_trace.h"
#include "report/names.h"
#include "support/netns.h"
#include "support/sim_release.h"
#include "support/traced_job.h"

namespace {

struct InitScenario {
  jobs::TempDir dir;
  jobs::JobResult job;
  jobs::DiagnosisView diagnosis;  // from the traces
  jobs::DiagnosisView explained;  // from the logs alone
  std::string logs() const { return dir.path() + "/logs"; }
};

// The job's output as a launcher would keep it: every rank's lines, tagged.
void SaveOutput(const InitScenario& s, const std::string& name) {
  std::ofstream out(s.logs() + "/" + name);
  for (const jobs::RankResult& r : s.job.ranks) {
    std::istringstream lines(r.output);
    std::string line;
    while (std::getline(lines, line)) out << "[rank " << r.rank << "] " << line << "\n";
  }
}

// NCCL's INFO log, one file per process, next to the traces.
void LogTo(const InitScenario& s, jobs::JobSpec* spec) {
  std::filesystem::create_directories(s.logs());
  for (std::string& e : spec->env)
    if (e.rfind("NCCL_DEBUG=", 0) == 0) e = "NCCL_DEBUG=INFO";
  spec->env.push_back("NCCL_DEBUG=INFO");
  spec->env.push_back("NCCL_DEBUG_FILE=" + s.logs() + "/nccl.%h.%p.log");
}

// train_loop on `nranks` ranks under the shim, with `tweak` applied to the spec.
template <typename Tweak>
void RunTrainLoop(InitScenario* s, int nranks, Tweak tweak, double bound = 8) {
  jobs::JobSpec spec = jobs::TracedJobSpec(nranks, "train_loop", {"--steps", "2"}, s->dir.path());
  spec.timeout_s = bound;
  LogTo(*s, &spec);
  tweak(spec);
  s->job = jobs::RunJob(spec);
  REQUIRE(s->job.error.empty());
  SaveOutput(*s, "job.out");
  s->diagnosis = jobs::Diagnose({s->dir.path()});
  s->explained = jobs::Explain({s->logs()});
  INFO("diagnosis:\n" << s->diagnosis.output << "\nexplained:\n" << s->explained.output);
  REQUIRE(s->diagnosis.parsed);
  REQUIRE(s->explained.parsed);
}

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// explain, from the logs alone, must name the same root cause as the traces.
void RequireSameFromLogs(const InitScenario& s) {
  INFO("diagnosis:\n" << s.diagnosis.output << "\nexplained:\n" << s.explained.output);
  const jobs::FindingView* traced = s.diagnosis.Root();
  const jobs::FindingView* logged = s.explained.Root();
  REQUIRE(traced != nullptr);
  REQUIRE(logged != nullptr);
  CHECK(s.explained.exit_code == 1);
  CHECK(logged->kind == traced->kind);
  CHECK(logged->String("subsystem") == traced->String("subsystem"));
  CHECK(logged->String("errno") == traced->String("errno"));
  CHECK(Sorted(logged->ranks) == Sorted(traced->ranks));
  CHECK_FALSE(logged->fix.empty());
}

// The root cause must be an init_failure of `subsystem` with `err` (or null).
const jobs::FindingView& RequireInitRoot(const InitScenario& s, const std::string& subsystem,
                                         const std::string& err) {
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 1);
  CHECK(s.diagnosis.verdict == "problem");
  const jobs::FindingView* root = s.diagnosis.Root();
  REQUIRE(root != nullptr);
  CHECK(&s.diagnosis.findings.front() == root);
  REQUIRE(root->kind == "init_failure");
  CHECK(root->String("subsystem") == subsystem);
  if (err.empty()) {
    auto it = root->raw.fields().find("errno");
    REQUIRE(it != root->raw.fields().end());
    CHECK(it->second.has_null_value());
  } else {
    CHECK(root->String("errno") == err);
  }
  CHECK_FALSE(root->detail.empty());
  CHECK_FALSE(root->fix.empty());
  return *root;
}

// The consequence finding naming the ranks that only waited.
std::vector<int> WaitedRanks(const InitScenario& s) {
  for (const jobs::FindingView& f : s.diagnosis.findings)
    if (f.kind == "init_failure" && f.String("subsystem") == "waiting") {
      CHECK(f.role == "consequence");
      return f.ranks;
    }
  return {};
}

std::vector<std::string> RealNcclEnv(const std::string& dir, const std::string& extra) {
  // No LD_LIBRARY_PATH: the program finds the real libnccl.so.2.
  std::vector<std::string> env = {"LD_LIBRARY_PATH", "LD_PRELOAD=" + jobs::ShimPath(),
                                  "NCCLWATCH_DIR=" + dir};
  if (!extra.empty()) env.push_back(extra);
  return env;
}

}  // namespace

TEST_CASE("real NCCL: NCCL_SOCKET_IFNAME matching nothing fails ncclGetUniqueId, network named",
          "[init][real-nccl]") {
  InitScenario s;
  jobs::JobSpec spec;
  spec.argv = {jobs::BinDir() + "/uniqueid_probe"};
  spec.env = RealNcclEnv(s.dir.path(), "NCCL_SOCKET_IFNAME=nosuchif");
  spec.env.push_back("NCCL_DEBUG=INFO");
  s.job = jobs::RunJob(spec);
  REQUIRE(s.job.error.empty());
  INFO(s.job.ranks.at(0).output);
  REQUIRE(s.job.ranks.at(0).output.find("no socket interface found") != std::string::npos);
  std::filesystem::create_directories(s.logs());
  SaveOutput(s, "probe.out");
  s.diagnosis = jobs::Diagnose({s.dir.path()});
  s.explained = jobs::Explain({s.logs()});
  const auto& f = RequireInitRoot(s, "network", "");
  RequireSameFromLogs(s);
  CHECK(f.String("socket_ifname") == "nosuchif");
  CHECK(f.detail.find("NCCL_SOCKET_IFNAME=nosuchif matches no usable interface") !=
        std::string::npos);
  CHECK(f.detail.find("lo 127.0.0.1/8") != std::string::npos);  // the interfaces that do exist
  CHECK(f.fix.find("NCCL_SOCKET_IFNAME") != std::string::npos);
}

// No GPU driver at all on this machine: the CUDA runtime's words are those of a
// driver too old ("insufficient"), and the traces' inventory, which saw no
// libcuda, says there is none (cuda); the log alone cannot tell, and names
// the driver/runtime skew its words give (version), with a fix that covers both.
TEST_CASE("real NCCL: ncclCommInitRank without a GPU driver, no driver named from the traces",
          "[init][real-nccl]") {
  InitScenario s;
  jobs::JobSpec spec;
  spec.argv = {jobs::BinDir() + "/uniqueid_probe", "init"};
  spec.env = RealNcclEnv(s.dir.path(), "NCCL_DEBUG=INFO");
  s.job = jobs::RunJob(spec);
  REQUIRE(s.job.error.empty());
  INFO(s.job.ranks.at(0).output);
  REQUIRE(s.job.ranks.at(0).output.find("init result 1") != std::string::npos);
  std::filesystem::create_directories(s.logs());
  SaveOutput(s, "probe.out");
  s.diagnosis = jobs::Diagnose({s.dir.path()});
  s.explained = jobs::Explain({s.logs()});
  const auto& f = RequireInitRoot(s, "cuda", "");
  CHECK(f.detail.find("no CUDA driver is loaded in the process") != std::string::npos);
  CHECK(f.detail.find("CUDA driver version is insufficient for CUDA runtime version") !=
        std::string::npos);
  CHECK(f.fix.find("driver") != std::string::npos);
  const jobs::FindingView* logged = s.explained.Root();
  INFO("explained:\n" << s.explained.output);
  REQUIRE(logged != nullptr);
  CHECK(logged->kind == "init_failure");
  CHECK(logged->String("subsystem") == "version");
  CHECK(logged->ranks == f.ranks);
  CHECK(logged->fix.find("NVIDIA container runtime") != std::string::npos);
}

TEST_CASE("a /dev/shm too small for NCCL's segments: shm, ENOSPC, every rank", "[init][shm]") {
  InitScenario s;
  RunTrainLoop(&s, 4, [](jobs::JobSpec& spec) { spec.shm_size = "16m"; });
  const auto& f = RequireInitRoot(s, "shm", "ENOSPC");
  RequireSameFromLogs(s);
  std::vector<int> ranks = f.ranks;
  std::sort(ranks.begin(), ranks.end());
  CHECK(ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(f.raw.fields().at("requested").number_value() ==
        9637892);  // NCCL's segment for one connection
  CHECK(f.raw.fields().at("shm_size").number_value() == 16 << 20);
  CHECK(f.String("path").rfind("/dev/shm/nccl-", 0) == 0);
  CHECK(f.fix.find("--shm-size") != std::string::npos);
  CHECK(f.fix.find("NCCL_SHM_DISABLE=1") != std::string::npos);
}

TEST_CASE("a bad NCCL_SOCKET_IFNAME on one rank of four: network on that rank, the rest waited",
          "[init][net]") {
  InitScenario s;
  RunTrainLoop(&s, 4,
               [](jobs::JobSpec& spec) { spec.ranks[2].env = {"NCCL_SOCKET_IFNAME=nosuchif"}; });
  const auto& f = RequireInitRoot(s, "network", "");
  RequireSameFromLogs(s);
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(f.String("socket_ifname") == "nosuchif");
  CHECK(WaitedRanks(s) == std::vector<int>{0, 1, 3});
}

TEST_CASE("a rank that ran without the shim: its log joins the traces' evidence, one init verdict",
          "[init][net][logs]") {
  // The failing rank was launched without LD_PRELOAD (a node whose launcher
  // dropped it): it left no trace, only its NCCL_DEBUG log. Its three peers'
  // traces show only that they waited; `diagnose` over the traces and the
  // logs together judges all four ranks' init evidence as one job.
  InitScenario s;
  RunTrainLoop(&s, 4, [](jobs::JobSpec& spec) {
    spec.ranks[2].env = {"NCCL_SOCKET_IFNAME=nosuchif", "LD_PRELOAD"};
  });
  const jobs::DiagnosisView both = jobs::Diagnose({s.dir.path(), s.logs()});
  INFO("traces and logs:\n" << both.output);
  REQUIRE(both.parsed);
  CHECK(both.exit_code == 1);
  CHECK(both.verdict == "problem");
  const jobs::FindingView* root = both.Root();
  REQUIRE(root != nullptr);
  CHECK(root->kind == "init_failure");
  CHECK(root->String("subsystem") == "network");
  CHECK(root->ranks == std::vector<int>{2});
  CHECK(root->String("socket_ifname") == "nosuchif");
  int init_findings = 0;
  std::vector<int> waited;
  for (const jobs::FindingView& f : both.findings) {
    if (f.kind != "init_failure") continue;
    ++init_findings;
    if (f.String("subsystem") == "waiting") {
      CHECK(f.role == "consequence");
      waited = f.ranks;
    }
  }
  CHECK(waited == std::vector<int>{0, 1, 3});
  // The cause and the waiting, each said once; the log's error line is the
  // cause's, not an unexplained error of its own.
  CHECK(init_findings == 2);
  CHECK(both.findings.size() == 2);
}

TEST_CASE("a rank whose only interface cannot reach the root: bootstrap, ENETUNREACH",
          "[init][net]") {
  jobs::NetNamespace other_host("unreach");
  REQUIRE(other_host.ok());
  other_host.AddInterface("ens9", "10.77.0.2/24");
  InitScenario s;
  RunTrainLoop(&s, 4, [&](jobs::JobSpec& spec) { spec.ranks[3].netns = other_host.name(); });
  const auto& f = RequireInitRoot(s, "bootstrap", "ENETUNREACH");
  RequireSameFromLogs(s);
  CHECK(f.ranks == std::vector<int>{3});
  CHECK_FALSE(f.String("address").empty());
  CHECK(f.detail.find("ens9 10.77.0.2/24") != std::string::npos);
  CHECK(f.detail.find("none of them on the network of") != std::string::npos);
  CHECK(WaitedRanks(s) == std::vector<int>{0, 1, 2});
}

TEST_CASE(
    "a rank that bootstraps over a container bridge on another network: bootstrap, the bridge "
    "named",
    "[init][net]") {
  jobs::NetNamespace other_host("bridge");
  REQUIRE(other_host.ok());
  other_host.AddInterface("ens9", "10.78.0.2/24");
  other_host.AddInterface("docker0", "172.17.0.1/16");
  InitScenario s;
  RunTrainLoop(&s, 4, [&](jobs::JobSpec& spec) {
    spec.ranks[1].netns = other_host.name();
    spec.ranks[1].env = {"NCCL_SOCKET_IFNAME=docker0"};
  });
  const auto& f = RequireInitRoot(s, "bootstrap", "ENETUNREACH");
  RequireSameFromLogs(s);
  CHECK(f.ranks == std::vector<int>{1});
  CHECK(f.detail.find("NCCL picked docker0, a container or virtual bridge") != std::string::npos);
  CHECK(f.fix.find("NCCL_SOCKET_IFNAME") != std::string::npos);
}

TEST_CASE("a root nobody listens at (NCCL_COMM_ID port differs): bootstrap, ECONNREFUSED",
          "[init][net]") {
  InitScenario s;
  RunTrainLoop(&s, 4, [](jobs::JobSpec& spec) {
    spec.env.push_back("NCCL_SOCKET_RETRY_CNT=3");
    spec.env.push_back("NCCL_SOCKET_RETRY_SLEEP_MSEC=10");
    spec.ranks[0].env = {"NCCL_COMM_ID=127.0.0.1:29611"};
    for (int r = 1; r < 4; ++r) spec.ranks[r].env = {"NCCL_COMM_ID=127.0.0.1:29612"};
  });
  const auto& f = RequireInitRoot(s, "bootstrap", "ECONNREFUSED");
  RequireSameFromLogs(s);
  std::vector<int> ranks = f.ranks;
  std::sort(ranks.begin(), ranks.end());
  CHECK(ranks == std::vector<int>{1, 2, 3});
  CHECK(f.String("address") == "127.0.0.1:29612");
  CHECK(f.detail.find("rank 0 NCCL_COMM_ID=127.0.0.1:29611") != std::string::npos);
  CHECK(WaitedRanks(s) == std::vector<int>{0});
}

TEST_CASE("version skew: one rank runs another NCCL", "[init][version]") {
  InitScenario s;
  RunTrainLoop(&s, 4,
               [](jobs::JobSpec& spec) { spec.ranks[3].env = {"NCCLSIM_NCCL_VERSION=2.27.3"}; });
  const auto& f = RequireInitRoot(s, "version", "");
  RequireSameFromLogs(s);
  CHECK(f.ranks == std::vector<int>{3});
  CHECK(f.detail.find("rank 3 NCCL 2.27.3") != std::string::npos);
  CHECK(f.detail.find("ranks 0-2 NCCL " + jobs::SimNcclVersionString()) != std::string::npos);
}

TEST_CASE("two ranks on one GPU: gpu, both ranks, the bus id", "[init][gpu]") {
  InitScenario s;
  RunTrainLoop(&s, 4, [](jobs::JobSpec& spec) { spec.ranks[1].env = {"JOB_DEVICE=0"}; });
  const auto& f = RequireInitRoot(s, "gpu", "");
  RequireSameFromLogs(s);
  CHECK(f.ranks == std::vector<int>{0, 1});
  CHECK(f.String("bus_id") == "0000:18:00.0");
}

TEST_CASE("InfiniBand buffers over a low RLIMIT_MEMLOCK: ib, ENOMEM, the limit named",
          "[init][ib]") {
  InitScenario s;
  RunTrainLoop(&s, 2, [](jobs::JobSpec& spec) {
    spec.memlock_bytes = 64 << 10;  // a container's default ulimit -l, enforced by the kernel
    spec.env.push_back(
        "NCCL_SHM_DISABLE=1");  // local ranks over the (simulated) NIC, as on a real cluster
    spec.env.push_back("NCCL_P2P_DISABLE=1");
    spec.env.push_back("NCCLSIM_IB_HCA=mlx5_0");
  });
  const auto& f = RequireInitRoot(s, "ib", "ENOMEM");
  RequireSameFromLogs(s);
  CHECK(Sorted(f.ranks) == std::vector<int>{0, 1});
  CHECK(f.raw.fields().at("memlock").number_value() == 64 << 10);
  CHECK(f.detail.find("Call to ibv_reg_mr failed with error Cannot allocate memory") !=
        std::string::npos);
  CHECK(f.detail.find("RLIMIT_MEMLOCK is only 64.0 KiB") != std::string::npos);
  CHECK(f.fix.find("ulimit -l unlimited") != std::string::npos);
  // NCCL's verbs calls go through dlvsym'ed pointers: the shim's wrapper saw
  // the registration fail, with its errno.
  for (int rank : {0, 1}) {
    auto t = ncclwatch::decoder::LoadProcessTrace(jobs::TraceOf(s.dir.path(), rank));
    REQUIRE(t.ok());
    bool reg_mr = false;
    for (const auto& c : t->syscalls)
      reg_mr |= c.path == "ibv_reg_mr" && c.err == ENOMEM && c.from_nccl &&
                ncclwatch::decoder::SysCallName(c.kind) == "verbs";
    CHECK(reg_mr);
  }
}

TEST_CASE("GPU memory exhausted while NCCL allocates its buffers: cuda", "[init][cuda]") {
  InitScenario s;
  RunTrainLoop(&s, 2, [](jobs::JobSpec& spec) {
    spec.env.push_back("NCCL_SHM_DISABLE=1");   // buffers in device memory, shared by CUDA IPC
    spec.env.push_back("NCCL_CUMEM_ENABLE=0");  // legacy IPC: cudaMalloc, NCCL's CUDACHECK text
    spec.env.push_back("NCCLSIM_ARENA_GIB=1");
    spec.env.push_back("NCCL_BUFFSIZE=1073741824");
  });
  const auto& f = RequireInitRoot(s, "cuda", "");
  RequireSameFromLogs(s);
  std::vector<int> ranks = f.ranks;
  std::sort(ranks.begin(), ranks.end());
  CHECK(ranks == std::vector<int>{0, 1});
  CHECK(f.detail.find("Cuda failure 'out of memory'") != std::string::npos);
  CHECK(f.fix.find("NCCL_BUFFSIZE") != std::string::npos);
}

TEST_CASE("a healthy job's inventory makes no init finding", "[init]") {
  InitScenario s;
  RunTrainLoop(
      &s, 2, [](jobs::JobSpec&) {}, 60);
  INFO(s.diagnosis.output << "\n" << s.explained.output);
  CHECK(s.diagnosis.verdict == "healthy");
  CHECK(s.diagnosis.findings.empty());
  CHECK(s.explained.exit_code == 0);  // and its logs show nothing wrong either
  CHECK(s.explained.verdict == "healthy");
}

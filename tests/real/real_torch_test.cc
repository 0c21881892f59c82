// Real PyTorch (torch 2.15.0 from PyPI, installed by scripts/fetch-torch.sh
// into a cache outside the tree) under libncclwatch.so: jobs whose ranks
// never get past torch.distributed's rendezvous (the TCPStore at
// MASTER_ADDR:MASTER_PORT), each diagnosed exactly from the traces the shim
// writes from NCCL's load (torch links libnccl), before any NCCL call.
// There is no GPU here: a rendezvous that succeeds fails later, on CUDA;
// these fail before. The store's timeout is short (a few seconds) so each
// job ends by itself. When torch is not installed every test prints a line
// starting "NCCLWATCH-SKIP:" with the reason, and ctest reports it skipped.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/process_trace.h"
#include "support/traced_job.h"

namespace fs = std::filesystem;

namespace {

std::string Shell(const std::string& command, int* status) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int s = pclose(p);
  *status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  return out;
}

// The venv's python, or "" after the skip line.
std::string TorchPython() {
  static const std::pair<std::string, std::string> found =
      []() -> std::pair<std::string, std::string> {
    if (const char* given = std::getenv("NCCLWATCH_TORCH_PYTHON")) return {given, ""};
    jobs::TempDir tmp;
    int status = 0;
    std::string out = Shell(std::string(NCCLWATCH_SOURCE_DIR) +
                                "/scripts/fetch-torch.sh --locate 2>" + tmp.path() + "/err",
                            &status);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    if (status != 0 || out.empty()) {
      int ignored = 0;
      return {"", Shell("cat " + tmp.path() + "/err", &ignored)};
    }
    return {out, ""};
  }();
  if (found.first.empty())
    std::cout << "NCCLWATCH-SKIP: real PyTorch unavailable (" << found.second
              << "); its tests did not run\n";
  return found.first;
}

// A TCP port nothing listens on now, below the kernel's ephemeral range
// (32768 and up by default), so that no client socket of this machine's
// other jobs takes it from the ranks in the meantime: random in
// [21000, 29000), checked by binding it.
int FreePort() {
  static unsigned seed = static_cast<unsigned>(getpid()) * 2654435761u;
  for (int attempt = 0; attempt < 100; ++attempt) {
    seed = seed * 1103515245u + 12345u;
    const int port = 21000 + static_cast<int>((seed >> 8) % 8000);
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (free) return port;
  }
  FAIL("no free port in [21000, 29000)");
  return -1;
}

// Two (or `nranks`) ranks of the program, traced into `dir`; `per_rank`
// adds to a rank's environment.
jobs::JobResult RunRanks(const std::string& python, const std::string& dir, int nranks, int port,
                         const std::vector<std::string>& env = {},
                         const std::map<int, std::vector<std::string>>& per_rank = {}) {
  jobs::JobSpec spec;
  spec.nranks = nranks;
  spec.argv = {python,
               std::string(NCCLWATCH_SOURCE_DIR) + "/tests/real/programs/torch_rendezvous.py"};
  spec.env = {"LD_PRELOAD=" + jobs::ShimPath(), "NCCLWATCH_DIR=" + dir,
              "MASTER_ADDR=127.0.0.1",          "MASTER_PORT=" + std::to_string(port),
              "NCCLWATCH_TEST_TIMEOUT_S=3",     "NCCLWATCH_TEST_RANKS=" + std::to_string(nranks),
              "CUDA_VISIBLE_DEVICES=",          "OMP_NUM_THREADS=1"};
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  for (const auto& [rank, more] : per_rank) spec.ranks[rank].env = more;
  spec.timeout_s = 120;  // the store's timeout ends each job well before
  // As torchrun does: once a rank fails, the others are ended a second later
  // (a client connected to a port's foreign holder would wait for it forever).
  spec.teardown_after_failure_s = 1;
  spec.tag_output = true;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  return r;
}

std::string Output(const jobs::JobResult& r) {
  std::string out;
  for (const jobs::RankResult& rank : r.ranks)
    out += "--- rank " + std::to_string(rank.rank) + " (exit " + std::to_string(rank.exit_code) +
           ")\n" + rank.output.substr(0, 4000) + "\n";
  return out;
}

std::vector<int> Ints(const google::protobuf::Value& v) {
  std::vector<int> out;
  for (const auto& x : v.list_value().values()) out.push_back(static_cast<int>(x.number_value()));
  return out;
}

const google::protobuf::Value& Field(const jobs::FindingView& f, const std::string& key) {
  static const google::protobuf::Value kNull;
  auto it = f.raw.fields().find(key);
  return it == f.raw.fields().end() ? kNull : it->second;
}

// The root cause of the traces in `dir`: a rendezvous_failure of `cause`,
// at startup, naming `ranks`.
const jobs::FindingView* CheckRoot(const jobs::DiagnosisView& d, const std::string& cause,
                                   const std::vector<int>& ranks) {
  INFO(d.output);
  CHECK(d.exit_code == 1);
  CHECK(d.verdict == "problem");
  const jobs::FindingView* root = d.Root();
  REQUIRE(root != nullptr);
  CHECK(root->kind == "rendezvous_failure");
  CHECK(root->String("cause") == cause);
  CHECK(root->String("phase") == "startup");
  CHECK(root->ranks == ranks);
  return root;
}

// The finding's one differing setting is `name`, with `values` (each value
// and the ranks, or nodes, that hold it) in the report's order.
void CheckOneSetting(const jobs::FindingView& root, const std::string& name,
                     const std::vector<std::pair<std::string, std::vector<int>>>& values) {
  const auto& settings = Field(root, "settings").list_value().values();
  REQUIRE(settings.size() == 1);
  const auto& s = settings[0].struct_value().fields();
  CHECK(s.at("name").string_value() == name);
  const auto& got = s.at("values").list_value().values();
  REQUIRE(static_cast<size_t>(got.size()) == values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    CHECK(got[i].struct_value().fields().at("value").string_value() == values[i].first);
    CHECK(Ints(got[i].struct_value().fields().at("ranks")) == values[i].second);
  }
}

// A port this test process holds (listening, close-on-exec: the ranks do
// not inherit it), as an earlier run still alive would.
struct HeldPort {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int port = -1;
  HeldPort() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(listen(fd, 16) == 0);
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  ~HeldPort() { close(fd); }
};

// torchrun's own temporary folders (its agent's torchelastic_*), in a
// folder of the test's removed when the tests end, not left in /tmp.
std::string TorchrunTmp() {
  static const jobs::TempDir tmp;
  return "TMPDIR=" + tmp.path();
}

// `nodes` torchrun agents, each one process of the job, traced into `dir`:
// torchrun --nnodes 2 --nproc-per-node 1 --master-addr 127.0.0.1, then
// `options`, then the program. Agents are started by hand or by a per-node
// script, not as ranks: no RANK or WORLD_SIZE in their environment. Static
// rendezvous waits for ever (600 s by default): the job is ended at
// `bound_s`, as a user would, once the agents have had time to import torch
// and try.
jobs::JobSpec AgentSpec(const std::string& python, const std::string& dir, int nodes,
                        const std::vector<std::string>& options, double bound_s) {
  jobs::JobSpec spec;
  spec.nranks = nodes;
  spec.argv = {fs::path(python).parent_path().string() + "/torchrun",
               "--nnodes",
               "2",
               "--nproc-per-node",
               "1",
               "--master-addr",
               "127.0.0.1"};
  spec.argv.insert(spec.argv.end(), options.begin(), options.end());
  spec.argv.push_back(std::string(NCCLWATCH_SOURCE_DIR) +
                      "/tests/real/programs/torch_rendezvous.py");
  spec.env = {"LD_PRELOAD=" + jobs::ShimPath(),
              "NCCLWATCH_DIR=" + dir,
              "RANK",
              "WORLD_SIZE",
              "LOCAL_RANK",
              "LOCAL_WORLD_SIZE",
              "CUDA_VISIBLE_DEVICES=",
              "OMP_NUM_THREADS=1",
              TorchrunTmp()};
  spec.timeout_s = bound_s;
  return spec;
}

// `ncclwatch run --dir TRACES -- torchrun --nproc-per-node 2 --master-port
// PORT` of the rendezvous program, one node, in the launcher's environment
// with no GPU, `env` added.
jobs::JobSpec RunTorchrunSpec(const std::string& python, const std::string& traces, int port,
                              const std::vector<std::string>& env) {
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(),
               "run",
               "--dir",
               traces,
               "--",
               fs::path(python).parent_path().string() + "/torchrun",
               "--nproc-per-node",
               "2",
               "--master-port",
               std::to_string(port),
               std::string(NCCLWATCH_SOURCE_DIR) + "/tests/real/programs/torch_rendezvous.py"};
  spec.env = jobs::LauncherEnv();
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.env.push_back("CUDA_VISIBLE_DEVICES=");
  spec.env.push_back(TorchrunTmp());
  spec.timeout_s = 120;
  return spec;
}

}  // namespace

TEST_CASE("torch: MASTER_PORT differs between the ranks: settings_differ, each rank's port named",
          "[real][torch]") {
  const std::string python = TorchPython();
  if (python.empty()) return;
  jobs::TempDir dir;
  const int port = FreePort();
  int other = FreePort();
  while (other == port) other = FreePort();
  const jobs::JobResult r =
      RunRanks(python, dir.path(), 2, port, {}, {{1, {"MASTER_PORT=" + std::to_string(other)}}});
  INFO(Output(r));
  // Each rank failed: its store timed out (exit 1), or it was ended by the
  // teardown after the first one failed.
  for (const jobs::RankResult& rank : r.ranks) CHECK((rank.exit_code == 1 || rank.signal != 0));
  REQUIRE(fs::exists(dir.path()));  // traces, though NCCL was never called
  int traces = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    auto t = ncclwatch::decoder::LoadProcessTrace(e.path().string());
    REQUIRE(t.ok());
    ++traces;
    CHECK(t->traced_from == 1);  // from NCCL's load (import torch)
    CHECK(t->apis.empty());      // and no NCCL call
    CHECK(t->inventory.at_load);
    // torch/version.py's __version__, not the __all__ list that names it first.
    INFO(t->inventory.framework);
    CHECK(t->inventory.framework.rfind("pytorch 2.", 0) == 0);
    CHECK(t->inventory.framework.find(',') == std::string::npos);
    CHECK(t->inventory.Env("MASTER_PORT") != nullptr);
  }
  CHECK(traces == 2);
  const jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  const jobs::FindingView* root = CheckRoot(d, "settings_differ", {1});
  CheckOneSetting(*root, "MASTER_PORT",
                  {{std::to_string(port), {0}}, {std::to_string(other), {1}}});
  // What the disagreement did: rank 1 was refused at its port, rank 0 served alone.
  CHECK(root->String("address") == "127.0.0.1:" + std::to_string(other));
  CHECK(root->String("errno") == "ECONNREFUSED");
  CHECK(Field(*root, "attempts").number_value() >= 1);
  CHECK(Ints(Field(*root, "failed")) == std::vector<int>{1});
  CHECK(Ints(Field(*root, "server")) == std::vector<int>{0});
  CHECK(Ints(Field(*root, "waiting")) == std::vector<int>{0, 1});
  // The human report says the same.
  const jobs::DiagnosisView text = jobs::Diagnose({dir.path()}, false);
  CHECK(text.output.find("PROBLEM: rendezvous_failure (settings_differ) (rank 1)") !=
        std::string::npos);
  CHECK(text.output.find("MASTER_PORT " + std::to_string(port) + " on rank 0, " +
                         std::to_string(other) + " on rank 1") != std::string::npos);
}

TEST_CASE("torch: the master's port held by another process: port_in_use, the master named",
          "[real][torch]") {
  const std::string python = TorchPython();
  if (python.empty()) return;
  jobs::TempDir dir;
  std::optional<HeldPort> held(std::in_place);
  const int port = held->port;
  const jobs::JobResult r = RunRanks(python, dir.path(), 2, port);
  held.reset();
  INFO(Output(r));
  CHECK(r.ranks.at(0).exit_code == 1);
  CHECK(r.ranks.at(0).output.find("EADDRINUSE") != std::string::npos);  // torch's own words
  const jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  const jobs::FindingView* root = CheckRoot(d, "port_in_use", {0});
  CHECK(root->String("errno") == "EADDRINUSE");
  CHECK(root->String("address") == "127.0.0.1:" + std::to_string(port));
  CHECK(Field(*root, "attempts").number_value() >= 1);
  CHECK(Field(*root, "settings").list_value().values().empty());
}

TEST_CASE(
    "torch: a rank without the shim whose MASTER_PORT differs: its own output says why it never "
    "came",
    "[real][torch][logs]") {
  // Rank 1 ran without LD_PRELOAD (a node whose launcher dropped it) and
  // with another MASTER_PORT. Its trace is missing: the traces see only
  // that rank 1 never came. Its output, kept as a launcher keeps a job's,
  // says why; diagnose over both leads with it.
  const std::string python = TorchPython();
  if (python.empty()) return;
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/traces";
  fs::create_directories(traces);
  const int port = FreePort();
  int other = FreePort();
  while (other == port) other = FreePort();
  // Rank 0's store waits longer than rank 1's client tries, so that rank 1
  // fails (and says why) before the teardown that follows a failure.
  const jobs::JobResult r = RunRanks(python, traces, 2, port, {},
                                     {{0, {"NCCLWATCH_TEST_TIMEOUT_S=10"}},
                                      {1, {"LD_PRELOAD", "MASTER_PORT=" + std::to_string(other)}}});
  INFO(Output(r));
  const std::string out = dir.path() + "/job.out";
  {
    std::ofstream o(out);
    for (const jobs::RankResult& rank : r.ranks) {  // as a launcher tags it
      std::istringstream lines(rank.output);
      for (std::string line; std::getline(lines, line);)
        o << "[rank " << rank.rank << "] " << line << "\n";
    }
  }
  const jobs::DiagnosisView alone = jobs::Diagnose({traces});
  INFO("traces alone:\n" << alone.output);
  CheckRoot(alone, "ranks_missing", {1});
  const jobs::DiagnosisView both = jobs::Diagnose({traces, out});
  INFO("traces and output:\n" << both.output);
  REQUIRE(both.parsed);
  CHECK(both.exit_code == 1);
  const jobs::FindingView* root = both.Root();
  REQUIRE(root != nullptr);
  CHECK(root->kind == "rendezvous_failure");
  CHECK(root->ranks == std::vector<int>{1});
  // Its own words: its client found nothing at the port it was given.
  CHECK(root->String("message") == "torch.store.client_timeout");
  CHECK(root->String("address") == "127.0.0.1:" + std::to_string(other));
  bool missing_follows = false;
  for (const jobs::FindingView& f : both.findings)
    missing_follows |= f.role == "consequence" && f.kind == "rendezvous_failure" &&
                       f.String("cause") == "ranks_missing" && f.ranks == std::vector<int>{1};
  CHECK(missing_follows);
}

TEST_CASE("torch: WORLD_SIZE larger than the ranks started: ranks_missing, the one that never came",
          "[real][torch]") {
  const std::string python = TorchPython();
  if (python.empty()) return;
  jobs::TempDir dir;
  const int port = FreePort();
  const jobs::JobResult r = RunRanks(python, dir.path(), 2, port, {"WORLD_SIZE=3"});
  INFO(Output(r));
  // Each rank failed: its store timed out (exit 1), or it was ended by the
  // teardown after the first one failed.
  for (const jobs::RankResult& rank : r.ranks) CHECK((rank.exit_code == 1 || rank.signal != 0));
  const jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  const jobs::FindingView* root = CheckRoot(d, "ranks_missing", {2});
  CHECK(Field(*root, "world_size").number_value() == 3);
  CHECK(Ints(Field(*root, "started")) == std::vector<int>{0, 1});
  CHECK(Ints(Field(*root, "missing")) == std::vector<int>{2});
  CHECK(Ints(Field(*root, "waiting")) == std::vector<int>{0, 1});
  CHECK(Ints(Field(*root, "server")) == std::vector<int>{0});
  CHECK(Field(*root, "joined").number_value() == 2);  // of 3
}

TEST_CASE(
    "torch: one rank of two started, under ncclwatch run: ranks_missing, and status ENDED BADLY",
    "[real][torch]") {
  const std::string python = TorchPython();
  if (python.empty()) return;
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/traces";
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(),
               "run",
               "--dir",
               traces,
               "--",
               python,
               std::string(NCCLWATCH_SOURCE_DIR) + "/tests/real/programs/torch_rendezvous.py"};
  spec.env = jobs::LauncherEnv();
  for (const std::string& e :
       {std::string("MASTER_ADDR=127.0.0.1"), "MASTER_PORT=" + std::to_string(FreePort()),
        std::string("WORLD_SIZE=2"), std::string("RANK=0"),
        std::string("NCCLWATCH_TEST_TIMEOUT_S=3"), std::string("CUDA_VISIBLE_DEVICES="),
        std::string("OMP_NUM_THREADS=1")})
    spec.env.push_back(e);
  spec.timeout_s = 120;
  const jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  const std::string& out = r.ranks.at(0).output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 1);  // the program's own
  CHECK(out.find("no trace files") == std::string::npos);
  CHECK(out.find("HEALTHY") == std::string::npos);
  CHECK(out.find("PROBLEM: rendezvous_failure (ranks_missing) (rank 1)") != std::string::npos);
  CHECK(out.find("WORLD_SIZE is 2 and only rank 0 started: rank 1 never came") !=
        std::string::npos);
  // status: an ended job with no communicator is ENDED BADLY (it was
  // PROGRESSING, exit 0).
  const jobs::DiagnosisView status = jobs::RunNcclwatch("status", {traces}, false);
  INFO(status.output);
  CHECK(status.exit_code == 1);
  CHECK(status.output.rfind("ENDED BADLY: every process has ended", 0) == 0);
}

TEST_CASE(
    "torch: under torchrun, the agent (NCCL loaded by import torch, no rank, no call) is no "
    "rank of the job",
    "[real][torch]") {
  const std::string python = TorchPython();
  if (python.empty()) return;
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/traces";
  // The ranks' rendezvous succeeds; on this GPU-less machine each then fails
  // in torch ("nccl2 requires at least one CUDA device"), before NCCL.
  const jobs::JobSpec spec =
      RunTorchrunSpec(python, traces, FreePort(), {"NCCLWATCH_TEST_TIMEOUT_S=3"});
  const jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  const std::string& out = r.ranks.at(0).output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 1);
  CHECK(out.find("nccl2 requires at least one CUDA device") != std::string::npos);
  const jobs::DiagnosisView d = jobs::Diagnose({traces});
  INFO(d.output);
  // Three traces (the agent's too), one job with a problem: the ranks'.
  CHECK(d.exit_code == 1);
  int roots = 0;
  for (const jobs::FindingView& f : d.findings) {
    roots += f.role == "root_cause";
    for (int rank : f.ranks) CHECK((rank == 0 || rank == 1));
  }
  CHECK(roots == 1);
  const jobs::FindingView* root = d.Root();
  REQUIRE(root != nullptr);
  CHECK(root->kind == "rank_exit_error");
  // The rank that exited first (both fail at once): a rank, never the agent.
  REQUIRE(root->ranks.size() == 1);
  CHECK((root->ranks[0] == 0 || root->ranks[0] == 1));
}

// Two nodes' torchrun agents started with different master ports (here
// from torchrun's PET_ variables, as a per-node launcher script exports
// them): the agents never meet and start no worker, so the agents' traces
// (torch imported, NCCL loaded, no call) are all there is. They are one job,
// named by node, never as ranks; the node that tried the wrong port is the
// failed one.
TEST_CASE(
    "torch: torchrun agents on two nodes with different master ports: settings_differ, "
    "each node's port named",
    "[real][torch]") {
  const std::string python = TorchPython();
  if (python.empty()) return;
  jobs::TempDir dir;
  const int port0 = FreePort();
  int port1 = FreePort();
  while (port1 == port0) port1 = FreePort();
  jobs::JobSpec spec = AgentSpec(python, dir.path(), 2, {}, 25);
  spec.ranks[0].env = {"PET_NODE_RANK=0", "PET_MASTER_PORT=" + std::to_string(port0)};
  spec.ranks[1].env = {"PET_NODE_RANK=1", "PET_MASTER_PORT=" + std::to_string(port1)};
  const jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  INFO(Output(r));
  const jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  const jobs::FindingView* root = CheckRoot(d, "settings_differ", {});
  CHECK(Field(*root, "agents").bool_value());
  CHECK(root->String("backend") == "static");
  CheckOneSetting(*root, "--master-port",
                  {{std::to_string(port0), {0}}, {std::to_string(port1), {1}}});
  CHECK(Ints(Field(*root, "failed")) == std::vector<int>{1});
  CHECK(Field(*root, "attempts").number_value() >= 1);
  CHECK(root->detail.find("the agent of node 1 tried 127.0.0.1:" + std::to_string(port1)) !=
        std::string::npos);
}

// The same port held, under `ncclwatch run -- torchrun`: torchrun's agent
// cannot open its store (static rendezvous on the master port) and starts
// no worker; its trace is the job's, named by node.
TEST_CASE(
    "torch: under ncclwatch run and torchrun, the master's port held: port_in_use, the "
    "agent of node 0",
    "[real][torch]") {
  const std::string python = TorchPython();
  if (python.empty()) return;
  jobs::TempDir dir;
  const std::string traces = dir.path() + "/traces";
  std::optional<HeldPort> held(std::in_place);
  const int port = held->port;
  const jobs::JobSpec spec = RunTorchrunSpec(python, traces, port, {"OMP_NUM_THREADS=1"});
  const jobs::JobResult r = jobs::RunJob(spec);
  held.reset();
  REQUIRE(r.error.empty());
  const std::string& out = r.ranks.at(0).output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 1);
  CHECK(out.find("PROBLEM: rendezvous_failure (port_in_use)") != std::string::npos);
  CHECK(out.find("the agent of node 0 bound 127.0.0.1:" + std::to_string(port)) !=
        std::string::npos);
  const jobs::DiagnosisView d = jobs::Diagnose({traces});
  const jobs::FindingView* root = CheckRoot(d, "port_in_use", {});
  CHECK(Field(*root, "agents").bool_value());
  CHECK(root->String("errno") == "EADDRINUSE");
  CHECK(root->String("address") == "127.0.0.1:" + std::to_string(port));
}

// torchrun with --nnodes 2 started on one node only: its agent waits for the
// other node's (static rendezvous, for as long as its timeout) and starts no
// worker; ended by the user, its trace names the node that never came.
TEST_CASE("torch: torchrun agents, one node of two never started: ranks_missing, node 1 named",
          "[real][torch]") {
  const std::string python = TorchPython();
  if (python.empty()) return;
  jobs::TempDir dir;
  const jobs::JobSpec spec = AgentSpec(
      python, dir.path(), 1, {"--node-rank", "0", "--master-port", std::to_string(FreePort())}, 20);
  const jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  INFO(Output(r));
  const jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  const jobs::FindingView* root = CheckRoot(d, "ranks_missing", {});
  CHECK(Field(*root, "agents").bool_value());
  CHECK(Field(*root, "world_size").number_value() == 2);
  CHECK(Ints(Field(*root, "started")) == std::vector<int>{0});
  CHECK(Ints(Field(*root, "missing")) == std::vector<int>{1});
  CHECK(Ints(Field(*root, "waiting")) == std::vector<int>{0});
  CHECK(root->detail.find("--nnodes is 2 and only the agent of node 0 started: the agent of node 1 "
                          "never came") == 0);
}

// libncclwatch.so in front of real NCCL releases, linked and reached through
// dlopen + dlsym: it loads; every entry point the release exports still
// reaches it (those the shim wraps through the shim, the rest straight to
// NCCL, and which are which is pinned here); ncclGetVersion and
// ncclGetUniqueId answer as without the shim and are recorded; and the two
// failures real NCCL reaches on a machine without a GPU, ncclCommInitRank
// without a driver and an NCCL_SOCKET_IFNAME that matches nothing, are
// diagnosed. The releases come from scripts/fetch-nccl.sh (see
// CMakeLists.txt); when it cannot fetch them, each test says so on a line
// starting "NCCLWATCH-SKIP:", which ctest reports as skipped.

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/process_trace.h"
#include "report/names.h"
#include "support/traced_job.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::decoder::LoadProcessTrace;
using ncclwatch::decoder::ProcessTrace;

struct Release {
  std::string version;  // "2.21.5"
  std::string dir;      // holds libnccl.so.2
  int code = 0;         // what ncclGetVersion reports: 22105
};

struct Releases {
  std::vector<Release> list;
  std::string unavailable;  // why there are none
};

std::string Shell(const std::string& command, int* status = nullptr) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int s = pclose(p);
  if (status != nullptr) *status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  return out;
}

Releases Parse(const std::string& lines) {
  Releases r;
  std::istringstream in(lines);
  std::string version, path;
  while (in >> version >> path) {
    Release x;
    x.version = version;
    x.dir = fs::path(path).parent_path().string();
    int a = 0, b = 0, c = 0;
    if (std::sscanf(version.c_str(), "%d.%d.%d", &a, &b, &c) == 3) x.code = a * 10000 + b * 100 + c;
    r.list.push_back(x);
  }
  return r;
}

const Releases& GetReleases() {
  static const Releases releases = [] {
    if (const char* skip = std::getenv("NCCLWATCH_REAL_NCCL_SKIP"))
      return Releases{{}, std::string("NCCLWATCH_REAL_NCCL_SKIP: ") + skip};
    if (const char* given = std::getenv("NCCLWATCH_REAL_NCCL")) return Parse(given);
    const char* which = std::getenv("NCCLWATCH_REAL_NCCL_RELEASES");
    jobs::TempDir tmp;
    int status = 0;
    const std::string out =
        Shell(std::string(NCCLWATCH_SOURCE_DIR) + "/scripts/fetch-nccl.sh " +
                  (which && *which ? which : "--ci") + " 2>" + tmp.path() + "/err",
              &status);
    Releases r = Parse(out);
    if (status != 0 || r.list.empty()) {
      r.list.clear();
      r.unavailable = "scripts/fetch-nccl.sh failed: " + Shell("cat " + tmp.path() + "/err");
    }
    return r;
  }();
  return releases;
}

// The releases to test, or none after the skip line.
const std::vector<Release>& Each() {
  const Releases& r = GetReleases();
  if (r.list.empty()) {
    std::cout << "NCCLWATCH-SKIP: real NCCL releases unavailable (" << r.unavailable
              << "); their tests did not run\n";
  }
  return r.list;
}

std::vector<std::string> Env(const Release& r, const std::string& dir,
                             const std::vector<std::string>& more = {}) {
  std::vector<std::string> env = {"LD_LIBRARY_PATH=" + r.dir};
  if (!dir.empty()) {
    env.push_back("LD_PRELOAD=" + jobs::ShimPath());
    env.push_back("NCCLWATCH_DIR=" + dir);
  }
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

jobs::RankResult Run(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  jobs::JobSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.timeout_s = 120;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  return r.ranks.at(0);
}

ProcessTrace OnlyTrace(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  REQUIRE(files.size() == 1);
  auto t = LoadProcessTrace(files[0]);
  REQUIRE(t.ok());
  return *t;
}

std::set<std::string> Exported(const std::string& library) {
  std::set<std::string> names;
  std::istringstream in(Shell("nm -D --defined-only '" + library + "' | awk '{print $3}'"));
  std::string name;
  while (in >> name)
    if (name.rfind("nccl", 0) == 0 || name.rfind("pnccl", 0) == 0) names.insert(name);
  return names;
}

// Entry points of these releases the shim does not wrap (nccl.h 2.28 has
// them not, or they are NCCL's internals): calls go straight to NCCL, and
// are not recorded. A release that exports one not listed here fails the
// test, so that a new entry point is looked at.
const std::set<std::string> kNotWrapped = {
    // 2.28: the device API's host side, and an internal
    "ncclDevCommCreate", "ncclDevCommDestroy", "ncclGinBarrierCreateRequirement",
    "ncclLLA2ACalcSlots", "ncclLLA2ACreateRequirement", "ncclLsaBarrierCreateRequirement",
    "ncclTeamLsa", "ncclTeamRail", "ncclTeamRankToLsa", "ncclTeamRankToWorld", "ncclTeamWorld",
    "ncclResetDebugInitInternal",
    // 2.32: collectives with a config, communicator growth, suspend and
    // resume, one-sided signals, parameters, the device API's additions
    "ncclAllGatherConfig", "ncclAllReduceConfig", "ncclAlltoAllConfig", "ncclBroadcastConfig",
    "ncclGatherConfig", "ncclReduceConfig", "ncclReduceScatterConfig", "ncclScatterConfig",
    "ncclCommGetUniqueId", "ncclCommGrow", "ncclCommMemStats", "ncclCommQueryProperties",
    "ncclCommResume", "ncclCommSuspend", "ncclGetCftDeviceLeInfo", "ncclGetLsaDevicePointer",
    "ncclGetLsaMultimemDevicePointer", "ncclGetMultimemDeviceLeInfo",
    "ncclGetMultimemDevicePointer", "ncclGetPeerDeviceLeInfo", "ncclGetPeerDevicePointer",
    "ncclGinInboxA2ACreateRequirement", "ncclGinOutboxCreateRequirement", "ncclParamBind",
    "ncclParamDumpAll", "ncclParamGet", "ncclParamGetAllParameterKeys", "ncclParamGetI16",
    "ncclParamGetI32", "ncclParamGetI64", "ncclParamGetI8", "ncclParamGetParameter",
    "ncclParamGetStr", "ncclParamGetU16", "ncclParamGetU32", "ncclParamGetU64", "ncclParamGetU8",
    "ncclPutSignal", "ncclSetEncryption", "ncclSignal", "ncclTeamCft", "ncclTeamCftMultimem",
    "ncclWaitSignal", "ncclWinGetUserPtr"};

std::string Unprefixed(const std::string& name) {
  return name.rfind("pnccl", 0) == 0 ? name.substr(1) : name;
}

}  // namespace

TEST_CASE("every entry point a release exports reaches it under the shim, and which are wrapped",
          "[real]") {
  const std::set<std::string> shim = Exported(jobs::ShimPath());
  REQUIRE(shim.count("ncclAllReduce") == 1);
  for (const Release& r : Each()) {
    INFO("NCCL " << r.version);
    const std::set<std::string> exported = Exported(r.dir + "/libnccl.so.2");
    REQUIRE(exported.count("ncclAllReduce") == 1);
    std::vector<std::string> argv = {jobs::BinDir() + "/dlsym_probe", "symbols"};
    for (const std::string& name : exported) {
      argv.push_back(name);
      if (shim.count(name) == 0) {
        INFO(name << " is exported by the release and not wrapped by the shim");
        CHECK(kNotWrapped.count(Unprefixed(name)) == 1);
      }
    }
    jobs::TempDir dir;
    const jobs::RankResult plain = Run(argv, Env(r, ""));
    const jobs::RankResult traced = Run(argv, Env(r, dir.path()));
    INFO(traced.output);
    CHECK(traced.exit_code == 0);
    CHECK(traced.output == plain.output);
    for (const std::string& name : exported) {
      CHECK(traced.output.find(name + " handle=1 default=1\n") != std::string::npos);
    }
    // Looking names up is no NCCL call: the process is traced from NCCL's
    // load (its trace says so), and the trace holds no NCCL call.
    const ProcessTrace t = OnlyTrace(dir.path());
    CHECK(t.traced_from == 1);
    CHECK(t.apis.empty());
    CHECK(t.comms.empty());
    CHECK(t.collectives.empty());
  }
}

TEST_CASE("ncclGetVersion and ncclGetUniqueId: the same answers, recorded, linked and dlsym'd",
          "[real]") {
  for (const Release& r : Each()) {
    INFO("NCCL " << r.version);
    for (const std::vector<std::string>& program :
         {std::vector<std::string>{jobs::BinDir() + "/uniqueid_probe"},
          std::vector<std::string>{jobs::BinDir() + "/dlsym_probe", "local"}}) {
      INFO(program.back());
      jobs::TempDir dir;
      const jobs::RankResult plain = Run(program, Env(r, ""));
      const jobs::RankResult traced = Run(program, Env(r, dir.path()));
      INFO("without:\n" << plain.output << "with:\n" << traced.output);
      CHECK(traced.exit_code == 0);
      CHECK(traced.output == plain.output);
      const bool got_id = traced.output.find("result 0 no error") != std::string::npos ||
                          traced.output.find("ncclGetUniqueId -> 0") != std::string::npos;
      CHECK(got_id);
      const ProcessTrace t = OnlyTrace(dir.path());
      bool unique_id = false;
      for (const auto& a : t.apis)
        if (ncclwatch::decoder::CallName(a.call) == "ncclGetUniqueId" && a.result == 0)
          unique_id = true;
      CHECK(unique_id);
      CHECK(t.not_seen.empty());
      CHECK(t.Loaded("libnccl.so.2"));
      if (program.back() == "local") CHECK(t.nccl_version == r.code);
    }
  }
}

TEST_CASE("ncclCommInitRank without a GPU driver: diagnosed, linked and dlsym'd", "[real]") {
  for (const Release& r : Each()) {
    INFO("NCCL " << r.version);
    for (const std::vector<std::string>& program :
         {std::vector<std::string>{jobs::BinDir() + "/uniqueid_probe", "init"},
          std::vector<std::string>{jobs::BinDir() + "/dlsym_probe", "init"}}) {
      INFO(program.front());
      jobs::TempDir dir;
      const jobs::RankResult traced = Run(program, Env(r, dir.path()));
      INFO(traced.output);
      REQUIRE(traced.output.find("init result 1") != std::string::npos);
      jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
      INFO(d.output);
      CHECK(d.exit_code == 1);
      const jobs::FindingView* root = d.Root();
      REQUIRE(root != nullptr);
      CHECK(root->kind == "init_failure");
      // "insufficient" in the runtime's words, but the inventory saw no
      // driver at all: no CUDA driver, not version skew (issue 20).
      CHECK(root->String("subsystem") == "cuda");
      CHECK(root->detail.find("no CUDA driver is loaded in the process") != std::string::npos);
      CHECK(root->detail.find("CUDA driver version is insufficient for CUDA runtime version") !=
            std::string::npos);
    }
  }
}

TEST_CASE("an NCCL_SOCKET_IFNAME that matches nothing: network named, linked and dlsym'd",
          "[real]") {
  for (const Release& r : Each()) {
    INFO("NCCL " << r.version);
    for (const std::vector<std::string>& program :
         {std::vector<std::string>{jobs::BinDir() + "/uniqueid_probe"},
          std::vector<std::string>{jobs::BinDir() + "/dlsym_probe", "init"}}) {
      INFO(program.front());
      jobs::TempDir dir;
      const jobs::RankResult traced =
          Run(program, Env(r, dir.path(), {"NCCL_SOCKET_IFNAME=nosuchif"}));
      INFO(traced.output);
      REQUIRE(traced.output.find("no socket interface found") != std::string::npos);
      jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
      INFO(d.output);
      CHECK(d.exit_code == 1);
      const jobs::FindingView* root = d.Root();
      REQUIRE(root != nullptr);
      CHECK(root->kind == "init_failure");
      CHECK(root->String("subsystem") == "network");
      CHECK(root->String("socket_ifname") == "nosuchif");
      CHECK(root->detail.find("NCCL_SOCKET_IFNAME=nosuchif matches no usable interface") !=
            std::string::npos);
    }
  }
}

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
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/process_trace.h"
#include "ncclwatch/trace_fields.h"
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

// The pure helpers: the entry points the shim does not intercept, on
// purpose (shim/resolve/nccl_functions.inc says why): each computes or reads
// without touching a communicator's traffic. Named one by one, so that a new
// function of any family (a ncclTeam* that communicates, say) fails the
// tests below until it is looked at.
const std::set<std::string> kPureHelpers = {
    // 2.30: NCCL's parameters, read from the environment and its defaults.
    "ncclParamBind", "ncclParamDumpAll", "ncclParamGet", "ncclParamGetAllParameterKeys",
    "ncclParamGetI8", "ncclParamGetI16", "ncclParamGetI32", "ncclParamGetI64", "ncclParamGetU8",
    "ncclParamGetU16", "ncclParamGetU32", "ncclParamGetU64", "ncclParamGetParameter",
    "ncclParamGetStr",
    // The device API's teams (2.28): arithmetic on a communicator's ranks.
    "ncclTeamWorld", "ncclTeamLsa", "ncclTeamRail", "ncclTeamCft", "ncclTeamCftMultimem",
    "ncclTeamRankToWorld", "ncclTeamRankToLsa",
    // The device API's requirement builders and sizes (2.28): fill in a
    // struct that ncclDevCommCreate, which is wrapped, then reads.
    "ncclLsaBarrierCreateRequirement", "ncclGinBarrierCreateRequirement",
    "ncclLLA2ACreateRequirement", "ncclLLA2ACalcSlots", "ncclGinOutboxCreateRequirement",
    "ncclCftBarrierCreateRequirement",  // 2.31: declared, not exported by 2.31-2.32
    "ncclGinInboxA2ACreateRequirement",
    // The device API's launch-info queries (2.29): what a kernel needs to know.
    "ncclGetPeerDeviceLeInfo", "ncclGetMultimemDeviceLeInfo", "ncclGetCftDeviceLeInfo",
    // NCCL's own (ncclResetDebugInit's body), exported, in no header.
    "ncclResetDebugInitInternal"};

bool PureHelper(const std::string& name) { return kPureHelpers.count(name) == 1; }

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
        CHECK(PureHelper(Unprefixed(name)));
      }
    }
    // And what the shim wraps that this release lacks: absent to the
    // program under the shim as without it (compared below).
    for (const std::string& name : shim)
      if (exported.count(name) == 0) argv.push_back(name);
    jobs::TempDir dir;
    const jobs::RankResult plain = Run(argv, Env(r, ""));
    const jobs::RankResult traced = Run(argv, Env(r, dir.path()));
    INFO(traced.output);
    CHECK(traced.exit_code == 0);
    CHECK(traced.output == plain.output);
    for (const std::string& name : exported) {
      CHECK(traced.output.find(name + " handle=1 default=1\n") != std::string::npos);
    }
    for (const std::string& name : shim) {
      if (exported.count(name) == 0)
        CHECK(traced.output.find(name + " handle=0 default=0\n") != std::string::npos);
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

TEST_CASE("an entry point a release lacks stays absent to weak references under the shim",
          "[real][absent]") {
  for (const Release& r : Each()) {
    INFO("NCCL " << r.version);
    const std::set<std::string> exported = Exported(r.dir + "/libnccl.so.2");
    jobs::TempDir dir;
    const std::vector<std::string> argv = {jobs::BinDir() + "/absent_probe"};
    const jobs::RankResult plain = Run(argv, Env(r, ""));
    const jobs::RankResult traced = Run(argv, Env(r, dir.path()));
    INFO("without:\n" << plain.output << "with:\n" << traced.output);
    CHECK(plain.exit_code == 0);
    CHECK(traced.exit_code == 0);
    CHECK(traced.output == plain.output);
    // Each line: NAME weak=W default=D handle=H: what the release has.
    std::istringstream in(plain.output);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
      const size_t sp = line.find(' ');
      if (sp == std::string::npos || line.find(" weak=") == std::string::npos) continue;
      const std::string name = line.substr(0, sp);
      INFO(line);
      CHECK((line.find(" weak=1 ") != std::string::npos) == (exported.count(name) == 1));
      ++lines;
    }
    CHECK(lines > 40);
    CHECK(plain.output.find("ncclGetVersion -> 0 " + std::to_string(r.code)) != std::string::npos);
  }
}

namespace {

// The public host functions a release's headers declare: nccl.h's
// declarations, and the device API's host functions (NCCL_EXTERN_C in
// nccl_device/), with their pnccl aliases (nccl.h declares both). The text is read with
// comments removed and every preprocessor branch in (NCCL_OS_LINUX's).
std::set<std::string> DeclaredFunctions(const std::string& include_dir) {
  std::set<std::string> names;
  std::vector<std::string> files = {include_dir + "/nccl.h"};
  if (fs::exists(include_dir + "/nccl_device")) {
    for (const auto& e : fs::recursive_directory_iterator(include_dir + "/nccl_device"))
      if (e.is_regular_file() && e.path().extension() == ".h") files.push_back(e.path().string());
  }
  for (const std::string& file : files) {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Comments out, whitespace runs to one space, preprocessor lines out.
    std::string flat;
    bool line_start = true;  // only blanks since the last newline
    for (size_t i = 0; i < text.size(); ++i) {
      const bool at_line_start = line_start;
      line_start = text[i] == '\n' || (line_start && (text[i] == ' ' || text[i] == '\t'));
      if (text.compare(i, 2, "/*") == 0) {
        const size_t e = text.find("*/", i + 2);
        i = e == std::string::npos ? text.size() : e + 1;
        flat += ' ';
      } else if (text.compare(i, 2, "//") == 0) {
        while (i < text.size() && text[i] != '\n') ++i;
        flat += ' ';
      } else if (text[i] == '#' && at_line_start) {
        // A directive, with its continuation lines.
        while (i < text.size() && !(text[i] == '\n' && text[i - 1] != '\\')) ++i;
        line_start = true;
        flat += ' ';
      } else {
        const char c = std::isspace(static_cast<unsigned char>(text[i])) ? ' ' : text[i];
        if (!(c == ' ' && !flat.empty() && flat.back() == ' ')) flat += c;
      }
    }
    const bool device = file.find("/nccl_device/") != std::string::npos;
    // Statement by statement (cut at ';', '{' and '}'): nccl.h's are
    // "<type> [*]name(...)"; the device headers' host functions
    // "NCCL_EXTERN_C [__host__] <type> name(...)" (device functions are
    // inline, never NCCL_EXTERN_C).
    static const std::regex kHost(
        R"(^ *(?:__attribute__ *\(\(.*\)\) )?(?:const )?[A-Za-z_][A-Za-z0-9_]*(?: *\*)? *(nccl[A-Z][A-Za-z0-9_]*) *\(.*\) *$)");
    static const std::regex kDevice(
        R"(^ *NCCL_EXTERN_C (?:__host__ )?(?:const )?[A-Za-z_][A-Za-z0-9_]*(?: *\*)? *(nccl[A-Z][A-Za-z0-9_]*) *\(.*\) *$)");
    const std::regex& re = device ? kDevice : kHost;
    size_t from = 0;
    for (size_t i = 0; i <= flat.size(); ++i) {
      if (i < flat.size() && flat[i] != ';' && flat[i] != '{' && flat[i] != '}') continue;
      const std::string statement = flat.substr(from, i - from);
      from = i + 1;
      std::smatch m;
      if (std::regex_match(statement, m, re)) names.insert(m[1].str());
    }
  }
  return names;
}

// The releases the drift check reads: the matrix under test, and the three
// the issue names (2.21, the last before the device API; 2.28, the one the
// project started from; 2.32, the newest), fetched when they can be.
std::vector<Release> DriftReleases() {
  std::vector<Release> out = Each();
  if (std::getenv("NCCLWATCH_REAL_NCCL_SKIP") != nullptr) return out;
  int status = 0;
  const Releases more = Parse(Shell(
      std::string(NCCLWATCH_SOURCE_DIR) + "/scripts/fetch-nccl.sh 2.21.5 2.28.9 2.32.3 2>/dev/null",
      &status));
  for (const Release& m : more.list) {
    bool have = false;
    for (const Release& r : out) have |= r.version == m.version;
    if (!have) out.push_back(m);
  }
  return out;
}

}  // namespace

// The drift check's reader, on a header written here: it must find every
// host function however it is laid out, and none of what is not one, or the
// check below could pass by reading nothing.
TEST_CASE("the drift check finds each public function of a header, and only those",
          "[real][drift]") {
  jobs::TempDir dir;
  fs::create_directories(dir.path() + "/nccl_device");
  std::ofstream(dir.path() + "/nccl.h") << R"(#ifndef NCCL_H_
#define NCCL_H_
/* ncclInComment(int x); */
// ncclInLineComment(int x);
#define NCCL_MACRO(x) ncclInMacro(x)
typedef struct { int size; } ncclSomething_t;
ncclResult_t  ncclFutureCall(ncclComm_t comm,
    int multi, /* a comment inside */ size_t line);
ncclResult_t pncclFutureCall(ncclComm_t comm, int multi, size_t line);
const char*  ncclFutureName(ncclResult_t result);
#if defined(NCCL_OS_LINUX)
void ncclFutureLinuxOnly(void);
#endif
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
#endif
)";
  std::ofstream(dir.path() + "/nccl_device/core.h") << R"(
NCCL_EXTERN_C __host__ ncclResult_t ncclFutureDevHost(ncclComm_t comm, int* out);
NCCL_DEVICE_INLINE int ncclFutureDeviceOnly(ncclDevComm const& comm) { return comm.rank; }
)";
  const std::set<std::string> declared = DeclaredFunctions(dir.path());
  CHECK(declared == std::set<std::string>{"ncclFutureCall", "ncclFutureName", "ncclFutureLinuxOnly",
                                          "ncclAllReduce", "ncclFutureDevHost"});
  // And the new ones are what the check below would fail on.
  const std::set<std::string> shim = Exported(jobs::ShimPath());
  CHECK(shim.count("ncclAllReduce") == 1);
  for (const char* name : {"ncclFutureCall", "ncclFutureName", "ncclFutureDevHost"}) {
    INFO(name);
    CHECK(shim.count(name) == 0);
    CHECK_FALSE(PureHelper(name));
  }
}

// The check that cannot drift: a public function of a release's headers that
// the shim neither wraps nor lists as a pure helper fails here, the day that
// release is fetched.
TEST_CASE("every public host function of each release's headers is wrapped or a pure helper",
          "[real][drift]") {
  const std::set<std::string> shim = Exported(jobs::ShimPath());
  const std::vector<Release> releases = DriftReleases();
  for (const Release& r : releases) {
    INFO("NCCL " << r.version << " headers in " << r.dir << "/include");
    if (!fs::exists(r.dir + "/include/nccl.h")) {
      FAIL(
          "no include/nccl.h beside the library: fetched by an older scripts/fetch-nccl.sh; "
          "remove "
          << r.dir << " and fetch it again");
    }
    const std::set<std::string> declared = DeclaredFunctions(r.dir + "/include");
    CHECK(declared.count("ncclAllReduce") == 1);
    CHECK(declared.count("ncclCommInitRank") == 1);
    for (const std::string& name : declared) {
      INFO(name << ": declared by the release, neither wrapped by the shim nor a pure helper");
      CHECK((shim.count(name) == 1 || PureHelper(Unprefixed(name))));
    }
    std::cout << "NCCL " << r.version << ": " << declared.size()
              << " public host functions, every one wrapped or a pure helper\n";
  }
  const std::set<std::string> wanted = {"2.21.5", "2.28.9", "2.32.3"};
  size_t seen = 0;
  for (const Release& r : releases) seen += wanted.count(r.version);
  if (seen < wanted.size() && !releases.empty())
    std::cout << "note: only " << seen << " of 2.21.5, 2.28.9 and 2.32.3 could be fetched\n";
}

// Real PyTorch 2.15 (its wheel and nvidia-nccl-cu13 2.30.7 in a virtual
// environment, $NCCLWATCH_TORCH_VENV, by default ~/.cache/ncclwatch/
// torch-2.15.0, as the rendezvous tests keep it): every NCCL entry point its
// libtorch_cuda.so imports is one the shim wraps (13 of them are 2.29's and
// later: Grow, Suspend/Resume, PutSignal, Signal, WaitSignal, DevComm, ...),
// and under the shim it answers as without it, its NCCL calls recorded.
TEST_CASE("real PyTorch 2.15: every NCCL entry point it imports is wrapped, its calls recorded",
          "[real][torch]") {
  const char* given = std::getenv("NCCLWATCH_TORCH_VENV");
  const char* home = std::getenv("HOME");
  const std::string venv =
      given != nullptr && *given != '\0'
          ? given
          : std::string(home != nullptr ? home : "") + "/.cache/ncclwatch/torch-2.15.0";
  const std::string site = venv + "/lib/python3.11/site-packages";
  const std::string libtorch = site + "/torch/lib/libtorch_cuda.so";
  if (!fs::exists(venv + "/bin/python") || !fs::exists(libtorch)) {
    std::cout << "NCCLWATCH-SKIP: no PyTorch 2.15 virtual environment at " << venv
              << " (NCCLWATCH_TORCH_VENV); its test did not run\n";
    return;
  }
  const std::set<std::string> shim = Exported(jobs::ShimPath());
  std::istringstream in(
      Shell("nm -D --undefined-only '" + libtorch + "' | awk '{print $2}' | grep '^nccl'"));
  std::set<std::string> imported;
  for (std::string name; in >> name;) imported.insert(name);
  INFO(imported.size() << " NCCL entry points imported");
  CHECK(imported.size() >= 40);
  for (const char* recent :
       {"ncclCommGrow", "ncclCommSuspend", "ncclPutSignal", "ncclWaitSignal", "ncclDevCommCreate"})
    CHECK(imported.count(recent) == 1);
  for (const std::string& name : imported) {
    INFO(name << ": imported by libtorch_cuda.so, not wrapped by the shim");
    CHECK(shim.count(name) == 1);
  }
  const std::vector<std::string> argv = {venv + "/bin/python", "-c",
                                         "import torch.cuda.nccl as n\n"
                                         "print('version', n.version())\n"
                                         "print('unique id bytes', len(n.unique_id()))\n"};
  jobs::TempDir dir;
  const jobs::RankResult plain = Run(argv, {});
  const jobs::RankResult traced =
      Run(argv, {"LD_PRELOAD=" + jobs::ShimPath(), "NCCLWATCH_DIR=" + dir.path()});
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  REQUIRE(plain.exit_code == 0);
  CHECK(traced.exit_code == 0);
  CHECK(traced.output == plain.output);
  CHECK(plain.output.find("unique id bytes 128\n") != std::string::npos);
  const ProcessTrace t = OnlyTrace(dir.path());
  bool unique_id = false;
  for (const auto& a : t.apis)
    unique_id |= a.call == ncclwatch::fields::kGetUniqueId && a.result == 0 && a.value != 0;
  CHECK(unique_id);
  CHECK(t.inventory.nccl_version == 23007);
}

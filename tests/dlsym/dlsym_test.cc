// NCCL that a program reaches without the dynamic linker's global lookup,
// under libncclwatch.so: through dlopen + dlsym (XLA's and TensorFlow's
// loaders, vLLM's pynccl through ctypes) it is seen, and an 8-rank job that
// hangs on a mismatched collective is diagnosed exactly; a library in front
// of NCCL that forwards with dlsym(RTLD_NEXT) still gets NCCL (the shim asks
// as that library); copies of NCCL side by side are kept apart. What cannot
// be seen (NCCL linked into the program, RTLD_DEEPBIND, more copies than the
// shim's slots) is said, and `diagnose` notes it.

#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "model/process_trace.h"
#include "report/names.h"
#include "support/sim_release.h"
#include "support/traced_job.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::decoder::LoadProcessTrace;
using ncclwatch::decoder::ProcessTrace;

std::vector<std::string> Plain() { return {"LD_LIBRARY_PATH=" + jobs::SimLibDir()}; }

std::vector<std::string> Traced(const std::string& dir) {
  return {"LD_LIBRARY_PATH=" + jobs::SimLibDir(), "LD_PRELOAD=" + jobs::ShimPath(),
          "NCCLWATCH_DIR=" + dir};
}

jobs::RankResult Run(const std::string& program, const std::vector<std::string>& args,
                     const std::vector<std::string>& env) {
  jobs::JobSpec spec;
  spec.argv = {program[0] == '/' ? program : jobs::BinDir() + "/" + program};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = env;
  spec.timeout_s = 60;
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

std::multiset<std::string> ApiCalls(const ProcessTrace& t) {
  std::multiset<std::string> out;
  for (const auto& a : t.apis) out.insert(ncclwatch::decoder::CallName(a.call));
  return out;
}

// Runs `program args` without and with the shim: the same output, exit 0.
jobs::RankResult Compare(const std::string& program, const std::vector<std::string>& args,
                         const std::string& dir) {
  const jobs::RankResult plain = Run(program, args, Plain());
  const jobs::RankResult traced = Run(program, args, Traced(dir));
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(plain.exit_code == 0);
  CHECK(traced.exit_code == 0);
  CHECK(traced.output == plain.output);
  return traced;
}

// The nccl_not_visible note of a diagnosis: its single entry's reason and path.
void CheckNotVisible(const std::string& dir, const std::string& reason, const std::string& path) {
  jobs::DiagnosisView d = jobs::Diagnose({dir});
  INFO(d.output);
  REQUIRE(d.parsed);
  CHECK(d.verdict == "healthy");
  const jobs::FindingView* f = d.First("nccl_not_visible");
  REQUIRE(f != nullptr);
  CHECK(f->role == "note");
  const auto& items = f->raw.fields().at("not_visible").list_value().values();
  REQUIRE(items.size() >= 1);
  bool found = false;
  for (const auto& item : items) {
    const auto& m = item.struct_value().fields();
    if (m.at("reason").string_value() == reason &&
        m.at("path").string_value().find(path) != std::string::npos)
      found = true;
  }
  CHECK(found);
  const jobs::DiagnosisView human = jobs::Diagnose({dir}, false);
  CHECK(human.output.rfind("HEALTHY, 1 note", 0) == 0);
  CHECK(human.output.find("could not see into") != std::string::npos);
}

struct Job {
  jobs::TempDir dir;
  jobs::JobResult result;
  jobs::DiagnosisView diagnosis;
};

void RunLoop(Job* j, const std::vector<std::string>& args, int nranks, double bound) {
  jobs::JobSpec spec = jobs::TracedJobSpec(nranks, "dlsym_loop", args, j->dir.path());
  spec.timeout_s = bound;
  j->result = jobs::RunJob(spec);
  REQUIRE(j->result.error.empty());
  j->diagnosis = jobs::Diagnose({j->dir.path()});
  INFO(j->diagnosis.output);
  REQUIRE(j->diagnosis.parsed);
}

void CheckMismatch(const Job& j) {
  INFO(j.diagnosis.output);
  CHECK(j.diagnosis.exit_code == 1);
  const jobs::FindingView* root = j.diagnosis.Root();
  REQUIRE(root != nullptr);
  CHECK(root->kind == "collective_mismatch");
  CHECK(root->comm == jobs::CommId(j.dir.path(), 0, "ncclCommInitRank"));
  CHECK(root->seq == 3);
  CHECK(root->ranks == std::vector<int>{5});
  CHECK(root->field == "op");
  CHECK(
      root->detail.find("rank 5 called Broadcast(count=4096, float32, root=0) as collective #3") !=
      std::string::npos);
  CHECK(root->detail.find("where ranks 0-4,6-7 called AllReduce(count=4096, float32, avg)") !=
        std::string::npos);
  CHECK(j.diagnosis.First("nccl_not_visible") == nullptr);
}

}  // namespace

TEST_CASE("an 8-rank job that gets NCCL with dlopen + dlsym: the mismatch diagnosed exactly",
          "[dlsym][job]") {
  Job j;
  RunLoop(&j, {"--load", "global", "--steps", "8", "--bug", "op:5:3"}, 8, 6);
  CheckMismatch(j);
}

TEST_CASE("the same through ctypes-style RTLD_LOCAL loading", "[dlsym][job]") {
  Job j;
  RunLoop(&j, {"--load", "local", "--steps", "8", "--bug", "op:5:3"}, 8, 6);
  CheckMismatch(j);
}

TEST_CASE("dlsym(RTLD_DEFAULT) and dlvsym lookups: healthy, every call recorded", "[dlsym][job]") {
  for (const std::string lookup : {"default", "dlvsym"}) {
    INFO(lookup);
    Job j;
    RunLoop(&j, {"--load", "global", "--lookup", lookup, "--steps", "5"}, 4, 60);
    for (const auto& r : j.result.ranks) CHECK(r.exit_code == 0);
    CHECK(j.diagnosis.verdict == "healthy");
    CHECK(j.diagnosis.findings.empty());
    for (int rank = 0; rank < 4; ++rank) {
      auto t = LoadProcessTrace(jobs::TraceOf(j.dir.path(), rank));
      REQUIRE(t.ok());
      CHECK(t->collectives.size() == 5);
      REQUIRE(t->comms.size() == 1);
      CHECK(t->comms[0].nranks == 4);
    }
  }
}

TEST_CASE("ctypes-style loading: the same answers, and the calls recorded", "[dlsym]") {
  jobs::TempDir dir;
  const jobs::RankResult r = Compare("dlsym_probe", {"local"}, dir.path());
  CHECK(r.output.find("ncclGetVersion -> 0, " + std::to_string(jobs::SimNcclVersion())) !=
        std::string::npos);
  CHECK(r.output.find("dlvsym found: 0") != std::string::npos);
  CHECK(r.output.find("dlsym of a name NCCL lacks: 0") != std::string::npos);
  const ProcessTrace t = OnlyTrace(dir.path());
  CHECK(t.nccl_version == jobs::SimNcclVersion());
  // ncclGetUniqueId through ncclX and pncclX; the version once.
  CHECK(ApiCalls(t) ==
        std::multiset<std::string>{"ncclGetVersion", "ncclGetUniqueId", "ncclGetUniqueId"});
  CHECK(t.not_seen.empty());
}

TEST_CASE("Python's ctypes: the calls recorded, the answers unchanged", "[dlsym][python]") {
  // ctypes.CDLL is dlopen(RTLD_LOCAL); each attribute is a dlsym on the handle.
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  if (Run("/bin/sh", {"-c", "command -v " + python}, Plain()).exit_code != 0) {
    std::cout << "NCCLWATCH-SKIP: no python3 to run ctypes with\n";
    return;
  }
  const std::string script =
      "import ctypes\n"
      "lib = ctypes.CDLL('libnccl.so.2')\n"
      "v = ctypes.c_int()\n"
      "print('ncclGetVersion', lib.ncclGetVersion(ctypes.byref(v)), v.value)\n"
      "uid = ctypes.create_string_buffer(128)\n"
      "print('ncclGetUniqueId', lib.ncclGetUniqueId(uid))\n";
  jobs::TempDir dir;
  const jobs::RankResult r = Compare("/bin/sh", {"-c", python + " -c \"$0\"", script}, dir.path());
  CHECK(r.output.find("ncclGetVersion 0 " + std::to_string(jobs::SimNcclVersion())) !=
        std::string::npos);
  CHECK(r.output.find("ncclGetUniqueId 0") != std::string::npos);
  // One file: the shell (and any launcher script in front of python) made none.
  const ProcessTrace t = OnlyTrace(dir.path());
  CHECK(t.nccl_version == jobs::SimNcclVersion());
  CHECK(ApiCalls(t) == std::multiset<std::string>{"ncclGetVersion", "ncclGetUniqueId"});
}

TEST_CASE("a library in front of NCCL that forwards with dlsym(RTLD_NEXT) still reaches NCCL",
          "[dlsym]") {
  // Asked as the shim, RTLD_NEXT would find the interposer itself, which
  // would report that it has no next ncclGetVersion.
  jobs::TempDir dir;
  const jobs::RankResult r = Compare("interposer_main", {}, dir.path());
  CHECK(r.output.find("interposer: forwarding ncclGetVersion") != std::string::npos);
  CHECK(r.output.find("ncclGetVersion -> 0, " + std::to_string(jobs::SimNcclVersion())) !=
        std::string::npos);
  const ProcessTrace t = OnlyTrace(dir.path());
  CHECK(t.nccl_version == jobs::SimNcclVersion());
  CHECK(ApiCalls(t).count("ncclGetUniqueId") == 1);
}

TEST_CASE("copies of NCCL side by side: each reached through its own slot, the second noted",
          "[dlsym]") {
  jobs::TempDir copies;
  std::vector<std::string> args = {"copies"};
  for (int i = 0; i < 5; ++i) {
    const std::string d = copies.path() + "/" + std::to_string(i);
    fs::create_directories(d);
    fs::copy_file(jobs::SimLibDir() + "/libnccl.so.2", d + "/libnccl.so.2");
    args.push_back(d);
  }
  SECTION("two copies: both seen") {
    jobs::TempDir dir;
    Compare("dlsym_probe", {args[0], args[1], args[2]}, dir.path());
    const ProcessTrace t = OnlyTrace(dir.path());
    CHECK(ApiCalls(t).count("ncclGetUniqueId") == 2);
    REQUIRE(t.not_seen.size() == 1);
    CHECK(t.not_seen[0].reason == 3);  // a second libnccl
    CHECK(t.not_seen[0].path == args[2] + "/libnccl.so.2");
    CheckNotVisible(dir.path(), "second_library", args[2] + "/libnccl.so.2");
  }
  SECTION("five copies: four slots, the fifth passed through and said") {
    jobs::TempDir dir;
    Compare("dlsym_probe", args, dir.path());
    const ProcessTrace t = OnlyTrace(dir.path());
    CHECK(ApiCalls(t).count("ncclGetUniqueId") == 4);
    std::set<uint32_t> reasons;
    for (const auto& e : t.not_seen) reasons.insert(e.reason);
    CHECK(reasons == std::set<uint32_t>{3, 4});
    bool full = false;
    for (const auto& e : t.not_seen)
      if (e.reason == 4) full = e.path == args[5] + "/libnccl.so.2";
    CHECK(full);
  }
}

TEST_CASE("NCCL loaded with RTLD_DEEPBIND is noted", "[dlsym]") {
  jobs::TempDir dir;
  Compare("dlsym_probe", {"deepbind"}, dir.path());
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.not_seen.size() == 1);
  CHECK(t.not_seen[0].reason == 2);
  CHECK(t.not_seen[0].path == "libnccl.so.2");
  CheckNotVisible(dir.path(), "deepbind", "libnccl.so.2");
}

TEST_CASE("NCCL called through a pointer found without dlsym: its code at work is noted",
          "[dlsym]") {
  jobs::TempDir dir;
  const jobs::RankResult r = Compare("dlsym_probe", {"raw"}, dir.path());
  CHECK(r.output.find("found without dlsym: 1") != std::string::npos);
  CHECK(r.output.find("ncclGetUniqueId -> 0") != std::string::npos);
  // The call itself was not seen; NCCL's bootstrap sockets were, at exit.
  const ProcessTrace t = OnlyTrace(dir.path());
  CHECK(t.apis.empty());
  REQUIRE(t.not_seen.size() == 1);
  CHECK(t.not_seen[0].reason == 5);
  CHECK(fs::path(t.not_seen[0].path).filename() == "libnccl.so.2");
  CheckNotVisible(dir.path(), "active_unseen", "libnccl.so.2");
}

TEST_CASE("a framework library with NCCL linked in, loaded in a local scope: unchanged, noted",
          "[dlsym][static]") {
  // Its calls to its own (exported) NCCL reach the shim through the global
  // lookup; the shim must forward them to the framework's definitions.
  jobs::TempDir dir;
  const std::string lib = jobs::BinDir() + "/libfake_framework.so";
  const jobs::RankResult r = Compare("dlsym_probe", {"framework", lib}, dir.path());
  CHECK(r.output.find("framework_init -> 100") != std::string::npos);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.not_seen.size() == 1);
  CHECK(t.not_seen[0].reason == 1);
  CHECK(t.not_seen[0].path == lib);
  CheckNotVisible(dir.path(), "linked_in", "libfake_framework.so");
}

TEST_CASE("NCCL linked into the program is reported as not visible, not as healthy",
          "[dlsym][static]") {
  for (const std::string program : {"static_nccl_main", "static_nccl_main_exported"}) {
    INFO(program);
    jobs::TempDir dir;
    const jobs::RankResult r = Compare(program, {}, dir.path());
    CHECK(r.output.find("ncclCommInitRank -> 0") != std::string::npos);
    // The program made no call the shim could see, yet has a trace: to say so.
    const ProcessTrace t = OnlyTrace(dir.path());
    CHECK(t.apis.empty());
    CHECK(t.comms.empty());
    REQUIRE(t.not_seen.size() == 1);
    CHECK(t.not_seen[0].reason == 1);
    CHECK_FALSE(t.not_seen[0].calls_seen);
    CHECK(fs::path(t.not_seen[0].path).filename() == program);
    REQUIRE(t.end.has_value());
    CHECK(t.end->exit_code == 0);
    CheckNotVisible(dir.path(), "linked_in", program);
  }
}

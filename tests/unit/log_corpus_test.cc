// `ncclwatch explain` on the corpus of real text in tests/data/logs/ (its
// README says where each file comes from): real libnccl.so.2 output of
// several releases, message formats quoted from NCCL's, PyTorch's, XLA's and
// vLLM's sources behind the prefixes launchers add, and whole job logs. Each
// file says what explain must conclude; every message of the catalogue must
// be matched by some line of the corpus (or by a line NCCL's WARN formats of
// tests/data/nccl_warns.tsv make).

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "analysis/log_diagnosis.h"
#include "knowledge/message_catalogue.h"
#include "logs/nccl_log.h"
#include "nccl_warns.h"
#include "report/finding_text.h"
#include "support/traced_job.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::decoder::CatalogueMessage;
using ncclwatch::decoder::DiagnoseLogs;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::InitFailureFacts;
using ncclwatch::decoder::KindName;
using ncclwatch::decoder::LogDiagnosis;
using ncclwatch::decoder::LogFacts;
using ncclwatch::decoder::NcclLog;

// What a corpus file says explain must conclude.
struct Expect {
  std::string kind;
  std::string subsystem;
  std::string message;
  std::string ranks;     // "2", "0,3"
  std::string address;   // "10.0.0.1:29500": the address the finding names
  bool healthy = false;  // "healthy": no problem; `kind` is then a warning's
};

Expect ParseExpect(absl::string_view words) {
  Expect e;
  for (absl::string_view w : absl::StrSplit(words, ' ', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&w, "subsystem=")) {
      e.subsystem = std::string(w);
    } else if (absl::ConsumePrefix(&w, "message=")) {
      e.message = std::string(w);
    } else if (absl::ConsumePrefix(&w, "ranks=")) {
      e.ranks = std::string(w);
    } else if (absl::ConsumePrefix(&w, "address=")) {
      e.address = std::string(w);
    } else if (w == "healthy") {
      e.healthy = true;
    } else if (e.kind.empty()) {
      e.kind = std::string(w);
    }
  }
  return e;
}

struct CorpusFile {
  std::string path;
  std::vector<std::string> header;  // lines that start with "# "
  std::vector<std::string> body;    // the log's own lines
};

CorpusFile Read(const fs::path& path) {
  CorpusFile f;
  f.path = path.string();
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "# ")) {
      f.header.push_back(line);
    } else {
      f.body.push_back(line);
    }
  }
  return f;
}

std::vector<fs::path> Files(const std::string& under) {
  std::vector<fs::path> out;
  const fs::path root = fs::path(NCCLWATCH_LOG_CORPUS) / under;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".log") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// explain's diagnosis of the body, written to a file of a temporary folder.
LogDiagnosis Explain(const std::vector<std::string>& body, NcclLog* log) {
  jobs::TempDir dir;
  const std::string path = dir.path() + "/job.log";
  {
    std::ofstream out(path);
    for (const std::string& l : body) out << l << "\n";
  }
  REQUIRE(log->AddFile(path).ok());
  log->Finish();
  return DiagnoseLogs(*log);
}

std::string MessageOf(const Finding& f) {
  if (const auto* x = std::get_if<LogFacts>(&f.facts)) return x->message;
  if (const auto* x = std::get_if<InitFailureFacts>(&f.facts)) return x->message;
  return "";
}

std::string RanksText(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

void Check(const CorpusFile& f, const Expect& e) {
  INFO(f.path);
  NcclLog log;
  const LogDiagnosis d = Explain(f.body, &log);
  REQUIRE_FALSE(d.findings.empty());
  // A healthy log's finding to check is its first warning.
  const Finding* first = &d.findings.front();
  if (e.healthy) {
    first = nullptr;
    for (const Finding& x : d.findings)
      if (x.role == ncclwatch::decoder::FindingRole::kWarning && first == nullptr) first = &x;
    REQUIRE(first != nullptr);
  }
  const Finding& root = *first;
  const auto text = ncclwatch::decoder::RenderFinding(root, ncclwatch::decoder::NoCallSites());
  INFO(text.detail);
  CHECK(d.problem == !e.healthy);
  CHECK(KindName(root.kind) == e.kind);
  CHECK_FALSE(text.detail.empty());
  CHECK_FALSE(text.fix.empty());
  if (!e.subsystem.empty()) {
    const auto* init = std::get_if<InitFailureFacts>(&root.facts);
    REQUIRE(init != nullptr);
    CHECK(std::string(ncclwatch::decoder::AreaName(init->subsystem)) == e.subsystem);
  }
  if (!e.message.empty()) CHECK(MessageOf(root) == e.message);
  if (!e.ranks.empty()) CHECK(RanksText(root.ranks) == e.ranks);
  if (!e.address.empty()) {
    const auto* log_facts = std::get_if<LogFacts>(&root.facts);
    REQUIRE(log_facts != nullptr);
    CHECK(log_facts->address.value_or("") == e.address);
  }
}

// <case> -> what to conclude, from real/EXPECT or sim/EXPECT.
std::map<std::string, Expect> Expectations(const std::string& under) {
  std::map<std::string, Expect> expect;
  {
    std::ifstream in(fs::path(NCCLWATCH_LOG_CORPUS) / under / "EXPECT");
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t space = line.find(' ');
      expect[line.substr(0, space)] = ParseExpect(line.substr(space + 1));
    }
  }
  return expect;
}

TEST_CASE("real NCCL output of every release: the cause named", "[logs][corpus]") {
  const std::map<std::string, Expect> expect = Expectations("real");
  const std::vector<fs::path> files = Files("real");
  REQUIRE(files.size() >= 10);  // two releases or more
  std::set<std::string> releases;
  for (const fs::path& p : files) {
    const CorpusFile f = Read(p);
    REQUIRE_FALSE(f.header.empty());
    CHECK(absl::StrContains(f.header.front(), "real libnccl.so.2"));  // says how it was made
    releases.insert(p.parent_path().filename().string());
    auto it = expect.find(p.stem().string());
    INFO(p.string());
    REQUIRE(it != expect.end());
    Check(f, it->second);
  }
  CHECK(releases.size() >= 2);
}

TEST_CASE("the simulator's jobs: the cause named", "[logs][corpus]") {
  const std::map<std::string, Expect> expect = Expectations("sim");
  const std::vector<fs::path> files = Files("sim");
  REQUIRE(files.size() == expect.size());
  for (const fs::path& p : files) {
    const CorpusFile f = Read(p);
    INFO(p.string());
    REQUIRE_FALSE(f.header.empty());
    CHECK(absl::StrContains(f.header.front(), "simulator"));
    auto it = expect.find(p.stem().string());
    REQUIRE(it != expect.end());
    Check(f, it->second);
  }
}

TEST_CASE("quoted messages and whole job logs: the cause named", "[logs][corpus]") {
  std::vector<fs::path> files = Files("quoted");
  for (const fs::path& p : Files("jobs")) files.push_back(p);
  REQUIRE(files.size() >= 30);
  for (const fs::path& p : files) {
    const CorpusFile f = Read(p);
    INFO(p.string());
    std::string source, expect;
    for (const std::string& h : f.header) {
      absl::string_view v = h;
      if (absl::ConsumePrefix(&v, "# source: ")) source = std::string(v);
      if (absl::ConsumePrefix(&v, "# expect: ")) expect = std::string(v);
    }
    CHECK_FALSE(source.empty());  // every file says where its lines came from
    REQUIRE_FALSE(expect.empty());
    Check(f, ParseExpect(expect));
  }
}

TEST_CASE("every message of the catalogue is matched by a line of the corpus", "[logs][corpus]") {
  std::set<std::string> matched;
  for (const char* under : {"real", "sim", "quoted", "jobs"}) {
    for (const fs::path& p : Files(under)) {
      for (const std::string& line : Read(p).body) {
        if (const CatalogueMessage* m = ncclwatch::decoder::FindMessage(line))
          matched.insert(m->id);
      }
    }
  }
  // And the lines NCCL's WARN formats make (tests/data/nccl_warns.tsv, quoted
  // from NCCL's sources of every release: nccl_warns_test.cc).
  std::string header;
  for (const nccl_warns::Format& f : nccl_warns::Read(
           (fs::path(NCCLWATCH_LOG_CORPUS) / ".." / "nccl_warns.tsv").string(), &header)) {
    if (const CatalogueMessage* m = ncclwatch::decoder::FindMessage(nccl_warns::Fill(f.format)))
      matched.insert(m->id);
  }
  for (const CatalogueMessage& m : ncclwatch::decoder::CatalogueMessages()) {
    INFO(m.id);
    CHECK(matched.count(m.id) == 1);
    CHECK(ncclwatch::decoder::CauseNamed(ncclwatch::decoder::CauseOf(m).name) ==
          &ncclwatch::decoder::CauseOf(m));
  }
}

}  // namespace

namespace {

// The log as NcclLog reads it: the body of one corpus file.
struct Read1 {
  jobs::TempDir dir;
  NcclLog log;
  explicit Read1(const std::string& relative) {
    const std::string path = dir.path() + "/log";
    {
      std::ofstream out(path);
      for (const std::string& l : Read(fs::path(NCCLWATCH_LOG_CORPUS) / relative).body)
        out << l << "\n";
    }
    REQUIRE(log.AddFile(path).ok());
    log.Finish();
  }
  const ncclwatch::decoder::LogLine* FirstWarn() const {
    for (const auto& l : log.lines())
      if (l.level == ncclwatch::decoder::LogLine::kWarn) return &l;
    return nullptr;
  }
};

TEST_CASE("the reader: NCCL 2.32's function names and ATTN level, redacted pids, prefixes anywhere",
          "[logs][corpus]") {
  {
    // "[time] vm:PID:TID [0] bootstrap.cc:129 (bootstrapNetInit) NCCL WARN ..."
    Read1 r("real/2.32.3/bad_ifname.log");
    REQUIRE(r.log.processes().size() == 1);
    CHECK(r.log.processes()[0].host == "vm");
    CHECK(r.log.processes()[0].pid > 0);
    CHECK(r.log.processes()[0].env.at("NCCL_SOCKET_IFNAME") == "nosuchif");
    REQUIRE(r.FirstWarn() != nullptr);
    CHECK(r.FirstWarn()->text == "Bootstrap : no socket interface found");
    CHECK(r.FirstWarn()->when_ns > 0);  // NCCL's WARN timestamp
  }
  {
    // "worker-0:<pid>:<tid> [0] ...": the host kept, no pid.
    Read1 r("quoted/nccl_redacted_pid.log");
    REQUIRE(r.log.processes().size() == 1);
    CHECK(r.log.processes()[0].host == "worker-0");
    CHECK(r.log.processes()[0].pid == -1);
  }
  {
    // Before NCCL 2.4: "host:pid:tid [dev] misc/ibvwrap.cu:61 WARN ..."
    Read1 r("quoted/nccl_pre27_legacy_warn.log");
    REQUIRE(r.FirstWarn() != nullptr);
    CHECK(r.FirstWarn()->text == "Call to ibv_reg_mr failed");
    CHECK(r.log.processes().at(0).host == "gpu-node1");
    CHECK(r.log.processes().at(0).pid == 2211);
  }
  {
    // grep -r's "file.log:" before NCCL's prefix.
    Read1 r("quoted/nccl_grep_prefix.log");
    REQUIRE(r.log.processes().size() == 1);
    CHECK(r.log.processes()[0].host == "node-2");
    CHECK(r.log.processes()[0].pid == 5776);
  }
  {
    // Ray's "(RayWorkerWrapper pid=..., ip=...)" before NCCL's prefix.
    Read1 r("quoted/ray_prefix_socket_closed.log");
    REQUIRE(r.log.processes().size() == 1);
    CHECK(r.log.processes()[0].host == "node7");
    CHECK(r.log.processes()[0].rank == 3);  // from its Init line
  }
  {
    // torchrun's "[rankN]:" before a glog prefix; srun's "N: ".
    Read1 torch("quoted/torch_store_client_timeout.log");
    for (const auto& l : torch.log.lines()) CHECK(l.tagged_rank == 1);
    Read1 srun("quoted/torch_store_client_refused.log");
    for (const auto& l : srun.log.lines()) CHECK(l.tagged_rank == 2);
  }
  {
    // 2.32's "NCCL ATTN" notice: NCCL's own line of that process, a notice
    // (it names no failure: a warning of the report, no error by itself);
    // the WARN lines after it are the cause.
    Read1 r("quoted/nccl_232_ib_gid_change.log");
    REQUIRE(r.log.processes().size() == 1);
    CHECK(r.log.processes()[0].host == "node4");
    CHECK(r.log.processes()[0].rank == 3);
    const auto& attn = r.log.lines().at(1);
    CHECK(attn.level == ncclwatch::decoder::LogLine::kNotice);
    CHECK(attn.process == 0);
    CHECK(attn.text == "Peer 10.0.0.9<41522> closed before socket hello, discarding");
    REQUIRE(r.FirstWarn() != nullptr);
    CHECK(r.FirstWarn()->text == "NET/IB : mlx5_0:1 query_port failed during GID change (res=110)");
  }
  {
    // SGLang's "[2025-06-01 10:00:09 TP1] " (its logger's time and TP rank):
    // the rank, and the time stamp kept; the traceback after it is untagged.
    Read1 r("quoted/sglang_memory_unbalanced.log");
    REQUIRE(r.log.lines().size() >= 2);
    CHECK(r.log.lines()[0].tagged_rank == 1);
    CHECK(r.log.lines()[0].text == "Init torch distributed begin.");
    CHECK(r.log.lines()[0].when_ns > 0);
    CHECK(r.log.lines().back().tagged_rank == -1);
  }
  {
    // A WARN line alone, without host:pid:tid: a process of its own, no pid.
    Read1 r("quoted/nccl_warn_fragment_ib_reg_mr.log");
    REQUIRE(r.log.processes().size() == 1);
    CHECK(r.log.processes()[0].host.empty());
    CHECK(r.log.processes()[0].pid == -1);
    REQUIRE(r.FirstWarn() != nullptr);
    CHECK(r.FirstWarn()->message != nullptr);
  }
}

}  // namespace

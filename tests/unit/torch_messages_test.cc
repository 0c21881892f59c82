// Every distributed error and warning message of PyTorch 2.0 to 2.15 that
// tests/data/torch_messages.tsv lists is recognised by explain.
//
// The file is written by scripts/extract-torch-messages.py from the torch
// wheels of six releases (its header says which, with their checksums): the
// messages of the Python sources that set up, check and tear down process
// groups, torchrun's rendezvous and DDP, and those of the compiled C++
// (socket.cpp, TCPStore, reducer.cpp, ProcessGroupWrapper, ProcessGroupNCCL
// and NCCLUtils). Each becomes the line a job would print (its {} filled with
// a neutral value), and explain must read it as a problem whose root cause is
// one of the findings that message's subsystem gives, carrying the
// catalogue's message (so its meaning and fix) where the finding is the
// catalogue's.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "analysis/log_diagnosis.h"
#include "knowledge/message_catalogue.h"
#include "logs/nccl_log.h"
#include "report/finding_text.h"
#include "support/traced_job.h"

namespace {

using ncclwatch::decoder::DiagnoseLogs;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::KindName;
using ncclwatch::decoder::LogDiagnosis;
using ncclwatch::decoder::LogFacts;
using ncclwatch::decoder::NcclLog;

struct Message {
  std::string first, last, subsystem, kind, source, text;
};

std::vector<Message> ReadMessages(std::string* header) {
  std::vector<Message> out;
  std::ifstream in(
      (std::filesystem::path(NCCLWATCH_LOG_CORPUS) / ".." / "torch_messages.tsv").string());
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "#")) {
      *header += line + "\n";
      continue;
    }
    std::vector<std::string> cols = absl::StrSplit(line, '\t');
    if (cols.size() != 6) continue;  // counted below
    out.push_back({cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]});
  }
  return out;
}

// The line a job prints: each {} a neutral value (a number), so that what is
// recognised is PyTorch's own text, never a word the filling brought; a
// Python exception behind its class as the traceback's last line shows it
// ("ValueError: ..."; a helper that builds the exception, "Error: "), a
// warning behind its category, and the C++ text as the exception PyTorch
// raises with it ("RuntimeError: ...", c10::Error's what()).
std::string Line(const Message& m) {
  const std::string text = absl::StrReplaceAll(m.text, {{"{}", "3"}});
  absl::string_view kind = m.kind;
  if (absl::ConsumePrefix(&kind, "raise ")) {
    const bool exception = absl::EndsWith(kind, "Error") || absl::EndsWith(kind, "Exception") ||
                           absl::EndsWith(kind, "Immediately");
    return absl::StrCat(exception ? kind : "Error", ": ", text);
  }
  if (kind == "warn") return absl::StrCat("UserWarning: ", text);
  return absl::StrCat("RuntimeError: ", text);
}

// What each subsystem's messages may be explained as: the root finding's
// kind, and the catalogue's areas a catalogued finding must come from.
struct Allowed {
  std::set<std::string> kinds;
  std::set<std::string> areas;
};
const std::map<std::string, Allowed>& BySubsystem() {
  static const auto* m = new std::map<std::string, Allowed>{
      {"c10d/store", {{"rendezvous_failure"}, {"c10d/store"}}},
      {"torchrun", {{"rendezvous_failure"}, {"torchrun", "c10d/store"}}},
      {"c10d/init",
       {{"rendezvous_failure", "log_insufficient"}, {"c10d/init", "c10d/store", "c10d/nccl"}}},
      {"ddp", {{"ddp_usage", "missing_rank"}, {"ddp"}}},
      {"c10d", {{"collective_mismatch", "missing_rank", "log_insufficient"}, {"c10d"}}},
      {"c10d/nccl",
       {{"watchdog_timeout", "init_failure", "log_insufficient", "teardown_hang", "rank_died",
         "collective_mismatch", "missing_rank"},
        {"c10d", "c10d/nccl", "net"}}},
  };
  return *m;
}

// Messages that carry no diagnostic meaning, by their text, and why. The test
// checks each is still in the data and that explain names no message of the
// catalogue for it.
const std::map<std::string, std::string> kAllowed = {
    // etcd_rendezvous.py's control flow: caught by the handler itself, which
    // retries; never what a job dies with.
    {"Rendezvous no longer frozen, before we confirmed. Must join next one",
     "EtcdRendezvousRetryImmediately, caught inside EtcdRendezvous's own retry loop"},
    {"Rendezvous version changed. Must try join the new one.",
     "EtcdRendezvousRetryImmediately, caught inside EtcdRendezvous's own retry loop"},
    {"[key type printing not supportedTORCH_NCCL_ENABLE_TIMING",
     "not a message: two neighbouring strings of libtorch_cuda.so's table run together"},
};

LogDiagnosis Explain(const std::string& line, NcclLog* log) {
  jobs::TempDir dir;
  const std::string path = dir.path() + "/job.log";
  {
    std::ofstream out(path);
    out << line << "\n";
  }
  REQUIRE(log->AddFile(path).ok());
  log->Finish();
  return DiagnoseLogs(*log);
}

TEST_CASE("the PyTorch messages file says how it was made and spans 2.0 to 2.15",
          "[logs][catalogue][torch]") {
  std::string header;
  const std::vector<Message> messages = ReadMessages(&header);
  CHECK(absl::StrContains(header, "scripts/extract-torch-messages.py"));
  CHECK(absl::StrContains(header, "sha256="));
  REQUIRE(messages.size() >= 300);
  std::set<std::string> firsts, lasts, texts;
  for (const Message& m : messages) {
    firsts.insert(m.first);
    lasts.insert(m.last);
    CHECK(BySubsystem().count(m.subsystem) == 1);
    CHECK(texts.insert(m.text).second);  // deduplicated
  }
  CHECK(firsts.count("2.0.0") == 1);
  CHECK(lasts.count("2.15.0") == 1);
}

TEST_CASE("every PyTorch distributed message is recognised with its subsystem's finding",
          "[logs][catalogue][torch]") {
  std::string header;
  const std::vector<Message> messages = ReadMessages(&header);
  REQUIRE(messages.size() >= 300);
  size_t recognised = 0;
  std::set<std::string> allowed_seen;
  for (const Message& m : messages) {
    const std::string line = Line(m);
    INFO(m.source << " (" << m.subsystem << "): " << m.text);
    NcclLog log;
    const LogDiagnosis d = Explain(line, &log);
    if (kAllowed.count(m.text)) {
      allowed_seen.insert(m.text);
      // Else it no longer needs to be allowed: no finding carries a message of
      // the catalogue.
      for (const Finding& f : d.findings) {
        const auto* facts = std::get_if<LogFacts>(&f.facts);
        CHECK((facts == nullptr || facts->message.empty()));
      }
      continue;
    }
    const Allowed& allowed = BySubsystem().at(m.subsystem);
    // A risk, not a failure (ProcessGroupNCCL's destructor at the exit of a
    // job that skipped destroy_process_group): a warning with the
    // catalogue's message, the job healthy on its account.
    if (!d.problem && !d.findings.empty() &&
        d.findings.front().role == ncclwatch::decoder::FindingRole::kWarning) {
      const auto* facts = std::get_if<LogFacts>(&d.findings.front().facts);
      REQUIRE(facts != nullptr);
      const auto* cm = ncclwatch::decoder::MessageById(facts->message);
      REQUIRE(cm != nullptr);
      CHECK(ncclwatch::decoder::WarningOnly(*cm));
      CHECK(allowed.areas.count(
                ncclwatch::decoder::AreaName(ncclwatch::decoder::MessageArea(*cm))) == 1);
      ++recognised;
      continue;
    }
    CHECK(d.problem);
    if (d.findings.empty()) continue;
    const Finding& root = d.findings.front();
    INFO("explained as " << KindName(root.kind));
    CHECK(allowed.kinds.count(KindName(root.kind)) == 1);
    const auto* facts = std::get_if<LogFacts>(&root.facts);
    if (facts != nullptr && !facts->message.empty()) {
      const auto* cm = ncclwatch::decoder::MessageById(facts->message);
      REQUIRE(cm != nullptr);
      INFO("message " << cm->id);
      CHECK(allowed.areas.count(
                ncclwatch::decoder::AreaName(ncclwatch::decoder::MessageArea(*cm))) == 1);
    } else {
      // Without the catalogue's message, only what explain reads itself (NCCL's
      // error text, the watchdog's lines) counts, never the bare note.
      INFO("only a note that the logs cannot tell: no message of the catalogue names it");
      CHECK(root.kind != ncclwatch::decoder::FindingKind::kLogInsufficient);
    }
    const auto text = ncclwatch::decoder::RenderFinding(root, ncclwatch::decoder::NoCallSites());
    CHECK_FALSE(text.fix.empty());
    ++recognised;
  }
  CHECK(allowed_seen.size() == kAllowed.size());
  CHECK(recognised + kAllowed.size() == messages.size());
}

}  // namespace

namespace {

TEST_CASE("PyTorch's lines of a healthy job are no problem", "[logs][catalogue][torch]") {
  // socket.cpp's connect report (an INFO line, 2.2-2.15: 'The client socket has
  // connected to {} on {}.'), and reducer.cpp's advice (TORCH_WARN_ONCE,
  // tests/data/torch_messages.tsv) as glog prints them: the words of
  // torch.store.socket and torch.ddp.other, in lines that report no error.
  for (const std::string line :
       {"[rank1]:[I1203 10:02:41.443520947 socket.cpp:787] [c10d] The client socket has "
        "connected to [node0]:29500 on [node1]:51234.",
        "[rank0]:[W1203 10:05:00.101000000 reducer.cpp:1400] Warning: find_unused_parameters=True "
        "was specified in DDP constructor, but did not find any unused parameters in the forward "
        "pass. This flag results in an extra traversal of the autograd graph every iteration, "
        "which can adversely affect performance."}) {
    INFO(line);
    NcclLog log;
    const LogDiagnosis d = Explain(line, &log);
    CHECK_FALSE(d.problem);
    CHECK(d.findings.empty());
  }
}

}  // namespace

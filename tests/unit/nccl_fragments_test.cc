// NCCL's messages without their WARN marker (logs/fragments.h): a bare
// message with one of NCCL's own tags, with NCCL's source location, or after
// PyTorch's "Last error:" is read as NCCL's WARN line, and NCCL-only words are
// looked for in it; a program's own lines with the same generic words are not.
//
// Every line is real text: NCCL's WARN formats as its sources print them
// (tests/data/nccl_warns.tsv, with the NCCL 2.19.3 source locations named
// below), the real libnccl.so.2 2.18.3 output of tests/data/logs/real/, and
// PyTorch's, CPython's and GCC's own formats (named at each).

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/log_diagnosis.h"
#include "knowledge/message_catalogue.h"
#include "logs/fragments.h"
#include "logs/nccl_log.h"
#include "support/traced_job.h"

namespace {

using ncclwatch::decoder::FindNcclFragment;
using ncclwatch::decoder::LogLine;
using ncclwatch::decoder::NcclLog;

struct Read {
  jobs::TempDir dir;
  NcclLog log;
  explicit Read(const std::vector<std::string>& lines) {
    const std::string path = dir.path() + "/log";
    {
      std::ofstream out(path);
      for (const std::string& l : lines) out << l << "\n";
    }
    REQUIRE(log.AddFile(path).ok());
    log.Finish();
  }
};

std::string IdOf(const LogLine& l) { return l.message != nullptr ? l.message->id : ""; }

TEST_CASE("fragments: NCCL's text without its WARN word is read as NCCL's WARN line",
          "[logs][fragments]") {
  SECTION("one of NCCL's own tags, the text alone (proxy.cc:1533 of NCCL 2.19.3)") {
    // Its words ("Could not receive") are NCCL-only: nothing without the tag.
    Read r({"[Service thread] Could not receive type from localRank 3, res=3, closed=1"});
    REQUIRE(r.log.lines().size() == 1);
    const LogLine& l = r.log.lines()[0];
    CHECK(l.level == LogLine::kWarn);
    CHECK(IdOf(l) == "nccl.proxy.service");
    CHECK(r.log.nccl_lines() == 1);
  }
  SECTION("NCCL's source location without the WARN word (graph/xml.cc:339 of 2.19.3)") {
    Read r(
        {"graph/xml.cc:339 Could not find real path of /sys/class/pci_bus/0000:3b/../../"
         "0000:3b:00.0"});
    const LogLine& l = r.log.lines().at(0);
    CHECK(l.level == LogLine::kWarn);
    CHECK(l.text == "Could not find real path of /sys/class/pci_bus/0000:3b/../../0000:3b:00.0");
    CHECK(IdOf(l) == "nccl.topology");
  }
  SECTION("the line after PyTorch's 'Last error:' is NCCL's last WARN text") {
    Read r(
        {"[rank2]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
         "failed or device error. ",
         "[rank2]: Last error:",
         "[rank2]: Could not find real path of /sys/class/pci_bus/0000:3b/../../0000:3b:00.0"});
    const LogLine& l = r.log.lines().at(2);
    CHECK(l.level == LogLine::kWarn);
    CHECK(IdOf(l) == "nccl.topology");
    CHECK(r.log.lines().at(1).level == LogLine::kOther);  // "Last error:" itself is PyTorch's
  }
  SECTION("real libnccl.so.2 2.18.3 output with its prefix and WARN word cut away") {
    // tests/data/logs/real/2.18.3/no_driver.log: "... NCCL WARN Cuda failure 'CUDA driver
    // version is insufficient for CUDA runtime version'" (CUDACHECK, include/checks.h).
    Read r({"Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'"});
    const LogLine& l = r.log.lines().at(0);
    CHECK(l.level == LogLine::kWarn);
    CHECK(IdOf(l) == "nccl.cuda.driver_insufficient");
    const auto d = ncclwatch::decoder::DiagnoseLogs(r.log);
    REQUIRE_FALSE(d.findings.empty());
    const auto* init = std::get_if<ncclwatch::decoder::InitFailureFacts>(&d.findings[0].facts);
    REQUIRE(init != nullptr);
    CHECK(init->subsystem ==
          ncclwatch::decoder::Area::kVersion);  // as real/EXPECT says of the whole log
  }
  SECTION("a cut line keeps its message (net_ib.cc's completion error, 2.10-2.17)") {
    Read r({"NET/IB : Got completion from peer 10.0.0.2<43562> with err"});
    const LogLine& l = r.log.lines().at(0);
    CHECK(l.level == LogLine::kWarn);
    CHECK(IdOf(l) == "nccl.ib.completion");
  }
}

TEST_CASE("fragments: a program's own lines with generic words are never NCCL's",
          "[logs][fragments]") {
  // CPython's traceback of torch.nn.Module.load_state_dict (torch/nn/modules/module.py's
  // 'Unexpected key(s) in state_dict: {}. '): "Unexpected" is one of NCCL's
  // internal-check words, NCCL-only.
  const std::vector<std::string> traceback = {
      "Traceback (most recent call last):",
      "  File \"/usr/lib/python3/dist-packages/torch/nn/modules/module.py\", line 2153, in "
      "load_state_dict",
      "RuntimeError: Error(s) in loading state_dict for Net:",
      "\tUnexpected key(s) in state_dict: \"fc.weight\". ",
      // CPython's OSError text for EINVAL: "Invalid argument" is NCCL's argcheck word.
      "OSError: [Errno 22] Invalid argument: '/data/shard-00017'",
      // GCC's diagnostic: a lower-case .cc path and a line number, then a colon.
      "main.cc:1543:5: error: 'comm' was not declared in this scope",
  };
  Read r(traceback);
  for (const LogLine& l : r.log.lines()) {
    INFO(l.text);
    CHECK(l.level == LogLine::kOther);
    CHECK(l.message == nullptr);
    CHECK_FALSE(FindNcclFragment(l.text, false).has_value());
  }
  CHECK(r.log.nccl_lines() == 0);
  const auto d = ncclwatch::decoder::DiagnoseLogs(r.log);
  CHECK_FALSE(d.problem);

  // PyTorch's glog line: its location ("[W socket.cpp:663]") is not NCCL's;
  // the line keeps PyTorch's own message (socket.cpp's client error).
  Read torch(
      {"[W socket.cpp:663] [c10d] The client socket has failed to connect to "
       "[node01]:29500 (errno: 111 - Connection refused)."});
  const LogLine& l = torch.log.lines().at(0);
  CHECK(l.level == LogLine::kOther);
  CHECK(IdOf(l) == "torch.store.client_failed");
  // A tag or location followed by nothing that reads as an error is left alone.
  CHECK_FALSE(FindNcclFragment("misc/socket.cc:484 ", false).has_value());
}

}  // namespace

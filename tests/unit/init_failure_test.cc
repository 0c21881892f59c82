// Init forensics as facts: ranks with the same cause are one finding, told
// apart by the facts the report words them with, not by facts only the JSON
// carries; and the words come from report/, not from the analysis.

#include "analysis/init_failure.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <string>
#include <vector>

#include "knowledge/message_catalogue.h"
#include "report/finding_text.h"

namespace {

using namespace ncclwatch::decoder;

// A rank whose fallocate of its /dev/shm segment failed with ENOSPC.
InitEvidence ShmRank(int rank, const std::string& host, const std::string& segment) {
  InitEvidence e;
  e.process = rank;
  e.rank = rank;
  e.host = host;
  e.pid = static_cast<uint32_t>(1000 + rank);
  e.sys_failures.push_back({100 + rank, "fallocate", ENOSPC, segment, 9637892, std::nullopt});
  e.failures.push_back({200 + rank, "ncclCommInitRank", 2, "unhandled system error", false});
  e.shm_size = 1 << 20;
  return e;
}

}  // namespace

TEST_CASE("init: ranks whose segments differ only in name are one cause", "[init]") {
  const std::vector<InitFinding> found = DiagnoseInit(
      {ShmRank(0, "node1", "/dev/shm/nccl-a"), ShmRank(1, "node1", "/dev/shm/nccl-b")});
  REQUIRE(found.size() == 1);
  const Finding& f = found[0].finding;
  CHECK(f.kind == FindingKind::kInitFailure);
  CHECK(f.ranks == std::vector<int>{0, 1});
  const auto& facts = std::get<InitFailureFacts>(f.facts);
  CHECK(facts.cause == InitCause::kSharedMemory);
  CHECK(facts.pids == std::vector<uint32_t>{1000, 1001});
  CHECK(RenderFinding(f, NoCallSites()).detail ==
        "Ranks 0-1 could not make NCCL's shared-memory segment in /dev/shm: fallocate of 9.2 MiB "
        "failed with ENOSPC; "
        "/dev/shm on node1 is 1.0 MiB (unknown free when NCCL began) (each connection between two "
        "local ranks takes "
        "such a segment)");
}

TEST_CASE("init: the same failure on hosts the words name apart is two causes", "[init]") {
  const std::vector<InitFinding> found = DiagnoseInit(
      {ShmRank(0, "node1", "/dev/shm/nccl-a"), ShmRank(1, "node2", "/dev/shm/nccl-b")});
  REQUIRE(found.size() == 2);
  CHECK(found[0].finding.ranks == std::vector<int>{0});
  CHECK(found[1].finding.ranks == std::vector<int>{1});
}

// The process that made the unique id hosts the bootstrap root: when it
// exits before the others connect, it is the cause, with its exit code, and
// the ranks refused at the root's address only waited for it.
TEST_CASE("init: a bootstrap root that exited first is the root cause, not its victims", "[init]") {
  constexpr uint64_t kId = 0xabcdef0012345678ull;
  InitEvidence root;
  root.process = 0;
  root.rank = 0;
  root.host = "node1";
  root.pid = 1000;
  root.made_unique_id = kId;
  root.end_known = true;
  root.exit_code = 1;
  root.end_ns = 100;
  std::vector<InitEvidence> all = {root};
  for (int r = 1; r < 4; ++r) {
    InitEvidence e;
    e.process = r;
    e.rank = r;
    e.host = "node1";
    e.pid = static_cast<uint32_t>(1000 + r);
    e.comm = kId;
    e.end_known = true;
    e.sys_failures.push_back({200 + r, "connect", ECONNREFUSED, "", -1, std::nullopt});
    e.failures.push_back({300 + r, "ncclCommInitRank", 2, "unhandled system error", false});
    all.push_back(e);
  }
  const std::vector<InitFinding> found = DiagnoseInit(all);
  REQUIRE(found.size() == 2);
  const Finding& f = found[0].finding;
  CHECK(f.ranks == std::vector<int>{0});
  CHECK(f.comm == kId);
  const auto& facts = std::get<InitFailureFacts>(f.facts);
  CHECK(facts.cause == InitCause::kRootGone);
  CHECK(facts.subsystem == Area::kBootstrap);
  CHECK(facts.exit_code == 1);
  CHECK(facts.could_not_connect == std::vector<int>{1, 2, 3});
  CHECK(RenderFinding(f, NoCallSites()).detail ==
        "Rank 0 made the ncclUniqueId, so its process hosted the communicator's bootstrap root, "
        "and exited with code 1 on node1 before ranks 1-3 connected to it; they could not "
        "connect, or waited, because of that");
  const Finding& waited = found[1].finding;
  CHECK(waited.ranks == std::vector<int>{1, 2, 3});
  CHECK(std::get<InitFailureFacts>(waited.facts).cause == InitCause::kWaitedForCause);
}

TEST_CASE("init: ranks that only waited say how they ended, as facts, each way once", "[init]") {
  // Four ranks still in ncclCommInitRank when they ended, no failure seen:
  // two got SIGTERM, one exited with code 1, one has no end recorded.
  std::vector<InitEvidence> all;
  for (int r = 0; r < 4; ++r) {
    InitEvidence e;
    e.process = r;
    e.rank = r;
    e.host = "node1";
    e.pid = static_cast<uint32_t>(1000 + r);
    e.init_pending = true;
    e.pending_call = "ncclCommInitRank";
    e.end_known = true;
    if (r < 2) e.signo = SIGTERM;
    if (r == 2) e.exit_code = 1;
    all.push_back(e);
  }
  const std::vector<InitFinding> found = DiagnoseInit(all);
  REQUIRE(found.size() == 1);
  const Finding& f = found[0].finding;
  CHECK(f.ranks == std::vector<int>{0, 1, 2, 3});
  const auto& facts = std::get<InitFailureFacts>(f.facts);
  CHECK(facts.cause == InitCause::kWaitedUnexplained);
  REQUIRE(facts.until.size() == 2);
  CHECK(std::count(facts.until.begin(), facts.until.end(), RankEnd{std::nullopt, SIGTERM}) == 1);
  CHECK(std::count(facts.until.begin(), facts.until.end(), RankEnd{1, 0}) == 1);
  // The words are the report's, in their own order.
  CHECK(RenderFinding(f, NoCallSites()).detail.find("(until: SIGTERM, exited with code 1)") !=
        std::string::npos);
}

TEST_CASE("init: a root that made the communicator itself is judged as before", "[init]") {
  InitEvidence root = ShmRank(0, "node1", "/dev/shm/nccl-a");
  root.made_unique_id = 0x1234;
  root.formed_from_unique_id = true;
  root.end_known = true;
  root.exit_code = 1;
  root.end_ns = 1;
  const std::vector<InitFinding> found = DiagnoseInit({root, ShmRank(1, "node1", "/dev/shm/b")});
  REQUIRE(found.size() == 1);
  CHECK(std::get<InitFailureFacts>(found[0].finding.facts).cause == InitCause::kSharedMemory);
}

namespace {

// A rank whose init failed with NCCL's words: as a traced call's last error
// (NCCL's own text), or as a framework's line (a text that may not be NCCL's).
InitEvidence WordsRank(int rank, const std::string& text, bool traced) {
  InitEvidence e;
  e.process = rank;
  e.rank = rank;
  e.host = "node1";
  e.pid = static_cast<uint32_t>(2000 + rank);
  e.failures.push_back({300 + rank, traced ? "ncclCommInitRank" : "", 4, text, false});
  return e;
}

const InitFailureFacts& OnlyFacts(const std::vector<InitFinding>& found) {
  REQUIRE(found.size() == 1);
  return std::get<InitFailureFacts>(found[0].finding.facts);
}

}  // namespace

TEST_CASE("init: the message catalogue names the subsystem and gives the fix", "[init]") {
  // NCCL 2.14-2.31 init.cc's WARN "Invalid config blocking attribute value %d",
  // as the last error of a traced ncclCommInitRankConfig.
  {
    const std::vector<InitFinding> found =
        DiagnoseInit({WordsRank(0, "Invalid config blocking attribute value 2", true)});
    const InitFailureFacts& x = OnlyFacts(found);
    CHECK(x.cause == InitCause::kCatalogued);
    CHECK(x.subsystem == Area::kUsage);
    CHECK(x.message == "nccl.usage");
    CHECK(RenderFinding(found[0].finding, NoCallSites()).fix == CauseNamed("usage")->fix);
  }
  // NCCL 2.27-2.31 plugin/net.cc's WARN "Failed to initialize any NET plugin", in a log.
  {
    InitEvidence e = WordsRank(1, "Failed to initialize any NET plugin", false);
    e.warnings.push_back("Failed to initialize any NET plugin");
    const std::vector<InitFinding> found = DiagnoseInit({e});  // x refers into it
    const InitFailureFacts& x = OnlyFacts(found);
    CHECK(x.subsystem == Area::kPlugin);
    CHECK(x.message == "nccl.plugin");
  }
  // The same words in a line that need not be NCCL's (no WARN, no traced
  // call): NCCL-only messages are not looked for in it.
  {
    const std::vector<InitFinding> found =
        DiagnoseInit({WordsRank(2, "Invalid config blocking attribute value 2", false)});
    const InitFailureFacts& x = OnlyFacts(found);
    CHECK(x.cause == InitCause::kUnknown);
  }
  // A cause init forensics measures has the catalogue's fix too.
  {
    const std::vector<InitFinding> found = DiagnoseInit({ShmRank(0, "node1", "/dev/shm/nccl-a")});
    REQUIRE(found.size() == 1);
    CHECK(RenderFinding(found[0].finding, NoCallSites()).fix == CauseNamed("shm")->fix);
  }
}

// Init forensics as facts: ranks with the same cause are one finding, told
// apart by the facts the report words them with, not by facts only the JSON
// carries; and the words come from report/, not from the analysis.

#include "analysis/init_failure.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

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

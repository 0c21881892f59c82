// The job model (model/job_model.h) on synthetic processes: what it keeps of
// each process once its trace is let go (how it ended, its last call, its
// init evidence), the memberships indexed across processes, and a process
// added twice kept once.

#include "model/job_model.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdint>
#include <optional>
#include <string>

#include "ncclwatch/trace_fields.h"
#include "synthetic_process.h"

namespace {

namespace f = ::ncclwatch::fields;
using ncclwatch::decoder::Fate;
using ncclwatch::decoder::JobModel;
using ncclwatch::decoder::ProcessRecord;
using ncclwatch::decoder::ProcessTrace;
using ncclwatch::testing::SyntheticProcess;

constexpr uint64_t kWorld = 0x3fa9c1d2e4b50617ULL;
constexpr uint64_t kSplit = 0x0123456789abcdefULL;

ProcessTrace Built(SyntheticProcess& p, const std::string& path) {
  ProcessTrace t = p.Build();
  t.path = path;
  return t;
}

}  // namespace

TEST_CASE("a process's record: how it ended, its last call, its init evidence", "[model][job]") {
  SyntheticProcess exited(0), killed(1), handled(2);
  exited.Init(kWorld, 0, 3).Collectives(kWorld, 0, 4).Destroy(kWorld).Exit(0);
  killed.Init(kWorld, 1, 3).Collectives(kWorld, 0, 2).Signal(SIGSEGV);
  // A signal its handler took, then more calls: not its end.
  handled.Init(kWorld, 2, 3).Signal(SIGTERM, /*disposition=*/2).Collectives(kWorld, 0, 4);

  const ProcessRecord a = ncclwatch::decoder::RecordOf(Built(exited, "a.trace"), 0);
  CHECK(a.index == 0);
  CHECK(a.path == "a.trace");
  CHECK(a.rank == 0);
  CHECK(a.fate.kind == Fate::kExited);
  CHECK(a.fate.exit_code == 0);
  REQUIRE(a.last.valid);
  CHECK(a.last.call == f::kCommDestroy);
  CHECK(a.last.comm == kWorld);
  CHECK(a.init.process == 0);
  CHECK(a.init.init_succeeded);
  CHECK(a.init.exit_code == 0);
  CHECK(a.init.end_ns == a.last_ns);

  const ProcessRecord b = ncclwatch::decoder::RecordOf(Built(killed, "b.trace"), 1);
  CHECK(b.fate.kind == Fate::kSignal);
  CHECK(b.fate.signo == SIGSEGV);
  CHECK(b.init.signo == SIGSEGV);
  REQUIRE(b.last.valid);
  CHECK(b.last.call == f::kAllReduce);
  CHECK(b.last.seq == 2);
  REQUIRE(b.last_collective.count(kWorld) == 1);
  CHECK(b.last_collective.at(kWorld).seq == 2);

  const ProcessRecord c = ncclwatch::decoder::RecordOf(Built(handled, "c.trace"), 2);
  CHECK(c.fate.kind == Fate::kNoEnd);
  CHECK(c.last.seq == 4);
}

TEST_CASE("the memberships indexed: the process of each rank, sizes, global ranks",
          "[model][job]") {
  SyntheticProcess r0(0), r1(1), r2(2), r3(3);
  r0.Init(kWorld, 0, 4).Init(kSplit, 0, 2).Exit(0);
  r1.Init(kWorld, 1, 4).Exit(0);
  r2.Init(kWorld, 2, 4).Init(kSplit, 1, 2).Exit(0);
  r3.Init(kWorld, 3, 4).Exit(0);
  JobModel job;
  CHECK(job.Add(Built(r0, "r0")) == std::optional<int>(0));
  CHECK(job.Add(Built(r1, "r1")) == std::optional<int>(1));
  CHECK(job.Add(Built(r2, "r2")) == std::optional<int>(2));
  CHECK(job.Add(Built(r3, "r3")) == std::optional<int>(3));
  REQUIRE(job.processes().size() == 4);
  CHECK(job.CommSize(kWorld) == 4);
  CHECK(job.CommSize(kSplit) == 2);
  CHECK(job.CommSize(0x77) == -1);
  CHECK(job.ProcessOf(kWorld, 3) == 3);
  CHECK(job.ProcessOf(kSplit, 1) == 2);
  CHECK(job.ProcessOf(kSplit, 2) == -1);
  // Rank 1 of the split is process 2, global rank 2.
  CHECK(job.GlobalRank(2, kSplit, 1) == 2);
  CHECK(job.GlobalRank(-1, kSplit, 1) == 1);  // no process: the communicator's rank
}

TEST_CASE("a process added twice is kept once, the copy listed", "[model][job][hostile]") {
  SyntheticProcess r0(0);
  r0.Init(kWorld, 0, 1).Collectives(kWorld, 0, 2).Exit(0);
  JobModel job;
  CHECK(job.Add(Built(r0, "a/rank0.trace")) == std::optional<int>(0));
  CHECK(job.Add(Built(r0, "b/rank0.trace")) == std::nullopt);
  REQUIRE(job.processes().size() == 1);
  REQUIRE(job.duplicates().size() == 1);
  CHECK(job.duplicates()[0].first == "b/rank0.trace");
  CHECK(job.duplicates()[0].second == "a/rank0.trace");
  CHECK(job.ProcessOf(kWorld, 0) == 0);
}

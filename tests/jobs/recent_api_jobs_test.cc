// What NCCL 2.29 to 2.32 added, in real jobs: 4 ranks of recent_api_job on
// the simulator with libncclwatch.so preloaded, diagnosed with `ncclwatch
// diagnose --json`, the verdict asserted exactly (kind, communicator,
// sequence number, ranks, field).
//
// In `recent_api_job config`, step k's AllReduceConfig is collective
// #(2k + (k + 1) / 2) of the world communicator: each step makes an
// AllReduceConfig and an AllReduce, and every even step a BroadcastConfig
// after them. NCCL numbers the collectives with a per-call config with the
// classic ones (an AllReduceConfig is an AllReduce to it), so the shim does.
//
// Built against an nccl.h older than 2.31 the Config collectives do not
// exist: those tests report themselves skipped.

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "support/traced_job.h"

namespace {

constexpr int kRanks = 4;

struct Scenario {
  jobs::TempDir dir;
  jobs::JobResult job;
  jobs::DiagnosisView diagnosis;
  std::string world;  // the world communicator's identity
};

// Runs recent_api_job on kRanks ranks with `args`; a job expected to hang
// gets `bound` seconds.
void Run(Scenario* s, const std::vector<std::string>& args, double bound = 60) {
  jobs::JobSpec spec = jobs::TracedJobSpec(kRanks, "recent_api_job", args, s->dir.path());
  spec.timeout_s = bound;
  s->job = jobs::RunJob(spec);
  REQUIRE(s->job.error.empty());
  s->diagnosis = jobs::Diagnose({s->dir.path()});
  s->world = jobs::CommId(s->dir.path(), 0, "ncclCommInitRank");
  INFO("diagnosis:\n" << s->diagnosis.output);
  REQUIRE(s->diagnosis.parsed);
  REQUIRE_FALSE(s->world.empty());
}

void RequireHealthy(const Scenario& s) {
  for (const auto& r : s.job.ranks) {
    INFO("rank output:\n" << r.output);
    REQUIRE(r.exit_code == 0);
  }
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 0);
  CHECK(s.diagnosis.verdict == "healthy");
  CHECK(s.diagnosis.findings.empty());
}

uint64_t ConfigStepSeq(int step) { return static_cast<uint64_t>(2 * step + (step + 1) / 2); }

// The diagnosis is a problem whose root cause is `kind` on `comm` at
// collective `seq`, naming `ranks`: that root cause.
const jobs::FindingView& RequireRoot(const Scenario& s, const std::string& kind,
                                     const std::string& comm, int64_t seq,
                                     const std::vector<int>& ranks) {
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(s.diagnosis.verdict == "problem");
  const jobs::FindingView* root = s.diagnosis.Root();
  REQUIRE(root != nullptr);
  CHECK(root->kind == kind);
  CHECK(root->comm == comm);
  CHECK(root->seq == seq);
  CHECK(root->ranks == ranks);
  return *root;
}

// `ncclwatch dump` of the process of global rank `rank`.
std::string Dump(const Scenario& s, int rank) {
  return jobs::RunNcclwatch("dump", {jobs::TraceOf(s.dir.path(), rank)}, false).output;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("Config collectives: numbered with the classic ones, their config recorded, healthy",
          "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 23100
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no Config collectives");
#else
  Scenario s;
  Run(&s, {"config", "--steps", "6"});
  RequireHealthy(s);
  // One collective numbering: step 3's AllReduceConfig is #8, the classic
  // AllReduce after it #9, and the config is recorded with the number.
  const std::string dump = Dump(s, 1);
  INFO(dump);
  CHECK(Has(dump, "coll_config AllReduceConfig comm=" + s.world + " seq=8 "));
  CHECK(Has(dump, " minCTAs=1 "));
  CHECK(Has(dump, " userProfilerTag=4"));
  CHECK(Has(dump, "collective AllReduceConfig comm=" + s.world + " rank=1 seq=8 count=1024"));
  CHECK(Has(dump, "collective AllReduce comm=" + s.world + " rank=1 seq=9 count=1024"));
  // Step 0's BroadcastConfig had a config, step 2's none (the plain call).
  CHECK(Has(dump, "coll_config BroadcastConfig comm=" + s.world + " seq=2 "));
  CHECK(Has(dump, "collective BroadcastConfig comm=" + s.world + " rank=1 seq=7 "));
  CHECK_FALSE(Has(dump, "coll_config BroadcastConfig comm=" + s.world + " seq=7 "));
#endif
}

TEST_CASE(
    "Config collectives: a rank calling the classic ones where the others pass a config "
    "is healthy",
    "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 23100
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no Config collectives");
#else
  Scenario s;
  Run(&s, {"config", "--steps", "6", "--plain", "2"});
  RequireHealthy(s);
  const std::string plain = Dump(s, 2), config = Dump(s, 0);
  INFO(plain);
  CHECK(Has(plain, "collective AllReduce comm=" + s.world + " rank=2 seq=8 count=1024"));
  CHECK(Has(config, "collective AllReduceConfig comm=" + s.world + " rank=0 seq=8 count=1024"));
#endif
}

TEST_CASE("Config collectives: a count mismatch is named with its sequence number",
          "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 23100
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no Config collectives");
#else
  Scenario s;
  Run(&s, {"config", "--steps", "6", "--bug", "count:2:3"}, 6);
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 1);
  CHECK(s.diagnosis.verdict == "problem");
  const jobs::FindingView* root = s.diagnosis.Root();
  REQUIRE(root != nullptr);
  CHECK(&s.diagnosis.findings.front() == root);
  CHECK(root->kind == "collective_mismatch");
  CHECK(root->comm == s.world);
  CHECK(root->seq == static_cast<int64_t>(ConfigStepSeq(3)));
  CHECK(root->ranks == std::vector<int>{2});
  CHECK(root->field == "count");
  CHECK(Has(root->detail, "rank 2 called AllReduce(count=1023, float32, sum) as collective #8"));
  CHECK(Has(root->detail, "where ranks 0-1,3 called AllReduce(count=1024, float32, sum)"));
#endif
}

TEST_CASE("Config collectives: a count mismatch between a classic and a Config call is named",
          "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 23100
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no Config collectives");
#else
  Scenario s;
  // Rank 1 calls the classic AllReduce, one element short, at step 1.
  Run(&s, {"config", "--steps", "6", "--plain", "1", "--bug", "count:1:1"}, 6);
  const jobs::FindingView* root =
      &RequireRoot(s, "collective_mismatch", s.world, static_cast<int64_t>(ConfigStepSeq(1)), {1});
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(root->field == "count");
#endif
}

TEST_CASE("device-API communicators: healthy, with a note that their traffic is not visible",
          "[recent_api]") {
  Scenario s;
  Run(&s, {"devcomm", "--steps", "3"});
  for (const auto& r : s.job.ranks) REQUIRE(r.exit_code == 0);
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 0);
  CHECK(s.diagnosis.verdict == "healthy");
  REQUIRE(s.diagnosis.findings.size() == 1);
  const jobs::FindingView& n = s.diagnosis.findings.front();
  CHECK(n.kind == "nccl_not_visible");
  CHECK(n.role == "note");
  CHECK(n.ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(Has(n.detail, "communicator " + s.world +
                          " (ranks 0-3) has device-API communicators (ncclDevCommCreate): "
                          "device-initiated communication in use: not visible"));
  const auto& items = n.raw.fields().at("not_visible").list_value().values();
  REQUIRE(items.size() == 4);
  for (const auto& v : items) {
    CHECK(v.struct_value().fields().at("reason").string_value() == "device_api");
    CHECK(v.struct_value().fields().at("comm").string_value() == s.world);
  }
  // The human report says it under the healthy verdict.
  const jobs::DiagnosisView human = jobs::Diagnose({s.dir.path()}, false);
  CHECK(human.output.rfind("HEALTHY, 1 note\n", 0) == 0);
  CHECK(Has(human.output, "device-initiated communication in use: not visible"));
}

TEST_CASE("a job without device-API communicators gets no such note", "[recent_api]") {
  Scenario s;
  Run(&s, {"shrink", "--exclude", "3", "--steps", "2"});
  RequireHealthy(s);
  CHECK_FALSE(Has(s.diagnosis.output, "device_api"));
}

// In `recent_api_job onesided`, rank r puts into rank r+1's window every step
// and waits for rank r-1's, and every odd step sends a bare signal and waits
// for one as well: from rank s to rank s+1, step k's put is signal
// #(k + k / 2), so step 2's put is signal #3.
TEST_CASE("one-sided: puts, signals and waits numbered per peer, healthy", "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 22900
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no one-sided calls");
#else
  Scenario s;
  Run(&s, {"onesided", "--steps", "4"});
  RequireHealthy(s);
  const std::string dump = Dump(s, 1);
  INFO(dump);
  CHECK(Has(dump, "one_sided PutSignal comm=" + s.world + " rank=1 to=2 signal=3 count=1024"));
  CHECK(Has(dump, "one_sided Signal comm=" + s.world + " rank=1 to=2 signal=2 "));
  CHECK(Has(dump, "one_sided WaitSignal comm=" + s.world + " rank=1 from=0 signals=3..3 "));
#endif
}

TEST_CASE("one-sided: a put that never came names the waiting rank and the peer", "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 22900
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no one-sided calls");
#else
  Scenario s;
  // Rank 1 skips its put to rank 2 at step 2: rank 2's wait for signal #3
  // never finishes, and the others then hang in the AllReduce rank 2 never
  // reaches.
  Run(&s, {"onesided", "--steps", "4", "--bug", "drop-put:1:2"}, 6);
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(s.diagnosis.exit_code == 1);
  CHECK(s.diagnosis.verdict == "problem");
  const jobs::FindingView* root = s.diagnosis.Root();
  REQUIRE(root != nullptr);
  CHECK(&s.diagnosis.findings.front() == root);
  CHECK(root->kind == "p2p_mismatch");
  CHECK(root->comm == s.world);
  CHECK(root->seq == 3);
  CHECK(root->ranks == std::vector<int>{1, 2});
  const auto& raw = root->raw.fields();
  CHECK(raw.at("one_sided").bool_value());
  CHECK(raw.at("sender").number_value() == 1);
  CHECK(raw.at("receiver").number_value() == 2);
  CHECK(raw.at("signals_sent").number_value() == 3);
  CHECK(raw.at("signals_awaited").number_value() == 4);
  CHECK(
      Has(root->detail, "rank 2 waits (ncclWaitSignal) for signal #3 from rank 1 on communicator " +
                            s.world.substr(0, 6)));
  CHECK(Has(root->detail, "which rank 1 never sent"));
  // Rank 2's absence from the AllReduce after it follows; it is not blamed first.
  for (const jobs::FindingView& f : s.diagnosis.findings) {
    if (&f == root) continue;
    CHECK(f.role != "root_cause");
  }
#endif
}

TEST_CASE("shrink: a mismatch after a shrink is named in the new communicator, with global ranks",
          "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 23100
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": its steps are Config ones");
#else
  Scenario s;
  // Rank 0 leaves; ranks 1-3 shrink it away and are ranks 0-2 of the new
  // communicator, whose step k collective is #k. Its rank 1 (global rank
  // 2) is one element short at step 1.
  Run(&s, {"shrink", "--exclude", "0", "--steps", "3", "--bug", "count:1:1"}, 6);
  const std::string shrunk = jobs::CommId(s.dir.path(), 1, "ncclCommShrink");
  REQUIRE_FALSE(shrunk.empty());
  CHECK(shrunk != s.world);
  const jobs::FindingView* root = &RequireRoot(s, "collective_mismatch", shrunk, 1, {2});
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(root->field == "count");
  CHECK(Has(root->detail, "of communicator " + shrunk.substr(0, 6) + " (3 ranks)"));
#endif
}

TEST_CASE("suspend: every rank suspends and resumes at one step, healthy", "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 22900
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no ncclCommSuspend");
#else
  Scenario s;
  Run(&s, {"suspend", "--steps", "3", "--suspend", "all:1", "--resume"});
  RequireHealthy(s);
  CHECK(Has(Dump(s, 2), "ncclCommResume"));
#endif
}

TEST_CASE("suspend: a rank that suspended and never resumed is named, the others wait for it",
          "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 22900
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no ncclCommSuspend");
#else
  Scenario s;
  // Rank 2 suspends the world communicator before step 1's AllReduce (#1)
  // and waits; ranks 0, 1 and 3 enter #1 and wait for it.
  Run(&s, {"suspend", "--steps", "3", "--suspend", "2:1"}, 15);
  const jobs::FindingView* root = &RequireRoot(s, "missing_rank", s.world, 1, {2});
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(root->String("did_instead") == "suspended the communicator and never resumed it");
  CHECK(Has(root->detail, "it called ncclCommSuspend on it after collective #0"));
  CHECK(Has(root->fix, "ncclCommResume"));
#endif
}

TEST_CASE("revoke: a rank that revoked the communicator while the others went on is named",
          "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 22900
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no ncclCommRevoke here");
#else
  Scenario s;
  // Rank 1 revokes the world communicator before step 1's AllReduce (#1)
  // and waits; ranks 0, 2 and 3 enter #1 and wait for it.
  Run(&s, {"suspend", "--steps", "3", "--suspend", "1:1", "--revoke"}, 15);
  const jobs::FindingView* root = &RequireRoot(s, "missing_rank", s.world, 1, {1});
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(root->String("did_instead") == "revoked the communicator");
  CHECK(Has(root->detail, "it called ncclCommRevoke on it after collective #0"));
#endif
}

// The ranks ncclCommGrow adds record the grown communicator under the grow
// id, the existing ranks under an identity derived from their parent; the
// existing root (it made the grow id) records both, and the decoder joins
// the two sides under the existing ranks' identity (model/
// grown_communicators.h), and what is split from it after.
TEST_CASE("grow: the gained and the existing ranks are one communicator, healthy", "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 22900
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no ncclCommGrow");
#else
  Scenario s;
  Run(&s, {"grow", "--existing", "2", "--steps", "2", "--split"});
  const std::string existing = jobs::CommId(s.dir.path(), 0, "ncclCommGrow");
  const std::string gained = jobs::CommId(s.dir.path(), 2, "ncclCommGrow");
  REQUIRE_FALSE(existing.empty());
  REQUIRE_FALSE(gained.empty());
  CHECK(existing != gained);  // as recorded: the two sides' identities
  CHECK(jobs::CommId(s.dir.path(), 1, "ncclCommGrow") == existing);
  CHECK(jobs::CommId(s.dir.path(), 3, "ncclCommGrow") == gained);
  // The halves split from it: derived from each side's identity too.
  CHECK(jobs::CommId(s.dir.path(), 0, "ncclCommSplit") !=
        jobs::CommId(s.dir.path(), 2, "ncclCommSplit"));
  RequireHealthy(s);
#endif
}

TEST_CASE("grow: a count mismatch on the grown communicator names the gained rank in it",
          "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 23100
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": its steps are Config ones");
#else
  Scenario s;
  // Global rank 3 (gained) is one element short at the grown communicator's
  // step 1, which is its collective #1.
  Run(&s, {"grow", "--existing", "2", "--steps", "3", "--bug", "count:3:1"}, 6);
  const std::string existing = jobs::CommId(s.dir.path(), 0, "ncclCommGrow");
  const jobs::FindingView* root = &RequireRoot(s, "collective_mismatch", existing, 1, {3});
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(root->field == "count");
  CHECK(Has(root->detail, "of communicator " + existing.substr(0, 6) + " (4 ranks)"));
#endif
}

TEST_CASE("grow: a mismatch on a communicator split from the grown one names both sides' ranks",
          "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 22900
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no ncclCommGrow");
#else
  Scenario s;
  // The odd half is global ranks 1 (existing) and 3 (gained); rank 3 is one
  // element short at the split's step 1, its collective #1.
  Run(&s, {"grow", "--existing", "2", "--steps", "2", "--split", "--bug", "split-count:3:1"}, 6);
  const std::string odd = jobs::CommId(s.dir.path(), 1, "ncclCommSplit");
  REQUIRE_FALSE(odd.empty());
  const jobs::FindingView* root = &RequireRoot(s, "collective_mismatch", odd, 1, {3});
  INFO("diagnosis:\n" << s.diagnosis.output);
  CHECK(root->field == "count");
  CHECK(Has(root->detail, "of communicator " + odd.substr(0, 6) + " (2 ranks)"));
#endif
}

TEST_CASE("grow: without the trace of the rank that made the grow id, the sides are not joined",
          "[recent_api]") {
#if NCCLWATCH_NCCL_HEADER_VERSION < 22900
  SKIP("built against nccl.h " << NCCLWATCH_NCCL_HEADER_VERSION << ": no ncclCommGrow");
#else
  Scenario s;
  Run(&s, {"grow", "--existing", "2", "--steps", "2"});
  for (const auto& r : s.job.ranks) REQUIRE(r.exit_code == 0);
  const std::string gained = jobs::CommId(s.dir.path(), 2, "ncclCommGrow");
  // Every trace but rank 0's, the root that links the two sides.
  std::vector<std::string> inputs;
  for (int r = 1; r < kRanks; ++r) inputs.push_back(jobs::TraceOf(s.dir.path(), r));
  const jobs::DiagnosisView d = jobs::Diagnose(inputs);
  INFO("diagnosis:\n" << d.output);
  CHECK(d.verdict != "healthy");
  const jobs::FindingView* root = d.Root();
  REQUIRE(root != nullptr);
  CHECK(root->kind == "missing_traces");
  // Rank 0 of the first communicator is missing; the grown communicator is
  // apart under each side's identity, each side missing the other's ranks
  // (and rank 0), and says why.
  const std::string existing = jobs::CommId(s.dir.path(), 1, "ncclCommGrow");
  using Ranks = std::map<std::string, std::vector<int> >;
  Ranks missing, unjoined;
  for (const jobs::FindingView& f : d.findings) {
    if (f.kind != "missing_traces") continue;
    missing[f.comm] = f.ranks;
    if (!f.Bool("grow_unjoined")) continue;
    unjoined[f.comm] = f.ranks;
    CHECK(Has(f.detail, "It was made by ncclCommGrow, and its two sides could not be joined"));
    CHECK(Has(f.fix, "ncclCommGetUniqueId"));
  }
  CHECK(missing == Ranks{{s.world, {0}}, {existing, {0, 2, 3}}, {gained, {0, 1}}});
  CHECK(unjoined == Ranks{{existing, {0, 2, 3}}, {gained, {0, 1}}});
#endif
}

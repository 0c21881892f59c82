// Link skew (analysis/link_skew.h) and the straggler warning with cause link
// it makes: in a job of tensor-parallel, data-parallel and pipeline stage
// pairs, a rank whose link is slow stretches the collectives of every pair
// it is in, once both members have arrived; the pairs are intersected to
// name it. A slow GPU or a slow host (the others wait before the
// collective, not in it) is not a link; random lateness names no one.

#include "analysis/link_skew.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "findings/finding.h"
#include "report/finding_text.h"
#include "synthetic_process.h"

namespace {

using ncclwatch::decoder::Diagnose;
using ncclwatch::decoder::Diagnosis;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::FindingKind;
using ncclwatch::decoder::JobAnalysis;
using ncclwatch::decoder::LinkSkew;
using ncclwatch::decoder::LinkStraggler;
using ncclwatch::decoder::StragglerFacts;
using namespace ncclwatch::testing;

constexpr uint64_t kMs = 1'000'000;  // ticks are nanoseconds

struct CommSpec {
  uint64_t id;
  std::vector<int> members;  // global ranks, in communicator rank order
  uint64_t slot;             // when in the step its collective is issued
};

// 8 ranks as train_loop --3d lays them out: tensor-parallel pairs (r / 2),
// data-parallel pairs (2 apart within each half), stage pairs (4 apart).
// With `tp_only`, the tensor-parallel pairs alone.
std::vector<CommSpec> Grid(bool tp_only = false) {
  std::vector<CommSpec> out;
  for (int i = 0; i < 4; ++i) out.push_back({0x7100 + uint64_t(i), {2 * i, 2 * i + 1}, 0});
  if (tp_only) return out;
  for (int i = 0; i < 4; ++i) {
    const int a = i % 2 + 4 * (i / 2);
    out.push_back({0xd100 + uint64_t(i), {a, a + 2}, 50 * kMs});
  }
  for (int i = 0; i < 4; ++i) out.push_back({0x5100 + uint64_t(i), {i, i + 4}, 100 * kMs});
  return out;
}

// `steps` steps 200 ms apart; in each, every communicator's collective at
// its slot. Rank r's host enqueues it `host(r, s)` after the slot, its GPU
// is busy until `gpu(r, s)` after it; every member finishes it 1 ms (plus
// up to 300 us) after the last one reached it, plus `link(c, s)`.
template <typename Host, typename Gpu, typename Link>
std::vector<SyntheticProcess> Job(const std::vector<CommSpec>& comms, uint64_t steps, Host host,
                                  Gpu gpu, Link link) {
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<uint64_t> finish(0, 300'000);
  std::vector<SyntheticProcess> ps;
  for (int r = 0; r < 8; ++r) ps.emplace_back(r);
  for (const CommSpec& c : comms)
    for (size_t i = 0; i < c.members.size(); ++i)
      ps[c.members[i]]
          .Init(c.id, static_cast<int32_t>(i), static_cast<int32_t>(c.members.size()))
          .Tracked(c.id);
  for (uint64_t s = 0; s < steps; ++s) {
    for (size_t ci = 0; ci < comms.size(); ++ci) {
      const CommSpec& c = comms[ci];
      const uint64_t base = 1000 * kMs + s * 200 * kMs + c.slot;
      uint64_t last = 0;
      std::vector<uint64_t> begin;
      for (int r : c.members) {
        begin.push_back(base + std::max<uint64_t>(host(r, s), gpu(r, s)));
        last = std::max(last, begin.back());
      }
      const uint64_t end = last + kMs + link(c, s);
      for (size_t i = 0; i < c.members.size(); ++i) {
        const int r = c.members[i];
        ps[r].At(base + host(r, s)).Collective(c.id, s);
        ps[r].GpuTime(c.id, s, begin[i], end + finish(rng));
      }
    }
  }
  for (const CommSpec& c : comms)
    for (int r : c.members) ps[r].Progress(c.id, steps).Destroy(c.id);
  for (SyntheticProcess& p : ps) p.Exit(0);
  return ps;
}

bool Has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::vector<LinkStraggler> Links(const std::vector<SyntheticProcess>& ps) {
  LinkSkew skew;
  for (size_t i = 0; i < ps.size(); ++i) skew.AddProcess(static_cast<int>(i), ps[i].Build());
  return skew.Stragglers();
}

Diagnosis DiagnoseJob(const std::vector<SyntheticProcess>& ps) {
  JobAnalysis job;
  for (const SyntheticProcess& p : ps) job.AddProcess(p.Build());
  job.Finish();
  return Diagnose(job);
}

std::vector<const Finding*> StragglerFindings(const Diagnosis& d) {
  std::vector<const Finding*> out;
  for (const Finding& f : d.findings)
    if (f.kind == FindingKind::kStraggler) out.push_back(&f);
  return out;
}

}  // namespace

TEST_CASE("a rank whose link is slow is named by the pairs it shares, with cause link",
          "[straggler]") {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  const auto ps = Job(
      Grid(), 60, [&](int, uint64_t) { return noise(rng); }, [](int, uint64_t) { return 0; },
      [](const CommSpec& c, uint64_t) { return Has(c.members, 5) ? 30 * kMs : 0; });
  const auto links = Links(ps);
  REQUIRE(links.size() == 1);
  CHECK(links[0].processes == std::vector<int>{5});
  REQUIRE(links[0].comms.size() == 3);
  for (const auto& c : links[0].comms) {
    CHECK(c.times_last == 60);
    CHECK(c.compared == 60);
    CHECK(c.kind_comms == 12);
    CHECK(c.median_late_ns >= int64_t{29'000'000});
    CHECK(c.median_late_ns <= int64_t{31'000'000});
    CHECK(c.usual_ns >= int64_t{1'000'000});
    CHECK(c.usual_ns <= int64_t{1'400'000});
  }

  const Diagnosis d = DiagnoseJob(ps);
  const auto findings = StragglerFindings(d);
  REQUIRE(findings.size() == 1);
  const Finding& f = *findings[0];
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(f.comm == uint64_t{0x5101});  // all three equally slow: the lowest identity
  const auto& facts = std::get<StragglerFacts>(f.facts);
  CHECK(facts.cause == StragglerFacts::Cause::kLink);
  CHECK(facts.link_ranks.empty());
  CHECK(facts.also_comms.size() == 2);
  CHECK(facts.times_last == 60);
  const auto text = ncclwatch::decoder::RenderFinding(f, ncclwatch::decoder::NoCallSites());
  INFO(text.detail);
  CHECK(text.detail.rfind("the link of rank 5 is slow: 60 of 60 AllReduces of communicator", 0) ==
        0);
  CHECK(text.detail.find("rank 5 is the one member they all share") != std::string::npos);
  CHECK(text.fix.find("ibstat") != std::string::npos);
  CHECK(text.fix.find("nvidia-smi nvlink -s") != std::string::npos);
}

TEST_CASE("one slow pair, with nothing else to intersect, names the link between the two",
          "[straggler]") {
  const auto ps = Job(
      Grid(/*tp_only=*/true), 60, [](int, uint64_t) { return 0; }, [](int, uint64_t) { return 0; },
      [](const CommSpec& c, uint64_t) { return Has(c.members, 5) ? 30 * kMs : 0; });
  const Diagnosis d = DiagnoseJob(ps);
  const auto findings = StragglerFindings(d);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0]->ranks == std::vector<int>{4, 5});
  const auto& facts = std::get<StragglerFacts>(findings[0]->facts);
  CHECK(facts.cause == StragglerFacts::Cause::kLink);
  CHECK(facts.link_ranks == std::vector<int>{4, 5});
  const auto text =
      ncclwatch::decoder::RenderFinding(*findings[0], ncclwatch::decoder::NoCallSites());
  CHECK(text.detail.rfind("the link between ranks 4 and 5 is slow", 0) == 0);
}

TEST_CASE("a slow GPU or a slow host makes the others wait before the collective: not a link",
          "[straggler]") {
  std::mt19937_64 rng(8);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  SECTION("a slow GPU") {
    const auto ps = Job(
        Grid(), 60, [&](int, uint64_t) { return noise(rng); },
        [](int r, uint64_t) { return r == 5 ? 30 * kMs : 0; },
        [](const CommSpec&, uint64_t) { return uint64_t{0}; });
    CHECK(Links(ps).empty());
    const Diagnosis d = DiagnoseJob(ps);
    for (const Finding* f : StragglerFindings(d)) {
      CHECK(f->ranks == std::vector<int>{5});
      CHECK(std::get<StragglerFacts>(f->facts).cause == StragglerFacts::Cause::kGpu);
    }
  }
  SECTION("a slow host") {
    const auto ps = Job(
        Grid(), 60, [&](int r, uint64_t) { return noise(rng) + (r == 5 ? 30 * kMs : 0); },
        [](int, uint64_t) { return 0; }, [](const CommSpec&, uint64_t) { return uint64_t{0}; });
    CHECK(Links(ps).empty());
    const Diagnosis d = DiagnoseJob(ps);
    const auto findings = StragglerFindings(d);
    REQUIRE_FALSE(findings.empty());
    for (const Finding* f : findings) {
      CHECK(f->ranks == std::vector<int>{5});
      CHECK(std::get<StragglerFacts>(f->facts).cause == StragglerFacts::Cause::kHost);
    }
  }
}

TEST_CASE("collectives slowed at random on every link name no slow link", "[straggler]") {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<uint64_t> late(0, 8 * kMs);
  std::bernoulli_distribution spike(0.2);
  const auto ps = Job(
      Grid(), 200, [&](int, uint64_t) { return late(rng); }, [&](int, uint64_t) { return 0; },
      [&](const CommSpec&, uint64_t) { return spike(rng) ? 20 * kMs : 0; });
  CHECK(Links(ps).empty());
  CHECK(StragglerFindings(DiagnoseJob(ps)).empty());
}

TEST_CASE("a link that turns slow mid-job is dated", "[straggler]") {
  const auto ps = Job(
      Grid(), 200, [](int, uint64_t) { return 0; }, [](int, uint64_t) { return 0; },
      [](const CommSpec& c, uint64_t s) { return Has(c.members, 2) && s >= 80 ? 30 * kMs : 0; });
  const auto links = Links(ps);
  REQUIRE(links.size() == 1);
  CHECK(links[0].processes == std::vector<int>{2});
  for (const auto& c : links[0].comms) {
    CHECK(c.began_later);
    CHECK(c.began_seq == 80);
    // Step 80's collective of that pair: at its slot (0, 50 or 100 ms) in the step.
    const int64_t step = static_cast<int64_t>(kRealtimeBase + 1000 * kMs + 80 * 200 * kMs);
    CHECK(c.began_ns >= step);
    CHECK(c.began_ns <= step + int64_t{100 * kMs});
    CHECK((c.began_ns - step) % int64_t{50 * kMs} == 0);
  }
}

// The same slow link over 100 steps, each process as its node's summary
// reads it: each communicator's last 64 GPU times kept and the rest counted.
// The link is named the same, judged on those 64, and says so.
TEST_CASE("a slow link judged on the GPU times a summary kept says so", "[straggler][summary]") {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<uint64_t> noise(0, 300'000);
  const auto ps = Job(
      Grid(), 100, [&](int, uint64_t) { return noise(rng); }, [](int, uint64_t) { return 0; },
      [](const CommSpec& c, uint64_t) { return Has(c.members, 5) ? 30 * kMs : 0; });
  LinkSkew skew;
  JobAnalysis job;
  for (size_t i = 0; i < ps.size(); ++i) {
    ncclwatch::decoder::ProcessTrace t = ps[i].Build();
    std::map<uint64_t, uint64_t> left;
    t.gpu_times.erase(std::remove_if(t.gpu_times.begin(), t.gpu_times.end(),
                                     [&](const auto& g) {
                                       const bool out = g.collectives <= 36;
                                       left[g.comm] += out;
                                       return out;
                                     }),
                      t.gpu_times.end());
    for (const auto& [comm, count] : left) t.left_out_gpu_times.push_back({comm, count});
    skew.AddProcess(static_cast<int>(i), t);
    job.AddProcess(t);
  }
  const auto links = skew.Stragglers();
  REQUIRE(links.size() == 1);
  CHECK(links[0].processes == std::vector<int>{5});
  for (const auto& c : links[0].comms) {
    CHECK(c.compared == 64);
    CHECK(c.summary_kept == 64);
  }
  job.Finish();
  const Diagnosis d = Diagnose(job);
  const auto findings = StragglerFindings(d);
  REQUIRE(findings.size() == 1);
  const auto& facts = std::get<StragglerFacts>(findings[0]->facts);
  CHECK(facts.cause == StragglerFacts::Cause::kLink);
  CHECK(facts.summary_kept == 64);
  const auto text =
      ncclwatch::decoder::RenderFinding(*findings[0], ncclwatch::decoder::NoCallSites());
  INFO(text.detail);
  CHECK(text.detail.find("; compared over the last 64 collectives of a rank that its node's "
                         "summary kept, not 4096 (a summary keeps a communicator's last 64 GPU "
                         "times: the traces hold more; read them to compare as many)") !=
        std::string::npos);
  // From the traces themselves, nothing is said.
  const auto whole = Links(ps);
  REQUIRE(whole.size() == 1);
  for (const auto& c : whole[0].comms) CHECK(c.summary_kept == 0);
}

// Node summaries of real jobs (issue 25): a job on the simulator goes wrong
// as in diagnose_jobs_test, its traces are split by rank into two "node"
// folders, each folder is summarized by `ncclwatch summarize` as a node's
// launcher would run it, and `ncclwatch diagnose` over the two summaries
// must name exactly what it names from the raw traces: the same verdict,
// and the same findings (kind, role, communicator, number, ranks), with the
// exact values the failure class has.
//
// In train_loop, step k's world AllReduce is collective #(k + k/4) of the
// world communicator (a Broadcast follows every 4th step's AllReduce).

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "model/process_trace.h"
#include "summary/summary_reader.h"
#include "support/traced_job.h"

namespace {

namespace fs = std::filesystem;

uint64_t StepSeq(int step) { return static_cast<uint64_t>(step + step / 4); }

// Two nodes' summaries of a job's traces: ranks [0, nranks/2) on node-a,
// the rest on node-b, each folder summarized on its own.
struct Nodes {
  jobs::TempDir tmp;
  std::string a, b;  // the summaries
  std::string dir(const std::string& node) const { return tmp.path() + "/" + node; }
};

// Copies rank `rank`'s trace (found in `traces`) into `node`'s folder.
void CopyRank(const std::string& traces, int rank, const std::string& to) {
  const std::string trace = jobs::TraceOf(traces, rank);
  REQUIRE_FALSE(trace.empty());
  fs::create_directories(to);
  fs::copy_file(trace, to + "/" + fs::path(trace).filename().string(),
                fs::copy_options::overwrite_existing);
}

std::string SummarizeFolder(const std::string& folder, const std::string& node,
                            const std::string& out_dir, int window) {
  fs::create_directories(out_dir);
  const std::string out = out_dir + "/" + node + ".ncws";
  std::vector<std::string> args = {folder, "-o", out, "--host", node};
  if (window > 0) {
    args.push_back("--window");
    args.push_back(std::to_string(window));
  }
  const jobs::DiagnosisView r = jobs::RunNcclwatch("summarize", args, false);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.output.rfind("wrote " + out + ": ", 0) == 0);
  return out;
}

void Summarize(const std::string& traces, int nranks, Nodes* n, int window = 0) {
  for (int rank = 0; rank < nranks; ++rank)
    CopyRank(traces, rank, n->dir(rank < nranks / 2 ? "a" : "b"));
  n->a = SummarizeFolder(n->dir("a"), "node-a", n->tmp.path() + "/summaries", window);
  n->b = SummarizeFolder(n->dir("b"), "node-b", n->tmp.path() + "/summaries", window);
}

// The same verdict and findings, kind by kind, from the summaries as from
// the traces; the summaries' diagnosis (of the folder holding both).
jobs::DiagnosisView RequireSame(const jobs::DiagnosisView& raw, const Nodes& n) {
  const jobs::DiagnosisView summed = jobs::Diagnose({n.tmp.path() + "/summaries"});
  INFO("from the traces:\n" << raw.output << "\nfrom the summaries:\n" << summed.output);
  REQUIRE(summed.parsed);
  CHECK(jobs::Differences(raw, summed) == std::vector<std::string>{});
  return summed;
}

struct Job {
  jobs::TempDir dir;
  jobs::JobResult result;
  jobs::DiagnosisView raw;
  std::string world;
};

void Run(Job* j, int nranks, const std::vector<std::string>& args, double bound,
         const std::vector<std::string>& env = {}) {
  jobs::JobSpec spec = jobs::TracedJobSpec(nranks, "train_loop", args, j->dir.path());
  for (const std::string& e : env) spec.env.push_back(e);
  spec.timeout_s = bound;
  j->result = jobs::RunJob(spec);
  REQUIRE(j->result.error.empty());
  j->raw = jobs::Diagnose({j->dir.path()});
  j->world = jobs::CommId(j->dir.path(), 0, "ncclCommInitRank");
  INFO("diagnosis:\n" << j->raw.output);
  REQUIRE(j->raw.parsed);
  REQUIRE_FALSE(j->world.empty());
}

const jobs::FindingView& RequireRoot(const jobs::DiagnosisView& d, const std::string& kind) {
  INFO("diagnosis:\n" << d.output);
  CHECK(d.exit_code == 1);
  CHECK(d.verdict == "problem");
  const jobs::FindingView* root = d.Root();
  REQUIRE(root != nullptr);
  REQUIRE(root->kind == kind);
  return *root;
}

}  // namespace

TEST_CASE("summaries: a healthy job with splits, groups and P2P is healthy from two nodes",
          "[summary]") {
  Job j;
  Run(&j, 8, {"--steps", "12", "--pipeline", "--tensor-parallel"}, 120);
  for (const auto& r : j.result.ranks) REQUIRE(r.exit_code == 0);
  CHECK(j.raw.verdict == "healthy");
  CHECK(j.raw.findings.empty());
  Nodes n;
  Summarize(j.dir.path(), 8, &n);
  const jobs::DiagnosisView s = RequireSame(j.raw, n);
  CHECK(s.verdict == "healthy");
  CHECK(s.exit_code == 0);
  // Every process came from a summary, named by its node and its path there.
  const auto& processes = s.raw.fields().at("processes").list_value().values();
  REQUIRE(processes.size() == 8);
  for (const auto& p : processes) {
    const std::string path = p.struct_value().fields().at("path").string_value();
    CHECK((path.rfind("node-a:" + n.dir("a") + "/", 0) == 0 ||
           path.rfind("node-b:" + n.dir("b") + "/", 0) == 0));
  }
}

TEST_CASE("summaries: a collective mismatch is named from two nodes as from the traces",
          "[summary]") {
  Job j;
  Run(&j, 8, {"--steps", "8", "--bug", "op:5:3"}, 6);
  const auto& f = RequireRoot(j.raw, "collective_mismatch");
  CHECK(f.comm == j.world);
  CHECK(f.seq == StepSeq(3));
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(f.field == "op");
  Nodes n;
  Summarize(j.dir.path(), 8, &n);
  const jobs::DiagnosisView s = RequireSame(j.raw, n);
  const auto& g = RequireRoot(s, "collective_mismatch");
  CHECK(g.comm == j.world);
  CHECK(g.seq == StepSeq(3));
  CHECK(g.ranks == std::vector<int>{5});
  CHECK(g.field == "op");
}

// explain is diagnose's pipeline: given a node's summary, another node's
// traces and the job's output, it judges them as diagnose does, one verdict.
TEST_CASE("summaries: explain over summaries, traces and logs mixed gives diagnose's verdict",
          "[summary][logs]") {
  Job j;
  Run(&j, 8, {"--steps", "8", "--bug", "op:5:3"}, 6);
  Nodes n;
  Summarize(j.dir.path(), 8, &n);
  const std::string output = n.tmp.path() + "/job.out";
  std::ofstream(output) << "step 1 loss 0.93\nstep 2 loss 0.91\n";
  const std::vector<std::string> mixed = {n.a, n.dir("b"), output};
  const jobs::DiagnosisView diagnosed = jobs::Diagnose(mixed);
  const jobs::DiagnosisView explained = jobs::Explain(mixed);
  INFO("diagnose:\n" << diagnosed.output << "\nexplain:\n" << explained.output);
  REQUIRE(diagnosed.parsed);
  REQUIRE(explained.parsed);
  CHECK(jobs::Differences(diagnosed, explained) == std::vector<std::string>{});
  CHECK(jobs::Differences(j.raw, explained) == std::vector<std::string>{});
  const auto& f = RequireRoot(explained, "collective_mismatch");
  CHECK(f.comm == j.world);
  CHECK(f.seq == StepSeq(3));
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(f.field == "op");
  CHECK(explained.raw.fields().at("processes").list_value().values_size() == 8);
}

TEST_CASE("summaries: a SIGKILLed rank is named dead from two nodes as from the traces",
          "[summary]") {
  Job j;
  Run(&j, 8, {"--steps", "8", "--bug", "kill:4:3"}, 6);
  const auto& f = RequireRoot(j.raw, "rank_died");
  CHECK(f.comm == j.world);
  CHECK(f.seq == StepSeq(3));
  CHECK(f.ranks == std::vector<int>{4});
  Nodes n;
  Summarize(j.dir.path(), 8, &n);
  const jobs::DiagnosisView s = RequireSame(j.raw, n);
  const auto& g = RequireRoot(s, "rank_died");
  CHECK(g.comm == j.world);
  CHECK(g.seq == StepSeq(3));
  CHECK(g.ranks == std::vector<int>{4});
}

TEST_CASE("summaries: a frozen rank is named while the job hangs, from summaries made live",
          "[summary]") {
  Job j;
  jobs::JobSpec spec =
      jobs::TracedJobSpec(4, "train_loop", {"--steps", "30", "--bug", "stop:1:3"}, j.dir.path());
  // Ended once the live summaries and diagnosis are taken; the bound is a backstop.
  spec.timeout_s = 300;
  jobs::LiveJob job(spec);
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  // Each node summarizes its own traces while the job hangs; the traces and
  // the summaries are then diagnosed while its processes still live.
  Nodes n;
  Summarize(j.dir.path(), 4, &n);
  const jobs::DiagnosisView raw = jobs::Diagnose({j.dir.path()});
  const jobs::DiagnosisView s = RequireSame(raw, n);
  j.result = job.End();
  REQUIRE(j.result.error.empty());
  const auto& f = RequireRoot(raw, "rank_frozen");
  CHECK(f.seq == 3);
  CHECK(f.ranks == std::vector<int>{1});
  CHECK(f.String("state") == "stopped");
  const auto& g = RequireRoot(s, "rank_frozen");
  CHECK(g.comm == f.comm);
  CHECK(g.seq == 3);
  CHECK(g.ranks == std::vector<int>{1});
  CHECK(g.String("state") == "stopped");
}

TEST_CASE("summaries: the straggler is named from two nodes with the same figures", "[summary]") {
  Job j;
  Run(&j, 8,
      {"--steps", "80", "--tensor-parallel", "--pipeline", "--step-ms", "10", "--slow-host",
       "5:0:40"},
      60);
  for (const auto& r : j.result.ranks) REQUIRE(r.exit_code == 0);
  CHECK(j.raw.verdict == "healthy");
  const jobs::FindingView* f = j.raw.First("straggler");
  REQUIRE(f != nullptr);
  CHECK(f->role == "warning");
  CHECK(f->comm == j.world);
  CHECK(f->ranks == std::vector<int>{5});
  Nodes n;
  Summarize(j.dir.path(), 8, &n);
  const jobs::DiagnosisView s = RequireSame(j.raw, n);
  const jobs::FindingView* g = s.First("straggler");
  REQUIRE(g != nullptr);
  CHECK(g->comm == j.world);
  CHECK(g->ranks == std::vector<int>{5});
  // The same calls were compared: the same figures.
  for (const char* key : {"times_last", "compared", "gapped", "began_seq"}) {
    INFO(key);
    CHECK(g->raw.fields().at(key).number_value() == f->raw.fields().at(key).number_value());
  }
  CHECK(g->detail == f->detail);
}

// The same kind of straggler over 700 steps (about 875 world collectives),
// its nodes summarized with --window 128: each rank's middle block is left
// out (#256-#511), so the straggler is judged on the calls after it, and
// its figures say the summaries kept no more than those.
TEST_CASE("summaries: a straggler judged on a small window's calls says how many were kept",
          "[summary]") {
  Job j;
  Run(&j, 4, {"--steps", "700", "--step-ms", "1", "--slow-host", "2:0:10"}, 120);
  for (const auto& r : j.result.ranks) REQUIRE(r.exit_code == 0);
  const jobs::FindingView* f = j.raw.First("straggler");
  REQUIRE(f != nullptr);
  CHECK(f->ranks == std::vector<int>{2});
  CHECK(f->raw.fields().count("summary_kept") == 0);
  const double compared = f->raw.fields().at("compared").number_value();
  REQUIRE(compared > 768);
  Nodes n;
  Summarize(j.dir.path(), 4, &n, 128);
  const jobs::DiagnosisView s = jobs::Diagnose({n.tmp.path() + "/summaries"});
  INFO("from the traces:\n" << j.raw.output << "\nfrom the summaries:\n" << s.output);
  REQUIRE(s.parsed);
  const jobs::FindingView* g = s.First("straggler");
  REQUIRE(g != nullptr);
  CHECK(g->comm == j.world);
  CHECK(g->ranks == std::vector<int>{2});
  const auto& x = g->raw.fields();
  REQUIRE(x.count("summary_kept") == 1);
  CHECK(x.at("summary_kept").number_value() == x.at("compared").number_value());
  CHECK(x.at("compared").number_value() == compared - 512);
  CHECK(x.at("first_seq").number_value() == 512);
  CHECK(g->detail.find("collectives of a rank that its node's summary kept, not 4096") !=
        std::string::npos);
}

// A slow GPU (the simulator's, rank 2, 20 ms on each of its operations)
// over 150 steps: its node's summary keeps each communicator's last 64 GPU
// times and counts the rest, so the slow GPU is named from the summaries
// too, judged on those 64, and says so.
TEST_CASE("summaries: a slow GPU judged on the GPU times kept says how many", "[summary]") {
  Job j;
  Run(&j, 4, {"--steps", "150", "--step-ms", "5"}, 120, {"NCCLSIM_SLOW_GPU=2:0:20"});
  for (const auto& r : j.result.ranks) REQUIRE(r.exit_code == 0);
  const jobs::FindingView* f = j.raw.First("straggler");
  REQUIRE(f != nullptr);
  CHECK(f->ranks == std::vector<int>{2});
  CHECK(f->String("cause") == "gpu");
  CHECK(f->raw.fields().count("summary_kept") == 0);
  CHECK(f->raw.fields().at("compared").number_value() > 64);
  Nodes n;
  Summarize(j.dir.path(), 4, &n);
  // The same verdict and warning, but for when it began: the traces date
  // it from #0, the summaries from the first of the GPU times they kept.
  const jobs::DiagnosisView s = jobs::Diagnose({n.tmp.path() + "/summaries"});
  INFO("from the traces:\n" << j.raw.output << "\nfrom the summaries:\n" << s.output);
  REQUIRE(s.parsed);
  CHECK(s.verdict == j.raw.verdict);
  CHECK(s.findings.size() == j.raw.findings.size());
  const jobs::FindingView* g = s.First("straggler");
  REQUIRE(g != nullptr);
  CHECK(g->comm == f->comm);
  CHECK(g->ranks == std::vector<int>{2});
  CHECK(g->String("cause") == "gpu");
  CHECK(g->seq == g->raw.fields().at("first_seq").number_value());
  const auto& x = g->raw.fields();
  REQUIRE(x.count("summary_kept") == 1);
  CHECK(x.at("summary_kept").number_value() <= 64);
  CHECK(x.at("compared").number_value() <= 64);
  CHECK(g->detail.find("collectives of a rank that its node's summary kept, not 4096") !=
        std::string::npos);
}

// Node a's traces copied while the job ran (its ranks stop in the middle,
// for the diagnosis), node b's at the end; each summarized with a window of
// 64. Node b's summary leaves out the blocks where node a's ranks stopped,
// so those calls were not compared: the verdict says so and names node b.
TEST_CASE("summaries: a window too small for the analysis is said, with the node to read in full",
          "[summary]") {
  Job j;
  jobs::JobSpec spec =
      jobs::TracedJobSpec(4, "train_loop", {"--steps", "6000", "--step-ms", "1"}, j.dir.path());
  spec.timeout_s = 120;
  Nodes n;
  jobs::LiveJob job(spec);
  // Node a's snapshot once its ranks are past collective #2,100 (blocks 0-7
  // of 256 calls behind them), long before the end (#7,499).
  uint64_t reached = 0;
  for (int i = 0; i < 600 && reached < 2100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    reached = UINT64_MAX;
    for (int rank = 0; rank < 2; ++rank) {
      const std::string trace = jobs::TraceOf(j.dir.path(), rank);
      auto t =
          trace.empty()
              ? absl::StatusOr<ncclwatch::decoder::ProcessTrace>(absl::NotFoundError("not yet"))
              : ncclwatch::decoder::LoadProcessTrace(trace);
      reached = std::min<uint64_t>(
          reached, t.ok() && !t->collectives.empty() ? t->collectives.back().seq : 0);
    }
    if (reached >= 2100) {
      CopyRank(j.dir.path(), 0, n.dir("a"));
      CopyRank(j.dir.path(), 1, n.dir("a"));
    }
  }
  j.result = job.Wait();
  REQUIRE(j.result.error.empty());
  REQUIRE(reached >= 2100);
  j.world = jobs::CommId(j.dir.path(), 0, "ncclCommInitRank");
  for (const auto& r : j.result.ranks) REQUIRE(r.exit_code == 0);
  CopyRank(j.dir.path(), 2, n.dir("b"));
  CopyRank(j.dir.path(), 3, n.dir("b"));
  // Ranks 0-1's traces stop where the copy was taken.
  const std::vector<std::string> copies = {
      jobs::TraceOf(n.dir("a"), 0), jobs::TraceOf(n.dir("a"), 1), jobs::TraceOf(n.dir("b"), 2),
      jobs::TraceOf(n.dir("b"), 3)};
  const jobs::DiagnosisView raw = jobs::Diagnose(copies);
  n.a = SummarizeFolder(n.dir("a"), "node-a", n.tmp.path() + "/summaries", 64);
  n.b = SummarizeFolder(n.dir("b"), "node-b", n.tmp.path() + "/summaries", 64);
  const jobs::DiagnosisView s = jobs::Diagnose({n.tmp.path() + "/summaries"});
  INFO("from the traces:\n" << raw.output << "\nfrom the summaries:\n" << s.output);
  REQUIRE(raw.parsed);
  REQUIRE(s.parsed);
  // Never healthy over the gap; the cause the traces show is named the same.
  CHECK(s.verdict == "problem");
  const jobs::FindingView* root = raw.Root();
  REQUIRE(root != nullptr);
  const jobs::FindingView* sroot = s.Root();
  REQUIRE(sroot != nullptr);
  CHECK(sroot->kind == root->kind);
  CHECK(sroot->comm == root->comm);
  CHECK(sroot->seq == root->seq);
  CHECK(sroot->ranks == root->ranks);
  // The note: what node b's summary left out was not compared with ranks 0-1.
  const jobs::FindingView* gap = s.First("summary_gap");
  REQUIRE(gap != nullptr);
  CHECK(gap->role == "note");
  CHECK(gap->comm == j.world);
  CHECK(gap->ranks == std::vector<int>{2, 3});
  CHECK(gap->detail.find("could not see calls the node summaries left out") != std::string::npos);
  CHECK(gap->fix.find("read the full traces of node-b (" + n.b + ")") == 0);
  const auto& g = gap->raw.fields().at("gaps").list_value().values();
  REQUIRE_FALSE(g.empty());
  const auto& first = g[0].struct_value().fields();
  CHECK(first.at("kind").string_value() == "not_compared");
  CHECK(first.at("left_out_nodes").list_value().values(0).string_value() == "node-b (" + n.b + ")");
  // The block where ranks 0-1 stopped is among those named.
  bool covers = false;
  for (const auto& x : g) {
    const auto& fx = x.struct_value().fields();
    covers |= fx.at("first_seq").number_value() <= static_cast<double>(reached) &&
              static_cast<double>(reached) <= fx.at("last_seq").number_value() + 2048;
  }
  CHECK(covers);
}

// What a real node's summary costs (issue 25: under 1 MiB a node): 8 ranks
// of train_loop's two communicators (world and tensor-parallel), 8,000
// steps, summarized as one node with the default window, and diagnosed
// from it as from the traces.
// How many sends and receives a summary left out, from what `summarize`
// printed ("... N sends and receives left out as digests ...").
uint64_t SendsLeftOut(const std::string& folder, const std::string& out, int window) {
  const jobs::DiagnosisView r = jobs::RunNcclwatch(
      "summarize", {folder, "-o", out, "--window", std::to_string(window)}, false);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.output.find(" sends and receives left out");
  REQUIRE(at != std::string::npos);
  const size_t from = r.output.rfind(' ', at - 1);
  return std::stoull(r.output.substr(from + 1, at - from - 1));
}

// A pipeline job of 1,200 steps summarized with --window 64: the middle of
// each rank's sends to its next stage (and receives from its previous one)
// is left out as digests, compared across the nodes by digest, and the job
// is as healthy from the summaries as from the traces.
TEST_CASE("summaries: a pipeline job's sends left out in the middle are compared by digest",
          "[summary]") {
  Job j;
  Run(&j, 4, {"--steps", "1200", "--pipeline"}, 120);
  for (const auto& r : j.result.ranks) REQUIRE(r.exit_code == 0);
  CHECK(j.raw.verdict == "healthy");
  Nodes n;
  Summarize(j.dir.path(), 4, &n, 64);
  const jobs::DiagnosisView s = RequireSame(j.raw, n);
  CHECK(s.verdict == "healthy");
  CHECK(s.First("summary_gap") == nullptr);
  CHECK(SendsLeftOut(n.dir("a"), n.tmp.path() + "/again.ncws", 64) > 0);
  // At the default window too: sends keep at most 256 at each end.
  CHECK(SendsLeftOut(n.dir("a"), n.tmp.path() + "/default.ncws", 4096) > 0);
}

// The same job with a send one element short at step 600 (rank 2 to 3): it
// hangs there. Summarized with --window 64, the sends before it are left
// out (#256-#511), and the mismatch is named from the summaries as from the
// traces.
TEST_CASE("summaries: a send of the wrong size is named from summaries that left sends out",
          "[summary]") {
  Job j;
  Run(&j, 4, {"--steps", "1200", "--pipeline", "--bug", "p2p-count:2:600"}, 8);
  const auto& f = RequireRoot(j.raw, "p2p_mismatch");
  CHECK(f.comm == j.world);
  CHECK(f.seq == 600);
  CHECK(f.ranks == std::vector<int>{2, 3});
  Nodes n;
  Summarize(j.dir.path(), 4, &n, 64);
  CHECK(SendsLeftOut(n.dir("b"), n.tmp.path() + "/again.ncws", 64) > 0);
  const jobs::DiagnosisView s = RequireSame(j.raw, n);
  const auto& g = RequireRoot(s, "p2p_mismatch");
  CHECK(g.seq == 600);
  CHECK(g.ranks == std::vector<int>{2, 3});
  CHECK(s.First("summary_gap") == nullptr);
}

TEST_CASE("summaries: a real 8-rank node of two communicators is under 1 MiB at the default window",
          "[summary]") {
  Job j;
  Run(&j, 8, {"--steps", "8000", "--tensor-parallel"}, 240);
  for (const auto& r : j.result.ranks) REQUIRE(r.exit_code == 0);
  CHECK(j.raw.verdict == "healthy");
  Nodes n;
  const std::string out = SummarizeFolder(j.dir.path(), "node-a", n.tmp.path() + "/summaries", 0);
  const uintmax_t bytes = fs::file_size(out);
  INFO("the summary: " << bytes << " bytes");
  CHECK(bytes < (uintmax_t{1} << 20));
  const jobs::DiagnosisView s = RequireSame(j.raw, n);
  CHECK(s.verdict == "healthy");
}

TEST_CASE(
    "summaries: a real node's records read back as its traces' (inventory, system calls, "
    "GPU progress and times), most kept as differences",
    "[summary]") {
  Job j;
  Run(&j, 4, {"--steps", "300", "--pipeline"}, 120);
  for (const auto& r : j.result.ranks) REQUIRE(r.exit_code == 0);
  Nodes n;
  const std::string out = n.tmp.path() + "/node-a.ncws";
  const jobs::DiagnosisView made =
      jobs::RunNcclwatch("summarize", {j.dir.path(), "-o", out, "--host", "node-a"}, false);
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  // Most records but calls kept as differences: every process's progress
  // records but its first of each communicator, its inventory, its system
  // calls after the first of each kind.
  const size_t kept_at = made.output.find(" records kept (");
  REQUIRE(kept_at != std::string::npos);
  const uint64_t differences = std::stoull(made.output.substr(kept_at + 15));
  CHECK(differences >= 4 * 100);
  absl::StatusOr<std::unique_ptr<ncclwatch::decoder::SummaryReader>> reader =
      ncclwatch::decoder::SummaryReader::Open(out);
  REQUIRE(reader.ok());
  size_t read = 0;
  for (;;) {
    ncclwatch::decoder::ProcessTrace s;
    absl::StatusOr<bool> more = (*reader)->Next(&s);
    REQUIRE(more.ok());
    if (!*more) break;
    ++read;
    const std::string path = s.path.substr(s.path.find(':') + 1);
    absl::StatusOr<ncclwatch::decoder::ProcessTrace> raw =
        ncclwatch::decoder::LoadProcessTrace(path);
    REQUIRE(raw.ok());
    INFO(path);
    // The inventory, every field a rank's own (its RANK, LOCAL_RANK).
    const ncclwatch::decoder::InventoryInfo& a = s.inventory;
    const ncclwatch::decoder::InventoryInfo& b = raw->inventory;
    REQUIRE(b.present);
    CHECK(a.present);
    CHECK(a.at_load == b.at_load);
    CHECK(a.env == b.env);
    REQUIRE(a.Env("RANK") != nullptr);
    CHECK(*a.Env("RANK") == std::to_string(s.global_rank));
    CHECK(a.nccl_version == b.nccl_version);
    CHECK(a.nccl_path == b.nccl_path);
    CHECK(a.cuda_driver_version == b.cuda_driver_version);
    CHECK(a.interfaces.size() == b.interfaces.size());
    CHECK(a.shm_size == b.shm_size);
    CHECK(a.command_line == b.command_line);
    // The records kept whole before, each now as its difference from the one
    // before it: the same events.
    CHECK(s.modules.size() == raw->modules.size());
    REQUIRE(s.syscalls.size() == raw->syscalls.size());
    for (size_t i = 0; i < s.syscalls.size(); ++i) {
      CHECK(s.syscalls[i].kind == raw->syscalls[i].kind);
      CHECK(s.syscalls[i].ret == raw->syscalls[i].ret);
      CHECK(s.syscalls[i].path == raw->syscalls[i].path);
    }
    REQUIRE_FALSE(s.progress.empty());
    REQUIRE(s.progress.size() == raw->progress.size());  // 300 steps: none left out
    for (size_t i = 0; i < s.progress.size(); ++i) {
      CHECK(s.progress[i].t == raw->progress[i].t);
      CHECK(s.progress[i].comm == raw->progress[i].comm);
      CHECK(s.progress[i].collectives == raw->progress[i].collectives);
      CHECK(s.progress[i].enqueued_t == raw->progress[i].enqueued_t);
      CHECK(s.progress[i].pending == raw->progress[i].pending);
    }
    // GPU times: the last 64 of each communicator.
    REQUIRE_FALSE(s.gpu_times.empty());
    const auto& g = raw->gpu_times;
    for (const ncclwatch::decoder::GpuTimeEvent& e : s.gpu_times) {
      bool found = false;
      for (const ncclwatch::decoder::GpuTimeEvent& r : g)
        found |= r.comm == e.comm && r.seq == e.seq && r.call == e.call && r.end_ns == e.end_ns &&
                 r.gpu_ns == e.gpu_ns;
      CHECK(found);
    }
  }
  CHECK(read == 4);
}

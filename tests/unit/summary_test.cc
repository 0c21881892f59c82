// Node summaries (decoder/summary/): what BuildSummary keeps reads back
// through SummaryReader as the trace's own rows, what it leaves out comes
// back as the digests of its blocks, a job is diagnosed from summaries as
// from its traces, a difference inside a left-out block is a summary_gap,
// and torn, cut or crafted summaries are refused with one line.
//
// The traces are written by the shim's own ring writer
// (tests/bench/synthetic_trace.h), into a temporary folder.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/diagnose_evidence.h"
#include "commands/diagnose.h"
#include "findings/collective_signature.h"
#include "findings/finding.h"
#include "model/process_trace.h"
#include "report/finding_text.h"
#include "report/status_report.h"
#include "summary/byte_cursor.h"
#include "summary/call_digest.h"
#include "summary/job_inputs.h"
#include "summary/summary_format.h"
#include "summary/summary_reader.h"
#include "summary/summary_writer.h"
#include "support/traced_job.h"
#include "synthetic_trace.h"
#include "trace/trace_file.h"

namespace {

namespace fs = std::filesystem;
using namespace ncclwatch::decoder;

std::vector<std::string> Traces(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".trace") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

void WriteJob(const std::string& dir, const ncclwatch::bench::SyntheticJob& job) {
  fs::create_directories(dir);
  std::string error;
  REQUIRE(ncclwatch::bench::WriteSyntheticJob(dir, job, &error));
}

// `job`'s traces, written into `dir`: one per rank it writes, sorted.
std::vector<std::string> WrittenTraces(const std::string& dir,
                                       const ncclwatch::bench::SyntheticJob& job) {
  WriteJob(dir, job);
  std::vector<std::string> traces = Traces(dir);
  const int end = job.end_rank < 0 ? job.ranks : job.end_rank;
  REQUIRE(traces.size() == static_cast<size_t>(end - job.first_rank));
  return traces;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string Summarize(const std::vector<std::string>& traces, uint32_t window,
                      const std::string& host, SummaryStats* stats = nullptr) {
  SummaryOptions options;
  options.window = window;
  options.host = host;
  absl::StatusOr<std::string> s = BuildSummary(traces, options, stats);
  REQUIRE(s.ok());
  return *s;
}

std::vector<ProcessTrace> ReadAll(const std::string& path) {
  absl::StatusOr<std::unique_ptr<SummaryReader>> r = SummaryReader::Open(path);
  INFO((r.ok() ? "" : std::string(r.status().message())));
  REQUIRE(r.ok());
  std::vector<ProcessTrace> out;
  for (;;) {
    ProcessTrace t;
    absl::StatusOr<bool> more = (*r)->Next(&t);
    REQUIRE(more.ok());
    if (!*more) break;
    out.push_back(std::move(t));
  }
  return out;
}

// The collectives of a trace by number.
std::map<uint64_t, CollectiveEvent> BySeq(const ProcessTrace& t) {
  std::map<uint64_t, CollectiveEvent> out;
  for (const CollectiveEvent& e : t.collectives) out[e.seq] = e;
  return out;
}

// The diagnosis of files (traces or summaries), as `ncclwatch diagnose` makes it.
EvidenceDiagnosis DiagnoseFiles(const std::vector<std::string>& files) {
  absl::StatusOr<EvidenceDiagnosis> d = DiagnoseEvidence(JobEvidence{files, {}, {}});
  INFO((d.ok() ? "" : std::string(d.status().message())));
  REQUIRE(d.ok());
  return std::move(*d);
}

// Each finding's kind and text, a line each (for a failed check to show).
std::string FindingsText(const Diagnosis& d) {
  std::string out;
  for (const Finding& f : d.findings)
    out += std::string(KindName(f.kind)) + ": " + RenderFinding(f, NoCallSites()).detail + "\n";
  return out;
}

const Finding* Root(const Diagnosis& d) {
  for (const Finding& f : d.findings)
    if (f.role == FindingRole::kRootCause) return &f;
  return nullptr;
}

// A summary's bytes with a well-formed header around `body` (what a crafted
// file needs to get past the checksum).
std::string WithHeader(const std::string& body, uint32_t version = kSummaryVersion) {
  std::string file;
  ByteSink h(&file);
  h.Raw(kSummaryMagic, sizeof(kSummaryMagic));
  h.U32(version);
  h.U32(kSummaryHeaderBytes);
  h.U64(kSummaryHeaderBytes + body.size());
  h.U64(SummaryChecksum(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  return file + body;
}

// A body with one trace section whose contents `fill` writes.
template <typename Fill>
std::string OneTrace(Fill fill, uint64_t gpu_counts = 0) {
  std::string section;
  ByteSink s(&section);
  s.String("/tmp/x.trace");
  s.U32(1);   // clock
  s.U32(42);  // pid
  s.U64(1);   // created
  s.String("h");
  s.U64(1);  // read_ns
  for (int i = 0; i < 8; ++i) s.Varint(0);
  s.U8(0);
  s.Varint(0);           // records
  s.Varint(0);           // unparsed
  s.Varint(0);           // groups left out
  s.Varint(gpu_counts);  // communicators with GPU times left out (version 3)
  fill(s);
  std::string body;
  ByteSink b(&body);
  b.String("node");
  b.Varint(4096);
  b.Varint(kLeftOutBlock);
  b.String("");  // the node's inventory: none
  b.Varint(1);
  b.Varint(section.size());
  b.Raw(section.data(), section.size());
  b.Varint(0);  // unreadable
  return body;
}

// A crafted section's left-out calls: no collective runs, then one run of
// sends or receives (communicator 7, rank 0, peer 1) with `send` as its
// direction byte, from `first_block`, of `blocks` blocks (the digests, if
// any, are the caller's to write).
void OneSendRun(ByteSink& s, uint8_t send, uint64_t first_block, uint64_t blocks) {
  s.Varint(0);
  s.Varint(1);
  s.Varint(7);
  s.Zigzag(0);
  s.Zigzag(1);
  s.U8(send);
  s.Varint(first_block);
  s.Varint(blocks);
}

}  // namespace

TEST_CASE("summary round trip: kept calls read back as the trace's rows, the middle as digests",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 4;
  job.calls = 10000;
  const std::vector<std::string> traces = WrittenTraces(tmp.path() + "/traces", job);
  SummaryStats stats;
  const std::string bytes = Summarize(traces, 100, "node7", &stats);
  // Calls #0-#99 and #9900-#9999 are the windows; kept to the 256-call
  // grid: #0-#255 and #9728-#9999, the middle (blocks 1-37) left out.
  CHECK(stats.traces == 4);
  CHECK(stats.collectives_left_out == 4 * 37 * kLeftOutBlock);
  CHECK(stats.unreadable.empty());
  const std::string path = tmp.path() + "/node7.ncws";
  WriteFile(path, bytes);
  CHECK(IsSummaryFile(path));
  CHECK_FALSE(IsSummaryFile(traces[0]));
  const std::vector<ProcessTrace> read = ReadAll(path);
  REQUIRE(read.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    absl::StatusOr<ProcessTrace> raw = LoadProcessTrace(traces[i]);
    REQUIRE(raw.ok());
    const ProcessTrace& s = read[i];
    CHECK(s.path == "node7:" + fs::absolute(traces[i]).lexically_normal().string());
    CHECK(s.summary == path);
    CHECK(s.summary_host == "node7");
    CHECK(s.pid == raw->pid);
    CHECK(s.host == raw->host);
    CHECK(s.global_rank == raw->global_rank);
    CHECK(s.world_size == raw->world_size);
    CHECK(s.created_realtime_ns == raw->created_realtime_ns);
    CHECK(s.read_ns > 0);
    CHECK(s.records == raw->records);
    CHECK(s.stats.ring_claimed == raw->stats.ring_claimed);
    CHECK(s.comms.size() == raw->comms.size());
    CHECK(s.end.has_value() == raw->end.has_value());
    CHECK(s.anchors.size() == raw->anchors.size());
    // Every kept collective is the trace's own, field for field.
    const auto raw_by_seq = BySeq(*raw);
    const auto kept = BySeq(s);
    CHECK(kept.size() == 256 + 272);
    for (const auto& [seq, e] : kept) {
      CHECK((seq < 256 || seq >= 9728));
      const CollectiveEvent& r = raw_by_seq.at(seq);
      CHECK(e.t == r.t);
      CHECK(e.count == r.count);
      CHECK(e.call == r.call);
      CHECK(e.datatype == r.datatype);
      CHECK(e.caller == r.caller);
      CHECK(e.rank == r.rank);
      CHECK(e.result == r.result);
    }
    // The middle: one run of blocks 1-37, each the digest of its calls.
    REQUIRE(s.left_out.size() == 1);
    const LeftOutCalls& l = s.left_out[0];
    CHECK(l.rank == static_cast<int32_t>(i));
    CHECK(l.first_block == 1);
    CHECK(l.calls == 37 * kLeftOutBlock);
    REQUIRE(l.digests.size() == 37);
    for (size_t b = 0; b < 37; ++b) {
      uint64_t digest = 0;
      for (uint64_t seq = (b + 1) * kLeftOutBlock; seq < (b + 2) * kLeftOutBlock; ++seq)
        digest += CallDigest(seq, CollectiveSignature::Of(raw_by_seq.at(seq)));
      CHECK(l.digests[b] == digest);
    }
    // The stream holds its start, as the trace's does.
    REQUIRE(s.streams.size() == raw->streams.size());
    CHECK(s.streams[0].holds_start == raw->streams[0].holds_start);
  }
}

TEST_CASE("summary: sends left out as digests, progress and inventories as differences",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 4;
  job.calls = 2000;
  job.sends = true;
  job.progress = true;
  job.inventory = true;
  const std::vector<std::string> traces = WrittenTraces(tmp.path() + "/traces", job);
  SummaryStats stats;
  const std::string bytes = Summarize(traces, 64, "node3", &stats);
  const std::string path = tmp.path() + "/node3.ncws";
  WriteFile(path, bytes);
  // Each rank's sends to its one peer and receives from its other, 2,000 of
  // each: the first 64 and the calls after the last progress (#1983 on)
  // kept, on the grid of 256: blocks 1-6 left out of each.
  CHECK(stats.p2p_left_out == 4 * 2 * 6 * kLeftOutBlock);
  // As differences: each rank's inventory (against the node's, rank 0's)
  // and its progress records but its first.
  CHECK(stats.records_as_differences >= 4 * 31);
  const std::vector<ProcessTrace> read = ReadAll(path);
  REQUIRE(read.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    absl::StatusOr<ProcessTrace> raw = LoadProcessTrace(traces[i]);
    REQUIRE(raw.ok());
    const ProcessTrace& s = read[i];
    INFO("rank " << i);
    // The inventory: the node's (rank 0's) plus this rank's own.
    CHECK(s.inventory.present);
    CHECK(s.inventory.env == raw->inventory.env);
    REQUIRE(s.inventory.Env("RANK") != nullptr);
    CHECK(*s.inventory.Env("RANK") == std::to_string(i));
    REQUIRE(s.inventory.gpus.size() == 1);
    CHECK(s.inventory.gpus[0].bdf == raw->inventory.gpus[0].bdf);
    CHECK(s.inventory.nccl_version == 22809);
    // Progress, every one (31 in 2,000 steps): the same.
    REQUIRE(s.progress.size() == raw->progress.size());
    REQUIRE(s.progress.size() == 31);
    for (size_t k = 0; k < s.progress.size(); ++k) {
      CHECK(s.progress[k].t == raw->progress[k].t);
      CHECK(s.progress[k].collectives == raw->progress[k].collectives);
      CHECK(s.progress[k].enqueued_t == raw->progress[k].enqueued_t);
    }
    // Sends and receives: two runs of blocks 1-6, each the digest of its calls.
    REQUIRE(s.left_out_p2p.size() == 2);
    for (const LeftOutP2p& l : s.left_out_p2p) {
      CHECK(l.rank == static_cast<int32_t>(i));
      CHECK(l.peer == static_cast<int32_t>(l.send ? (i + 1) % 4 : (i + 3) % 4));
      CHECK(l.first_block == 1);
      REQUIRE(l.Blocks() == 6);
      CHECK(l.calls == 6 * kLeftOutBlock);
      uint64_t digest = 0;
      for (const CommStream& st : raw->streams) {
        for (size_t k = 0; k < st.p2p.size(); ++k) {
          const P2pEvent& e = raw->p2p[st.p2p[k]];
          if (e.send == l.send && e.seq >= 256 && e.seq < 512)
            digest += P2pDigest(e.seq, e.count, e.datatype, st.collectives_before_p2p[k]);
        }
      }
      CHECK(l.blocks[0].digest == digest);
    }
  }
  // Healthy from the summary, as from the traces: no finding but notes.
  for (const EvidenceDiagnosis& d : {DiagnoseFiles({path}), DiagnoseFiles(traces)}) {
    CHECK_FALSE(d.diagnosis.problem);
    CHECK_FALSE(d.diagnosis.running);
    CHECK(Root(d.diagnosis) == nullptr);
  }
}

TEST_CASE("summary: the node's inventory is the first trace's that has one", "[summary]") {
  jobs::TempDir tmp;
  const std::string dir = tmp.path() + "/traces";
  ncclwatch::bench::SyntheticJob without;  // rank 0: no inventory
  without.ranks = 3;
  without.calls = 50;
  without.end_rank = 1;
  WriteJob(dir, without);
  ncclwatch::bench::SyntheticJob with = without;  // ranks 1 and 2: one each
  with.first_rank = 1;
  with.end_rank = -1;
  with.inventory = true;
  WriteJob(dir, with);
  const std::vector<std::string> traces = Traces(dir);
  REQUIRE(traces.size() == 3);
  SummaryStats stats;
  const std::string path = tmp.path() + "/n.ncws";
  WriteFile(path, Summarize(traces, 4096, "n", &stats));
  const std::vector<ProcessTrace> read = ReadAll(path);
  REQUIRE(read.size() == 3);
  CHECK_FALSE(read[0].inventory.present);
  for (size_t i = 1; i < 3; ++i) {
    absl::StatusOr<ProcessTrace> raw = LoadProcessTrace(traces[i]);
    REQUIRE(raw.ok());
    CHECK(read[i].inventory.present);
    CHECK(read[i].inventory.env == raw->inventory.env);
    CHECK(read[i].inventory.gpus[0].bdf == raw->inventory.gpus[0].bdf);
  }
}

TEST_CASE("summary: the default window keeps a short trace whole", "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 2;
  job.calls = 3000;
  WriteJob(tmp.path(), job);
  SummaryStats stats;
  const std::string path = tmp.path() + "/n.ncws";
  WriteFile(path, Summarize(Traces(tmp.path()), kDefaultSummaryWindow, "n", &stats));
  CHECK(stats.collectives_left_out == 0);
  const std::vector<ProcessTrace> read = ReadAll(path);
  REQUIRE(read.size() == 2);
  CHECK(read[0].collectives.size() == 3000);
  CHECK(read[0].left_out.empty());
}

// What a node could not read is listed in its summary, and a folder not
// searched or a link not followed stays what it was: something that may
// hold a rank's trace, so the job is not called healthy from the summary
// either (a torn trace alone is a note, as from the traces).
TEST_CASE("summary: what a node could not read keeps whether it may hold a trace", "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 2;
  job.calls = 100;
  WriteJob(tmp.path() + "/t", job);
  std::vector<std::string> traces = Traces(tmp.path() + "/t");
  const std::string torn = tmp.path() + "/t/torn.trace";
  WriteFile(torn, "NCCLWTRC and then nothing a trace holds");
  traces.push_back(torn);
  for (const bool link : {false, true}) {
    INFO((link ? "with a link not followed" : "a torn trace alone"));
    SummaryOptions options;
    options.host = "n";
    if (link) options.not_read.emplace_back("/t/x.trace", "a symbolic link: not followed");
    SummaryStats stats;
    absl::StatusOr<std::string> bytes = BuildSummary(traces, options, &stats);
    REQUIRE(bytes.ok());
    REQUIRE(stats.unreadable.size() == (link ? 2u : 1u));
    const std::string path = tmp.path() + (link ? "/link.ncws" : "/torn.ncws");
    WriteFile(path, *bytes);
    absl::StatusOr<std::unique_ptr<SummaryReader>> r = SummaryReader::Open(path);
    REQUIRE(r.ok());
    const std::vector<SummaryUnreadable>& u = (*r)->unreadable();
    REQUIRE(u.size() == (link ? 2u : 1u));
    CHECK(u[0].path == "n:" + torn);
    CHECK_FALSE(u[0].may_hold_traces);
    if (link) {
      CHECK(u[1].path == "n:/t/x.trace");
      CHECK(u[1].why == "a symbolic link: not followed");
      CHECK(u[1].may_hold_traces);
    }
    const EvidenceDiagnosis d = DiagnoseFiles({path});
    CHECK(d.diagnosis.problem == link);
    const Finding* f = nullptr;
    for (const Finding& x : d.diagnosis.findings)
      if (x.kind == FindingKind::kUnreadableTraces) f = &x;
    REQUIRE(f != nullptr);
    CHECK(f->role == (link ? FindingRole::kRootCause : FindingRole::kNote));
  }
}

// GPU times: each communicator's last kSummaryGpuTimes kept whatever the
// window, and how many were left out counted (format 3), per communicator;
// the GPU times written as GPU-time slots (ring format 4) and as protobuf
// records (format 3's), the same summary read back.
TEST_CASE("summary: a trace's last GPU times are kept, the rest counted", "[summary]") {
  std::vector<std::vector<ProcessTrace>> both;
  for (const bool slots : {true, false}) {
    INFO((slots ? "GPU-time slots" : "protobuf GPU times"));
    jobs::TempDir tmp;
    ncclwatch::bench::SyntheticJob job;
    job.ranks = 2;
    job.calls = 200;
    job.gpu_times = true;
    job.gpu_time_slots = slots;
    WriteJob(tmp.path(), job);
    const std::vector<std::string> traces = Traces(tmp.path());
    const std::string path = tmp.path() + "/n.ncws";
    WriteFile(path, Summarize(traces, kDefaultSummaryWindow, "n"));
    const std::vector<ProcessTrace>& read = both.emplace_back(ReadAll(path));
    REQUIRE(read.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
      absl::StatusOr<ProcessTrace> raw = LoadProcessTrace(traces[i]);
      REQUIRE(raw.ok());
      REQUIRE(raw->gpu_times.size() == 200);
      CHECK(raw->left_out_gpu_times.empty());
      const ProcessTrace& s = read[i];
      CHECK(s.collectives.size() == 200);  // the calls whole: 200 is within the window
      REQUIRE(s.gpu_times.size() == kSummaryGpuTimes);
      CHECK(s.gpu_times.front().collectives == 200 - kSummaryGpuTimes + 1);
      CHECK(s.gpu_times.back().collectives == 200);
      REQUIRE(s.left_out_gpu_times.size() == 1);
      CHECK(s.left_out_gpu_times[0].comm == raw->collectives[0].comm);
      CHECK(s.left_out_gpu_times[0].count == 200 - kSummaryGpuTimes);
      CHECK(s.LeftOutGpuTimesOf(raw->collectives[0].comm) == 200 - kSummaryGpuTimes);
      CHECK(s.LeftOutGpuTimesOf(raw->collectives[0].comm + 1) == 0);
    }
  }
  // Both forms give the same GPU times back (the jobs' clocks aside: each
  // was written at its own time, so times are compared as offsets).
  for (size_t i = 0; i < 2; ++i) {
    const ProcessTrace& a = both[0][i];
    const ProcessTrace& b = both[1][i];
    REQUIRE(a.gpu_times.size() == b.gpu_times.size());
    for (size_t k = 0; k < a.gpu_times.size(); ++k) {
      const auto& x = a.gpu_times[k];
      const auto& y = b.gpu_times[k];
      CHECK(x.comm == y.comm);
      CHECK(x.call == y.call);
      CHECK(x.seq == y.seq);
      CHECK(x.collectives == y.collectives);
      CHECK(x.group_ops == y.group_ops);
      CHECK(x.gpu_ns == y.gpu_ns);
      CHECK(x.end_ns - x.begin_ns == y.end_ns - y.begin_ns);
      CHECK(x.anchor_error_ns == y.anchor_error_ns);
    }
    CHECK(a.left_out_gpu_times.size() == b.left_out_gpu_times.size());
    CHECK(a.left_out_gpu_times[0].count == b.left_out_gpu_times[0].count);
  }
}

// The second reading passes over the ring's chunks the first found it would
// leave out whole (summary/chunk_ledger.h): the summary reads back as the
// one that reads every slot twice, for rings that wrapped, with GPU times,
// Progress records, sends and receives, groups, and records read back in
// time order (claim blocks). In time order, a chunk with collectives of a
// rank that sends or receives on their communicator is read (a send let
// out after it may have come before some of them, and counts only those):
// there, with sends, none is passed over.
TEST_CASE("summary: chunks passed over in the second reading change nothing", "[summary]") {
  struct Shape {
    const char* name;
    bool gpu, sends, claim_blocks;
  };
  const Shape shapes[] = {{"collectives", false, false, false},
                          {"GPU times and Progress", true, false, false},
                          {"sends and receives too", true, true, false},
                          {"claim blocks, read back in time order", true, false, true},
                          {"claim blocks with sends", true, true, true}};
  for (const Shape& shape : shapes) {
    for (uint32_t window : {1u, 16u, 300u}) {
      DYNAMIC_SECTION(shape.name << ", window " << window) {
        jobs::TempDir tmp;
        ncclwatch::bench::SyntheticJob job;
        job.ranks = 2;
        job.gpu_times = job.progress = shape.gpu;
        job.progress_every = 4;  // more than a summary keeps at each end
        job.sends = shape.sends;
        job.claim_blocks = shape.claim_blocks;
        job.ring_bytes = 2 << 20;  // 16,384 slots, 8 chunks: wrapped
        job.calls = 12000 / (shape.sends ? 3 : 1);
        const std::vector<std::string> traces = WrittenTraces(tmp.path() + "/t", job);
        absl::StatusOr<std::unique_ptr<TraceFile>> file = TraceFile::Open(traces[0]);
        REQUIRE(file.ok());
        // Read back in time order where blocks were claimed, in claim
        // order where none were (one writing thread: none).
        const bool blocks = (*file)->header().claim_blocks_used != 0;
        CHECK(blocks == shape.claim_blocks);
        SummaryOptions options;
        options.window = window;
        options.host = "n";
        SummaryStats passing, reading;
        absl::StatusOr<std::string> passed = BuildSummary(traces, options, &passing);
        options.pass_over_chunks = false;
        absl::StatusOr<std::string> read_all = BuildSummary(traces, options, &reading);
        REQUIRE(passed.ok());
        REQUIRE(read_all.ok());
        CHECK((passing.slots_passed_over > 0) == !(shape.claim_blocks && shape.sends));
        CHECK(reading.slots_passed_over == 0);
        CHECK(passing.records == reading.records);
        CHECK(passing.entries_kept == reading.entries_kept);
        CHECK(passing.records_as_differences == reading.records_as_differences);
        CHECK(passing.collectives_left_out == reading.collectives_left_out);
        CHECK(passing.p2p_left_out == reading.p2p_left_out);
        CHECK(passing.groups_left_out == reading.groups_left_out);
        CHECK(passing.progress_left_out == reading.progress_left_out);
        // The same bytes but for each trace's read time and the checksum.
        REQUIRE(passed->size() == read_all->size());
        size_t differ = 0;
        for (size_t i = 0; i < passed->size(); ++i) differ += (*passed)[i] != (*read_all)[i];
        CHECK(differ <= 8 + 8 * traces.size());
        WriteFile(tmp.path() + "/a.ncws", *passed);
        WriteFile(tmp.path() + "/b.ncws", *read_all);
        const std::vector<ProcessTrace> a = ReadAll(tmp.path() + "/a.ncws");
        const std::vector<ProcessTrace> b = ReadAll(tmp.path() + "/b.ncws");
        REQUIRE(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i) {
          CHECK(a[i].collectives.size() == b[i].collectives.size());
          CHECK(a[i].gpu_times.size() == b[i].gpu_times.size());
          CHECK(a[i].progress.size() == b[i].progress.size());
          CHECK(a[i].groups.size() == b[i].groups.size());
          REQUIRE(a[i].left_out.size() == b[i].left_out.size());
          for (size_t k = 0; k < a[i].left_out.size(); ++k) {
            CHECK(a[i].left_out[k].first_block == b[i].left_out[k].first_block);
            CHECK(a[i].left_out[k].digests == b[i].left_out[k].digests);
            CHECK(a[i].left_out[k].calls == b[i].left_out[k].calls);
          }
          REQUIRE(a[i].left_out_p2p.size() == b[i].left_out_p2p.size());
          for (size_t k = 0; k < a[i].left_out_p2p.size(); ++k) {
            CHECK(a[i].left_out_p2p[k].blocks == b[i].left_out_p2p[k].blocks);
            CHECK(a[i].left_out_p2p[k].calls == b[i].left_out_p2p[k].calls);
          }
          REQUIRE(a[i].left_out_gpu_times.size() == b[i].left_out_gpu_times.size());
          for (size_t k = 0; k < a[i].left_out_gpu_times.size(); ++k)
            CHECK(a[i].left_out_gpu_times[k].count == b[i].left_out_gpu_times[k].count);
        }
      }
    }
  }
}

TEST_CASE("summary: a huge communicator's window narrows as the straggler analysis's does",
          "[summary]") {
  CHECK(CommWindow(4096, 8) == 4096);
  CHECK(CommWindow(4096, 8192) == 4096);
  CHECK(CommWindow(4096, 8193) == 2048);
  CHECK(CommWindow(4096, 32768) == 1024);
  CHECK(CommWindow(4096, 131072) == 256);
  CHECK(CommWindow(100, 131072) == 100);           // a narrower window asked for stays
  CHECK(CommWindow(4096, int64_t{1} << 31) == 1);  // never below one call
  CHECK(CommWindow(4096, -1) == 4096);             // members unknown

  // One node (8 ranks) of a 131,072-rank job, 20,000 collectives each:
  // 256 at each end are asked for, kept to the 256-call grid: #0-#255 and
  // #19712-#19999, blocks 1-76 left out (not #0-#4095 and #15616-#19999,
  // as at 4,096).
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 131072;
  job.calls = 20000;
  job.first_rank = 65536;
  job.end_rank = 65536 + 8;
  const std::vector<std::string> traces = WrittenTraces(tmp.path() + "/traces", job);
  SummaryStats stats;
  const std::string path = tmp.path() + "/node.ncws";
  WriteFile(path, Summarize(traces, kDefaultSummaryWindow, "node", &stats));
  CHECK(stats.collectives_left_out == 8 * 76 * kLeftOutBlock);
  const std::vector<ProcessTrace> read = ReadAll(path);
  REQUIRE(read.size() == 8);
  for (const ProcessTrace& t : read) {
    CHECK(t.collectives.size() == 256 + 288);
    REQUIRE(t.left_out.size() == 1);
    CHECK(t.left_out[0].first_block == 1);
    CHECK(t.left_out[0].digests.size() == 76);
  }
}

TEST_CASE("summary: a mismatch at the end is found from two nodes' summaries as from the traces",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 4;
  job.calls = 10000;
  job.diverging_rank = 2;
  job.diverging_seq = 9999;
  WriteJob(tmp.path() + "/all", job);
  const std::vector<std::string> traces = Traces(tmp.path() + "/all");
  REQUIRE(traces.size() == 4);
  const EvidenceDiagnosis raw = DiagnoseFiles(traces);
  const std::string a = tmp.path() + "/a.ncws", b = tmp.path() + "/b.ncws";
  WriteFile(a, Summarize({traces[0], traces[1]}, 100, "node-a"));
  WriteFile(b, Summarize({traces[2], traces[3]}, 100, "node-b"));
  const EvidenceDiagnosis summed = DiagnoseFiles({a, b});
  const Finding* r = Root(raw.diagnosis);
  const Finding* s = Root(summed.diagnosis);
  REQUIRE(r != nullptr);
  REQUIRE(s != nullptr);
  CHECK(r->kind == FindingKind::kCollectiveMismatch);
  CHECK(r->seq == 9999u);
  CHECK(r->ranks == std::vector<int>{2});
  CHECK(s->kind == r->kind);
  CHECK(s->comm == r->comm);
  CHECK(s->seq == r->seq);
  CHECK(s->ranks == r->ranks);
  CHECK(summed.diagnosis.findings.size() == raw.diagnosis.findings.size());
  for (const Finding& f : summed.diagnosis.findings) CHECK(f.kind != FindingKind::kSummaryGap);
}

TEST_CASE("summary: a mismatch inside left-out calls is a summary_gap naming the node",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 4;
  job.calls = 10000;
  job.diverging_rank = 2;
  job.diverging_seq = 5000;  // block 19 (#4864-#5119): left out with a window of 100
  WriteJob(tmp.path() + "/all", job);
  const std::vector<std::string> traces = Traces(tmp.path() + "/all");
  const EvidenceDiagnosis raw = DiagnoseFiles(traces);
  REQUIRE(Root(raw.diagnosis) != nullptr);
  CHECK(Root(raw.diagnosis)->kind == FindingKind::kCollectiveMismatch);
  CHECK(Root(raw.diagnosis)->seq == 5000u);

  const std::string a = tmp.path() + "/a.ncws", b = tmp.path() + "/b.ncws";
  WriteFile(a, Summarize({traces[0], traces[1]}, 100, "node-a"));
  WriteFile(b, Summarize({traces[2], traces[3]}, 100, "node-b"));
  const EvidenceDiagnosis summed = DiagnoseFiles({a, b});
  // Never healthy: the digests of block 19 disagree, rank 2's against the rest.
  CHECK(summed.diagnosis.problem);
  const Finding* s = Root(summed.diagnosis);
  REQUIRE(s != nullptr);
  REQUIRE(s->kind == FindingKind::kSummaryGap);
  CHECK(s->comm == Root(raw.diagnosis)->comm);
  CHECK(s->seq == 4864u);
  CHECK(s->ranks == std::vector<int>{2});
  const auto& facts = std::get<SummaryGapFacts>(s->facts);
  REQUIRE(facts.gaps.size() == 1);
  CHECK(facts.gaps[0].differ);
  CHECK(facts.gaps[0].first_seq == 4864);
  CHECK(facts.gaps[0].last_seq == 5119);
  CHECK(facts.gaps[0].left_out_ranks == std::vector<int>{2});
  CHECK(facts.gaps[0].left_out_nodes == std::vector<std::string>{"node-b (" + b + ")"});
  CHECK(facts.gaps[0].other_ranks == std::vector<int>{0, 1, 3});

  // The human report says it could not see them and names the node.
  std::ostringstream out, err;
  CHECK(RunDiagnose({a, b}, false, out, err) == 1);
  INFO(out.str());
  CHECK(out.str().find("could not see calls the node summaries left out") != std::string::npos);
  CHECK(out.str().find("read the full traces of node-b (" + b + ")") != std::string::npos);

  // With node b's traces read whole beside node a's summary: rank 2's
  // calls in the block are its trace's, compared with node a's digests.
  const EvidenceDiagnosis mixed = DiagnoseFiles({a, traces[2], traces[3]});
  const Finding* m = Root(mixed.diagnosis);
  REQUIRE(m != nullptr);
  // Its blocks are digested then, and rank 2's differs from the three
  // others': the gap names rank 2 and its trace, and the mismatch at #5000
  // is not blamed on a rank from the two it could see.
  CHECK(m->kind == FindingKind::kSummaryGap);
  CHECK(m->ranks == std::vector<int>{2});
  const auto& mf = std::get<SummaryGapFacts>(m->facts);
  REQUIRE(mf.gaps.size() == 1);
  CHECK(mf.gaps[0].differ);
  CHECK(mf.gaps[0].left_out_nodes == std::vector<std::string>{traces[2]});
  for (const Finding& f : mixed.diagnosis.findings)
    CHECK(f.kind != FindingKind::kCollectiveMismatch);
}

TEST_CASE("summary: a rank that stopped in a block others left out is a gap, not healthy",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 2;
  job.calls = 10000;
  job.short_rank = 1;
  job.short_calls = 6000;  // ends inside block 23 (#5888-#6143)
  WriteJob(tmp.path() + "/all", job);
  const std::vector<std::string> traces = Traces(tmp.path() + "/all");
  const std::string a = tmp.path() + "/a.ncws", b = tmp.path() + "/b.ncws";
  WriteFile(a, Summarize({traces[0]}, 100, "node-a"));
  WriteFile(b, Summarize({traces[1]}, 100, "node-b"));
  const EvidenceDiagnosis summed = DiagnoseFiles({a, b});
  CHECK(summed.diagnosis.problem);
  bool gap = false;
  for (const Finding& f : summed.diagnosis.findings) {
    const auto* x = std::get_if<SummaryGapFacts>(&f.facts);
    if (x == nullptr) continue;
    gap = true;
    REQUIRE_FALSE(x->gaps.empty());
    CHECK_FALSE(x->gaps[0].differ);
    CHECK(x->gaps[0].first_seq == 5888);
    CHECK(x->gaps[0].left_out_ranks == std::vector<int>{0});
    CHECK(x->gaps[0].left_out_nodes == std::vector<std::string>{"node-a (" + a + ")"});
    CHECK(x->gaps[0].other_ranks == std::vector<int>{1});
  }
  CHECK(gap);
}

// A rank whose ring wrapped begins inside a block the others' summaries
// leave out: the traces whole compare there only its calls from its first
// on, the summaries cannot (they hold the others' block as one digest). A
// note that says so, the job not called a problem over it; but where the
// others' digests of the block disagree, they differ (a root cause).
TEST_CASE("summary: a block a rank's ring begins in is a note and the others still compared",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 3;
  job.calls = 10000;
  job.start_ns = 1000000000000ull;  // one step a millisecond, no rank late
  job.start_realtime_ns = 1790000000000000000ull;
  job.first_rank = 2;
  job.ring_bytes = 512 << 10;
  WriteJob(tmp.path() + "/b", job);  // rank 2, its ring wrapped
  const std::vector<std::string> b = Traces(tmp.path() + "/b");
  REQUIRE(b.size() == 1);
  absl::StatusOr<ProcessTrace> r2 = LoadProcessTrace(b[0]);
  REQUIRE(r2.ok());
  REQUIRE_FALSE(r2->collectives.empty());
  const uint64_t first = r2->collectives.front().seq;  // where its ring begins
  const uint64_t block = first / kLeftOutBlock;
  REQUIRE(first % kLeftOutBlock != 0);
  REQUIRE(first % kLeftOutBlock < kLeftOutBlock - 1);
  const std::string nb = tmp.path() + "/b.ncws";
  WriteFile(nb, Summarize(b, 100, "node-b"));
  auto node_a = [&](const std::string& dir, int diverging_rank, uint64_t seq) {
    ncclwatch::bench::SyntheticJob a = job;
    a.first_rank = 0;
    a.end_rank = 2;
    a.ring_bytes = 0;  // whole
    a.diverging_rank = diverging_rank;
    a.diverging_seq = seq;
    WriteJob(dir, a);
    const std::vector<std::string> traces = Traces(dir);
    REQUIRE(traces.size() == 2);
    WriteFile(dir + ".ncws", Summarize(traces, 100, "node-a"));
    return traces;
  };
  SECTION("healthy: healthy, with a note") {
    const std::vector<std::string> a = node_a(tmp.path() + "/a", -1, 0);
    CHECK_FALSE(DiagnoseFiles({a[0], a[1], b[0]}).diagnosis.problem);
    const EvidenceDiagnosis summed = DiagnoseFiles({tmp.path() + "/a.ncws", nb});
    INFO("findings from the summaries: " << FindingsText(summed.diagnosis));
    CHECK_FALSE(summed.diagnosis.problem);
    REQUIRE(summed.diagnosis.findings.size() == 1);
    const Finding& note = summed.diagnosis.findings[0];
    CHECK(note.role == FindingRole::kNote);
    const auto& x = std::get<SummaryGapFacts>(note.facts);
    CHECK(x.ring_starts_only);
    REQUIRE(x.gaps.size() == 1);
    CHECK(x.gaps[0].ring_start);
    CHECK_FALSE(x.gaps[0].sends);
    CHECK(x.gaps[0].first_seq == block * kLeftOutBlock);
    CHECK(x.gaps[0].last_seq == (block + 1) * kLeftOutBlock - 1);
    CHECK(x.gaps[0].left_out_ranks == std::vector<int>{0, 1});
    CHECK(x.gaps[0].other_ranks == std::vector<int>{2});
    // A job with nothing else found is called a problem over a gap of
    // another kind (the next test case's): this one says what it could
    // not compare, and why.
    const std::string text = RenderFinding(note, ncclwatch::decoder::NoCallSites()).detail;
    CHECK(text.find("whose ring begins inside that range") != std::string::npos);
  }
  SECTION("rank 0 differs in that block: a root cause") {
    const uint64_t seq = first + 1;
    const std::vector<std::string> a = node_a(tmp.path() + "/a", 0, seq);
    CHECK(DiagnoseFiles({a[0], a[1], b[0]}).diagnosis.problem);
    const EvidenceDiagnosis summed = DiagnoseFiles({tmp.path() + "/a.ncws", nb});
    CHECK(summed.diagnosis.problem);
    const Finding* root = Root(summed.diagnosis);
    REQUIRE(root != nullptr);
    const auto& x = std::get<SummaryGapFacts>(root->facts);
    CHECK_FALSE(x.ring_starts_only);
    REQUIRE(x.gaps.size() == 1);
    CHECK(x.gaps[0].differ);
    CHECK_FALSE(x.gaps[0].ring_start);
    CHECK(x.gaps[0].first_seq == block * kLeftOutBlock);
  }
}

// A rank whose ring lost calls inside a block the other's summary leaves out
// (rank 1 kept #0-#5, a hold's worth, then wrapped: #6-#299 written over, so
// it holds 212 calls of block 1, #256-#511): its digest of the block would
// sum other calls than rank 0's, and the merge would say rank 1 differs.
// The block is kept whole in its summary instead: it is never said to
// differ, only not compared with rank 0's (which node a's summary left out).
TEST_CASE("summary: a block a rank's ring holds in part is kept, never said to differ",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 2;
  job.calls = 2000;
  job.sends = true;
  job.gap_rank = 1;
  job.gap_first = 6;
  job.gap_calls = 294;
  job.start_ns = 1000000000000ull;  // one step a millisecond, no rank late
  job.start_realtime_ns = 1790000000000000000ull;
  WriteJob(tmp.path() + "/all", job);
  const std::vector<std::string> traces = Traces(tmp.path() + "/all");
  const std::string a = tmp.path() + "/a.ncws", b = tmp.path() + "/b.ncws";
  WriteFile(a, Summarize({traces[0]}, 16, "node-a"));
  WriteFile(b, Summarize({traces[1]}, 16, "node-b"));
  // Rank 1's block 1 is in its summary as its trace holds it.
  const std::vector<ProcessTrace> read = ReadAll(b);
  REQUIRE(read.size() == 1);
  const std::map<uint64_t, CollectiveEvent> kept = BySeq(read[0]);
  CHECK(kept.count(5) == 1);
  CHECK(kept.count(299) == 0);
  CHECK(kept.count(300) == 1);
  CHECK(kept.count(511) == 1);
  CHECK(kept.count(1000) == 0);  // a block it holds whole is still left out
  const EvidenceDiagnosis raw = DiagnoseFiles(traces);
  CHECK_FALSE(raw.diagnosis.problem);
  const EvidenceDiagnosis summed = DiagnoseFiles({a, b});
  REQUIRE_FALSE(summed.diagnosis.findings.empty());
  for (const Finding& f : summed.diagnosis.findings) {
    const auto* x = std::get_if<SummaryGapFacts>(&f.facts);
    INFO(ncclwatch::decoder::KindName(f.kind));
    REQUIRE(x != nullptr);  // no finding but what the summaries could not compare
    for (const auto& g : x->gaps) {
      CHECK_FALSE(g.differ);
      CHECK(g.first_seq == 256);
      CHECK(g.left_out_ranks == std::vector<int>{0});
      CHECK(g.left_out_nodes == std::vector<std::string>{"node-a (" + a + ")"});
      CHECK(g.other_ranks == std::vector<int>{1});
    }
  }
}

// Each kept send and receive carries how many collectives of its
// communicator its rank had issued before it, as the whole trace counts
// them (format 8 on), though the collectives around it were left out; those
// left out fold it into their digests. A ring that wrapped counts by the
// collectives' numbers.
TEST_CASE("summary: kept sends count the collectives before them as the trace does", "[summary]") {
  // Sends on every 4th step: the last 256 sends kept span 1,024 steps, most
  // of whose collectives a small window leaves out.
  for (const bool wrapped : {false, true}) {
    for (uint32_t window : {1u, 16u}) {
      DYNAMIC_SECTION((wrapped ? "a wrapped ring" : "a whole ring") << ", window " << window) {
        jobs::TempDir tmp;
        ncclwatch::bench::SyntheticJob job;
        job.ranks = 2;
        job.sends = true;
        job.sends_every = 4;
        job.progress = true;  // what a summary leaves sends out by
        job.calls = 4000;
        if (wrapped) job.ring_bytes = 512 << 10;
        const std::vector<std::string> traces = WrittenTraces(tmp.path() + "/t", job);
        const std::string path = tmp.path() + "/n.ncws";
        WriteFile(path, Summarize(traces, window, "n"));
        const std::vector<ProcessTrace> read = ReadAll(path);
        REQUIRE(read.size() == traces.size());
        for (size_t i = 0; i < traces.size(); ++i) {
          absl::StatusOr<ProcessTrace> raw = LoadProcessTrace(traces[i]);
          REQUIRE(raw.ok());
          CHECK((raw->stats.ring_overwritten > 0) == wrapped);
          // (comm, rank, peer, send, seq) -> its count, of the whole trace.
          std::map<std::tuple<uint64_t, int32_t, int32_t, bool, uint64_t>, int64_t> want;
          for (const CommStream& st : raw->streams)
            for (size_t k = 0; k < st.p2p.size(); ++k) {
              const P2pEvent& e = raw->p2p[st.p2p[k]];
              want[{e.comm, e.rank, e.peer, e.send, e.seq}] = st.collectives_before_p2p[k];
            }
          const ProcessTrace& s = read[i];
          CHECK_FALSE(s.left_out.empty());  // the collectives around them left out
          CHECK_FALSE(s.left_out_p2p.empty());
          // The collectives kept, by number: a send kept after one left out.
          std::set<uint64_t> collectives;
          for (const CollectiveEvent& e : s.collectives) collectives.insert(e.seq);
          size_t kept = 0, counted = 0, among_left_out = 0;
          for (const CommStream& st : s.streams) {
            for (size_t k = 0; k < st.p2p.size(); ++k) {
              const P2pEvent& e = s.p2p[st.p2p[k]];
              auto it = want.find({e.comm, e.rank, e.peer, e.send, e.seq});
              REQUIRE(it != want.end());
              ++kept;
              counted += st.collectives_before_p2p[k] > 0;
              among_left_out += it->second > 0 && collectives.count(it->second - 1) == 0;
              CHECK(st.collectives_before_p2p[k] == it->second);
            }
          }
          CHECK(kept > 0);
          CHECK(counted > 0);
          CHECK(among_left_out > 0);
        }
      }
    }
  }
}

// Rank 1's ring wrapped past its communicator's only collectives (a
// first few steps' barriers, then sends and receives alone): its sends'
// counts of the collectives before them are not known, rank 0's are (8).
// The traces whole compare their numbers and sizes only; so do the
// summaries' digests of the blocks both left out (format 9), where before
// they said the two ranks' calls differed.
TEST_CASE("summary: sends whose counts one rank's ring lost compare as the traces do",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 2;
  job.calls = 4000;
  job.sends = true;
  job.collectives_until = 8;
  job.start_ns = 1000000000000ull;  // one step a millisecond, no rank late
  job.start_realtime_ns = 1790000000000000000ull;
  job.progress = true;  // what a summary leaves sends out by
  job.end_rank = 1;
  WriteJob(tmp.path() + "/a", job);  // rank 0, its ring whole
  job.end_rank = -1;
  job.first_rank = 1;
  job.ring_bytes = 256 << 10;
  WriteJob(tmp.path() + "/b", job);  // rank 1, its ring wrapped
  const std::vector<std::string> a = Traces(tmp.path() + "/a"), b = Traces(tmp.path() + "/b");
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  absl::StatusOr<ProcessTrace> r1 = LoadProcessTrace(b[0]);
  REQUIRE(r1.ok());
  REQUIRE(r1->collectives.empty());
  REQUIRE_FALSE(r1->p2p.empty());
  const EvidenceDiagnosis raw = DiagnoseFiles({a[0], b[0]});
  CHECK_FALSE(raw.diagnosis.problem);
  const std::string na = tmp.path() + "/a.ncws", nb = tmp.path() + "/b.ncws";
  WriteFile(na, Summarize(a, 16, "node-a"));
  WriteFile(nb, Summarize(b, 16, "node-b"));
  const std::vector<ProcessTrace> sa = ReadAll(na), sb = ReadAll(nb);
  REQUIRE(sa.size() == 1);
  REQUIRE(sb.size() == 1);
  // Both left out blocks of the same sends: compared by digest.
  std::set<uint64_t> left_a, both;
  for (const LeftOutP2p& l : sa[0].left_out_p2p)
    for (uint64_t k = 0; k < l.Blocks(); ++k) left_a.insert(l.first_block + k);
  for (const LeftOutP2p& l : sb[0].left_out_p2p) {
    for (uint64_t k = 0; k < l.Blocks(); ++k) {
      CHECK(l.blocks[k].unknown == kLeftOutBlock);  // none of rank 1's counts known
      if (left_a.count(l.first_block + k) > 0) both.insert(l.first_block + k);
    }
  }
  CHECK_FALSE(both.empty());
  for (const LeftOutP2p& l : sa[0].left_out_p2p)
    for (const P2pBlockDigest& block : l.blocks) {
      CHECK(block.unknown == 0);
      CHECK(block.signature != block.digest);  // count 8 folded in
    }
  const EvidenceDiagnosis summed = DiagnoseFiles({na, nb});
  INFO("findings from the summaries: " << FindingsText(summed.diagnosis));
  // Healthy, as from the traces; what the summaries could not compare is
  // the block rank 1's ring begins in (each way), a note.
  CHECK_FALSE(summed.diagnosis.problem);
  REQUIRE(summed.diagnosis.findings.size() == 1);
  const Finding& note = summed.diagnosis.findings[0];
  CHECK(note.role == FindingRole::kNote);
  const auto* x = std::get_if<SummaryGapFacts>(&note.facts);
  REQUIRE(x != nullptr);
  CHECK(x->ring_starts_only);
  REQUIRE(x->gaps.size() == 2);
  const uint64_t first = r1->p2p.front().seq;  // where its ring begins
  for (const auto& g : x->gaps) {
    CHECK_FALSE(g.differ);  // (format 8 said every block both left out differed)
    CHECK(g.ring_start);
    CHECK(g.first_seq == first / kLeftOutBlock * kLeftOutBlock);
    CHECK(g.last_seq == g.first_seq + kLeftOutBlock - 1);
    CHECK(g.left_out_ranks == std::vector<int>{0});
    CHECK(g.other_ranks == std::vector<int>{1});
  }
  const std::string text = RenderFinding(note, ncclwatch::decoder::NoCallSites()).detail;
  CHECK(text.find("whose ring begins inside that range") != std::string::npos);
}

TEST_CASE("summary: torn, cut and crafted summaries are refused with one line", "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 2;
  job.calls = 5000;
  WriteJob(tmp.path() + "/t", job);
  const std::string good = Summarize(Traces(tmp.path() + "/t"), 100, "n");

  struct Case {
    const char* name;
    std::string bytes;
    const char* says;
  };
  std::string torn = good;
  torn[torn.size() / 2] ^= 0x40;
  std::string body;
  std::vector<Case> cases = {
      {"cut", good.substr(0, good.size() / 2), "torn or cut summary"},
      {"torn", torn, "checksum does not match"},
      {"version", WithHeader(good.substr(kSummaryHeaderBytes), kSummaryVersion + 1),
       "summary version 10"},
      {"short", good.substr(0, 12), "not a summary"},
      {"absurd_entries", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);  // sends and receives left out
         s.Varint(0);  // their counts of collectives before
         s.Varint(uint64_t{1} << 40);
       })),
       "more records than bytes"},
      {"absurd_gpu_counts", WithHeader(OneTrace([](ByteSink&) {}, uint64_t{1} << 40)),
       "more GPU-time counts than bytes"},
      {"gpu_counts_out_of_order",
       WithHeader(OneTrace(
           [](ByteSink& s) {
             s.Varint(5);  // communicator 5, 1 left out
             s.Varint(1);
             s.Varint(3);  // then 3: not ascending
             s.Varint(1);
           },
           2)),
       "its GPU-time counts are out of order"},
      {"absurd_digests", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(1);
         s.Varint(7);
         s.Zigzag(0);
         s.Varint(1);
         s.Varint(uint64_t{1} << 50);
       })),
       "more digests than bytes"},
      {"blocks_past_end", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(1);
         s.Varint(7);
         s.Zigzag(0);
         s.Varint(UINT64_MAX / 2);
         s.Varint(1);
         s.U64(0);
         s.Varint(0);
         s.Varint(0);
       })),
       "past the largest number"},
      {"absurd_p2p_runs", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(uint64_t{1} << 40);
       })),
       "more left-out sends than bytes"},
      {"absurd_send_digests", WithHeader(OneTrace([](ByteSink& s) {
         OneSendRun(s, 1, 1, uint64_t{1} << 50);
         s.U64(0);  // one digest's bytes: past the run's least
       })),
       "more send digests than bytes"},
      {"send_run_of_no_block", WithHeader(OneTrace([](ByteSink& s) {
         OneSendRun(s, 1, 1, 0);
         s.Varint(0);
         s.U64(0);
         s.Varint(0);
       })),
       "names no communicator, rank, peer or block"},
      {"send_flag", WithHeader(OneTrace([](ByteSink& s) {
         OneSendRun(s, 2, 1, 1);
         s.U64(0);
         s.Varint(256);
         s.Varint(0);
       })),
       "neither a send nor a receive"},
      {"send_blocks_past_end", WithHeader(OneTrace([](ByteSink& s) {
         OneSendRun(s, 0, UINT64_MAX / 2, 1);
         s.U64(0);
         s.Varint(0);
         s.Varint(0);
       })),
       "past the largest number"},
      {"send_block_unknown_past_its_calls", WithHeader(OneTrace([](ByteSink& s) {
         OneSendRun(s, 1, 1, 1);
         s.U64(0);
         s.Varint(uint64_t{kLeftOutBlock + 1} << 1);  // version 9: counts not known
         s.Varint(kLeftOutBlock);
         s.Varint(0);
       })),
       "more counts not known than calls"},
      {"unknown_kind", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.Varint(1);
         s.U8(99);
         s.U8(0);
       })),
       "unknown kind"},
      {"mask", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.Varint(1);
         s.U8(kSummaryCallEntry);  // a collective, context 0
         s.Varint(0xffff);
       })),
       "granule mask is out of range"},
      {"kind_index", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.Varint(1);
         s.U8(kSummaryCallEntry | (3 << 5));
         s.Varint(0);
       })),
       "unknown kind"},
      {"record_past_section", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.Varint(1);
         s.U8(NCCLWATCH_SLOT_SINGLE);
         s.Varint(500);
         s.U8(0);
       })),
       "runs past its section"},
      {"record_context", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.Varint(1);
         s.U8(kSummaryRecordDelta);  // against context 3: none yet
         s.Varint(3);
         s.U8(1);
       })),
       "a record's context is unknown"},
      {"record_inventory_context", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.Varint(1);
         s.U8(kSummaryRecordDelta);  // the inventory's, and the node has none
         s.Varint(0);
         s.U8(1);
       })),
       "a record's context is unknown"},
      {"record_difference", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.Varint(2);
         s.U8(NCCLWATCH_SLOT_SINGLE);  // a heartbeat: {t: 5, heartbeat {beat: 1}}
         s.String(std::string("\x08\x05\x82\x02\x02\x08\x01", 7));
         s.U8(kSummaryRecordDelta);
         s.Varint(1);
         s.U8(7);  // neither the same shape nor another
       })),
       "a record's difference is malformed"},
      {"rebuilt_past_budget", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.Varint(1 + 300);
         std::string module;  // a Module record with an 8,000-byte path
         ByteSink m(&module);
         m.Varint((19 << 3) | 2);
         m.Varint(8003);
         m.Varint((1 << 3) | 2);
         m.Varint(8000);
         module.append(8000, 'p');
         s.U8(NCCLWATCH_SLOT_SINGLE);
         s.String(module);
         for (int i = 0; i < 300; ++i) {  // then itself again, 4 bytes each
           s.U8(kSummaryRecordDelta);
           s.Varint(1);
           s.U8(1);  // the same shape
           s.U8(0);  // nothing moved
         }
       })),
       "rebuild more records than its bytes allow"},
      {"absurd_counts", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(uint64_t{1} << 40);
       })),
       "more sends' counts than bytes"},
      {"counts_without_sends", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(1);  // one send's count
         s.Zigzag(3);
         s.Varint(0);  // and no entry
       })),
       "more counts than sends"},
      {"sends_without_counts", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(1);  // one send's count
         s.Zigzag(3);
         s.Varint(2);  // and two sends
         for (int k = 0; k < 2; ++k) {
           s.U8(kSummaryCallEntry | (1 << 5));
           s.Varint(0);
         }
       })),
       "more sends than counts"},
      {"trailing", WithHeader(OneTrace([](ByteSink& s) {
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.Varint(0);
         s.U8(7);
       })),
       "bytes after its last record"},
  };
  // A section that claims more bytes than the file holds.
  {
    ByteSink b(&body);
    b.String("node");
    b.Varint(4096);
    b.Varint(kLeftOutBlock);
    b.String("");  // the node's inventory: none
    b.Varint(1);
    b.Varint(1000);
    cases.push_back({"section_past_end", WithHeader(body), "runs past the end"});
  }
  // A node's inventory that is not a record.
  {
    std::string bad;
    ByteSink b(&bad);
    b.String("node");
    b.Varint(4096);
    b.Varint(kLeftOutBlock);
    b.String(std::string("\x0b\x0c", 2));  // a group: no record of ours
    b.Varint(0);
    b.Varint(0);
    cases.push_back({"node_inventory", WithHeader(bad), "the node's inventory is not a record"});
  }
  // An unreadable trace's flags with a bit this version does not know.
  {
    std::string flags;
    ByteSink b(&flags);
    b.String("node");
    b.Varint(4096);
    b.Varint(kLeftOutBlock);
    b.String("");  // the node's inventory: none
    b.Varint(0);   // traces
    b.Varint(1);   // unreadable
    b.String("/tmp/gone.trace");
    b.String("torn");
    b.U8(kSummaryMayHoldTraces | 0x04);
    cases.push_back({"unreadable_flags", WithHeader(flags), "an unreadable trace's flags are 5"});
  }
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string path = tmp.path() + "/" + c.name + ".ncws";
    WriteFile(path, c.bytes);
    std::string why;
    absl::StatusOr<std::unique_ptr<SummaryReader>> r = SummaryReader::Open(path);
    if (!r.ok()) {
      why = std::string(r.status().message());
    } else {
      ProcessTrace t;
      absl::StatusOr<bool> more = (*r)->Next(&t);
      REQUIRE_FALSE(more.ok());
      why = std::string(more.status().message());
    }
    INFO(why);
    CHECK(why.find(c.says) != std::string::npos);
    CHECK(why.find(path) != std::string::npos);
    CHECK(why.find('\n') == std::string::npos);
    // The command: one line, exit 2 (a file without the magic is no
    // summary: read as a trace, it is refused as one).
    std::ostringstream out, err;
    CHECK(RunDiagnose({path}, true, out, err) == 2);
    const std::string line = err.str();
    CHECK(line.rfind("ncclwatch: ", 0) == 0);
    CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  }
}

// A rank whose ring kept its first calls, then lost 20,000 (#6-#20005) and
// holds the rest: its numbers are not one run, so nothing of its stream is
// left out (a digest of a block it holds in part would differ from a
// peer's), and the first reading's account of its numbers, which stops
// where they stray that far, costs no more memory than a run's.
TEST_CASE("summary: a stream whose numbers jump far is kept whole", "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 2;
  job.calls = 30000;
  job.gap_rank = 1;
  job.gap_first = 6;
  job.gap_calls = 20000;
  WriteJob(tmp.path() + "/all", job);
  const std::vector<std::string> traces = Traces(tmp.path() + "/all");
  SummaryStats stats;
  const std::string b = tmp.path() + "/b.ncws";
  WriteFile(b, Summarize({traces[1]}, 16, "node-b", &stats));
  CHECK(stats.collectives_left_out == 0);
  const std::vector<ProcessTrace> read = ReadAll(b);
  REQUIRE(read.size() == 1);
  const std::map<uint64_t, CollectiveEvent> kept = BySeq(read[0]);
  CHECK(kept.size() == 30000 - 20000);
  CHECK(kept.count(5) == 1);
  CHECK(kept.count(6) == 0);
  CHECK(kept.count(20006) == 1);
  CHECK(kept.count(29999) == 1);
  // Rank 0's run is left out in the middle as ever: #256 (16 past #0,
  // rounded up to the grid) to #29951 (16 before #29999, rounded down).
  SummaryStats whole;
  Summarize({traces[0]}, 16, "node-a", &whole);
  CHECK(whole.collectives_left_out == 29952 - 256);
}

namespace {

// The diagnosis of trace files as a judging command makes it, with traces
// of more than `summarize_over` bytes read through their summaries made in
// memory (0: every trace), and whether each process was read so (by the
// last reading); `readings`, how many times the job was read: 1, 2 (again
// through summaries keeping the gaps' blocks whole, where `summarized`
// says so; else again whole), or 3 (then whole).
EvidenceDiagnosis DiagnoseSummarizing(const std::vector<std::string>& files,
                                      uint64_t summarize_over, std::vector<bool>* summarized,
                                      size_t* readings = nullptr) {
  JobEvidence evidence{files, {}, {}};
  evidence.summarize_over = summarize_over;
  size_t handed = 0;
  // Each reading announced before it (status makes its table afresh then),
  // and every trace handed out once in it.
  std::vector<size_t> per_reading;
  absl::StatusOr<EvidenceDiagnosis> d = DiagnoseEvidence(
      evidence,
      [&](const JobInput&) {
        ++handed;
        REQUIRE_FALSE(per_reading.empty());
        ++per_reading.back();
      },
      [&] { per_reading.push_back(0); });
  INFO((d.ok() ? "" : std::string(d.status().message())));
  REQUIRE(d.ok());
  REQUIRE(handed % files.size() == 0);
  CHECK(per_reading.size() == handed / files.size());
  for (size_t n : per_reading) CHECK(n == files.size());
  if (readings != nullptr) *readings = handed / files.size();
  summarized->clear();
  for (const ProcessRecord& p : d->job.processes()) {
    summarized->push_back(!p.summary.empty());
    if (!p.summary.empty()) {
      CHECK(p.summary == p.path);  // the trace's own path
      CHECK(p.summarized_here);
    }
  }
  return std::move(*d);
}

// The root causes and the other findings of two diagnoses agree: kind,
// communicator, number and ranks, one by one.
void CheckSameVerdict(const Diagnosis& a, const Diagnosis& b) {
  CHECK(a.problem == b.problem);
  REQUIRE(a.findings.size() == b.findings.size());
  for (size_t i = 0; i < a.findings.size(); ++i) {
    INFO(KindName(a.findings[i].kind));
    CHECK(a.findings[i].kind == b.findings[i].kind);
    CHECK(a.findings[i].role == b.findings[i].role);
    CHECK(a.findings[i].comm == b.findings[i].comm);
    CHECK(a.findings[i].seq == b.findings[i].seq);
    CHECK(a.findings[i].ranks == b.findings[i].ranks);
  }
}

}  // namespace

// Big traces are judged from their summaries made in memory: 20,000 calls
// a rank with the default window (4,096 at each end) leave 11,264 calls of
// each out as digests. A mismatch at the end is found from what is kept; a
// mismatch in the middle only differs by a block's digest (a summary_gap),
// so the job is read again through summaries that keep that block whole,
// and the verdict is the traces' own.
TEST_CASE("summary: a big trace is judged from its summary in memory, read again where needed",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 4;
  job.calls = 20000;
  job.diverging_rank = 2;
  std::vector<bool> summarized;
  SECTION("a mismatch at the end: from the summaries") {
    job.diverging_seq = 19990;
    WriteJob(tmp.path() + "/end", job);
    const std::vector<std::string> traces = Traces(tmp.path() + "/end");
    const EvidenceDiagnosis whole = DiagnoseSummarizing(traces, UINT64_MAX, &summarized);
    CHECK(summarized == std::vector<bool>(4, false));
    const EvidenceDiagnosis light = DiagnoseSummarizing(traces, 0, &summarized);
    CHECK(summarized == std::vector<bool>(4, true));
    const Finding* r = Root(whole.diagnosis);
    REQUIRE(r != nullptr);
    CHECK(r->kind == FindingKind::kCollectiveMismatch);
    CHECK(r->seq == 19990u);
    CHECK(r->ranks == std::vector<int>{2});
    CheckSameVerdict(whole.diagnosis, light.diagnosis);
  }
  SECTION("a mismatch in the middle: read again with its block kept whole") {
    job.diverging_seq = 10000;
    WriteJob(tmp.path() + "/middle", job);
    const std::vector<std::string> traces = Traces(tmp.path() + "/middle");
    const EvidenceDiagnosis whole = DiagnoseSummarizing(traces, UINT64_MAX, &summarized);
    size_t readings = 0;
    const EvidenceDiagnosis light = DiagnoseSummarizing(traces, 0, &summarized, &readings);
    CHECK(readings == 2);
    CHECK(summarized == std::vector<bool>(4, true));  // the second reading's, summarized too
    const Finding* r = Root(light.diagnosis);
    REQUIRE(r != nullptr);
    CHECK(r->kind == FindingKind::kCollectiveMismatch);
    CHECK(r->seq == 10000u);
    CHECK(r->ranks == std::vector<int>{2});
    CheckSameVerdict(whole.diagnosis, light.diagnosis);
  }
  SECTION("a slow rank with GPU times: the same straggler, the same figures") {
    job.diverging_rank = -1;
    job.slow_rank = 3;
    job.slow_ns = 5000000;
    job.gpu_times = true;
    job.start_ns = 1000000000000ull;
    job.start_realtime_ns = 1790000000000000000ull;
    WriteJob(tmp.path() + "/slow", job);
    const std::vector<std::string> traces = Traces(tmp.path() + "/slow");
    const EvidenceDiagnosis whole = DiagnoseSummarizing(traces, UINT64_MAX, &summarized);
    const EvidenceDiagnosis light = DiagnoseSummarizing(traces, 0, &summarized);
    CHECK(summarized == std::vector<bool>(4, true));
    CheckSameVerdict(whole.diagnosis, light.diagnosis);
    // In memory: each trace's last 4 x 4,096 GPU times, what the GPU
    // analyses read, the rest counted.
    size_t read = 0;
    REQUIRE(LoadJobInputs(
                traces, 1,
                [&](const JobInput& in) {
                  REQUIRE(in.status.ok());
                  ++read;
                  CHECK(in.trace.gpu_times.size() == 4 * kDefaultSummaryWindow);
                  CHECK(in.trace.gpu_times.back().collectives == 20000);
                  REQUIRE(in.trace.left_out_gpu_times.size() == 1);
                  CHECK(in.trace.left_out_gpu_times[0].count == 20000 - 4 * kDefaultSummaryWindow);
                },
                0)
                .ok());
    CHECK(read == 4);
    bool straggler = false;
    for (size_t i = 0; i < whole.diagnosis.findings.size(); ++i) {
      const auto* a = std::get_if<StragglerFacts>(&whole.diagnosis.findings[i].facts);
      const auto* b = std::get_if<StragglerFacts>(&light.diagnosis.findings[i].facts);
      if (a == nullptr || b == nullptr) continue;
      straggler = true;
      CHECK(a->compared == b->compared);
      CHECK(a->times_last == b->times_last);
      CHECK(a->median_late_ns == b->median_late_ns);
      CHECK(a->first_seq == b->first_seq);
      CHECK(a->last_seq == b->last_seq);
      CHECK(b->summary_kept == 0);
    }
    CHECK(straggler);
    // `status`'s table from the same readings: the same rows and the same
    // straggler, on calls and GPU times well past what a summary keeps.
    auto table = [&](uint64_t summarize_over) {
      constexpr int64_t kMinute = int64_t{60} * 1'000'000'000;
      ncclwatch::decoder::JobStatusBuilder b(static_cast<int64_t>(job.start_realtime_ns) + kMinute,
                                             kMinute);
      REQUIRE(LoadJobInputs(
                  traces, 1,
                  [&](const JobInput& in) {
                    REQUIRE(in.status.ok());
                    CHECK(in.trace.summarized_here == (summarize_over == 0));
                    b.AddProcess(in.trace);
                  },
                  summarize_over)
                  .ok());
      const ncclwatch::decoder::JobStatus st = b.Finish();
      CHECK_FALSE(st.stragglers_on_fewer_calls);
      std::ostringstream out;
      ncclwatch::decoder::WriteStatus(st, out);
      return out.str();
    };
    const std::string whole_table = table(UINT64_MAX);
    INFO(whole_table);
    CHECK(whole_table.find("\nSLOW: rank 3 ") != std::string::npos);
    CHECK(table(0) == whole_table);
  }
}

namespace {

// Whether a diagnosis holds a summary_gap note.
bool HasSummaryGap(const Diagnosis& d) {
  for (const Finding& f : d.findings)
    if (std::holds_alternative<SummaryGapFacts>(f.facts)) return true;
  return false;
}

}  // namespace

// What a first diagnosis from summaries made in memory could not compare
// is compared by a second whose summaries keep those blocks whole
// (summary/summary_writer.h KeepWhole), not by reading the rings whole:
// every process is still read through its summary, and the verdict is the
// traces' own. Past 256 blocks, the traces are read whole.
TEST_CASE("summary: what summaries in memory could not compare is read again with its blocks kept",
          "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 4;
  job.calls = 20000;
  job.start_ns = 1000000000000ull;  // one step a millisecond, no rank late
  job.start_realtime_ns = 1790000000000000000ull;
  std::vector<bool> summarized;
  SECTION("rings that wrapped at different places") {
    // Ranks 0 and 1 kept their last ~8,000 calls of 20,000; ranks 2 and 3
    // all of them, and leave out the middle their peers' rings begin in.
    const std::string dir = tmp.path() + "/wrapped";
    job.end_rank = 2;
    job.ring_bytes = 1 << 20;
    WriteJob(dir, job);
    job.first_rank = 2;
    job.end_rank = -1;
    job.ring_bytes = 0;
    WriteJob(dir, job);
    const std::vector<std::string> traces = Traces(dir);
    REQUIRE(traces.size() == 4);
    absl::StatusOr<ProcessTrace> wrapped = LoadProcessTrace(traces[0]);
    REQUIRE(wrapped.ok());
    REQUIRE_FALSE(wrapped->collectives.empty());
    const uint64_t first = wrapped->collectives.front().seq;
    REQUIRE(first > 4096 + kLeftOutBlock);  // inside the others' middle
    REQUIRE(first < 20000 - 4096 - kLeftOutBlock);
    // One summary of the four, as `summarize` would make: the note of the
    // ring's start, which the in-memory reading does without.
    const std::string node = tmp.path() + "/node.ncws";
    WriteFile(node, Summarize(traces, kDefaultSummaryWindow, "node"));
    CHECK(HasSummaryGap(DiagnoseFiles({node}).diagnosis));
    const EvidenceDiagnosis whole = DiagnoseSummarizing(traces, UINT64_MAX, &summarized);
    CHECK_FALSE(HasSummaryGap(whole.diagnosis));
    size_t readings = 0;
    const EvidenceDiagnosis light = DiagnoseSummarizing(traces, 0, &summarized, &readings);
    CHECK(readings == 2);  // the first's summaries left that gap
    CHECK(summarized == std::vector<bool>(4, true));
    INFO("findings from the summaries: " << FindingsText(light.diagnosis));
    CHECK_FALSE(HasSummaryGap(light.diagnosis));
    CheckSameVerdict(whole.diagnosis, light.diagnosis);
  }
  SECTION("sends a wrapped ring begins inside") {
    // Rank 1's ring wrapped past the collectives (a few barriers, then
    // sends and receives alone): its first send and receive lie inside a
    // block rank 0's summary leaves out, each way.
    const std::string dir = tmp.path() + "/sends";
    job.ranks = 2;
    job.calls = 4000;
    job.sends = true;
    job.collectives_until = 8;
    job.progress = true;  // what a summary leaves sends out by
    job.end_rank = 1;
    WriteJob(dir, job);
    job.first_rank = 1;
    job.end_rank = -1;
    job.ring_bytes = 256 << 10;
    WriteJob(dir, job);
    const std::vector<std::string> traces = Traces(dir);
    REQUIRE(traces.size() == 2);
    JobEvidence evidence{traces, {}, {}};
    evidence.summarize_over = 0;
    evidence.summarize_window = 16;
    size_t handed = 0;
    absl::StatusOr<EvidenceDiagnosis> light =
        DiagnoseEvidence(evidence, [&](const JobInput&) { ++handed; });
    REQUIRE(light.ok());
    CHECK(handed == 2 * traces.size());  // read twice, the first's summaries left that gap
    for (const ProcessRecord& p : light->job.processes()) CHECK(p.summary == p.path);
    INFO("findings from the summaries: " << FindingsText(light->diagnosis));
    CHECK_FALSE(HasSummaryGap(light->diagnosis));
    CheckSameVerdict(DiagnoseFiles(traces).diagnosis, light->diagnosis);
    // Node summaries of the same window do leave that gap (a note).
    const std::string node = tmp.path() + "/node.ncws";
    WriteFile(node, Summarize(traces, 16, "node"));
    CHECK(HasSummaryGap(DiagnoseFiles({node}).diagnosis));
  }
  SECTION("a trace that lacks 1,000 calls of the middle") {
    job.gap_rank = 1;
    job.gap_first = 9000;
    job.gap_calls = 1000;
    WriteJob(tmp.path() + "/gap", job);
    const std::vector<std::string> traces = Traces(tmp.path() + "/gap");
    const EvidenceDiagnosis whole = DiagnoseSummarizing(traces, UINT64_MAX, &summarized);
    size_t readings = 0;
    const EvidenceDiagnosis light = DiagnoseSummarizing(traces, 0, &summarized, &readings);
    CHECK(readings == 2);
    CHECK(summarized == std::vector<bool>(4, true));
    INFO("findings from the summaries: " << FindingsText(light.diagnosis));
    CHECK_FALSE(HasSummaryGap(light.diagnosis));
    CheckSameVerdict(whole.diagnosis, light.diagnosis);
  }
  SECTION("a trace that lacks 80,000 calls of the middle: past 256 blocks, read whole") {
    job.calls = 100000;
    job.gap_rank = 1;
    job.gap_first = 10000;
    job.gap_calls = 80000;
    WriteJob(tmp.path() + "/gap", job);
    const std::vector<std::string> traces = Traces(tmp.path() + "/gap");
    const EvidenceDiagnosis whole = DiagnoseSummarizing(traces, UINT64_MAX, &summarized);
    size_t readings = 0;
    const EvidenceDiagnosis light = DiagnoseSummarizing(traces, 0, &summarized, &readings);
    CHECK(readings == 2);  // whole at once: no reading keeping 265 blocks
    CHECK(summarized == std::vector<bool>(4, false));
    CHECK_FALSE(HasSummaryGap(light.diagnosis));
    CheckSameVerdict(whole.diagnosis, light.diagnosis);
  }
}

// A summary keeps whole the blocks KeepWhole names: a communicator's
// collectives (its run left out split around them), and the sends of one
// pair (the sender's and the receiver's side), no other pair's.
TEST_CASE("summary: the blocks KeepWhole names are kept whole", "[summary]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 4;
  job.calls = 2000;
  job.sends = true;
  job.progress = true;
  const std::vector<std::string> traces = WrittenTraces(tmp.path() + "/traces", job);
  SummaryOptions options;
  options.window = 64;
  options.host = "node";
  SummaryStats plain_stats;
  absl::StatusOr<std::string> plain = BuildSummary(traces, options, &plain_stats);
  REQUIRE(plain.ok());
  WriteFile(tmp.path() + "/plain.ncws", *plain);
  const std::vector<ProcessTrace> before = ReadAll(tmp.path() + "/plain.ncws");
  REQUIRE(before.size() == 4);
  REQUIRE_FALSE(before[0].left_out.empty());
  const uint64_t comm = before[0].left_out[0].comm;
  // Sends from rank 0 to rank 1 (each rank sends to the next).
  options.keep.collectives[comm] = {3};
  options.keep.sends[{comm, 0, 1}] = {2};
  SummaryStats stats;
  absl::StatusOr<std::string> bytes = BuildSummary(traces, options, &stats);
  REQUIRE(bytes.ok());
  WriteFile(tmp.path() + "/kept.ncws", *bytes);
  CHECK(stats.collectives_left_out == plain_stats.collectives_left_out - 4 * kLeftOutBlock);
  CHECK(stats.p2p_left_out == plain_stats.p2p_left_out - 2 * kLeftOutBlock);
  const std::vector<ProcessTrace> read = ReadAll(tmp.path() + "/kept.ncws");
  REQUIRE(read.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    INFO("rank " << i);
    const ProcessTrace& t = read[i];
    const std::map<uint64_t, CollectiveEvent> kept = BySeq(t);
    CHECK(BySeq(before[i]).count(800) == 0);
    for (uint64_t seq = 3 * kLeftOutBlock; seq < 4 * kLeftOutBlock; ++seq)
      CHECK(kept.count(seq) == 1);
    CHECK(kept.count(3 * kLeftOutBlock - 1) == 0);
    CHECK(kept.count(4 * kLeftOutBlock) == 0);
    // The run left out, split around block 3: its blocks before and after.
    std::set<uint64_t> left;
    for (const LeftOutCalls& l : t.left_out)
      for (uint64_t b = 0; b < l.Blocks(); ++b) left.insert(l.first_block + b);
    CHECK(left.count(2) == 1);
    CHECK(left.count(3) == 0);
    CHECK(left.count(4) == 1);
    // Block 2 of the sends: rank 0's to rank 1 and rank 1's from rank 0.
    std::set<std::pair<bool, uint64_t>> p2p;  // (send, number) kept in block 2
    for (const P2pEvent& e : t.p2p)
      if (e.seq / kLeftOutBlock == 2) p2p.insert({e.send, e.seq});
    const size_t sends = i == 0 ? kLeftOutBlock : 0;
    const size_t receives = i == 1 ? kLeftOutBlock : 0;
    size_t n_sends = 0, n_receives = 0;
    for (const auto& [send, seq] : p2p) ++(send ? n_sends : n_receives);
    CHECK(n_sends == sends);
    CHECK(n_receives == receives);
  }
}

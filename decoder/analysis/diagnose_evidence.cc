#include "analysis/diagnose_evidence.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <utility>
#include <variant>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "analysis/log_diagnosis.h"
#include "analysis/log_evidence.h"
#include "model/process_liveness.h"
#include "summary/job_inputs.h"
#include "summary/summary_reader.h"

namespace ncclwatch::decoder {
namespace {

// Reads the traces into the job; an error when a summary is not whole or
// not well-formed, and (*none_read set) when none can be read.
// Traces of more than `summarize_over` bytes are read through their
// summaries (summary/job_inputs.h).
absl::Status ReadTraces(const JobEvidence& evidence, const OnTrace& on_trace,
                        uint64_t summarize_over, const KeepWhole& keep, JobAnalysis* job,
                        bool* none_read) {
  const std::vector<std::string>& files = evidence.traces;
  size_t summaries = 0;
  for (const std::string& f : files)
    summaries += IsSummaryFile(f) || SummarizedInMemory(f, summarize_over) ? 1 : 0;
  if (summaries > 0 && summaries < files.size()) job->MixesSummaries();
  const absl::Status read = LoadJobInputs(
      files, 0,
      [&](const JobInput& in) {
        if (in.status.ok()) {
          job->AddProcess(in.trace);
        } else {
          job->AddUnreadable(in.name, std::string(in.status.message()), in.may_hold_traces);
        }
        if (on_trace) on_trace(in);
      },
      summarize_over, evidence.summarize_window, keep);
  if (!read.ok()) return read;
  if (job->processes().empty()) {
    *none_read = true;
    return absl::InvalidArgumentError(
        absl::StrCat("none of the ", files.size(), " trace file(s) can be read; first: ",
                     job->unreadable().empty() ? "none given" : job->unreadable().front().error));
  }
  for (const UnreadableTrace& u : evidence.not_read)
    job->AddUnreadable(u.path, u.error, u.may_hold_traces);
  job->Finish();
  return absl::OkStatus();
}

// Reads every log; those the search passed over and those that cannot be
// read are listed with why.
void ReadLogs(const JobEvidence& evidence, EvidenceDiagnosis* out) {
  for (const UnreadableTrace& u : evidence.logs_not_read)
    out->logs_not_read.push_back({u.path, u.error});
  for (const std::string& f : evidence.logs) {
    absl::Status s = out->log.AddFile(f);
    if (!s.ok()) out->logs_not_read.push_back({f, std::string(s.message())});
  }
  out->log.Finish();
}

// Logs alone: their own diagnosis is the verdict.
absl::Status DiagnoseLogsAlone(const JobEvidence& evidence, EvidenceDiagnosis* out) {
  ReadLogs(evidence, out);
  const NcclLog& log = out->log;
  if (log.sources().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "none of the ", evidence.logs.size(), " file(s) can be read; first: ",
        out->logs_not_read.empty() ? "none given" : out->logs_not_read.front().second));
  }
  LogDiagnosis d = DiagnoseLogs(log);
  if (log.nccl_lines() == 0 && d.findings.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nothing in ",
        evidence.logs.size() == 1 ? evidence.logs.front()
                                  : absl::StrCat(evidence.logs.size(), " files"),
        " looks like an NCCL log (NCCL_DEBUG=INFO or WARN) or a job's NCCL error output"));
  }
  out->diagnosis.findings = std::move(d.findings);
  out->diagnosis.problem = d.problem;
  return absl::OkStatus();
}

// Whether `f` is a straggler's figures over fewer calls than the traces
// hold (only a whole reading gives them all).
bool StragglerOnFewerCalls(const Finding& f) {
  const auto* x = std::get_if<StragglerFacts>(&f.facts);
  return x != nullptr && x->summary_kept > 0;
}

// Whether `d` needed what a summary made in memory left out: then the
// traces are read again (GapsToKeep). A summary_gap (calls compared only by
// their blocks' digests, or not at all), or StragglerOnFewerCalls.
bool NeedsWholeTraces(const Diagnosis& d) {
  for (const Finding& f : d.findings)
    if (std::holds_alternative<SummaryGapFacts>(f.facts) || StragglerOnFewerCalls(f)) return true;
  return false;
}

// The most blocks a second reading through summaries keeps whole (all
// streams together): a rank keeps at most 65,536 calls more than its
// windows, a few MiB of rows, where the rings read through summaries are of
// 64 MiB and more.
constexpr uint64_t kMaxKeptBlocks = 256;

// What a second reading through summaries made in memory keeps whole so
// that it compares what `d`'s could not (summary/summary_writer.h
// KeepWhole): the blocks of every gap, of collectives and of sends. False
// (the traces are read whole) where that would not do: a straggler's
// figures need more calls than a window; a gap's ranks include one of a
// node's summary (its traces are not here to summarize again); the sends'
// gaps were not all listed; or the blocks would pass kMaxKeptBlocks. (A
// ring that wrapped begins inside a block its peers may leave out: where
// rings wrapped more than a window apart, a common gap, one block each.)
bool GapsToKeep(const EvidenceDiagnosis& d, KeepWhole* keep) {
  for (const Finding& f : d.diagnosis.findings)
    if (StragglerOnFewerCalls(f)) return false;
  const std::vector<ProcessRecord>& procs = d.job.processes();
  // Read whole, or through its own summary made in memory.
  auto here = [&](int process) {
    const ProcessRecord& p = procs[process];
    return p.summary.empty() || p.summarized_here;
  };
  uint64_t blocks = 0;
  auto add = [&](std::vector<uint64_t>* to, uint64_t first_seq, uint64_t end_seq) {
    const uint64_t n = (end_seq - first_seq) / kLeftOutBlock;
    if (end_seq <= first_seq || n > kMaxKeptBlocks - blocks) return false;
    blocks += n;
    for (uint64_t b = first_seq / kLeftOutBlock; b < end_seq / kLeftOutBlock; ++b) to->push_back(b);
    return true;
  };
  if (d.job.summary_gaps().any_left_out()) {
    // Each gap is a block at least: past the budget's count, too many (and
    // listing them all would cost a huge job's memory first).
    const SummaryGaps::Found found = d.job.summary_gaps().Find(kMaxKeptBlocks);
    if (found.more > 0) return false;
    for (const SummaryGap& g : found.gaps) {
      for (const auto* side : {&g.left_out, &g.kept})
        for (const auto& [process, rank] : *side)
          if (!here(process)) return false;
      if (!add(&keep->collectives[g.comm], g.first_seq, g.end_seq)) return false;
    }
  }
  const P2pMatching& p2p = d.job.p2p();
  if (p2p.more_gaps() > 0) return false;
  for (const P2pGap& g : p2p.gaps()) {
    if (!here(g.sender_process) || !here(g.receiver_process)) return false;
    if (!add(&keep->sends[{g.comm, g.sender, g.receiver}], g.first_seq, g.end_seq)) return false;
  }
  auto tidy = [](std::vector<uint64_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  for (auto& [comm, v] : keep->collectives) tidy(v);
  for (auto& [pair, v] : keep->sends) tidy(v);
  return !keep->empty();
}

// The diagnosis, from traces of more than `summarize_over` bytes read
// through their summaries.
absl::StatusOr<EvidenceDiagnosis> DiagnoseOnce(const JobEvidence& evidence, const OnTrace& on_trace,
                                               const OnReading& on_reading, uint64_t summarize_over,
                                               const KeepWhole& keep = {}) {
  if (on_reading) on_reading();
  EvidenceDiagnosis out;
  if (evidence.traces.empty()) {
    if (absl::Status s = DiagnoseLogsAlone(evidence, &out); !s.ok()) return s;
    return out;
  }
  bool none_read = false;
  if (absl::Status s = ReadTraces(evidence, on_trace, summarize_over, keep, &out.job, &none_read);
      !s.ok()) {
    if (!none_read || evidence.logs.empty()) return s;
    // No trace could be read: the logs may still say why the job failed
    // (never that it was healthy: what the traces held is unknown).
    EvidenceDiagnosis logs;
    for (const UnreadableTrace& u : out.job.unreadable())
      logs.logs_not_read.push_back({u.path, u.error});
    if (!DiagnoseLogsAlone(evidence, &logs).ok() || !logs.diagnosis.problem) return s;
    return logs;
  }
  // What this machine sees of the traced processes now: whether the job is
  // live, and which of its processes on this host still exist, and how
  // (right after the traces, before the logs are read).
  std::vector<TracedProcessId> ids;
  for (const ProcessRecord& p : out.job.processes())
    ids.push_back({p.host, p.pid, p.created_ns, p.pid_namespace});
  out.observed = ObserveLiveness(ids);
  const LivenessObservation& observed = out.observed;
  // The logs' init evidence joins the traces' before the diagnosis.
  ReadLogs(evidence, &out);
  const bool logs = !out.log.sources().empty();
  std::set<int> joined;
  std::vector<InitEvidence> log_evidence;
  if (logs) {
    log_evidence = LogInitEvidence(out.log);
    joined = out.job.JoinLogEvidence(log_evidence, out.log.timestamps());
  }
  out.diagnosis = Diagnose(out.job, observed);
  if (logs) {
    // What the logs say beyond the init evidence judged with the traces.
    joined.insert(out.diagnosis.untraced_judged.begin(), out.diagnosis.untraced_judged.end());
    std::vector<TracedPid> traced;
    for (const ProcessRecord& p : out.job.processes())
      traced.push_back({static_cast<int>(p.pid), p.pid_namespace, p.rank});
    AddLogEvidence(DiagnoseLogs(out.log, joined, std::move(log_evidence)), traced, &out.diagnosis);
  }
  return out;
}

}  // namespace

uint32_t SummarizeWindow() {
  const char* v = std::getenv("NCCLWATCH_SUMMARIZE_WINDOW");
  uint32_t window = 0;
  if (v == nullptr || !absl::SimpleAtoi(v, &window) || window == 0) return kDefaultSummaryWindow;
  return window;
}

uint64_t SummarizeTracesOver() {
  const char* v = std::getenv("NCCLWATCH_SUMMARIZE_OVER");
  uint64_t bytes = 0;
  if (v == nullptr || !absl::SimpleAtoi(v, &bytes)) return kSummarizeTracesOver;
  return bytes;
}

absl::StatusOr<EvidenceDiagnosis> DiagnoseEvidence(const JobEvidence& evidence,
                                                   const OnTrace& on_trace,
                                                   const OnReading& on_reading) {
  bool summarized = false;
  for (const std::string& f : evidence.traces)
    summarized |= SummarizedInMemory(f, evidence.summarize_over);
  if (summarized) {
    KeepWhole keep;
    {
      absl::StatusOr<EvidenceDiagnosis> d =
          DiagnoseOnce(evidence, on_trace, on_reading, evidence.summarize_over);
      if (d.ok() && !NeedsWholeTraces(d->diagnosis)) return d;
      if (!d.ok() || !GapsToKeep(*d, &keep)) keep = {};
    }  // its memory given back before the next reading
    if (!keep.empty()) {
      absl::StatusOr<EvidenceDiagnosis> d =
          DiagnoseOnce(evidence, on_trace, on_reading, evidence.summarize_over, keep);
      if (d.ok() && !NeedsWholeTraces(d->diagnosis)) return d;
    }
  }
  return DiagnoseOnce(evidence, on_trace, on_reading, UINT64_MAX);
}

}  // namespace ncclwatch::decoder

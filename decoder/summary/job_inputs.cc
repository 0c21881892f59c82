#include "summary/job_inputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "model/grown_communicators.h"
#include "model/ordered_pipeline.h"
#include "model/trace_loader.h"
#include "summary/summary_format.h"
#include "summary/summary_reader.h"
#include "summary/summary_writer.h"

namespace ncclwatch::decoder {
namespace {

// A summary's traces decoded on a worker at most: the rest of a larger one
// are decoded as they are handed out (memory stays a few nodes' worth).
constexpr size_t kTracesAhead = 16;

// The slow-GPU and slow-link analyses (analysis/gpu_skew.h, link_skew.h)
// read a communicator's GPU times of its last 4,096 collective numbers, and
// a process's last 4 x 4,096 finishes (the host clocks' alignment, fewer). A summary made in memory
// keeps each communicator's last 4 x 4,096 GPU times (a real ring holds one per operation:
// millions), which hold all that where GpuTimesCover says so.
constexpr uint64_t kGpuWindow = kDefaultSummaryWindow;
constexpr uint64_t kInMemoryGpuTimes = 4 * kGpuWindow;

// Whether the GPU times `t` kept give the GPU analyses what the whole trace
// would: each communicator whose earlier ones were left out kept timed
// collectives over more than the window's numbers, and its oldest kept
// began before the earliest the window holds of any communicator (an
// operation begun before one in the window is what it is timed after:
// those left out ended before that communicator's oldest kept began, one
// stream running one operation at a time).
bool GpuTimesCover(const ProcessTrace& t) {
  if (t.left_out_gpu_times.empty()) return true;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> numbers;  // per communicator: lowest, highest
  std::map<uint64_t, uint64_t> oldest_begin;                  // per communicator
  for (const GpuTimeEvent& g : t.gpu_times) {
    // As the analyses take an operation's begin and end (gpu_skew.cc).
    if (g.begin_ns != 0 && g.end_ns != 0 && g.end_ns < INT64_MAX / 2) {
      auto [at, fresh] = oldest_begin.try_emplace(g.comm, g.begin_ns);
      if (!fresh) at->second = std::min(at->second, g.begin_ns);
    }
    if (!g.OneCollective() || g.gpu_ns == 0) continue;
    auto [at, fresh] = numbers.try_emplace(g.comm, g.collectives - 1, g.collectives - 1);
    at->second.first = std::min(at->second.first, g.collectives - 1);
    at->second.second = std::max(at->second.second, g.collectives - 1);
  }
  uint64_t window_begin = UINT64_MAX;  // the earliest begin in any communicator's window
  for (const GpuTimeEvent& g : t.gpu_times) {
    if (!g.OneCollective() || g.gpu_ns == 0 || g.begin_ns == 0) continue;
    const auto [lo, hi] = numbers.at(g.comm);
    const uint64_t first = hi - lo >= kGpuWindow ? hi - kGpuWindow + 1 : lo;
    if (g.collectives - 1 >= first) window_begin = std::min(window_begin, g.begin_ns);
  }
  for (const ProcessTrace::LeftOutGpuTimes& cut : t.left_out_gpu_times) {
    if (cut.count == 0) continue;
    auto n = numbers.find(cut.comm);
    if (n == numbers.end() || n->second.second - n->second.first < kGpuWindow) return false;
    auto b = oldest_begin.find(cut.comm);
    if (b == oldest_begin.end() || b->second >= window_begin) return false;
  }
  return true;
}

// Trace `file` read through its summary, made in memory: false where the
// summary cannot be made or read back (the caller reads the trace whole,
// and says why it cannot be read where it cannot), and where the GPU times
// it kept do not cover the GPU analyses' window (GpuTimesCover). (Its kept
// sends and receives carry how many collectives came before each, and its
// left-out ones fold that into their digests: a send and receive order
// that differs between ranks there is a summary gap, and the job is read
// again: analysis/p2p_matching.h, analysis/diagnose_evidence.h.)
bool LoadSummarized(const std::string& file, uint32_t window, const KeepWhole& keep,
                    ProcessTrace* trace) {
  SummaryOptions options;
  options.window = window;
  options.gpu_times = kInMemoryGpuTimes;
  options.keep = keep;
  SummaryStats stats;
  absl::StatusOr<std::string> bytes = BuildSummary({file}, options, &stats);
  if (!bytes.ok() || stats.traces != 1) return false;
  absl::StatusOr<std::unique_ptr<SummaryReader>> reader = SummaryReader::FromBytes(*bytes, file);
  if (!reader.ok()) return false;
  absl::StatusOr<bool> read = (*reader)->Next(trace);
  if (!read.ok() || !*read) return false;
  if (!GpuTimesCover(*trace)) return false;
  trace->path = file;
  trace->summarized_here = true;
  return true;
}

// One input file, loaded: a trace, or a summary's traces (the first
// kTracesAhead; its reader holds the rest).
struct Input {
  bool summary = false;
  absl::Status status;  // a trace's; for a summary, why it cannot be trusted
  std::unique_ptr<SummaryReader> reader;
  std::vector<ProcessTrace> traces;  // memory kept from input to input
  size_t loaded = 0;                 // traces[0, loaded) hold this input's

  void Load(const std::string& file, uint64_t summarize_over, uint32_t summarize_window,
            const KeepWhole& keep) {
    reader.reset();
    loaded = 0;
    summary = IsSummaryFile(file);
    if (traces.empty()) traces.resize(1);
    if (!summary) {
      loaded = 1;
      if (SummarizedInMemory(file, summarize_over) &&
          LoadSummarized(file, summarize_window, keep, &traces[0])) {
        status = absl::OkStatus();
        return;
      }
      status = LoadProcessTraceInto(file, &traces[0]);
      return;
    }
    absl::StatusOr<std::unique_ptr<SummaryReader>> r = SummaryReader::Open(file);
    if (!r.ok()) {
      status = r.status();
      return;
    }
    reader = std::move(*r);
    status = absl::OkStatus();
    const size_t ahead = std::min(reader->traces(), kTracesAhead);
    if (traces.size() < ahead) traces.resize(ahead);
    for (; loaded < ahead; ++loaded) {
      absl::StatusOr<bool> more = reader->Next(&traces[loaded]);
      if (!more.ok()) {
        status = more.status();
        return;
      }
      if (!*more) break;
    }
  }
};

// Every process of `files`, in their order.
absl::Status ReadInputs(const std::vector<std::string>& files, unsigned threads,
                        const OnJobInput& fn, uint64_t summarize_over, uint32_t summarize_window,
                        const KeepWhole& keep) {
  absl::Status error;
  ProcessTrace rest;  // a large summary's traces after the first kTracesAhead
  LoadInOrder<Input>(
      files.size(), threads,
      [&](size_t i, Input* in) { in->Load(files[i], summarize_over, summarize_window, keep); },
      [&](size_t i, Input& in) {
        if (!in.summary) {
          fn({files[i], in.status, in.traces[0]});
          return true;
        }
        // A summary that cannot be read whole is an error; its traces
        // before the malformed one are handed out first, as read.
        if (in.reader == nullptr) {
          error = in.status;
          return false;
        }
        for (const SummaryUnreadable& u : in.reader->unreadable())
          fn({u.path, absl::InvalidArgumentError(u.why), ProcessTrace(), u.may_hold_traces});
        for (size_t k = 0; k < in.loaded; ++k)
          fn({in.traces[k].path, absl::OkStatus(), in.traces[k]});
        if (!in.status.ok()) {
          error = in.status;
          return false;
        }
        for (;;) {
          absl::StatusOr<bool> more = in.reader->Next(&rest);
          if (!more.ok()) {
            error = more.status();
            return false;
          }
          if (!*more) break;
          fn({rest.path, absl::OkStatus(), rest});
        }
        in.reader.reset();  // its bytes
        return true;
      });
  return error;
}

}  // namespace

bool SummarizedInMemory(const std::string& file, uint64_t summarize_over) {
  if (summarize_over == UINT64_MAX) return false;
  struct stat st;
  if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return static_cast<uint64_t>(st.st_size) > summarize_over && !IsSummaryFile(file);
}

absl::Status LoadJobInputs(const std::vector<std::string>& files, unsigned threads,
                           const OnJobInput& fn, uint64_t summarize_over, uint32_t summarize_window,
                           const KeepWhole& keep) {
  // The ranks an ncclCommGrow gained come last, joined with their
  // communicator's existing ranks (model/grown_communicators.h).
  GrowJoin join;
  std::vector<std::pair<std::string, ProcessTrace>> gained;
  absl::Status read = ReadInputs(
      files, threads,
      [&](const JobInput& in) {
        if (in.status.ok() && GrowJoin::Gained(in.trace)) {
          gained.emplace_back(in.name, in.trace);
          return;
        }
        if (in.status.ok()) join.Learn(in.trace);
        fn(in);
      },
      summarize_over, summarize_window, keep);
  if (!read.ok()) return read;
  for (auto& [name, trace] : gained) {
    join.Join(&trace);
    fn({name, absl::OkStatus(), trace});
  }
  return absl::OkStatus();
}

}  // namespace ncclwatch::decoder

// LoadJobInputs: a job's evidence files, traces and node summaries mixed,
// handed to the caller one process at a time, in the order given (but
// for the ranks a grow gained: below).
//
// A trace file is one process; a summary (`ncclwatch summarize`,
// summary/summary_reader.h) is each of the processes its node held, in the
// order it holds them, and each trace its node could not read ("HOST:PATH"
// and why). A summary is known by its magic, whatever its name. The files
// are read and decoded on every core (model/ordered_pipeline.h: a few
// files ahead of the one handed out, a summary's first traces with it), so
// a thousand nodes' summaries are merged at the speed of the analyses.
//
// The ranks an ncclCommGrow gained come after all others, their grown
// communicator renamed to the identity its existing ranks recorded
// (model/grown_communicators.h): every analysis sees one communicator.
//
// Thread-safety: call from one thread; `fn` runs on that thread.

#ifndef NCCLWATCH_DECODER_SUMMARY_JOB_INPUTS_H_
#define NCCLWATCH_DECODER_SUMMARY_JOB_INPUTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/process_trace.h"
#include "summary/summary_format.h"
#include "summary/summary_writer.h"

namespace ncclwatch::decoder {

// One process handed to the caller: the name to report it by (a trace's
// path, a summarized trace's "HOST:PATH") and its status: OK with the
// trace, or why it could not be read (a bad trace is the job's unreadable
// input; `may_hold_traces`: what a node's summary lists as a folder it
// could not search or a link it did not follow, which may hold a rank's).
struct JobInput {
  const std::string& name;
  const absl::Status& status;
  const ProcessTrace& trace;
  bool may_hold_traces = false;
};
using OnJobInput = std::function<void(const JobInput& input)>;

// `fn` gets each process, in the order above. A
// summary that is not whole or not well-formed is an error (returned, one
// line, naming the file; the command exits 2): nothing of a node's summary
// can be trusted once any of it cannot.
//
// A trace file of more than `summarize_over` bytes is read through its
// summary, made in memory (summary/summary_writer.h, `summarize_window`,
// and as many GPU times as the slow-GPU analysis reads), so that a big
// ring costs what the analyses keep, not its size: the trace handed out
// holds the calls at each end of its streams and the digests of the rest,
// with its own path; its `summary` names the file too. Where the summary
// cannot be made, the trace is read whole. Those summaries keep whole the
// blocks `keep` names too (summary/summary_writer.h KeepWhole: what
// DiagnoseEvidence found it could not compare in them the first time; it
// reads the job again whole where that did not do).
absl::Status LoadJobInputs(const std::vector<std::string>& files, unsigned threads,
                           const OnJobInput& fn, uint64_t summarize_over = UINT64_MAX,
                           uint32_t summarize_window = kDefaultSummaryWindow,
                           const KeepWhole& keep = {});

// Whether LoadJobInputs reads `file` through its summary made in memory: a
// regular file that is no summary, of more than `summarize_over` bytes.
bool SummarizedInMemory(const std::string& file, uint64_t summarize_over);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_SUMMARY_JOB_INPUTS_H_

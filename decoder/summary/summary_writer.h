// WriteSummary: a node's traces, reduced to one summary file
// (summary/summary_format.h), what `ncclwatch summarize` writes.
//
// Each trace is read twice, from one opening of the file. The first reading
// is the model's (model/process_trace.h ReadProcessTrace) but for the rows
// of the calls: each collective is counted into its (communicator, rank)'s
// survey instead (its numbers' range, a bit for each number, calls per
// block of the grid, its first call pending), each send and receive into
// its (communicator, rank, peer, direction)'s (calls, latest time and
// whether any is pending, per block), which is all the windows need, and
// each GPU time only counted, so a big ring costs a few bits a call, not a
// row. The second
// reading goes over the records again (trace/trace_file.h), each kept or
// left out by the windows the first set; the collectives left out are
// digested there, as the collective alignment signs them. A trace that
// cannot be read is listed in the summary with why, so that a diagnosis
// from the summary says so as one from the traces would.
//
// Thread-safety: call from one thread.

#ifndef NCCLWATCH_DECODER_SUMMARY_SUMMARY_WRITER_H_
#define NCCLWATCH_DECODER_SUMMARY_SUMMARY_WRITER_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "summary/summary_format.h"

namespace ncclwatch::decoder {

// Blocks of the grid (model/left_out_calls.h) a summary keeps whole in each
// stream that reaches them, inside the middle it would leave out: where a
// diagnosis from summaries made in memory found ranks it could not compare
// (analysis/summary_gaps.h, p2p_matching.h), so that the next compares
// their calls themselves, at the cost of those blocks, not of the rings
// (analysis/diagnose_evidence.h).
struct KeepWhole {
  // A communicator's collectives: its blocks, sorted.
  std::map<uint64_t, std::vector<uint64_t>> collectives;
  // The sends of one rank to another on a communicator, numbered per pair
  // (the sender's sends and the receiver's receives): (communicator,
  // sender, receiver) -> blocks, sorted.
  std::map<std::tuple<uint64_t, int32_t, int32_t>, std::vector<uint64_t>> sends;

  bool empty() const { return collectives.empty() && sends.empty(); }
};

struct SummaryOptions {
  // Collectives kept at each end of a (communicator, rank)'s calls (sends
  // and receives at each end of a (communicator, rank, peer, direction)'s,
  // group calls at each end of the process's); at least 1.
  uint32_t window = kDefaultSummaryWindow;
  // GPU times kept of each communicator's, the last ones (at least 1): a
  // node's summary keeps a few; a big trace read through its summary in
  // memory (summary/job_inputs.h) keeps what the slow-GPU analysis reads.
  uint64_t gpu_times = kSummaryGpuTimes;
  // The second reading of a trace passes over the chunks of its ring the
  // first found it would leave out whole (summary/chunk_ledger.h); false:
  // it reads every slot again (the summary is the same: tests compare).
  bool pass_over_chunks = true;
  // Blocks kept whole besides the windows' ends (KeepWhole).
  KeepWhole keep;
  std::string host;  // where the traces were read ("" : this machine's name)
  // What the search for the traces passed over (a folder it could not
  // search, a link it did not follow), (path, why): listed in the summary as
  // not read, and as what may hold a rank's trace.
  std::vector<std::pair<std::string, std::string>> not_read;
};

struct SummaryStats {
  size_t traces = 0;          // traces summarized
  uint64_t records = 0;       // their records
  uint64_t entries_kept = 0;  // records kept (whole, or as differences)
  // Of them, records (not calls) kept as their difference from the one
  // before of their context (format 6: summary/record_delta.h).
  uint64_t records_as_differences = 0;
  uint64_t collectives_left_out = 0;
  uint64_t p2p_left_out = 0;  // sends and receives
  uint64_t groups_left_out = 0;
  uint64_t progress_left_out = 0;  // GPU progress records (every 20 ms) in the middle
  uint64_t slots_passed_over = 0;  // ring slots the second reading did not read
  // What could not be read, listed in the summary too: the traces that
  // failed to read, then what the search passed over (options.not_read).
  std::vector<SummaryUnreadable> unreadable;
};

// The summary of `trace_files`, as the bytes of the file. An error only when
// the summary would pass kMaxSummaryBytes or hold more than
// kMaxSummaryTraces traces.
absl::StatusOr<std::string> BuildSummary(const std::vector<std::string>& trace_files,
                                         const SummaryOptions& options,
                                         SummaryStats* stats = nullptr);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_SUMMARY_SUMMARY_WRITER_H_

// SummaryReader: a node's summary file (summary/summary_format.h), read as
// hostile input, back into the model: one ProcessTrace per trace it holds.
//
// Open() reads the whole file (at most kMaxSummaryBytes) and refuses, with
// a one-line reason, a file that is not a summary, comes from another
// version, is torn or cut (its length and checksum), or whose sections do
// not add up. Next() then rebuilds each trace: its identity and stats as
// summarized, its records through the model's own importer
// (model/record_importer.h), as LoadProcessTrace does a trace's, and what
// was left out (ProcessTrace::left_out). A trace's `path` becomes
// "HOST:PATH", where it lies on the node that summarized it.
//
//   auto r = SummaryReader::Open(path);     // error: exit 2
//   ProcessTrace t;
//   while (true) {
//     absl::StatusOr<bool> more = (*r)->Next(&t);  // error: exit 2
//     if (!more.ok() || !*more) break;
//     ... use t ...
//   }
//
// Thread-safety: one reader per thread.

#ifndef NCCLWATCH_DECODER_SUMMARY_SUMMARY_READER_H_
#define NCCLWATCH_DECODER_SUMMARY_SUMMARY_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/process_trace.h"
#include "summary/record_delta.h"
#include "summary/summary_format.h"

namespace ncclwatch::decoder {

// Whether the file at `path` begins with a summary's magic (a regular file
// only; nothing else is read).
bool IsSummaryFile(const std::string& path);

class SummaryReader {
 public:
  static absl::StatusOr<std::unique_ptr<SummaryReader>> Open(const std::string& path);
  // A summary made in memory (BuildSummary's bytes, copied: a trace's own
  // summary is small), named `name` in its errors and as its traces'
  // `summary`.
  static absl::StatusOr<std::unique_ptr<SummaryReader>> FromBytes(const std::string& bytes,
                                                                  const std::string& name);

  const std::string& path() const { return path_; }
  const std::string& host() const { return host_; }  // where it was made
  uint64_t window() const { return window_; }
  size_t traces() const { return sections_.size(); }
  // What the node could not read, its path as "HOST:PATH".
  const std::vector<SummaryUnreadable>& unreadable() const { return unreadable_; }

  // The next trace into `trace` (reset first, its memory kept); false when
  // every trace was read; an error, naming the file, when a section is
  // malformed.
  absl::StatusOr<bool> Next(ProcessTrace* trace);

 private:
  SummaryReader() = default;
  absl::Status Parse();
  absl::Status ReadTrace(size_t index, ProcessTrace* trace) const;

  std::string path_;
  std::vector<uint8_t> bytes_;
  std::string host_;
  uint64_t window_ = 0;
  std::vector<std::pair<size_t, size_t>> sections_;  // (offset, length) of each trace
  std::vector<SummaryUnreadable> unreadable_;
  std::optional<FlatRecord> node_inventory_;  // every trace's inventory starts from it
  size_t next_ = 0;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_SUMMARY_SUMMARY_READER_H_

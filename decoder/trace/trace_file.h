// TraceFile: one trace file, read as hostile input.
//
// Open() checks the header against the file's real size and the format's
// constants before any offset is used, and refuses, with a one-line reason, a
// file that is not a trace, was truncated, or comes from another format or
// schema version. ForEachRecord() then yields every whole record of both
// regions in the order they were written (the pinned region's records merged,
// by their time stamps, into the ring's from its oldest surviving slot); a slot whose
// stamp does not match its place (torn by a crash, overwritten, never
// written) or whose lengths do not add up is skipped and counted, never used.
// The process may still be running: every slot is copied and its stamp
// checked again after the copy.
//
// Thread-safety: a TraceFile may be read by one thread at a time.

#ifndef NCCLWATCH_DECODER_TRACE_TRACE_FILE_H_
#define NCCLWATCH_DECODER_TRACE_TRACE_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ncclwatch/ring_format.h"

namespace ncclwatch::decoder {

struct TraceFileStats {
  uint64_t ring_claimed = 0;     // records' slots ever claimed in the ring
  uint64_t ring_overwritten = 0; // slots the ring no longer holds (it wrapped)
  uint64_t torn_slots = 0;       // slots in range that were not whole
  uint64_t pinned_overflow = 0;  // pinned records the writer sent to the ring
  uint64_t padding_slots = 0;    // slots given up by an in-place write that did not fit
  uint64_t records = 0;          // whole records yielded
};

class TraceFile {
 public:
  static absl::StatusOr<std::unique_ptr<TraceFile>> Open(const std::string& path);
  ~TraceFile();

  // A validated copy of the header, taken at Open.
  const ncclwatch_ring_header& header() const { return header_; }
  const std::string& path() const { return path_; }

  // Slots that hold records now (pinned and ring), an upper bound on the
  // number of records ForEachRecord would yield.
  uint64_t SlotsInUse() const;

  // `bytes` is valid during the call only.
  using RecordFn = std::function<void(bool pinned, uint64_t index, absl::Span<const uint8_t> bytes)>;
  void ForEachRecord(const RecordFn& fn, TraceFileStats* stats) const;

 private:
  TraceFile() = default;
  void ReadRegion(bool pinned, uint64_t offset, uint64_t slots, uint64_t cursor, const RecordFn& fn,
                  TraceFileStats* stats) const;

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  ncclwatch_ring_header header_{};
};

// A record's time stamp (Record.t), 0 when it has none.
uint64_t RecordTime(absl::Span<const uint8_t> record);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_TRACE_FILE_H_

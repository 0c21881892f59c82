// TraceFile: one trace file, read as hostile input.
//
// Open() checks the header against the file's real size and the format's
// constants before any offset is used, and refuses, with a one-line reason, a
// file that is not a trace, was truncated, or comes from another format or
// schema version (formats 1 and 2 are still read).
// ForEachRecord() then yields every whole record of both
// regions in the order they were written (the pinned region's records merged,
// by their time stamps, into the ring's from its oldest surviving slot; a
// format-3 (or later) ring whose threads claimed blocks of slots put back in time order
// within the writer's bound, trace/time_order.h); a slot whose
// stamp does not match its place (torn by a crash, overwritten, never
// written) or whose lengths do not add up is skipped and counted, never used.
// The process may still be running, and the file may even shrink while it
// is read. The file is mapped (trace/mapped_file.h: a page past a shrunk
// file's end reads as zeros, never SIGBUS, and the rest counts as torn).
// The slots a live writer may still be filling (the pinned region and the
// ring's newest slots) are copied out and count only if the copy is whole
// (their stamps unchanged across it, seqlock-style; read twice and compared
// when read with pread; a writer that ended has its newest slots read in
// place, below: one it is still filling has no final stamp yet); those
// near the point where a live writer laps the ring are copied out, and
// count only if the ring's cursor had not lapped them by the end of the
// copy. The rest, which a writer is not expected to reach
// while they are read (its process ended, or it would need a quarter of the
// ring's claims first), is read where it lies, with no copy, and checked
// after its records were handed out: if the writer claimed any of those
// slots for its next lap meanwhile, or the file shrank under them, the
// stats say read_again, and the caller reads the file again copied
// (ReadMode::kCopied: every slot copied out with pread, as a file that
// cannot be mapped is read).
//
// Thread-safety: a TraceFile may be read by one thread at a time.

#ifndef NCCLWATCH_DECODER_TRACE_TRACE_FILE_H_
#define NCCLWATCH_DECODER_TRACE_TRACE_FILE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ncclwatch/ring_format.h"
#include "trace/call_slot.h"
#include "trace/mapped_file.h"
#include "trace/time_order.h"

namespace ncclwatch::decoder {

struct TraceFileStats {
  uint64_t ring_claimed = 0;      // records' slots ever claimed in the ring
  uint64_t ring_overwritten = 0;  // slots the ring no longer holds (it wrapped)
  uint64_t torn_slots = 0;        // slots in range not whole (a writer stopped mid-record)
  uint64_t unwritten_slots = 0;   // format 3: slots in range never written (claim blocks' rest)
  uint64_t pinned_overflow = 0;   // pinned records the writer sent to the ring
  uint64_t padding_slots = 0;     // slots given up by an in-place write that did not fit
  uint64_t records = 0;           // whole records yielded
  uint64_t lapped_slots = 0;      // slots a live writer claimed again while they were read
  // Records put back in time order (claim blocks) let out before their
  // turn, too many being held (TimeOrder::kMaxHeld).
  uint64_t out_of_turn = 0;
  bool truncated = false;  // the file shrank while it was read
  // Slots read in place (in the mapping) may have changed while they were
  // used: a live writer claimed them for its next lap, or the file shrank
  // under them. What was yielded is then not to be trusted: read the file
  // again with ReadMode::kCopied (LoadProcessTrace does).
  bool read_again = false;
};

// How a TraceFile reads its slots: mapped (in place where no writer is
// expected to reach them, checked afterwards: read_again), or every one
// copied out with pread (what a file that cannot be mapped gets, and what a
// read_again asks for; tests read both ways).
enum class ReadMode { kMapped, kCopied };

class TraceFile {
 public:
  static absl::StatusOr<std::unique_ptr<TraceFile>> Open(const std::string& path,
                                                         ReadMode mode = ReadMode::kMapped);
  ~TraceFile();

  // A validated copy of the header, taken at Open.
  const ncclwatch_ring_header& header() const { return header_; }
  const std::string& path() const { return path_; }

  // Slots that hold records now (pinned and ring), an upper bound on the
  // number of records ForEachRecord would yield.
  uint64_t SlotsInUse() const;

  // Calls fn(bool pinned, uint64_t index, absl::Span<const uint8_t> bytes)
  // for every whole record, in timeline order; `bytes` is a trace.proto
  // Record (a fixed slot is converted into the Record it stands for, see
  // trace/call_slot.h and trace/gpu_time_slot.h) valid during the call only. (A template: the
  // per-record call is inlined.)
  template <typename Fn>
  void ForEachRecord(Fn&& fn, TraceFileStats* stats) const;

  // The same records, as stored: calls fn(bool pinned, uint64_t index,
  // uint8_t kind, absl::Span<const uint8_t> bytes), where `kind` is
  // NCCLWATCH_SLOT_SINGLE for a protobuf Record (`bytes`, whatever slots it
  // spanned) or a fixed slot's kind, with `bytes` its
  // NCCLWATCH_SLOT_PAYLOAD_BYTES-byte payload: a call slot's
  // (NCCLWATCH_SLOT_COLLECTIVE, _P2P, _GROUP: ReadCallSlot) or a GPU time's
  // (NCCLWATCH_SLOT_GPU_TIME: ReadGpuTimeSlot).
  // What the model's importer reads, with no conversion.
  template <typename Fn>
  void ForEachEntry(Fn&& fn, TraceFileStats* stats) const;

  // The same, for a reader that reads a trace twice and learns in the first
  // reading which slots the second need not read (summary/summary_writer.cc):
  // `chunk(uint64_t first_slot, uint64_t slots, uint64_t cursor,
  // TimeOrder::State* order)` is called before each chunk of the ring's
  // slots is read, with the ring's cursor as this reading took it and,
  // where the records are put back in time order (threads claimed blocks of
  // slots: time_order.h), the order's state then ({0, 0} where they come in
  // claim order). True passes over the chunk unread (no entry, no stats, its
  // pages not touched), `*order` set to the state after it (as the first
  // reading saw it). The chunks are the same in two readings of a ring
  // whose cursor did not move between them.
  template <typename Fn, typename Chunk>
  void ForEachEntry(Fn&& fn, TraceFileStats* stats, Chunk&& chunk) const;

 private:
  static constexpr uint64_t kChunkSlots = 2048;  // 256 KiB a read
  // The ring's newest slots: copied whole, seqlock-style (in place for an
  // ended writer; a record of its that runs past a chunk is still copied so).
  static constexpr uint64_t kInFlightSlots = 4096;
  // A live writer's claims, at least, between the ring's cursor and a slot
  // read where it lies (more where a quarter of the ring is more).
  static constexpr uint64_t kLapMarginSlots = 4096;
  static constexpr uint64_t kNoCursor = UINT64_MAX;  // LiveCursor could not read it
  // How far ahead of the slot being read the next is asked for: the
  // hardware's prefetchers stop at each 4 KiB page of the mapping.
  static constexpr uint64_t kReadAheadSlots = 32;

  // A thread's copy buffers (ReadRegion): kept for the life of the thread;
  // a nested read (a callback that reads another trace) gets its own.
  struct ReadBuffers {
    std::unique_ptr<uint8_t[]> chunk{new uint8_t[kChunkSlots * NCCLWATCH_SLOT_BYTES]};
    std::unique_ptr<uint8_t[]> again;  // pread's second copy, to compare
    std::unique_ptr<uint8_t[]> gather{
        new uint8_t[NCCLWATCH_MAX_RECORD_SLOTS * NCCLWATCH_SLOT_BYTES]};
    std::unique_ptr<uint8_t[]> record{new uint8_t[NCCLWATCH_MAX_RECORD_BYTES]};
    bool in_use = false;
    static ReadBuffers& Claim() {
      thread_local ReadBuffers mine;
      if (!mine.in_use) {
        mine.in_use = true;
        return mine;
      }
      thread_local std::vector<std::unique_ptr<ReadBuffers>> nested;
      for (auto& b : nested) {
        if (!b->in_use) {
          b->in_use = true;
          return *b;
        }
      }
      nested.push_back(std::make_unique<ReadBuffers>());
      nested.back()->in_use = true;
      return *nested.back();
    }
  };

  TraceFile() = default;
  // `n` bytes at `offset`, all of them, or false (the file is shorter now).
  bool ReadAt(uint64_t offset, void* out, size_t n) const;
  // The live values of the header's cursors (pinned_next or ring_next;
  // kNoCursor when the file no longer holds them) and of pinned_overflow,
  // read from the file now.
  uint64_t LiveCursor(bool pinned) const;
  uint64_t LiveOverflow() const;
  // Whether a thread of the writer has claimed a block of more than one
  // slot (format 3; read after the cursors).
  bool LiveClaimBlocksUsed() const;
  // Calls fn(pinned, index, kind, bytes, slot_flags) for each whole record,
  // in logical order; one-slot records' bytes stay valid until retire() is
  // called (just before the buffers they are in are overwritten, or the
  // next chunk is read), multi-slot records' only during the call.
  // `writer_ended`: the process wrote its end record, so few more records
  // are to come (exit-time calls; when they lap what was read in place,
  // read_again says so).
  // `chunk` as ForEachEntry's.
  template <typename Fn, typename Retire, typename Chunk>
  void ReadRegion(bool pinned, uint64_t offset, uint64_t slots, uint64_t cursor, bool writer_ended,
                  Fn& fn, Retire& retire, Chunk& skip_chunk, TraceFileStats* stats) const;

  std::string path_;
  int fd_ = -1;
  ncclwatch_ring_header header_{};
  std::unique_ptr<MappedFile> map_;  // nullptr: read with pread
};

// A record's time stamp (Record.t), 0 when it has none.
uint64_t RecordTime(absl::Span<const uint8_t> record);
// Whether a record is the process's end (Record.process_end).
bool IsProcessEnd(absl::Span<const uint8_t> record);
// The same for an entry of ForEachEntry: a fixed slot's t, or RecordTime.
inline uint64_t EntryTime(uint8_t kind, absl::Span<const uint8_t> bytes) {
  if (kind != NCCLWATCH_SLOT_SINGLE && bytes.size() >= 8) {
    uint64_t t;
    std::memcpy(&t, bytes.data(), 8);
    return t;
  }
  return RecordTime(bytes);
}

}  // namespace ncclwatch::decoder

// The templates' bodies: how the slots are read (not for including elsewhere).
#include "trace/internal/trace_file_read.h"  // IWYU pragma: export

#endif  // NCCLWATCH_DECODER_TRACE_TRACE_FILE_H_

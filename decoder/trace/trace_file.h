// TraceFile: one trace file, read as hostile input.
//
// Open() checks the header against the file's real size and the format's
// constants before any offset is used, and refuses, with a one-line reason, a
// file that is not a trace, was truncated, or comes from another format or
// schema version (formats 1 and 2 are still read).
// ForEachRecord() then yields every whole record of both
// regions in the order they were written (the pinned region's records merged,
// by their time stamps, into the ring's from its oldest surviving slot; a
// format-3 ring whose threads claimed blocks of slots put back in time order
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
  bool truncated = false;         // the file shrank while it was read
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
  // Record (a call slot is converted into the Record it stands for, see
  // trace/call_slot.h) valid during the call only. (A template: the
  // per-record call is inlined.)
  template <typename Fn>
  void ForEachRecord(Fn&& fn, TraceFileStats* stats) const;

  // The same records, as stored: calls fn(bool pinned, uint64_t index,
  // uint8_t kind, absl::Span<const uint8_t> bytes), where `kind` is
  // NCCLWATCH_SLOT_SINGLE for a protobuf Record (`bytes`, whatever slots it
  // spanned) or a call slot's kind (NCCLWATCH_SLOT_COLLECTIVE, _P2P, _GROUP),
  // with `bytes` its NCCLWATCH_SLOT_PAYLOAD_BYTES-byte payload (ReadCallSlot).
  // What the model's importer reads, with no conversion.
  template <typename Fn>
  void ForEachEntry(Fn&& fn, TraceFileStats* stats) const;

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
  template <typename Fn, typename Retire>
  void ReadRegion(bool pinned, uint64_t offset, uint64_t slots, uint64_t cursor, bool writer_ended,
                  Fn& fn, Retire& retire, TraceFileStats* stats) const;

  std::string path_;
  int fd_ = -1;
  ncclwatch_ring_header header_{};
  std::unique_ptr<MappedFile> map_;  // nullptr: read with pread
};

// A record's time stamp (Record.t), 0 when it has none.
uint64_t RecordTime(absl::Span<const uint8_t> record);
// Whether a record is the process's end (Record.process_end).
bool IsProcessEnd(absl::Span<const uint8_t> record);
// The same for an entry of ForEachEntry: a call slot's t, or RecordTime.
inline uint64_t EntryTime(uint8_t kind, absl::Span<const uint8_t> bytes) {
  if (kind != NCCLWATCH_SLOT_SINGLE && bytes.size() >= 8) {
    uint64_t t;
    std::memcpy(&t, bytes.data(), 8);
    return t;
  }
  return RecordTime(bytes);
}

// ---- implementation

template <typename Fn, typename Retire>
void TraceFile::ReadRegion(bool pinned, uint64_t offset, uint64_t slots, uint64_t cursor,
                           bool writer_ended, Fn& fn, Retire& retire, TraceFileStats* stats) const {
  constexpr uint64_t kSlot = NCCLWATCH_SLOT_BYTES;
  const uint64_t mask = slots - 1;
  const bool call_slots = header_.format_version >= 2;  // format 1 has none
  // Format 3's ring: a slot of this lap that holds no stamp of it, or an
  // earlier lap's, was never written (a claim block's unused rest), not torn.
  const bool unwritten_slots = !pinned && header_.format_version >= 3;
  auto never_written = [&](uint64_t stamp, uint64_t i) {
    const uint64_t s = stamp & ~uint64_t{NCCLWATCH_STAMP_WRITING};
    return stamp == 0 || (s != 0 && s <= i && ((s - 1) & mask) == (i & mask));
  };
  const uint64_t first = pinned ? 0 : (cursor > slots ? cursor - slots : 0);
  const uint64_t last = pinned ? (cursor < slots ? cursor : slots) : cursor;
  if (!pinned) {
    stats->ring_claimed = cursor;
    stats->ring_overwritten = first;
  }
  // Where no writer is expected to reach them, slots are read in the
  // mapping (and checked after use); the others are copied out a chunk at a time (from the mapping,
  // or with pread). A file that shrinks while it is read (a copy over it, a hostile writer) gives
  // zeros or a short read, never SIGBUS. The buffers are the thread's, kept from one region and
  // file to the next: allocated afresh for each, they were returned to the system and faulted in
  // again every time (~150 page faults a file).
  ReadBuffers& buffers = ReadBuffers::Claim();
  struct Release {
    ReadBuffers& b;
    ~Release() { b.in_use = false; }
  } release{buffers};
  std::unique_ptr<uint8_t[]>& chunk = buffers.chunk;
  std::unique_ptr<uint8_t[]>& gather = buffers.gather;
  std::unique_ptr<uint8_t[]>& record = buffers.record;
  // The stamp with acquire ordering, then the rest: in the mapping, a slot
  // whose final stamp is seen is seen with the payload it was published with.
  auto header_of = [](const uint8_t* slot) {
    ncclwatch_slot_header sh;
    sh.stamp = __atomic_load_n(reinterpret_cast<const uint64_t*>(slot), __ATOMIC_ACQUIRE);
    std::memcpy(reinterpret_cast<uint8_t*>(&sh) + 8, slot + 8, sizeof(sh) - 8);
    return sh;
  };
  // Logical slots [from, from + n) into `out`, wrapping at the region's end.
  auto read_slots = [&](uint64_t from, uint64_t n, uint8_t* out) {
    const uint64_t p = from & mask;
    const uint64_t head = std::min(n, slots - p);
    if (!ReadAt(offset + p * kSlot, out, head * kSlot)) return false;
    return head == n || ReadAt(offset, out + head * kSlot, (n - head) * kSlot);
  };
  // The same for slots a live writer may be filling, with stable[k] set
  // when slot k was copied whole: a copy promises no order among the bytes
  // it reads, so such a slot could come out with its new stamp and old
  // payload. From the mapping, seqlock-style: the stamp before the copy,
  // the copy, a fence, the stamp again; the writer stamps a slot "being
  // written" before it touches its payload and stamps it whole last, so an
  // unchanged stamp means an unchanged slot (a result patched in place
  // reads as either value). With pread, twice, and the copies must agree.
  auto copy_slots = [&](uint64_t from, uint64_t n, uint8_t* out, uint8_t* stable) {
    if (map_ != nullptr) {
      for (uint64_t k = 0; k < n; ++k) {
        const uint8_t* src = map_->data() + offset + ((from + k) & mask) * kSlot;
        if (k + kReadAheadSlots < n) {
          const uint8_t* ahead =
              map_->data() + offset + ((from + k + kReadAheadSlots) & mask) * kSlot;
          __builtin_prefetch(ahead);
          __builtin_prefetch(ahead + 64);
        }
        const auto* stamp = reinterpret_cast<const uint64_t*>(src);
        const uint64_t before = __atomic_load_n(stamp, __ATOMIC_ACQUIRE);
        std::memcpy(out + k * kSlot, src, kSlot);
        std::atomic_thread_fence(std::memory_order_acquire);
        stable[k] = __atomic_load_n(stamp, __ATOMIC_RELAXED) == before;
      }
      return !map_->shrank();
    }
    if (!read_slots(from, n, out)) return false;
    if (!buffers.again) buffers.again.reset(new uint8_t[kChunkSlots * kSlot]);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (!read_slots(from, n, buffers.again.get())) return false;  // n <= kChunkSlots
    for (uint64_t k = 0; k < n; ++k)
      stable[k] = std::memcmp(out + k * kSlot, buffers.again.get() + k * kSlot, kSlot) == 0;
    return true;
  };
  uint8_t stable_slots[kChunkSlots];
  uint8_t stable_gather[NCCLWATCH_MAX_RECORD_SLOTS];
  // How far ahead of the cursor a live writer must be for a slot to be read
  // where it lies (see kLapMarginSlots).
  const uint64_t margin = std::max(kLapMarginSlots, slots / 4);
  uint64_t i = first;
  while (i < last) {
    // A chunk of physical slots from i's, up to the region's end.
    const uint64_t n = std::min({kChunkSlots, slots - (i & mask), last - i});
    retire();
    // Slots that may still be in flight: the pinned region (small), and the
    // ring's newest kInFlightSlots, copied whole. Not those of a writer that
    // ended, in the mapping: read where they lie, a slot it is still filling
    // holds no final stamp yet (the stamp is read first, with acquire
    // ordering, and the writer stamps last) and counts torn, as its unstable
    // copy would; one it claims again is found after use (read_again).
    const bool newest = !pinned && i + n + kInFlightSlots > cursor;
    const bool in_flight = pinned || ((map_ == nullptr || !writer_ended) && newest);
    // The others are read where they lie when no writer is expected to
    // reach them while they are: its process ended, or the ring's cursor is
    // `margin` claims short of lapping the chunk's first slot (checked again
    // after use, below). Else copied out.
    const uint8_t* in_place = nullptr;
    if (map_ != nullptr && !in_flight) {
      bool far = writer_ended;
      if (!far) {
        std::atomic_thread_fence(std::memory_order_acquire);
        const uint64_t now = LiveCursor(false);
        far = now != kNoCursor && now <= i + slots && i + slots - now >= margin;
      }
      if (far) in_place = map_->data() + offset + (i & mask) * kSlot;
    }
    const bool copied = in_place == nullptr;
    if (copied && !(in_flight ? copy_slots(i, n, chunk.get(), stable_slots)
                              : read_slots(i, n, chunk.get()))) {
      stats->torn_slots += last - i;
      stats->truncated = true;
      return;
    }
    // A live writer may have claimed some of these slots again while they
    // were copied: slot j is safe only while the cursor has not passed
    // j + slots. (The pinned region is never overwritten.) A cursor that
    // cannot be read counts as having lapped them all.
    uint64_t safe_from = i;
    if (!pinned) {
      std::atomic_thread_fence(std::memory_order_acquire);
      const uint64_t now = LiveCursor(false);
      if (now == kNoCursor)
        safe_from = i + n;
      else if (now > slots && now - slots > safe_from)
        safe_from = now - slots;
    }
    const uint64_t end = i + n;
    const uint8_t* const copy = copied ? chunk.get() : in_place;
    // Whether slot `k` of the chunk was copied whole.
    auto stable = [&](uint64_t k) { return !in_flight || stable_slots[k] != 0; };
    while (i < end) {
      const uint64_t start = i;
      const uint64_t k = i - (end - n);
      const uint8_t* slot = copy + k * kSlot;
      if (!copied && k + kReadAheadSlots < n) {  // both lines of the slot, in the mapping
        __builtin_prefetch(slot + kReadAheadSlots * kSlot);
        __builtin_prefetch(slot + kReadAheadSlots * kSlot + 64);
      }
      const ncclwatch_slot_header sh = header_of(slot);
      if (i < safe_from) {
        ++stats->lapped_slots;
        ++i;
        continue;
      }
      if (sh.stamp != i + 1 || sh.length > NCCLWATCH_SLOT_PAYLOAD_BYTES || !stable(k)) {
        if (unwritten_slots && sh.stamp != i + 1 && never_written(sh.stamp, i) && stable(k))
          ++stats->unwritten_slots;
        else
          ++stats->torn_slots;
        ++i;
        continue;
      }
      size_t length = 0;
      if (sh.kind == NCCLWATCH_SLOT_PADDING) {
        ++stats->padding_slots;
        ++i;
        continue;
      }
      if (sh.kind == NCCLWATCH_SLOT_SINGLE) {
        // Already a private copy, in the chunk: handed out from there.
        ++i;
        if (sh.length == 0) continue;
        ++stats->records;
        fn(pinned, start, uint8_t{NCCLWATCH_SLOT_SINGLE},
           absl::MakeConstSpan(slot + NCCLWATCH_SLOT_HEADER_BYTES, sh.length), sh.flags);
        continue;
      } else if (sh.kind >= NCCLWATCH_SLOT_COLLECTIVE && sh.kind <= NCCLWATCH_SLOT_GROUP &&
                 call_slots) {
        // A call slot: one whole payload, or torn.
        ++i;
        if (sh.length != NCCLWATCH_SLOT_PAYLOAD_BYTES ||
            sh.record_bytes != NCCLWATCH_SLOT_PAYLOAD_BYTES) {
          ++stats->torn_slots;
          continue;
        }
        ++stats->records;
        fn(pinned, start, sh.kind,
           absl::MakeConstSpan(slot + NCCLWATCH_SLOT_HEADER_BYTES, NCCLWATCH_SLOT_PAYLOAD_BYTES),
           sh.flags);
        continue;
      } else if (sh.kind == NCCLWATCH_SLOT_FIRST) {
        // Gather the record's slots; any gap or inconsistency discards all of them.
        const uint32_t total = sh.record_bytes;
        const uint64_t nslots =
            (uint64_t{total} + NCCLWATCH_SLOT_PAYLOAD_BYTES - 1) / NCCLWATCH_SLOT_PAYLOAD_BYTES;
        bool whole = total > NCCLWATCH_SLOT_PAYLOAD_BYTES && total <= NCCLWATCH_MAX_RECORD_BYTES &&
                     nslots <= NCCLWATCH_MAX_RECORD_SLOTS && nslots <= last - i;
        const uint8_t* parts = slot;
        if (whole && i + nslots > end) {  // it runs past the chunk: read it on its own
          // Copied as the writer may still be filling it: seqlock-style, or
          // twice with pread (a plain copy promises no order among the
          // slots' bytes, so a slot could come out with its final stamp and
          // an older payload), also for an ended writer's newest slots.
          if (in_flight || newest) {
            whole = copy_slots(i, nslots, gather.get(), stable_gather);
            for (uint64_t j = 0; whole && j < nslots; ++j) whole = stable_gather[j] != 0;
          } else {
            whole = read_slots(i, nslots, gather.get());
          }
          parts = gather.get();
          if (!pinned && whole) {
            std::atomic_thread_fence(std::memory_order_acquire);
            const uint64_t now = LiveCursor(false);
            whole = now != kNoCursor && (now <= slots || now - slots <= i);
          }
        } else {
          for (uint64_t j = 1; whole && j < nslots; ++j) whole = stable(k + j);
        }
        for (uint64_t j = 0; whole && j < nslots; ++j) {
          const ncclwatch_slot_header pc = header_of(parts + j * kSlot);
          const uint8_t want = j == 0            ? NCCLWATCH_SLOT_FIRST
                               : j + 1 == nslots ? NCCLWATCH_SLOT_LAST
                                                 : NCCLWATCH_SLOT_MIDDLE;
          const uint64_t expect_len = j + 1 == nslots ? total - j * NCCLWATCH_SLOT_PAYLOAD_BYTES
                                                      : NCCLWATCH_SLOT_PAYLOAD_BYTES;
          if (pc.stamp != i + j + 1 || pc.kind != want || pc.length != expect_len ||
              pc.record_bytes != total) {
            whole = false;
            break;
          }
          std::memcpy(record.get() + length, parts + j * kSlot + NCCLWATCH_SLOT_HEADER_BYTES,
                      pc.length);
          length += pc.length;
        }
        if (!whole) {
          ++stats->torn_slots;
          ++i;
          continue;
        }
        i += nslots;
      } else {
        // A MIDDLE/LAST whose FIRST is gone (overwritten across the ring's
        // oldest edge), or an unknown kind.
        ++stats->torn_slots;
        ++i;
        continue;
      }
      if (length == 0) continue;
      ++stats->records;
      fn(pinned, start, uint8_t{NCCLWATCH_SLOT_SINGLE}, absl::MakeConstSpan(record.get(), length),
         sh.flags);
    }
    if (in_place != nullptr) {
      // Held records that point into the mapping are copied first; then,
      // were these slots still the file's while they were used? A writer
      // that claimed index j + slots may have been rewriting slot j.
      retire();
      std::atomic_thread_fence(std::memory_order_acquire);
      const uint64_t now = LiveCursor(false);
      if (now == kNoCursor || now > end - n + slots) stats->read_again = true;
    }
    // The file shrank under the mapping: what lay past its new end read as
    // zeros (never a record, though a record checked before the cut may
    // have been read as zeros after it: read_again); the rest is gone.
    if (map_ != nullptr && map_->shrank()) {
      stats->torn_slots += last - i;
      stats->truncated = true;
      stats->read_again = true;
      return;
    }
  }
}

template <typename Fn>
void TraceFile::ForEachEntry(Fn&& fn, TraceFileStats* stats) const {
  // Cursors are read once: records written after this point are not seen.
  uint64_t pinned_next = LiveCursor(true);
  uint64_t ring_next = LiveCursor(false);
  if (pinned_next == kNoCursor) pinned_next = 0;
  if (ring_next == kNoCursor) ring_next = 0;
  stats->pinned_overflow = LiveOverflow();
  // The pinned region is small (process identity, modules, communicator
  // creation and end): hold its records, and hand each out just before the
  // first ring record that is later, so both regions come out in the order
  // they were written.
  struct Held {
    uint64_t t;
    uint64_t index;
    uint8_t kind;
    std::vector<uint8_t> bytes;
  };
  std::vector<Held> pinned;
  bool writer_ended = false;
  auto hold = [&](bool, uint64_t index, uint8_t kind, absl::Span<const uint8_t> bytes, uint8_t) {
    if (kind == NCCLWATCH_SLOT_SINGLE && IsProcessEnd(bytes)) writer_ended = true;
    pinned.push_back(
        {EntryTime(kind, bytes), index, kind, std::vector<uint8_t>(bytes.begin(), bytes.end())});
  };
  auto nothing_held = [] {};
  ReadRegion(true, header_.pinned_offset, header_.pinned_slots, pinned_next, false, hold,
             nothing_held, stats);
  // Pinned records are claimed in order, but threads can take their time
  // stamps in a different order than they claim: sort by time, stably.
  std::stable_sort(pinned.begin(), pinned.end(),
                   [](const Held& a, const Held& b) { return a.t < b.t; });
  size_t next = 0;
  auto release_pinned = [&](uint64_t t) {
    for (; next < pinned.size() && pinned[next].t <= t; ++next)
      fn(true, pinned[next].index, pinned[next].kind, absl::MakeConstSpan(pinned[next].bytes));
  };
  // Read after the cursors: a block under them is seen here too.
  if (header_.format_version >= 3 && LiveClaimBlocksUsed()) {
    // Threads claimed blocks of slots: the ring's records, put back in time
    // order (trace/time_order.h), then merged with the pinned ones.
    TimeOrder order(header_.claim_block_ticks);
    auto out = [&](uint64_t t, uint64_t index, uint8_t kind, absl::Span<const uint8_t> bytes) {
      release_pinned(t);
      fn(false, index, kind, bytes);
    };
    auto add = [&](bool, uint64_t index, uint8_t kind, absl::Span<const uint8_t> bytes,
                   uint8_t flags) {
      order.Add(EntryTime(kind, bytes), (flags & NCCLWATCH_SLOT_CLAIMED) != 0, index, kind, bytes,
                out);
    };
    auto keep = [&] { order.Keep(); };
    ReadRegion(false, header_.ring_offset, header_.ring_slots, ring_next, writer_ended, add, keep,
               stats);
    order.Flush(out);
  } else {
    // Records in claim order (formats 1 and 2; format 3 with blocks of one).
    auto merge = [&](bool, uint64_t index, uint8_t kind, absl::Span<const uint8_t> bytes, uint8_t) {
      if (next < pinned.size()) release_pinned(EntryTime(kind, bytes));
      fn(false, index, kind, bytes);
    };
    ReadRegion(false, header_.ring_offset, header_.ring_slots, ring_next, writer_ended, merge,
               nothing_held, stats);
  }
  for (; next < pinned.size(); ++next)
    fn(true, pinned[next].index, pinned[next].kind, absl::MakeConstSpan(pinned[next].bytes));
}

template <typename Fn>
void TraceFile::ForEachRecord(Fn&& fn, TraceFileStats* stats) const {
  uint8_t converted[kCallSlotRecordMax];
  ForEachEntry(
      [&](bool pinned, uint64_t index, uint8_t kind, absl::Span<const uint8_t> bytes) {
        if (kind == NCCLWATCH_SLOT_SINGLE) {
          fn(pinned, index, bytes);
          return;
        }
        const size_t n = CallSlotToRecord(kind, ReadCallSlot(bytes), converted);
        fn(pinned, index, absl::MakeConstSpan(converted, n));
      },
      stats);
}

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_TRACE_FILE_H_

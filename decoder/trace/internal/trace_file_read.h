// The bodies of TraceFile's templates (trace/trace_file.h): how a region's
// slots are read, checked, gathered into records and put back in time order,
// inlined into the caller's per-record callback. Included by trace_file.h
// alone; the contract, and what the stats count, are there.
//
// Thread-safety: as TraceFile's (one reader at a time); the copy buffers are
// the calling thread's own (TraceFile::ReadBuffers).

#ifndef NCCLWATCH_DECODER_TRACE_INTERNAL_TRACE_FILE_READ_H_
#define NCCLWATCH_DECODER_TRACE_INTERNAL_TRACE_FILE_READ_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/types/span.h"
#include "ncclwatch/ring_format.h"
#include "trace/call_slot.h"
#include "trace/gpu_time_slot.h"
#include "trace/time_order.h"
#include "trace/trace_file.h"

namespace ncclwatch::decoder {

template <typename Fn, typename Retire, typename Chunk>
void TraceFile::ReadRegion(bool pinned, uint64_t offset, uint64_t slots, uint64_t cursor,
                           bool writer_ended, Fn& fn, Retire& retire, Chunk& skip_chunk,
                           TraceFileStats* stats) const {
  constexpr uint64_t kSlot = NCCLWATCH_SLOT_BYTES;
  const uint64_t mask = slots - 1;
  const bool call_slots = header_.format_version >= 2;      // format 1 has none
  const bool gpu_time_slots = header_.format_version >= 4;  // nor formats 1 to 3
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
    if (!pinned && skip_chunk(i, n, cursor)) {  // the caller knows it holds nothing it wants
      i += n;
      continue;
    }
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
      if (far) {
        in_place = map_->data() + offset + (i & mask) * kSlot;
        map_->Populate(offset + (i & mask) * kSlot, n * kSlot);
      }
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
      } else if ((sh.kind >= NCCLWATCH_SLOT_COLLECTIVE && sh.kind <= NCCLWATCH_SLOT_GROUP &&
                  call_slots) ||
                 (sh.kind == NCCLWATCH_SLOT_GPU_TIME && gpu_time_slots)) {
        // A call slot or a GPU-time slot: one whole payload, or torn.
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
      // Nothing points into the chunk now: its pages go (a ring of any
      // size is read with a chunk's pages resident, not the ring's).
      map_->Release(offset + ((end - n) & mask) * kSlot, n * kSlot);
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
  ForEachEntry(std::forward<Fn>(fn), stats,
               [](uint64_t, uint64_t, uint64_t, TimeOrder::State*) { return false; });
}

template <typename Fn, typename Chunk>
void TraceFile::ForEachEntry(Fn&& fn, TraceFileStats* stats, Chunk&& chunk) const {
  auto no_chunks = [](uint64_t, uint64_t, uint64_t) { return false; };
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
             nothing_held, no_chunks, stats);
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
    auto ordered_chunk = [&](uint64_t first, uint64_t n, uint64_t cursor) {
      TimeOrder::State s = order.state();
      if (!chunk(first, n, cursor, &s)) return false;
      order.RestoreAndRelease(s, out);
      return true;
    };
    ReadRegion(false, header_.ring_offset, header_.ring_slots, ring_next, writer_ended, add, keep,
               ordered_chunk, stats);
    order.Flush(out);
    stats->out_of_turn = order.forced();
  } else {
    // Records in claim order (formats 1 and 2; formats 3 and 4 with blocks
    // of one).
    auto merge = [&](bool, uint64_t index, uint8_t kind, absl::Span<const uint8_t> bytes, uint8_t) {
      if (next < pinned.size()) release_pinned(EntryTime(kind, bytes));
      fn(false, index, kind, bytes);
    };
    auto claimed_chunk = [&](uint64_t first, uint64_t n, uint64_t cursor) {
      TimeOrder::State none;
      return chunk(first, n, cursor, &none);
    };
    ReadRegion(false, header_.ring_offset, header_.ring_slots, ring_next, writer_ended, merge,
               nothing_held, claimed_chunk, stats);
  }
  for (; next < pinned.size(); ++next)
    fn(true, pinned[next].index, pinned[next].kind, absl::MakeConstSpan(pinned[next].bytes));
}

template <typename Fn>
void TraceFile::ForEachRecord(Fn&& fn, TraceFileStats* stats) const {
  static_assert(kCallSlotRecordMax >= kGpuTimeSlotRecordMax);
  uint8_t converted[kCallSlotRecordMax];
  ForEachEntry(
      [&](bool pinned, uint64_t index, uint8_t kind, absl::Span<const uint8_t> bytes) {
        if (kind == NCCLWATCH_SLOT_SINGLE) {
          fn(pinned, index, bytes);
          return;
        }
        const size_t n = kind == NCCLWATCH_SLOT_GPU_TIME
                             ? GpuTimeSlotToRecord(ReadGpuTimeSlot(bytes), converted)
                             : CallSlotToRecord(kind, ReadCallSlot(bytes), converted);
        fn(pinned, index, absl::MakeConstSpan(converted, n));
      },
      stats);
}

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_INTERNAL_TRACE_FILE_READ_H_

// RingWriter: appends records to a trace file (proto/ncclwatch/ring_format.h).
//
// HOT PATH: Append(), ClaimSlot(), Publish(), Discard(), PublishCallSlot(),
// PatchSite and everything they call allocate nothing, take no lock, make no
// system call, never touch errno and are async-signal-safe; any number of
// threads (and a signal handler) may append at once. The per-call path
// (ClaimSlot, Publish*, PatchSite) is inline, here. Open() is start-up only:
// it creates the file, allocates its blocks, maps it and faults every page
// of the mapping in (MADV_POPULATE_WRITE where the kernel has it, else a
// write to each page), so no record ever takes a page fault on the first
// lap of the ring.
//
// Records go to one of two regions. kRing wraps and keeps the newest; kPinned
// is written once and never overwritten, for what the rest of a trace cannot
// be read without (process identity, communicators); when kPinned is full its
// records go to the ring and the header counts them.
//
// Claim blocks (ClaimSlot). Every claim used to be one `lock xadd` on the
// header's ring_next: one cache line that bounces between cores when several
// threads call NCCL at once (two threads of a process cost more a call than
// two processes). A thread now claims a block of slots with one add and
// takes them one by one from its thread-local ClaimBlock:
//
//   ring_next ──add(size)──> [ next ... end )   this thread's block
//                              └ next++ per claim, no shared write
//
// The choices, and why:
//   - Size adapts per thread. Once a thread used its last block (at first
//     one slot) up within claim_block_ticks / 16 (~20-60 us) with another
//     thread's claim in between, four times running (not a watcher's
//     occasional record), each new block is twice the last, up to
//     claim_block_slots (256: README); the size halves when no other thread
//     claimed meanwhile, and falls to 1 when a block expires unfinished. A
//     block's unused rest is never written (lost ring capacity at the end of
//     a burst of contended calls: doubling keeps it below what the burst
//     used, and under 256 slots), so slow threads, bursts and processes
//     with one NCCL thread keep blocks of 1 (the old behaviour, records in
//     claim order, the decoder's fast path); only threads that contend at
//     speed, where sharing costs, get big ones. Why 256 (32 KiB): the
//     shared cursor's line is not all that two threads share; they also
//     take turns on the ring's pages, and blocks of one page (32 slots) kept
//     the hardware prefetchers of a Sapphire Rapids guest from running
//     ahead of either (two threads 1.3x two processes); eight pages run as
//     two processes do.
//   - Expiry by age: a block is used only within claim_block_ticks (2^20
//     trace-clock ticks, ~0.3-1 ms) of its claim. The ClaimSlot clock read
//     is the record's time stamp too (SlotClaim::t), so this costs no extra
//     read. It bounds how far out of time order a record may be (the
//     decoder's reorder window, in the header), and keeps a block from being
//     written after the ring has lapped it: that takes ring_slots claims in
//     under a millisecond, so blocks are used only on rings of 1024 slots
//     (128 KiB) or more, and at most ring_slots / 512 slots each (a 64-slot
//     test ring: blocks of 1; the default ring of 131072 slots: 256). Many
//     threads claiming at full speed could still lap a ring within a
//     block's lifetime; a slot its block's thread writes that late can
//     lose the newer lap's record, or mix both records' bytes under the
//     newer stamp. Such a ring is far too small for its threads: it
//     loses records (the decoder cannot always tell which).
//   - Signals: a claim from a block marks the thread's block busy (a plain
//     TLS store, with compiler-only signal fences around the block's use).
//     A handler that interrupts such a claim on the same thread sees busy
//     and claims from the shared cursor instead, so the interrupted `next++`
//     and the handler can never get the same slot. A handler that runs
//     outside a claim uses the block normally (it finishes before the
//     thread resumes). A handler that longjmps out of a claim leaves busy
//     set: that thread then claims from the cursor, as before blocks.
//     Blocks of one need no flag: they take no slot from a block, and what
//     they write (`last`, the contention count) only steers the next size.
//   - Cost: blocks of one are the old claim plus a TLS compare and store
//     (238 instructions a shim_loop call against 217; the same CPU time,
//     README); a slot from a block saves the locked add.
//   - TLS is initial-exec (as ThisThread's), so touching it never allocates
//     and is signal-safe. It is one block per thread, tagged with the
//     generation of the writer whose ring holds it: a thread writing to
//     another RingWriter (tests, benchmarks) starts a new block there.
//   - fork(): ForkChild() (the shim's atfork child handler) gives the writer
//     a new generation and drops the calling thread's block, so a child can
//     never write into slots its parent's thread still owns.
//   - Append() (multi-slot records, the pinned region) always takes its
//     slots from the cursor.
//   - Every slot claimed from the cursor as its record is written carries
//     NCCLWATCH_SLOT_CLAIMED: the decoder's anchors for restoring time order.
//
// Ownership: the mapping lives for the life of the process; the file belongs
// to the user who ran the program.

#ifndef NCCLWATCH_SHIM_RING_RING_WRITER_H_
#define NCCLWATCH_SHIM_RING_RING_WRITER_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ncclwatch/ring_format.h"
#include "ring/trace_clock.h"

namespace ncclwatch::shim {

enum class Region { kRing, kPinned };

// Claim blocks: the defaults (see the top of this file).
constexpr uint32_t kClaimBlockSlots = 256;
constexpr uint64_t kClaimBlockTicks = uint64_t{1} << 20;
// How many slots ahead a claim asks the cache for the slot it will write
// then (ClaimSlot): 16, by measurement (README: the first lap of a 1 GiB
// ring, whose every slot is a line no cache holds, 34 -> 23 ns a call).
constexpr uint64_t kWriteAheadSlots = 16;
// Rings below this many slots have no blocks; above, blocks are at most
// ring_slots / kSlotsPerBlockSlot slots.
constexpr uint64_t kSlotsPerBlockSlot = 512;

struct RingConfig {
  const char* dir = nullptr;  // created (0700, whatever the umask) if missing
  uint64_t ring_bytes = 16ull << 20;
  uint64_t pinned_bytes = 256ull << 10;
  unsigned file_mode = 0600;
  uint32_t clock = NCCLWATCH_CLOCK_MONOTONIC_NS;
  const char* host = "";
  uint32_t pid = 0;
  uint64_t start_ms = 0;  // goes into the file name
  // The ring the file starts with, when smaller than ring_bytes (0: all of
  // it): GrowRing() brings it to ring_bytes later (the shim: when the
  // process makes its first communicator; one that never does keeps a small
  // file).
  uint64_t initial_ring_bytes = 0;
  // Claim blocks: the most slots a block may have (0: chosen by the ring's
  // size, see above; 1: none), and how long it may be used (0: the default).
  uint32_t claim_block_slots = 0;
  uint64_t claim_block_ticks = 0;
  // Tests: every block has claim_block_slots slots, contended or not.
  bool claim_block_fixed = false;
};

// One thread's claim block (see the top of this file).
struct ClaimBlock {
  uint64_t generation;  // RingWriter::generation_ of the ring it is in; 0: none
  uint64_t next;        // the next logical slot to take
  uint64_t end;         // one past the block's last slot
  uint64_t claimed;     // trace clock at its claim, or at the last claim another thread's preceded
  uint64_t last;        // one past the last slot this thread claimed from the cursor
  uint64_t single;      // generation_ while claims take one slot from the cursor inline
  uint32_t size;        // the block's size
  uint8_t contended;    // fast claims in a row that another thread's claim preceded
  uint8_t busy;         // a claim on this thread is using the block
};
// Initial-exec TLS: reading it never allocates.
extern __thread ClaimBlock t_claim_block __attribute__((tls_model("initial-exec")));

// ParseByteSize: a size setting such as NCCLWATCH_RING_SIZE, "16M", "512k",
// "1G", "4GiB" or plain bytes (digits only: no sign, space or fraction).
// kOverflow when the value does not fit 64 bits, suffix included. Start-up
// only; writes *bytes only on kOk.
enum class SizeParse { kOk, kMalformed, kNegative, kOverflow };
SizeParse ParseByteSize(const char* s, uint64_t* bytes);

// Where a record landed, so a field can be rewritten in place later (the
// result of a call that had not returned when the record was written).
struct RecordLocation {
  uint8_t* slots = nullptr;  // the region's first slot
  uint64_t slot_count = 0;   // slots in the region (a power of two for the ring)
  uint64_t index = 0;        // logical index of the record's first slot
};

// Four bytes of a written record (a result field) that can be rewritten in
// place later, while the record's slot still holds it. Inline and cheap: a
// load of the slot's stamp and one 4-byte store within one cache line, which
// a reader sees whole, old or new.
//
// The one window, left open on purpose: between the stamp check and the
// store, the ring could lap the slot (ring_slots claims by other threads in
// those few instructions) and a newer record be written there; the store
// then lands in that record's first line. Closing it would take a locked
// compare-and-swap of stamp and field together on every call's result (the
// stamp and the field are 16 bytes apart, in one 16-byte CAS only with a
// layout change) and on every claim, for a race that needs a whole lap of
// the ring inside one store's latency. What it can do if it ever happens:
// overwrite 4 bytes of the newer record's first 48: a call slot's result
// field, or bytes of an encoded record, which a reader then skips as
// unparsable or, at worst, reads with one wrong value. Never a crash, never
// a write outside the ring.
struct PatchSite {
  uint8_t* at = nullptr;  // nullptr: nothing to patch
  const uint64_t* stamp = nullptr;
  uint64_t expect = 0;

  void Write4(const void* value) const {
    if (at != nullptr && __atomic_load_n(stamp, __ATOMIC_ACQUIRE) == expect) memcpy(at, value, 4);
  }
};

// One ring slot claimed for a record encoded in place (see ClaimSlot).
struct SlotClaim {
  uint8_t* payload = nullptr;  // NCCLWATCH_SLOT_PAYLOAD_BYTES bytes to encode into
  RecordLocation where;
  uint64_t t = 0;           // the trace clock at the claim: the record's time stamp
  uint8_t flags = 0;        // the slot's NCCLWATCH_SLOT_CLAIMED, or 0
  bool anchor_due = false;  // the claim took slot 65536 * k (or the block holding it)
};

// Stores `v` into a slot's payload at `dst`, with `t` and `result` in place
// of v's:
// one scalar store per field (two 4-byte fields to a store), straight from
// registers. Never copy the struct as a whole from the stack: the compiler
// then writes its fields to the stack one by one and reads them back 16
// bytes at a time, and a load that spans several smaller stores cannot take
// its bytes from the store buffer. It waits until every older store,
// the previous call's slot included (a cache miss on a ring larger than the
// cache), has reached the cache: a third of the shim's cost per call on a
// Sapphire Rapids guest (README).
__attribute__((always_inline)) inline void StoreCallSlot(uint8_t* dst, const ncclwatch_call_slot& v,
                                                         uint64_t t, int32_t result) {
  auto put8 = [dst](size_t offset, uint64_t x) { memcpy(dst + offset, &x, 8); };
  auto pair = [](uint32_t lo, uint32_t hi) { return uint64_t{lo} | uint64_t{hi} << 32; };
  auto u = [](int32_t x) { return static_cast<uint32_t>(x); };
  put8(offsetof(ncclwatch_call_slot, t), t);
  put8(offsetof(ncclwatch_call_slot, result), pair(u(result), v.thread));
  put8(offsetof(ncclwatch_call_slot, comm), v.comm);
  put8(offsetof(ncclwatch_call_slot, seq), v.seq);
  put8(offsetof(ncclwatch_call_slot, count), v.count);
  put8(offsetof(ncclwatch_call_slot, stream), v.stream);
  put8(offsetof(ncclwatch_call_slot, sendbuff), v.sendbuff);
  put8(offsetof(ncclwatch_call_slot, recvbuff), v.recvbuff);
  put8(offsetof(ncclwatch_call_slot, group), v.group);
  put8(offsetof(ncclwatch_call_slot, caller), v.caller);
  put8(offsetof(ncclwatch_call_slot, call), pair(v.call, u(v.datatype)));
  put8(offsetof(ncclwatch_call_slot, redop), pair(u(v.redop), u(v.root)));
  put8(offsetof(ncclwatch_call_slot, peer), pair(u(v.peer), u(v.rank)));
  put8(offsetof(ncclwatch_call_slot, depth), pair(v.depth, v.flags));
  static_assert(offsetof(ncclwatch_call_slot, thread) == 12 &&
                    offsetof(ncclwatch_call_slot, datatype) == 84 &&
                    offsetof(ncclwatch_call_slot, root) == 92 &&
                    offsetof(ncclwatch_call_slot, rank) == 100 &&
                    offsetof(ncclwatch_call_slot, flags) == 108,
                "StoreCallSlot pairs these 4-byte fields with the one before each");
}

class RingWriter {
 public:
  // Creates <dir>/ncclwatch.<host>.<pid>.<start_ms>.trace (or, when a
  // process of the same host, pid and millisecond has that name,
  // ...<start_ms>-<k>.trace): a new file (never
  // an existing one, never through a symlink) in a directory that the
  // caller owns (not a symbolic link to one) and that is not world-writable
  // unless it is sticky. The file
  // never outgrows RLIMIT_FSIZE (the ring is cut to fit, see notice()), so
  // making it never raises SIGXFSZ. On failure
  // returns false and writes the reason into `error`. Not signal-safe.
  bool Open(const RingConfig& config, char* error, size_t error_len);

  bool is_open() const { return header_ != nullptr; }
  // What Open() changed to make the file at all (a ring cut to fit the
  // file-size limit), one line without a newline; "" if nothing.
  const char* notice() const { return notice_; }
  const char* path() const { return path_; }

  // Appends one serialized record. Returns false if the writer is closed or
  // the record is larger than NCCLWATCH_MAX_RECORD_BYTES.
  bool Append(Region region, const uint8_t* record, size_t len, RecordLocation* where = nullptr) {
    return AppendKind(region, record, len, NCCLWATCH_SLOT_SINGLE, where);
  }
  // A fixed slot's payload (NCCLWATCH_SLOT_PAYLOAD_BYTES: an
  // ncclwatch_gpu_time_slot) appended to the ring as `kind`, as Append
  // appends a record: one slot from the cursor, never from the thread's
  // claim block (the watcher writes its GPU times in bursts, one poll
  // apart: a block's unused rest would be lost ring at every poll).
  bool AppendFixedSlot(uint8_t kind, const void* payload, RecordLocation* where = nullptr) {
    return AppendKind(Region::kRing, static_cast<const uint8_t*>(payload),
                      NCCLWATCH_SLOT_PAYLOAD_BYTES, kind, where);
  }

  // The in-place path, for records that almost always fit one slot: claims
  // a ring slot (marked being written) for the caller to encode into, then
  // Publish(claim, len) with len <= NCCLWATCH_SLOT_PAYLOAD_BYTES, or
  // Discard(claim) if the record did not fit. Saves the copy of Append. The
  // slot comes from the thread's claim block when it has a live one, else
  // from the cursor (Refill); claim->t is the clock read the block's expiry
  // was checked against, for the caller to use as the record's time.
  __attribute__((always_inline)) bool ClaimSlot(SlotClaim* claim) {
    ncclwatch_ring_header* h = __atomic_load_n(&header_, __ATOMIC_ACQUIRE);
    if (__builtin_expect(h == nullptr, 0)) return false;
    ClaimBlock& b = t_claim_block;
    uint64_t idx, now;
    uint8_t flags = NCCLWATCH_SLOT_CLAIMED;
    bool anchor_due = false;
    bool write_ahead = true;  // ask for the slot kWriteAheadSlots on (below)
    if (__builtin_expect(b.single == generation_, 1)) {
      // Blocks of one (the thread's usual case until other threads claim at
      // speed; every claim on a ring without blocks): one slot from the
      // cursor, as before blocks. This takes no slot from a block and
      // writes only what counts other threads' claims, so it needs no busy
      // flag: a handler that runs in between claims a slot of its own.
      now = Now();
      idx = __atomic_fetch_add(&h->ring_next, 1, __ATOMIC_RELAXED);
      if (__builtin_expect(idx != b.last, 0)) NoteOtherClaims(&b, now);
      b.last = idx + 1;
      anchor_due = (idx & 0xffff) == 0;
    } else if (__builtin_expect(b.busy == 0, 1)) {
      b.busy = 1;
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      now = Now();
      if (b.next != b.end && b.generation == generation_ && now - b.claimed < block_ticks_) {
        idx = b.next++;  // from the thread's block
        flags = 0;
      } else {
        idx = Refill(h, &b, now, &anchor_due);
      }
      // Within the block only: past its end lie other threads' slots.
      write_ahead = b.end - idx > kWriteAheadSlots;
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      b.busy = 0;
    } else {
      // A signal handler that interrupted a claim from the block on this
      // thread: the cursor, one slot.
      idx = ClaimFromCursor(h, &now);
      anchor_due = (idx & 0xffff) == 0;
      write_ahead = false;
    }
    // The ring's mask once: GrowRing may change it under this claim, and
    // the slot, the write-ahead and the record's location must agree.
    const uint64_t mask = RingMask();
    uint8_t* slot = ring_ + (idx & mask) * NCCLWATCH_SLOT_BYTES;
    if (write_ahead) {
      // Ask for the lines of a slot this thread will write soon, for
      // writing: the slot's first store then finds its line in the cache
      // instead of waiting on memory (a hint: it never faults, and changes
      // nothing anyone reads).
      uint8_t* ahead = ring_ + ((idx + kWriteAheadSlots) & mask) * NCCLWATCH_SLOT_BYTES;
      __builtin_prefetch(ahead, 1);
      __builtin_prefetch(ahead + 64, 1);
    }
    __atomic_store_n(&reinterpret_cast<ncclwatch_slot_header*>(slot)->stamp,
                     (idx + 1) | NCCLWATCH_STAMP_WRITING, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    claim->payload = slot + NCCLWATCH_SLOT_HEADER_BYTES;
    claim->where = RecordLocation{ring_, mask + 1, idx};
    claim->t = now;
    claim->flags = flags;
    claim->anchor_due = anchor_due;
    return true;
  }
  void Publish(const SlotClaim& claim, size_t len) {
    Seal(claim, static_cast<uint16_t>(len), NCCLWATCH_SLOT_SINGLE);
  }
  void Discard(const SlotClaim& claim) { Seal(claim, 0, NCCLWATCH_SLOT_PADDING); }
  // A claimed slot filled with an ncclwatch_call_slot (claim.payload):
  // published as `kind` (NCCLWATCH_SLOT_COLLECTIVE, _P2P or _GROUP). GPU-time
  // slots are not claimed so: AppendFixedSlot.
  void PublishCallSlot(const SlotClaim& claim, uint8_t kind) {
    Seal(claim, NCCLWATCH_SLOT_PAYLOAD_BYTES, kind);
  }

  // A whole call slot appended to the ring, for writers off the hot path
  // (tests, benchmarks, seeds); the shim's own path is AppendCallSlot in
  // core/record_builder.h.
  bool AppendCallSlot(uint8_t kind, const ncclwatch_call_slot& s, RecordLocation* where = nullptr) {
    SlotClaim claim;
    if (!ClaimSlot(&claim)) return false;
    StoreCallSlot(claim.payload, s, s.t, s.result);
    PublishCallSlot(claim, kind);
    if (where != nullptr) *where = claim.where;
    return true;
  }

  // A whole GPU-time slot appended to the ring (its t as given), for
  // writers off the shim's path (tests, benchmarks, seeds); the watcher's is
  // AppendGpuTimeSlot in core/record_builder.h.
  bool AppendGpuTimeSlot(const ncclwatch_gpu_time_slot& s) {
    return AppendFixedSlot(NCCLWATCH_SLOT_GPU_TIME, &s);
  }

  // The 4 bytes at `offset` in the record at `where`, when they lie in its
  // first slot's payload within the slot's first cache line (a result
  // field written first always does); an empty site otherwise.
  static PatchSite SiteOf(const RecordLocation& where, size_t offset) {
    PatchSite site;
    if (where.slots == nullptr || offset + 4 > 64 - NCCLWATCH_SLOT_HEADER_BYTES) return site;
    uint8_t* slot = where.slots + (where.index & (where.slot_count - 1)) * NCCLWATCH_SLOT_BYTES;
    site.at = slot + NCCLWATCH_SLOT_HEADER_BYTES + offset;
    site.stamp = &reinterpret_cast<const ncclwatch_slot_header*>(slot)->stamp;
    site.expect = where.index + 1;
    return site;
  }

  // From the shim's SIGBUS handler: whether `addr` lies in this writer's
  // mapping. Such a fault means the file was cut shorter (truncated) while
  // the process runs; the mapping from addr's page to its end then becomes
  // anonymous memory, so the store that faulted, and every later one there,
  // writes into memory instead of killing the process (the records past the
  // file's new end are lost; the pages below it still reach the file, and a
  // page below that faults later is replaced the same way). Async-signal-
  // safe: one mmap, no errno change on success.
  bool RescueFault(const void* addr);

  ncclwatch_ring_header* header() const { return header_; }
  // The most slots a claim block has on this ring (1: no blocks).
  uint32_t max_claim_block() const { return MaxClaimBlock(); }

  // A ring opened smaller than RingConfig::ring_bytes (initial_ring_bytes)
  // grows to it: the file is extended, the extension mapped into the
  // address space Open() reserved after the ring (so the ring never moves),
  // and a small ring that wrapped has its records moved to where the big
  // ring's mask puts them. Writers on other threads go on meanwhile: a
  // claim uses one mask, old or new, for all it does. Returns true when the
  // ring has its full size (now or before, or another thread is growing
  // it); false with the reason in `error` when it stays small (a full
  // disk), which it then does for good. Not signal-safe; once per file.
  bool GrowRing(char* error, size_t error_len);
  // Whether GrowRing has something to do.
  bool CanGrow() const { return __atomic_load_n(&grow_state_, __ATOMIC_ACQUIRE) == kSmall; }
  // The ring's slots now.
  uint64_t ring_slots() const { return RingMask() + 1; }

  // In a forked child, on the one thread there is: the writer takes a new
  // generation and the thread's claim block is dropped, so the child never
  // writes into slots its parent's thread owns. Async-signal-safe.
  void ForkChild();
  // In a forked child that will write a file of its own: closes the writer
  // (a signal handler that runs from here on sees it closed) and unmaps the
  // parent's file, so Open() can make the child's. Async-signal-safe.
  void DropInChild();

  // This writer's clock (the header's), as ClaimSlot reads it.
  uint64_t Now() const {
#if defined(__x86_64__)
    if (clock_ == NCCLWATCH_CLOCK_TSC) return __rdtsc();
#endif
    return MonotonicNs();
  }

 private:
  // The slot's header, then its stamp with release ordering: the record is
  // whole from here on. One 8-byte store for length, kind and record_bytes.
  static void Seal(const SlotClaim& claim, uint16_t len, uint8_t kind) {
    uint8_t* slot = claim.payload - NCCLWATCH_SLOT_HEADER_BYTES;
    const uint64_t word =
        uint64_t{len} | uint64_t{kind} << 16 | uint64_t{claim.flags} << 24 | uint64_t{len} << 32;
    static_assert(offsetof(ncclwatch_slot_header, length) == 8 &&
                      offsetof(ncclwatch_slot_header, kind) == 10 &&
                      offsetof(ncclwatch_slot_header, flags) == 11 &&
                      offsetof(ncclwatch_slot_header, record_bytes) == 12,
                  "Seal writes the slot header's second word at once");
    memcpy(slot + 8, &word, 8);
    __atomic_store_n(&reinterpret_cast<ncclwatch_slot_header*>(slot)->stamp, claim.where.index + 1,
                     __ATOMIC_RELEASE);
  }
  // ClaimSlot's slow path: a new block for this thread (its size chosen as
  // the top of this file says), its first slot returned. Out of line.
  uint64_t Refill(ncclwatch_ring_header* h, ClaimBlock* b, uint64_t now, bool* anchor_due);
  // Blocks of one: another thread claimed since this one's last claim.
  void NoteOtherClaims(ClaimBlock* b, uint64_t now) const;
  // One slot from the cursor, and the clock (no blocks, or in a handler).
  uint64_t ClaimFromCursor(ncclwatch_ring_header* h, uint64_t* now) const;
  // The ring's mask and claim blocks' largest size: GrowRing changes them
  // while other threads claim (one load each, as a plain one).
  uint64_t RingMask() const { return __atomic_load_n(&ring_mask_, __ATOMIC_RELAXED); }
  uint32_t MaxClaimBlock() const { return __atomic_load_n(&max_block_, __ATOMIC_RELAXED); }
  static void Prefault(void* mapping, uint64_t bytes);
  // Append's body; `single_kind`: a record of one slot's kind (SINGLE, or a
  // fixed slot's).
  bool AppendKind(Region region, const uint8_t* record, size_t len, uint8_t single_kind,
                  RecordLocation* where);
  bool AppendAt(uint8_t* slots, uint64_t slot_count, uint64_t mask, uint64_t first, uint32_t nslots,
                const uint8_t* record, size_t len, uint8_t single_kind);

  ncclwatch_ring_header* header_ = nullptr;
  uint8_t* map_ = nullptr;  // the mapping (header_ once open) and the file's bytes mapped
  uint64_t map_bytes_ = 0;
  uint64_t reserved_bytes_ = 0;           // the address space reserved for the whole ring
  uint64_t full_ring_slots_ = 0;          // what GrowRing grows the ring to
  RingConfig block_config_;               // Open's claim-block settings, for GrowRing
  uint64_t file_dev_ = 0, file_ino_ = 0;  // the file Open made
  enum { kSmall, kGrowing, kGrown, kGrowFailed };
  int grow_state_ = kGrown;
  uint8_t* pinned_ = nullptr;
  uint8_t* ring_ = nullptr;
  uint64_t pinned_slots_ = 0;
  uint64_t ring_mask_ = 0;   // atomic (RingMask): ring slots - 1
  uint64_t generation_ = 0;  // unique among the process's writers (and its forks)
  uint64_t block_ticks_ = 0;
  uint64_t grow_ticks_ = 0;  // a block used up within this is used fast
  uint32_t max_block_ = 1;   // atomic (MaxClaimBlock)
  uint32_t clock_ = NCCLWATCH_CLOCK_MONOTONIC_NS;
  bool block_fixed_ = false;
  char path_[512] = {0};
  char notice_[256] = {0};
};

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_RING_RING_WRITER_H_

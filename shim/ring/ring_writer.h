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
// Ownership: the mapping lives for the life of the process; the file belongs
// to the user who ran the program.

#ifndef NCCLWATCH_SHIM_RING_RING_WRITER_H_
#define NCCLWATCH_SHIM_RING_RING_WRITER_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ncclwatch/ring_format.h"

namespace ncclwatch::shim {

enum class Region { kRing, kPinned };

struct RingConfig {
  const char* dir = nullptr;  // created (0700) if missing
  uint64_t ring_bytes = 16ull << 20;
  uint64_t pinned_bytes = 256ull << 10;
  unsigned file_mode = 0600;
  uint32_t clock = NCCLWATCH_CLOCK_MONOTONIC_NS;
  const char* host = "";
  uint32_t pid = 0;
  uint64_t start_ms = 0;  // goes into the file name
};

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
};

class RingWriter {
 public:
  // Creates <dir>/ncclwatch.<host>.<pid>.<start_ms>.trace: a new file (never
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
  bool Append(Region region, const uint8_t* record, size_t len, RecordLocation* where = nullptr);

  // The in-place path, for records that almost always fit one slot: claims
  // the ring's next slot (marked unwritten) for the caller to encode into,
  // then Publish(claim, len) with len <= NCCLWATCH_SLOT_PAYLOAD_BYTES, or
  // Discard(claim) if the record did not fit. Saves the copy of Append.
  bool ClaimSlot(SlotClaim* claim) {
    ncclwatch_ring_header* h = __atomic_load_n(&header_, __ATOMIC_ACQUIRE);
    if (__builtin_expect(h == nullptr, 0)) return false;
    const uint64_t idx = __atomic_fetch_add(&h->ring_next, 1, __ATOMIC_RELAXED);
    uint8_t* slot = ring_ + (idx & ring_mask_) * NCCLWATCH_SLOT_BYTES;
    __atomic_store_n(&reinterpret_cast<ncclwatch_slot_header*>(slot)->stamp, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    claim->payload = slot + NCCLWATCH_SLOT_HEADER_BYTES;
    claim->where = RecordLocation{ring_, ring_slots_, idx};
    return true;
  }
  void Publish(const SlotClaim& claim, size_t len) {
    Seal(claim, static_cast<uint16_t>(len), NCCLWATCH_SLOT_SINGLE);
  }
  void Discard(const SlotClaim& claim) { Seal(claim, 0, NCCLWATCH_SLOT_PADDING); }
  // A claimed slot filled with an ncclwatch_call_slot (claim.payload):
  // published as `kind` (NCCLWATCH_SLOT_COLLECTIVE, _P2P or _GROUP).
  void PublishCallSlot(const SlotClaim& claim, uint8_t kind) {
    Seal(claim, NCCLWATCH_SLOT_PAYLOAD_BYTES, kind);
  }

  // A whole call slot appended to the ring, for writers off the hot path
  // (tests, benchmarks, seeds); the shim's own path is AppendCallSlot in
  // core/record_builder.h.
  bool AppendCallSlot(uint8_t kind, const ncclwatch_call_slot& s, RecordLocation* where = nullptr) {
    SlotClaim claim;
    if (!ClaimSlot(&claim)) return false;
    memcpy(claim.payload, &s, sizeof(s));
    PublishCallSlot(claim, kind);
    if (where != nullptr) *where = claim.where;
    return true;
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

  ncclwatch_ring_header* header() const { return header_; }

 private:
  // The slot's header, then its stamp with release ordering: the record is
  // whole from here on. One 8-byte store for length, kind and record_bytes.
  static void Seal(const SlotClaim& claim, uint16_t len, uint8_t kind) {
    uint8_t* slot = claim.payload - NCCLWATCH_SLOT_HEADER_BYTES;
    const uint64_t word = uint64_t{len} | uint64_t{kind} << 16 | uint64_t{len} << 32;
    static_assert(offsetof(ncclwatch_slot_header, length) == 8 &&
                      offsetof(ncclwatch_slot_header, kind) == 10 &&
                      offsetof(ncclwatch_slot_header, record_bytes) == 12,
                  "Seal writes the slot header's second word at once");
    memcpy(slot + 8, &word, 8);
    __atomic_store_n(&reinterpret_cast<ncclwatch_slot_header*>(slot)->stamp, claim.where.index + 1,
                     __ATOMIC_RELEASE);
  }
  static void Prefault(void* mapping, uint64_t bytes);
  bool AppendAt(uint8_t* slots, uint64_t slot_count, uint64_t mask, uint64_t first, uint32_t nslots,
                const uint8_t* record, size_t len);

  ncclwatch_ring_header* header_ = nullptr;
  uint8_t* pinned_ = nullptr;
  uint8_t* ring_ = nullptr;
  uint64_t pinned_slots_ = 0;
  uint64_t ring_slots_ = 0;
  uint64_t ring_mask_ = 0;
  char path_[512] = {0};
  char notice_[256] = {0};
};

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_RING_RING_WRITER_H_

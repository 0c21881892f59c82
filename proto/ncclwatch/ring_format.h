/*
 * The layout of an ncclwatch trace file: one per traced process, written by
 * libncclwatch.so through a shared file mapping (so it survives SIGKILL and
 * OOM kills) and read by ncclwatch, also while the process runs.
 *
 *   offset 0        header (ncclwatch_ring_header, 512 bytes, padded to 4096)
 *   pinned_offset   pinned region: pinned_slots slots, filled once, never
 *                   overwritten: process identity and end, module map,
 *                   inventory, NCCL's version, communicator creation and
 *                   end, NCCL's error texts, fatal signals, the libc calls
 *                   NCCL's set-up made and those that failed, time anchors.
 *                   When full, such records go to the ring and
 *                   pinned_overflow counts them.
 *   ring_offset     ring: ring_slots slots (a power of two), overwritten
 *                   oldest first: every NCCL call, NCCL's later libc calls,
 *                   and a time anchor every 65536 slots.
 *
 *   slot (128 bytes)
 *   +--------+--------+------+-----+--------------+---------------------------+
 *   | stamp  | length | kind | res | record_bytes | payload (112 bytes)       |
 *   | u64    | u16    | u8   | u8  | u32          | protobuf Record, or a part|
 *   +--------+--------+------+-----+--------------+---------------------------+
 *
 * Writing (any thread, lock-free): claim k consecutive logical slots with one
 * atomic add on the region's cursor (pinned_next, ring_next); slot i lives at
 * physical index i % slots. For each: set stamp to 0, write the payload, then
 * store stamp = i + 1 with release ordering. A record longer than one payload
 * spans slots marked FIRST, MIDDLE..., LAST; record_bytes (in FIRST) is its
 * total length. A record may also be encoded in place, straight into a
 * claimed slot; if it turns out not to fit, that slot is published as
 * PADDING (no payload) and the record is written again as above.
 *
 * Reading: with W = the cursor, the live logical range of the ring is
 * [max(0, W - ring_slots), W). Physical slot p belongs to the logical index
 * i in that range with i % ring_slots == p; its record is whole only if stamp
 * == i + 1 (before and after copying the payload, for a live process).
 * Anything else is a torn or not-yet-written slot: skipped and counted, never
 * trusted. Records are in logical order; slots are never reordered.
 *
 * A reader must treat every byte as hostile: check the header against the
 * file's size and these constants before using an offset, and bound every
 * length. The static_asserts below and tests/unit/trace_format_test.cc ("the
 * ring file's layout is pinned") pin this layout.
 */
#ifndef NCCLWATCH_PROTO_NCCLWATCH_RING_FORMAT_H_
#define NCCLWATCH_PROTO_NCCLWATCH_RING_FORMAT_H_

#include <stddef.h>
#include <stdint.h>

#define NCCLWATCH_RING_MAGIC "NCCLWTRC"
#define NCCLWATCH_RING_FORMAT_VERSION 1u
#define NCCLWATCH_SCHEMA_VERSION 1u
#define NCCLWATCH_ENDIAN_CHECK 0x01020304u
#define NCCLWATCH_HEADER_REGION_BYTES 4096u
#define NCCLWATCH_SLOT_BYTES 128u
#define NCCLWATCH_SLOT_HEADER_BYTES 16u
#define NCCLWATCH_SLOT_PAYLOAD_BYTES (NCCLWATCH_SLOT_BYTES - NCCLWATCH_SLOT_HEADER_BYTES)
/* The most slots one record may span (8 KiB of payload). */
#define NCCLWATCH_MAX_RECORD_SLOTS 73u
#define NCCLWATCH_MAX_RECORD_BYTES (NCCLWATCH_MAX_RECORD_SLOTS * NCCLWATCH_SLOT_PAYLOAD_BYTES)
/* A `result` field's value while the call has not returned. */
#define NCCLWATCH_RESULT_PENDING 2147483647

/* What Record.t counts. */
enum ncclwatch_clock {
  NCCLWATCH_CLOCK_MONOTONIC_NS = 1, /* CLOCK_MONOTONIC nanoseconds */
  NCCLWATCH_CLOCK_TSC = 2           /* the invariant time-stamp counter */
};

enum ncclwatch_slot_kind {
  NCCLWATCH_SLOT_SINGLE = 1,
  NCCLWATCH_SLOT_FIRST = 2,
  NCCLWATCH_SLOT_MIDDLE = 3,
  NCCLWATCH_SLOT_LAST = 4,
  NCCLWATCH_SLOT_PADDING = 5 /* claimed, then given up: no record, skipped */
};

typedef struct ncclwatch_ring_header {
  char magic[8];           /* NCCLWATCH_RING_MAGIC, no terminator */
  uint32_t format_version; /* NCCLWATCH_RING_FORMAT_VERSION */
  uint32_t schema_version; /* NCCLWATCH_SCHEMA_VERSION of the records */
  uint32_t header_bytes;   /* sizeof(ncclwatch_ring_header) */
  uint32_t endian_check;   /* NCCLWATCH_ENDIAN_CHECK, as the writer stored it */
  uint16_t pointer_bytes;  /* sizeof(void*) of the writer */
  uint16_t slot_bytes;     /* NCCLWATCH_SLOT_BYTES */
  uint32_t clock;          /* enum ncclwatch_clock */
  uint64_t file_bytes;     /* the file's size when created */
  uint64_t pinned_offset;
  uint64_t pinned_slots;
  uint64_t ring_offset;
  uint64_t ring_slots; /* a power of two */
  uint32_t pid;
  uint32_t reserved0;
  uint64_t created_realtime_ns; /* CLOCK_REALTIME at creation */
  char host[64];                /* NUL-terminated */
  uint8_t reserved1[104];
  /* Cursors, each alone on a cache line; updated with atomic adds. */
  uint64_t pinned_next; /* pinned slots claimed (may exceed pinned_slots) */
  uint8_t pad_pinned[56];
  uint64_t ring_next; /* ring slots claimed */
  uint8_t pad_ring[56];
  uint64_t pinned_overflow; /* pinned records written to the ring instead */
  uint8_t reserved2[120];
} ncclwatch_ring_header;

typedef struct ncclwatch_slot_header {
  uint64_t stamp;  /* logical index + 1 once whole; 0 while written */
  uint16_t length; /* payload bytes in this slot */
  uint8_t kind;    /* enum ncclwatch_slot_kind */
  uint8_t reserved;
  uint32_t record_bytes; /* FIRST: the whole record's length; SINGLE: = length */
} ncclwatch_slot_header;

#ifdef __cplusplus
static_assert(sizeof(ncclwatch_ring_header) == 512, "header size is part of the format");
static_assert(offsetof(ncclwatch_ring_header, clock) == 28, "header layout");
static_assert(offsetof(ncclwatch_ring_header, host) == 88, "header layout");
static_assert(offsetof(ncclwatch_ring_header, pinned_next) == 256, "cursor on its own cache line");
static_assert(offsetof(ncclwatch_ring_header, ring_next) == 320, "cursor on its own cache line");
static_assert(offsetof(ncclwatch_ring_header, pinned_overflow) == 384, "header layout");
static_assert(sizeof(ncclwatch_slot_header) == NCCLWATCH_SLOT_HEADER_BYTES, "slot header size");
#endif

#endif /* NCCLWATCH_PROTO_NCCLWATCH_RING_FORMAT_H_ */

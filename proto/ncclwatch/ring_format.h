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
 *   +--------+--------+------+-------+--------------+-------------------------+
 *   | stamp  | length | kind | flags | record_bytes | payload (112 bytes)     |
 *   | u64    | u16    | u8   | u8    | u32          | protobuf Record, a part |
 *   |        |        |      |       |              | of one, or a fixed slot |
 *   +--------+--------+------+-------+--------------+-------------------------+
 *   (flags: NCCLWATCH_SLOT_CLAIMED, format 3; reserved and 0 before)
 *
 * Call slots (format 2). The hottest records, collectives, sends and
 * receives and group calls, are written as one fixed-layout struct
 * (ncclwatch_call_slot, exactly one payload) instead of protobuf: a store per
 * field, no varint arithmetic, no lengths, the time stamp fixed-width. The
 * slot's kind says which trace.proto body it stands for (COLLECTIVE, P2P,
 * GROUP); the decoder turns it into that Record (t, thread and the body's
 * fields, optional ones only when set, see the struct), so a reader that
 * wants protobuf gets the same Record the protobuf path would have written.
 * Every other record is protobuf, as in format 1 (but GPU times, format 4,
 * below).
 *
 *   call slot payload (112 bytes, little-endian, offsets in bytes)
 *    0 t u64 | 8 result i32 | 12 thread u32 | 16 comm u64 | 24 seq u64
 *   32 count u64 | 40 stream u64 | 48 sendbuff u64 | 56 recvbuff u64
 *   64 group u64 | 72 caller u64 | 80 call u32 | 84 datatype i32
 *   88 redop i32 | 92 root i32 | 96 peer i32 | 100 rank i32 | 104 depth u32
 *   108 flags u32
 *
 * GPU-time slots (format 4). A GpuTime record (trace.proto), one for each
 * operation whose completion the watcher tracked on a GPU rank (as many as
 * its collectives), is written as a call slot is: one fixed-layout struct
 * (ncclwatch_gpu_time_slot, exactly one payload) of kind
 * NCCLWATCH_SLOT_GPU_TIME, which the decoder turns into that Record (t,
 * thread and GpuTime's fields, each but comm, call, seq and collectives only
 * when not 0). A protobuf GpuTime took a reader three varint walks (its
 * envelope twice, its fields once); this is a load per field.
 *
 *   GPU-time slot payload (112 bytes, little-endian, offsets in bytes)
 *    0 t u64 | 8 thread u32 | 12 call u32 | 16 comm u64 | 24 seq u64
 *   32 collectives u64 | 40 begin_ns u64 | 48 end_ns u64 | 56 gpu_ns u64
 *   64 anchor_error_ns u64 | 72 group_ops u32 | 76..111 reserved, 0
 *
 * A GPU-time slot is claimed from the cursor, never from a claim block
 * (below), as the watcher's protobuf records are.
 *
 * Writing (any thread, lock-free): claim k consecutive logical slots with one
 * atomic add on the region's cursor (pinned_next, ring_next); slot i lives at
 * physical index i % slots. A call slot's `result` (payload offset 8, within
 * the slot's first cache line) is rewritten in place when the call returns,
 * while the slot's stamp still names it. For each: set stamp to
 * (i + 1) | NCCLWATCH_STAMP_WRITING (format 3; 0 before), write the payload,
 * then store stamp = i + 1 with release ordering. A record longer than one
 * payload spans slots marked FIRST, MIDDLE..., LAST; record_bytes (in FIRST)
 * is its total length. A record may also be encoded in place, straight into
 * a claimed slot; if it turns out not to fit, that slot is published as
 * PADDING (no payload) and the record is written again as above.
 *
 * Claim blocks (format 3). A thread that writes one-slot records fast while
 * other threads do too claims ring slots a block at a time: one atomic add of
 * up to claim_block_slots on ring_next, then the block's slots one by one
 * with no shared write. So records of different threads are no longer in
 * time order by logical index. What bounds the disorder:
 *   - a block is written only within claim_block_ticks (trace clock) of its
 *     claim, and only by the thread that claimed it (never after a fork);
 *   - a slot claimed from the cursor as its record was written (the first
 *     slot of a block, and every record not written from a block) has
 *     NCCLWATCH_SLOT_CLAIMED in its flags: such records are in time order
 *     among themselves, as in format 2, and a record at a later logical
 *     index than one of them is not earlier than it (up to the few
 *     instructions between a writer's clock read and its claim);
 *   - so a record's t is less than claim_block_ticks later than that of any
 *     record at a higher logical index.
 * claim_blocks_used stays 0 while every block had one slot (a process with
 * one writing thread, and every ring under 512 KiB): its records are in
 * claim order, exactly as in format 2. A block's slots that its thread did
 * not use (it paused past claim_block_ticks, exited, forked, or the process
 * ended) are never written: they keep stamp 0, or a previous lap's stamp.
 * Multi-slot records, pinned records and records written from a signal
 * handler that interrupted a claim take their slots from the cursor.
 *
 * Reading: with W = the cursor, the live logical range of the ring is
 * [max(0, W - ring_slots), W). Physical slot p belongs to the logical index
 * i in that range with i % ring_slots == p; its record is whole only if stamp
 * == i + 1 (before and after copying the payload, for a live process).
 * Anything else is skipped and counted, never trusted: in format 3, a stamp
 * of 0 or of an earlier lap (i + 1 - k * ring_slots, WRITING bit aside) is a
 * slot never written in this lap (a claim block's unused rest); any other
 * stamp (i + 1 | WRITING: a writer stopped mid-record) is torn. Slots are
 * never moved; a reader that wants time order restores it within the bound
 * above (claim_block_ticks, or the next CLAIMED record's t).
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
/* 2: call slots (COLLECTIVE, P2P, GROUP). A reader of format 2 also reads
 * format 1, which is format 2 without them. 3: claim blocks (above), the
 * WRITING stamp, slot flags. A reader of format 3 reads 1 and 2 too.
 * 4: GPU-time slots (GPU_TIME); a reader of format 4 reads 1 to 3, where
 * GpuTime records are protobuf (and a slot of kind GPU_TIME is torn). */
#define NCCLWATCH_RING_FORMAT_VERSION 4u
#define NCCLWATCH_RING_FORMAT_OLDEST_READ 1u
#define NCCLWATCH_SCHEMA_VERSION 1u
#define NCCLWATCH_ENDIAN_CHECK 0x01020304u
#define NCCLWATCH_HEADER_REGION_BYTES 4096u
#define NCCLWATCH_SLOT_BYTES 128u
#define NCCLWATCH_SLOT_HEADER_BYTES 16u
#define NCCLWATCH_SLOT_PAYLOAD_BYTES (NCCLWATCH_SLOT_BYTES - NCCLWATCH_SLOT_HEADER_BYTES)
/* The most slots one record may span (8 KiB of payload). */
#define NCCLWATCH_MAX_RECORD_SLOTS 73u
#define NCCLWATCH_MAX_RECORD_BYTES (NCCLWATCH_MAX_RECORD_SLOTS * NCCLWATCH_SLOT_PAYLOAD_BYTES)
/* Format 3: slot i's stamp while it is written, (i + 1) | NCCLWATCH_STAMP_WRITING. */
#define NCCLWATCH_STAMP_WRITING (1ull << 63)
/* ncclwatch_slot_header.flags (format 3): the slot was claimed from the
 * cursor as its record was written (not taken later from a claim block). */
#define NCCLWATCH_SLOT_CLAIMED 1u
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
  NCCLWATCH_SLOT_PADDING = 5, /* claimed, then given up: no record, skipped */
  /* Format 2: one ncclwatch_call_slot standing for a Record with this body. */
  NCCLWATCH_SLOT_COLLECTIVE = 6, /* Record.collective */
  NCCLWATCH_SLOT_P2P = 7,        /* Record.p2p */
  NCCLWATCH_SLOT_GROUP = 8,      /* Record.group */
  /* Format 4: one ncclwatch_gpu_time_slot standing for a Record.gpu_time. */
  NCCLWATCH_SLOT_GPU_TIME = 9
};

/* ncclwatch_call_slot.flags */
#define NCCLWATCH_CALL_IN_GROUP 1u /* `group` is set (the call was inside a group) */

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
  /* Format 3 (0 before). The most slots a thread claims at once; 1: none. */
  uint32_t claim_block_slots;
  /* 0 while no block of more than one slot was claimed; then 1 (the first
   * such claim sets it, before its atomic add). */
  uint32_t claim_blocks_used;
  /* A block's slots are written only within this many trace-clock ticks of
   * its claim. */
  uint64_t claim_block_ticks;
  uint8_t reserved1[88];
  /* Cursors, each alone on a cache line; updated with atomic adds. */
  uint64_t pinned_next; /* pinned slots claimed (may exceed pinned_slots) */
  uint8_t pad_pinned[56];
  uint64_t ring_next; /* ring slots claimed */
  uint8_t pad_ring[56];
  uint64_t pinned_overflow; /* pinned records written to the ring instead */
  uint8_t reserved2[120];
} ncclwatch_ring_header;

typedef struct ncclwatch_slot_header {
  uint64_t stamp;        /* logical index + 1 once whole; see NCCLWATCH_STAMP_WRITING */
  uint16_t length;       /* payload bytes in this slot */
  uint8_t kind;          /* enum ncclwatch_slot_kind */
  uint8_t flags;         /* NCCLWATCH_SLOT_CLAIMED (format 3; 0 before) */
  uint32_t record_bytes; /* FIRST: the whole record's length; SINGLE: = length */
} ncclwatch_slot_header;

/* A call slot's payload. Which fields a kind uses, and the Record field each
 * becomes (trace.proto): every kind: t (Record.t), thread (Record.thread),
 * result, caller. COLLECTIVE: comm, seq, call, count, datatype, redop and
 * root (-1: absent), stream, sendbuff, recvbuff, group (when flags has
 * NCCLWATCH_CALL_IN_GROUP), rank. P2P: comm, seq, call (SEND or RECV: the
 * `send` field), peer, count, datatype, stream, sendbuff (`buff`), group (as
 * above), rank. GROUP: call, group, depth. Fields a kind does not use are 0. */
typedef struct ncclwatch_call_slot {
  uint64_t t;      /* trace clock (header.clock) */
  int32_t result;  /* NCCLWATCH_RESULT_PENDING until the call returns */
  uint32_t thread; /* 1, 2, ... per process */
  uint64_t comm;
  uint64_t seq;
  uint64_t count;
  uint64_t stream;
  uint64_t sendbuff;
  uint64_t recvbuff;
  uint64_t group;
  uint64_t caller;
  uint32_t call; /* trace.proto Call */
  int32_t datatype;
  int32_t redop;
  int32_t root;
  int32_t peer;
  int32_t rank;
  uint32_t depth;
  uint32_t flags; /* NCCLWATCH_CALL_* */
} ncclwatch_call_slot;

/* A GPU-time slot's payload: trace.proto GpuTime, field for field, with the
 * Record's t and thread. 0 stands for a field's absence, as in the protobuf
 * record (proto3: 0 is never written). The watcher writes every byte,
 * reserved ones as 0. */
typedef struct ncclwatch_gpu_time_slot {
  uint64_t t;      /* trace clock (header.clock): when the watcher wrote it */
  uint32_t thread; /* the watcher's thread, 1, 2, ... per process */
  uint32_t call;   /* trace.proto Call */
  uint64_t comm;
  uint64_t seq;
  uint64_t collectives;
  uint64_t begin_ns;
  uint64_t end_ns;
  uint64_t gpu_ns;
  uint64_t anchor_error_ns;
  uint32_t group_ops;
  uint8_t reserved[36];
} ncclwatch_gpu_time_slot;

#ifdef __cplusplus
static_assert(sizeof(ncclwatch_call_slot) == NCCLWATCH_SLOT_PAYLOAD_BYTES, "one payload exactly");
static_assert(sizeof(ncclwatch_gpu_time_slot) == NCCLWATCH_SLOT_PAYLOAD_BYTES,
              "one payload exactly");
static_assert(offsetof(ncclwatch_gpu_time_slot, t) == 0, "every fixed slot's time first");
static_assert(offsetof(ncclwatch_gpu_time_slot, comm) == 16, "GPU-time slot layout");
static_assert(offsetof(ncclwatch_gpu_time_slot, group_ops) == 72, "GPU-time slot layout");
static_assert(offsetof(ncclwatch_call_slot, result) == 8, "the result is patched in place");
static_assert(offsetof(ncclwatch_call_slot, call) == 80, "call slot layout");
static_assert(offsetof(ncclwatch_call_slot, flags) == 108, "call slot layout");
static_assert(sizeof(ncclwatch_ring_header) == 512, "header size is part of the format");
static_assert(offsetof(ncclwatch_ring_header, clock) == 28, "header layout");
static_assert(offsetof(ncclwatch_ring_header, host) == 88, "header layout");
static_assert(offsetof(ncclwatch_ring_header, claim_block_slots) == 152, "header layout");
static_assert(offsetof(ncclwatch_ring_header, claim_blocks_used) == 156, "header layout");
static_assert(offsetof(ncclwatch_ring_header, claim_block_ticks) == 160, "header layout");
static_assert(offsetof(ncclwatch_slot_header, flags) == 11, "slot header layout");
static_assert(offsetof(ncclwatch_ring_header, pinned_next) == 256, "cursor on its own cache line");
static_assert(offsetof(ncclwatch_ring_header, ring_next) == 320, "cursor on its own cache line");
static_assert(offsetof(ncclwatch_ring_header, pinned_overflow) == 384, "header layout");
static_assert(sizeof(ncclwatch_slot_header) == NCCLWATCH_SLOT_HEADER_BYTES, "slot header size");
#endif

#endif /* NCCLWATCH_PROTO_NCCLWATCH_RING_FORMAT_H_ */

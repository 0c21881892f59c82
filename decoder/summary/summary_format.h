// The summary file (`ncclwatch summarize`): one node's traces, reduced to
// what the analyses need, in one bounded, versioned file.
//
// Each trace becomes a reduced trace in the records the decoder already
// reads: every record that is not a per-call record (identity, modules,
// inventory, init and rendezvous evidence, memberships, heartbeats, holds,
// signals, the end, stalls, system calls, errors) is kept as the
// trace.proto Record it is, most as their difference from the record before
// of their kind (version 6: summary/record_delta.h; read back to the same
// bytes); of each (communicator, rank)'s collectives the
// first and the last `window` are kept (narrowed past 8,192 members:
// CommWindow), the middle left out in whole blocks of kLeftOutBlock numbers
// (a window's edge rounded out to the block), each kept as a digest
// (model/left_out_calls.h); of each (communicator, rank, peer)'s sends, and
// its receives, likewise the first and the last `window`, at most
// kMaxCallWindow (version 5; kept whole from the first one the GPU is not
// known to have finished); of the group calls the first and the last
// `window`, at most kMaxCallWindow; of each communicator's GPU progress
// records (one every 20 ms) the first 64 and the last 256, and of its GPU
// times (GpuTime, one per operation) the last 64, how many it left out
// counted (version 3: a slow GPU judged on them says so). A reader hands
// the records to the model's own importer (model/record_importer.h), as it
// does a trace's.
//
// All integers little-endian; "varint" is protobuf's base-128 varint,
// "string" a varint length then the bytes.
//
//   offset 0   char magic[8]      "NCCLWSUM"
//          8   u32  version       kSummaryVersion (a reader refuses another)
//         12   u32  header bytes  kSummaryHeaderBytes
//         16   u64  file bytes    the whole file: a torn or cut file is refused
//         24   u64  checksum      SummaryChecksum (below) of every byte after the header
//         32   body:
//                string host (where it was summarized), varint window,
//                varint block (kLeftOutBlock), string the node's inventory
//                (version 6: the first Inventory record met, whole; empty
//                when none), varint traces, then each trace:
//                  varint bytes (of the rest of this trace), string path,
//                  u32 clock, u32 pid, u64 created_realtime_ns, string host,
//                  i64 read_ns, the trace's TraceFileStats (8 varints, a flag
//                  byte), varint records, varint unparsed, varint groups left
//                  out, varint g, g x {varint comm, varint GPU times left
//                  out} (version 3), varint n, n x {varint comm, zigzag rank, varint
//                  first_block, varint blocks, blocks x u64 digest, varint
//                  calls} (version 7: the digests are summary/call_digest.h's
//                  folded CallDigest), varint m, m x {varint comm, zigzag rank, zigzag
//                  peer, u8 send (0 or 1), varint first_block, varint blocks,
//                  blocks x u64 digest, varint calls} (version 5: sends and
//                  receives left out; version 8: their digests fold in how
//                  many collectives came before each; version 9: each
//                  block's digest is followed by varint (u << 1 | s): u of
//                  its calls' counts not known, and s 1 where its digest
//                  without the counts (P2pSignatureDigest) differs and
//                  follows as a u64), varint c, c x zigzag
//                  (version 8: each kept send's and receive's count of the
//                  collectives its rank had issued on the communicator
//                  before it, as the model counts it reading the whole
//                  trace (0 or -1 for one the model's streams leave out:
//                  refused, or of no rank), in the order of their entries, each as its
//                  difference from the one before, from 0; c is 0 or their
//                  number: 0 where the trace's calls are not all call slots,
//                  whose streams with sends then keep their collectives
//                  whole), varint entries, then each entry:
//                    u8: NCCLWATCH_SLOT_SINGLE, then string Record; or
//                    kSummaryRecordDelta, then varint context, then a Record
//                    as its difference from that context's last record
//                    (version 6: summary/record_delta.h; context 0, the
//                    inventory's, starts at the node's inventory); or a
//                    call slot's (COLLECTIVE, P2P, GROUP): 0x80 | its kind
//                    (0, 1, 2) << 5 | kSummarySameMask | its context
//                    (below kSummaryContexts: the writer gives each
//                    communicator and call of a kind its own, the first 15
//                    met, the rest share the last), then its 112-byte
//                    payload as its difference from what the previous
//                    payload of that kind and context in this trace (zeros
//                    before the first) predicts (SlotPredictor): in 14
//                    granules of 8 bytes, a varint mask of those not as
//                    predicted (none when the byte has kSummarySameMask:
//                    the mask is that of the previous entry of its kind and
//                    context, 0 before the first), then each one's miss
//                    (now - predicted, mod 2^64) as a zigzag varint. A
//                    granule is predicted unchanged, but for the time
//                    (granule 0), predicted as the previous call slot's of
//                    any kind and context, and a collective's number
//                    (granule 3), as the previous one's on its
//                    communicator plus one (a send's: its context's): a
//                    collective made like the one before it on its
//                    communicator takes its byte and its time's step (3-4
//                    bytes in all; version 1 took 6-7, its mask and number
//                    always written, its time diffed against the same
//                    call's a step before).
//                after the traces: varint u, then u x {string path, string
//                why, u8 flags}: what the node could not read (a trace that
//                failed to read, or with kSummaryMayHoldTraces a folder it
//                could not search or a link it did not follow; version 4).
//
// Bounds a reader enforces (and a writer keeps to): kMaxSummaryBytes in all,
// kMaxSummaryTraces traces, strings of kMaxSummaryString bytes, records of
// NCCLWATCH_MAX_RECORD_BYTES.
//
// Thread-safety: constants only.

#ifndef NCCLWATCH_DECODER_SUMMARY_SUMMARY_FORMAT_H_
#define NCCLWATCH_DECODER_SUMMARY_SUMMARY_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ncclwatch/ring_format.h"

namespace ncclwatch::decoder {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the summary's integers are little-endian");

inline constexpr char kSummaryMagic[8] = {'N', 'C', 'C', 'L', 'W', 'S', 'U', 'M'};
inline constexpr uint32_t kSummaryVersion = 9;
inline constexpr uint32_t kSummaryHeaderBytes = 32;
inline constexpr uint64_t kMaxSummaryBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxSummaryTraces = 4096;
inline constexpr uint64_t kMaxSummaryString = 4096;
// Contexts a call slot's payload is diffed against, per kind; the bit
// that marks a call slot's entry, and the one that says its mask is the
// previous one's.
inline constexpr uint32_t kSummaryContexts = 16;
inline constexpr uint8_t kSummaryCallEntry = 0x80;
inline constexpr uint8_t kSummarySameMask = 0x10;
// The first byte of a record's entry kept as its difference from the one
// before it of its context (summary/record_delta.h; version 6).
inline constexpr uint8_t kSummaryRecordDelta = 0x02;
static_assert(kSummaryRecordDelta != NCCLWATCH_SLOT_SINGLE &&
                  (kSummaryRecordDelta & kSummaryCallEntry) == 0,
              "a record delta's entry is told from the others by its first byte");
// The default window: the collectives kept at each end of a (communicator,
// rank)'s calls. 4,096 is the arrival-skew analysis's window (it reads a
// member's last 4,096 collectives), so a straggler is judged on the same calls.
inline constexpr uint32_t kDefaultSummaryWindow = 4096;
// Sends and receives (per communicator, rank, peer and direction) and group
// calls (per process) kept at each end: the window, but at most this many.
// The analyses of sends read where a job stops (kept whole: the calls after
// the last GPU progress) and compare the rest by digest; of group calls,
// the last one. A pipeline-parallel node of 8 ranks and 20,000 steps took
// 1.86 MB at the default window without it, 1.04-1.06 MB with it (format
// 5; 0.82 MB in format 6, its records kept as differences).
inline constexpr uint64_t kMaxCallWindow = 256;
// Members x window, at most, per communicator: past it a communicator's
// window narrows by halves (CommWindow), as the straggler analysis narrows
// what it keeps of each member (analysis/arrival_skew.h, whose kMaxKept this
// is), so a merge of a huge job reads what its analyses keep and no more.
inline constexpr uint64_t kMaxKeptCalls = uint64_t{1} << 25;
// GPU times (GpuTime records) kept of each communicator's, the last ones
// (the slow-GPU and slow-link analyses of a summary read those; how many
// it left out is counted, per communicator).
inline constexpr uint64_t kSummaryGpuTimes = 64;
// The flag byte of an unreadable trace's entry: set when what was not read
// is a folder that could not be searched or a link not followed, not a
// trace that failed to read (version 4): it may hold a rank's trace.
inline constexpr uint8_t kSummaryMayHoldTraces = 0x01;

// A trace, folder or link a node could not read, as its summary lists it.
struct SummaryUnreadable {
  std::string path;
  std::string why;
  bool may_hold_traces = false;  // a folder not searched or a link not followed
};

// The window of a communicator of `members` ranks: `window`, halved until
// members x window is within kMaxKeptCalls (8,192 members keep 4,096 calls
// at each end; 32,768 keep 1,024; 131,072 keep 256), never below 1. Unknown
// (members < 1): `window`.
inline uint64_t CommWindow(uint64_t window, int64_t members) {
  if (members < 1) return window;
  const uint64_t n = static_cast<uint64_t>(members);
  while (window > 1 && n * window > kMaxKeptCalls) window /= 2;
  return window;
}

// The summary's checksum: FNV-1a's step (xor, then multiply by its 64-bit
// prime) over the bytes taken 8 at a time as little-endian words, then over
// the last 0-7 bytes one at a time (eight times FNV-1a's speed: a summary
// of a thousand nodes is checked in well under its reading time).
inline uint64_t SummaryChecksum(const uint8_t* p, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    __builtin_memcpy(&w, p + i, 8);
    h = (h ^ w) * kPrime;
    h ^= h >> 29;  // the high bits back down: a word's change reaches every later bit
  }
  for (; i < n; ++i) h = (h ^ p[i]) * kPrime;
  return h;
}

// What each granule (8 bytes) of a call slot's payload is predicted to be,
// by writer and reader alike, from the entries before it in its trace: the
// time (granule 0) the previous call slot's of any kind and context; a
// collective's number (granule 3) the previous collective's on its
// communicator plus one (for the first kMaxComms communicators met; the
// others', and a send's or receive's, its context's previous plus one);
// the rest, its context's previous payload's (`prev`).
static_assert(offsetof(ncclwatch_call_slot, t) == 0 && offsetof(ncclwatch_call_slot, comm) == 16 &&
                  offsetof(ncclwatch_call_slot, seq) == 24,
              "a call slot's time is granule 0, its communicator 2, its number 3");
class SlotPredictor {
 public:
  static constexpr size_t kMaxComms = 64;

  // Granule `i` of a call slot of `kind`, where `now` holds its granules
  // before i (its communicator, for the number). Every granule but the
  // time (0) and the number (3) is predicted as the one before, unchanged:
  // the reader (summary_reader.cc) writes only those two and the ones its
  // mask gives a difference, and would need to write them all again if
  // another granule were predicted otherwise.
  uint64_t Predict(uint8_t kind, int i, const uint8_t* prev, const uint8_t* now) const {
    if (i == 0) return last_t_;
    uint64_t v;
    __builtin_memcpy(&v, prev + 8 * i, 8);
    if (i != 3 || kind == NCCLWATCH_SLOT_GROUP) return v;
    if (kind == NCCLWATCH_SLOT_COLLECTIVE) {
      uint64_t comm;
      __builtin_memcpy(&comm, now + 16, 8);
      for (const auto& [c, seq] : comm_seq_)
        if (c == comm) return seq + 1;
    }
    return v + 1;
  }

  // After each call slot, with its whole payload.
  void Update(uint8_t kind, const uint8_t* payload) {
    __builtin_memcpy(&last_t_, payload, 8);
    if (kind != NCCLWATCH_SLOT_COLLECTIVE) return;
    uint64_t comm, seq;
    __builtin_memcpy(&comm, payload + 16, 8);
    __builtin_memcpy(&seq, payload + 24, 8);
    for (auto& [c, s] : comm_seq_) {
      if (c == comm) {
        s = seq;
        return;
      }
    }
    if (comm_seq_.size() < kMaxComms) comm_seq_.emplace_back(comm, seq);
  }

 private:
  uint64_t last_t_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> comm_seq_;  // (communicator, its last number)
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_SUMMARY_SUMMARY_FORMAT_H_

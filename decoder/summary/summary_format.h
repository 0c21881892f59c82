// The summary file (`ncclwatch summarize`): one node's traces, reduced to
// what the analyses need, in one bounded, versioned file.
//
// Each trace becomes a reduced trace in the records the decoder already
// reads: every record that is not a per-call record (identity, modules,
// inventory, init and rendezvous evidence, memberships, heartbeats, holds,
// signals, the end, stalls, system calls, errors) is kept as the
// trace.proto Record it is, and so is every send and receive; of each
// (communicator, rank)'s collectives the first and the last `window` are
// kept (the middle is left out in whole blocks of kLeftOutBlock numbers,
// each kept as a digest, model/left_out_calls.h), of the group calls the
// first and the last `window`, and of each communicator's GPU progress
// records (one every 20 ms) the first 64 and the last 256. A reader hands the records to the
// model's own importer (model/record_importer.h), as it does a trace's.
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
//                varint block (kLeftOutBlock), varint traces, then each trace:
//                  varint bytes (of the rest of this trace), string path,
//                  u32 clock, u32 pid, u64 created_realtime_ns, string host,
//                  i64 read_ns, the trace's TraceFileStats (8 varints, a flag
//                  byte), varint records, varint unparsed, varint groups left
//                  out, varint n, n x {varint comm, zigzag rank, varint
//                  first_block, varint blocks, blocks x u64 digest, varint
//                  calls}, varint entries, then each entry:
//                    u8: NCCLWATCH_SLOT_SINGLE, then string Record; or a
//                    call slot's (COLLECTIVE, P2P, GROUP): 0x80 | its kind
//                    (0, 1, 2) << 5 | its context (below kSummaryContexts:
//                    the writer gives each communicator and call of a kind
//                    its own, the first 31 met, the rest share the last),
//                    then its 112-byte payload as its difference from the
//                    previous payload of that kind and context in this trace
//                    (zeros before the first), in 14 granules of 8 bytes: a
//                    varint mask of those that changed, then each one's
//                    change (now - before, mod 2^64) as a zigzag varint (a
//                    collective made like the one before it on its
//                    communicator takes 6 bytes, not 112: its time's step
//                    and its number's).
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

namespace ncclwatch::decoder {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the summary's integers are little-endian");

inline constexpr char kSummaryMagic[8] = {'N', 'C', 'C', 'L', 'W', 'S', 'U', 'M'};
inline constexpr uint32_t kSummaryVersion = 1;
inline constexpr uint32_t kSummaryHeaderBytes = 32;
inline constexpr uint64_t kMaxSummaryBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxSummaryTraces = 4096;
inline constexpr uint64_t kMaxSummaryString = 4096;
// Contexts a call slot's payload is diffed against, per kind, and the bit
// that marks a call slot's entry.
inline constexpr uint32_t kSummaryContexts = 32;
inline constexpr uint8_t kSummaryCallEntry = 0x80;
// The default window: the collectives kept at each end of a (communicator,
// rank)'s calls. 4,096 is the arrival-skew analysis's window (it reads a
// member's last 4,096 collectives), so a straggler is judged on the same calls.
inline constexpr uint32_t kDefaultSummaryWindow = 4096;

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

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_SUMMARY_SUMMARY_FORMAT_H_

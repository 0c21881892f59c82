// RecordDelta: a trace record (a trace.proto Record, as the shim wrote it)
// kept in a summary as its difference from the record before it of its
// context, not whole (summary format 6).
//
// Most of what a summary keeps whole, by bytes, is the watcher's records:
// a communicator's Progress every 20 ms and a GpuTime per operation, the
// same fields each time with a few numbers moved on. A record is read as
// its fields, one level into its body:
//
//   Record { t: varint, thread: varint, progress: { comm: fixed64,
//            collectives: varint, enqueued_t: varint, issued: varint } }
//   -> t, thread, [body 31: comm, collectives, enqueued_t, issued]
//
// and each field is written as its difference from the same field (the
// same number, wire type and occurrence) of the previous record of its
// context: a mask of the fields that moved, then each one's move (a
// number's difference, a string's new bytes). The fields' numbers and types
// (the record's shape) are written only where they are not the previous
// record's. A Progress takes 8-10 bytes so, where it took 30 whole.
//
// A context is a body kind and, for the watcher's records of a
// communicator (a body whose first field is a fixed64: its communicator),
// that communicator. Context 0 is the process's inventory, which starts at
// the node's inventory (the first one the summary met, written once in its
// header): the inventory of every process of a node is the node's plus
// what differs (its rank's variables, its GPU).
//
// A record is encoded so only where it is "flat": protobuf fields of wire
// types 0, 1, 2 and 5, its body (the first length-delimited field numbered
// 16 or more) likewise, each written as the shim writes it (shortest
// varints, but a length may take one byte more: the shim reserves two for a
// nested message's), at most kMaxFlatFields fields; whatever is not (a crafted or
// foreign record) is kept whole, as before. Decoding rebuilds the record's
// exact bytes, so the model's importer reads it as it reads the trace.
//
//   FlatRecord now;
//   if (now.Parse(bytes)) {                        // writer
//     const FlatRecord* prev = contexts.Find(now);
//     if (prev) WriteRecordDelta(prev, now, &sink);
//     contexts.Remember(std::move(now));
//   }
//   ... ReadRecordDelta(contexts.At(i), &cursor, &now) ...   // reader
//
// Thread-safety: values; one thread each.

#ifndef NCCLWATCH_DECODER_SUMMARY_RECORD_DELTA_H_
#define NCCLWATCH_DECODER_SUMMARY_RECORD_DELTA_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "summary/byte_cursor.h"

namespace ncclwatch::decoder {

// Fields of a record encoded as a difference, at most (a larger one is
// kept whole); contexts a trace's records are diffed against, at most (a
// record of a context past them is kept whole).
inline constexpr size_t kMaxFlatFields = 512;
inline constexpr size_t kMaxRecordContexts = 1024;

// One field of a flat record.
struct FlatField {
  uint32_t number = 0;
  uint8_t wire = 0;      // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  bool in_body = false;  // a field of the body, or of the Record
  bool body = false;     // the body itself: its fields follow it, in_body
  bool padded = false;   // length-delimited: its length one byte longer than needed
  uint64_t value = 0;    // varint and fixed values
  std::string bytes;     // length-delimited values but the body's
};

class FlatRecord {
 public:
  // Reads `record` into fields; false where it is not flat (see above).
  bool Parse(absl::Span<const uint8_t> record);

  // The record's bytes as the shim writes them (what Parse read).
  std::string Serialize() const;

  // The record's context: its body's field number, and the communicator
  // of a watcher's record (0 otherwise); (0, 0) for a record without a body.
  std::pair<uint32_t, uint64_t> ContextKey() const;

  const std::vector<FlatField>& fields() const { return fields_; }
  std::vector<FlatField>& mutable_fields() { return fields_; }
  // Whether `other` has the same fields, in the same order, of the same types.
  bool SameShape(const FlatRecord& other) const;

 private:
  std::vector<FlatField> fields_;
};

// The body number of the context that starts at the node's inventory
// (trace.proto Record.inventory).
inline constexpr uint32_t kInventoryBody = 30;

// A trace's contexts, by index in the order first met; index 0 is kept for
// the inventory's and starts as the node's inventory (empty when the
// summary has none). Writer and reader keep them alike.
class RecordContexts {
 public:
  explicit RecordContexts(const FlatRecord* node_inventory);

  // The index of `record`'s context, or -1 when it has none yet.
  int Find(const FlatRecord& record) const;
  // The record now last of context `index`, or null when there is none.
  const FlatRecord* At(size_t index) const;
  // `record` is now the last of its context (a new context only while
  // there are fewer than kMaxRecordContexts).
  void Remember(FlatRecord record);

 private:
  std::vector<FlatRecord> records_;
  std::vector<bool> filled_;
  std::map<std::pair<uint32_t, uint64_t>, size_t> index_;
};

// What a trace's differences may rebuild: kRebuiltPerByte bytes of records
// for each byte of its entries read so far, and kRebuiltSlack more (its
// first records, the node's inventory). A difference costs a few bytes
// whatever the record's length, so without it a crafted summary could
// rebuild one long record over and over, thousands of times its own size.
// The writer keeps a record whole where its difference would pass the
// budget, so the reader refuses only what no writer made.
inline constexpr uint64_t kRebuiltPerByte = 64;
inline constexpr uint64_t kRebuiltSlack = 64 << 10;

class RebuiltBudget {
 public:
  // Whether a record of `record_bytes` may be rebuilt once the entries read
  // (or written) so far, its difference included, are `entries_bytes`; if
  // so, it is counted.
  bool Spend(uint64_t record_bytes, uint64_t entries_bytes) {
    const uint64_t allowed = kRebuiltPerByte * entries_bytes + kRebuiltSlack;
    if (record_bytes > allowed || rebuilt_ > allowed - record_bytes) return false;
    rebuilt_ += record_bytes;
    return true;
  }

 private:
  uint64_t rebuilt_ = 0;
};

// Writes `now` as its difference from `prev` (its context's last record):
// a flag byte (1: `now`'s shape is `prev`'s), the shape where it is not
// (varint fields, then each field's tag, with bits for a padded length, a
// field of the body and the body itself),
// a mask of the fields that differ (one bit a field, in bytes, lowest
// first), then each differing field: a number's difference from prev's
// (mod 2^64) as a zigzag varint; a string's bytes as a string.
void WriteRecordDelta(const FlatRecord& prev, const FlatRecord& now, ByteSink* out);

// Reads a difference from `prev` into `now`; false on malformed input (a
// shape past kMaxFlatFields or unknown wire types, a fixed32 past 32 bits,
// bytes cut short).
bool ReadRecordDelta(const FlatRecord& prev, ByteCursor* in, FlatRecord* now);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_SUMMARY_RECORD_DELTA_H_

// WireReader: protobuf wire format read straight from bytes, as hostile input.
//
// The decoder's hot path reads the records the shim wrote (trace.proto)
// without libprotobuf: no message objects, no allocation per record. The
// reader walks one message's fields; every length is checked against the
// bytes left before it is used, so truncated, overlong or crafted input ends
// the walk (ok() turns false) instead of reading past the buffer.
//
//   WireReader r(bytes);
//   WireField f;
//   while (r.Next(&f)) {
//     switch (f.number) {
//       case 3: seq = f.value; break;             // varint, fixed32/64
//       case 5: path = f.bytes; break;            // length-delimited: a view
//     }
//   }
//   if (!r.ok()) ...                              // malformed: count it torn
//
// libprotobuf stays the reference: tests/unit/process_model_test.cc checks
// this reader against it on every record kind.
//
// Thread-safety: a WireReader is used by one thread; it never writes.

#ifndef NCCLWATCH_DECODER_TRACE_WIRE_READER_H_
#define NCCLWATCH_DECODER_TRACE_WIRE_READER_H_

#include <cstdint>
#include <cstring>
#include <string_view>

#include "absl/types/span.h"

namespace ncclwatch::decoder {

inline int64_t ZigzagDecode(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }
// sint32: libprotobuf cuts the varint to 32 bits first.
inline int32_t ZigzagDecode32(uint64_t v) {
  const uint32_t v32 = static_cast<uint32_t>(v);
  return static_cast<int32_t>((v32 >> 1) ^ (~(v32 & 1) + 1));
}

struct WireField {
  uint32_t number = 0;
  uint32_t wire_type = 0;           // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  uint64_t value = 0;               // varint and fixed values
  absl::Span<const uint8_t> bytes;  // length-delimited payload

  // Signed views of `value`.
  int64_t Zigzag() const { return ZigzagDecode(value); }
  int32_t Zigzag32() const {
    return ZigzagDecode32(value);
  }  // cut to 32 bits first, as libprotobuf does
  int32_t AsInt32() const { return static_cast<int32_t>(value); }  // sfixed32, int32
  std::string_view AsString() const {
    return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
};

// The primitives, for decoders that switch on a field's whole one-byte tag
// (field numbers 1-15) and fall back to WireReader for anything else. Each
// returns false, consuming nothing it could not check, when the bytes end
// first.
inline bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t* out) {
  if (p < end && *p < 0x80) {  // most values: one byte
    *out = *p++;
    return true;
  }
  uint64_t v = 0;
  const uint8_t* q = p;
  for (int shift = 0; shift < 64 && q < end; shift += 7) {
    const uint8_t b = *q++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      p = q;
      return true;
    }
  }
  return false;
}
// A varint passed over, its value not wanted: valid exactly where
// ReadVarint would read one (a byte below 0x80 among its first ten, before
// `end`). Eight bytes at once where they are there: the first byte without
// its high bit ends it.
inline bool SkipVarint(const uint8_t*& p, const uint8_t* end) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (end - p >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    const uint64_t stops = ~w & 0x8080808080808080ull;
    if (stops != 0) {
      p += (__builtin_ctzll(stops) >> 3) + 1;
      return true;
    }
  }
#endif
  uint64_t v;
  return ReadVarint(p, end, &v);
}
inline bool ReadFixed64(const uint8_t*& p, const uint8_t* end, uint64_t* out) {
  if (end - p < 8) return false;
  std::memcpy(out, p, 8);
  p += 8;
  return true;
}
inline bool ReadFixed32(const uint8_t*& p, const uint8_t* end, uint32_t* out) {
  if (end - p < 4) return false;
  std::memcpy(out, p, 4);
  p += 4;
  return true;
}
// Skips the value of a field whose tag was just read.
inline bool SkipValue(const uint8_t*& p, const uint8_t* end, uint32_t wire_type) {
  uint64_t v;
  switch (wire_type) {
    case 0:
      return SkipVarint(p, end);
    case 1:
      return ReadFixed64(p, end, &v);
    case 5: {
      uint32_t w;
      return ReadFixed32(p, end, &w);
    }
    case 2:
      if (!ReadVarint(p, end, &v) || v > static_cast<uint64_t>(end - p)) return false;
      p += v;
      return true;
    default:
      return false;
  }
}

class WireReader {
 public:
  explicit WireReader(absl::Span<const uint8_t> bytes)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  // The next field, or false at the end of the message or on malformed input
  // (then ok() is false).
  bool Next(WireField* f) {
    if (p_ == end_) return false;
    uint64_t tag;
    if (!Varint(&tag) || tag > 0xffffffffu || (tag >> 3) == 0) return Fail();
    f->number = static_cast<uint32_t>(tag >> 3);
    f->wire_type = static_cast<uint32_t>(tag & 7);
    switch (f->wire_type) {
      case 0:
        return Varint(&f->value) || Fail();
      case 1:
        if (end_ - p_ < 8) return Fail();
        std::memcpy(&f->value, p_, 8);
        p_ += 8;
        return true;
      case 5: {
        if (end_ - p_ < 4) return Fail();
        uint32_t v;
        std::memcpy(&v, p_, 4);
        f->value = v;
        p_ += 4;
        return true;
      }
      case 2: {
        uint64_t len;
        if (!Varint(&len) || len > static_cast<uint64_t>(end_ - p_)) return Fail();
        f->bytes = absl::MakeConstSpan(p_, static_cast<size_t>(len));
        p_ += len;
        return true;
      }
      default:  // groups (3, 4) and unknown wire types: not in our schema
        return Fail();
    }
  }

  bool ok() const { return ok_; }

 private:
  bool Varint(uint64_t* out) { return ReadVarint(p_, end_, out); }
  bool Fail() {
    ok_ = false;
    p_ = end_;
    return false;
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_WIRE_READER_H_

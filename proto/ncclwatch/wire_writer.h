// WireWriter: protobuf wire format written straight into a caller's buffer.
//
// The shim's hot path encodes trace.proto records with this, in the spirit of
// Perfetto's protozero: no libprotobuf, no allocation, no locks, no system
// calls, safe in a signal handler. It only appends; a field that does not fit
// marks the writer overflowed and every later write is dropped, so a caller
// checks ok() once at the end.
//
//   WireWriter w(buf, sizeof(buf));
//   w.Fixed64(2, comm_id);
//   auto nested = w.BeginMessage(23);   // reserves a 2-byte length
//   ...
//   w.EndMessage(nested);               // nested messages up to 16383 bytes
//
// Nested lengths are written as 2-byte varints, with a redundant continuation
// byte when the length is under 128; protobuf parsers accept that
// (tests/unit/trace_format_test.cc parses the output with libprotobuf).
//
// Header-only and freestanding: it uses no C++ standard library, so the shim
// that includes it needs nothing at run time beyond glibc.

#ifndef NCCLWATCH_PROTO_NCCLWATCH_WIRE_WRITER_H_
#define NCCLWATCH_PROTO_NCCLWATCH_WIRE_WRITER_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace ncclwatch::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class WireWriter {
 public:
  WireWriter(uint8_t* buf, size_t capacity) : buf_(buf), cap_(capacity) {}

  // An unsigned integer (proto types uint32/uint64/enum/bool).
  void Varint(uint32_t field, uint64_t v) {
    Tag(field, kVarint);
    RawVarint(v);
  }
  // A signed integer as sint32/sint64 (zigzag: small negatives stay short).
  void Sint(uint32_t field, int64_t v) {
    Tag(field, kVarint);
    RawVarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void Fixed64(uint32_t field, uint64_t v) {
    Tag(field, kFixed64);
    Raw(&v, 8);
  }
  // A sfixed32/fixed32; returns where its 4 bytes are, so the value can be
  // overwritten later in place (nullptr if it did not fit).
  uint8_t* Fixed32(uint32_t field, uint32_t v) {
    Tag(field, kFixed32);
    uint8_t* at = buf_ + len_;
    Raw(&v, 4);
    return ok_ ? at : nullptr;
  }
  void Bytes(uint32_t field, const void* data, size_t n) {
    Tag(field, kLengthDelimited);
    RawVarint(n);
    Raw(data, n);
  }
  void String(uint32_t field, const char* s) { Bytes(field, s, s ? strlen(s) : 0); }

  // A nested message: BeginMessage, its fields, EndMessage.
  size_t BeginMessage(uint32_t field) {
    Tag(field, kLengthDelimited);
    const size_t at = len_;
    if (Room(2)) len_ += 2;  // never past the end: len_ <= cap_ always holds
    return at;
  }
  void EndMessage(size_t at) {
    if (!ok_) return;
    const size_t n = len_ - at - 2;
    if (n > 16383) {
      ok_ = false;
      return;
    }
    buf_[at] = static_cast<uint8_t>(0x80 | (n & 0x7f));
    buf_[at + 1] = static_cast<uint8_t>(n >> 7);
  }

  bool ok() const { return ok_; }
  size_t size() const { return len_; }
  size_t remaining() const { return ok_ ? cap_ - len_ : 0; }
  uint8_t* data() const { return buf_; }

 private:
  void Tag(uint32_t field, WireType type) { RawVarint((static_cast<uint64_t>(field) << 3) | type); }

  // Written in place, byte by byte: no temporary and no variable-length
  // memcpy (a libc call), which would cost more than the encoding. Tags and
  // most values take one byte: that path is a compare and a store. Longer
  // ones check room for the most a varint can take when there is that much
  // left (always, in a slot), so the loop needs no length computed first.
  void RawVarint(uint64_t v) {
    if (__builtin_expect(v < 0x80, 1)) {
      if (!Room(1)) return;
      buf_[len_++] = static_cast<uint8_t>(v);
      return;
    }
    if (cap_ - len_ < 10) {  // near the end: the exact length, or overflow
      const size_t n = static_cast<size_t>(64 - __builtin_clzll(v) + 6) / 7;
      if (!Room(n)) return;
    } else if (!ok_) {
      return;
    }
    uint8_t* p = buf_ + len_;
    uint8_t* const start = p;
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
    len_ += static_cast<size_t>(p - start);
  }

  bool Room(size_t n) {
    if (!ok_ || cap_ - len_ < n) ok_ = false;
    return ok_;
  }

  void Raw(const void* p, size_t n) {
    if (!Room(n)) return;
    memcpy(buf_ + len_, p, n);
    len_ += n;
  }

  uint8_t* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool ok_ = true;
};

}  // namespace ncclwatch::wire

#endif  // NCCLWATCH_PROTO_NCCLWATCH_WIRE_WRITER_H_

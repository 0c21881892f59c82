// ByteSink and ByteCursor: the summary file's integers and strings
// (summary/summary_format.h), written and read back.
//
// ByteCursor reads hostile bytes: every read checks the bytes left first,
// and the first that does not fit turns ok() false for good (later reads
// return zeros), so a caller checks once, at the end of a section.
//
// Thread-safety: one owner each.

#ifndef NCCLWATCH_DECODER_SUMMARY_BYTE_CURSOR_H_
#define NCCLWATCH_DECODER_SUMMARY_BYTE_CURSOR_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ncclwatch::decoder {

class ByteSink {
 public:
  explicit ByteSink(std::string* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      U8(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    U8(static_cast<uint8_t>(v));
  }
  void Zigzag(int64_t v) {
    Varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void String(std::string_view s) {
    Varint(s.size());
    out_->append(s.data(), s.size());
  }
  void Raw(const void* p, size_t n) {
    if (n > 0) out_->append(static_cast<const char*>(p), n);
  }

 private:
  std::string* out_;
};

class ByteCursor {
 public:
  ByteCursor(const uint8_t* p, size_t n) : p_(p), left_(n) {}
  bool ok() const { return ok_; }
  size_t left() const { return left_; }
  const uint8_t* here() const { return p_; }

  uint8_t U8() {
    uint8_t v = 0;
    Raw(&v, 1);
    return v;
  }
  uint32_t U32() {
    uint32_t v = 0;
    Raw(&v, 4);
    return v;
  }
  uint64_t U64() {
    uint64_t v = 0;
    Raw(&v, 8);
    return v;
  }
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!ok_ || left_ == 0) return Fail();
      const uint8_t b = *p_++;
      --left_;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return Fail();  // more than ten bytes
  }
  int64_t Zigzag() {
    const uint64_t v = Varint();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  // A string of at most `max` bytes (a view into the input).
  std::string_view String(uint64_t max) {
    const uint64_t n = Varint();
    if (!ok_ || n > max || n > left_) {
      Fail();
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    left_ -= n;
    return s;
  }
  // The next `n` bytes as their own cursor (a section), skipped here.
  ByteCursor Section(uint64_t n) {
    if (!ok_ || n > left_) {
      Fail();
      return ByteCursor(nullptr, 0, false);
    }
    ByteCursor c(p_, n);
    p_ += n;
    left_ -= n;
    return c;
  }
  void Raw(void* out, size_t n) {
    if (n == 0) return;
    if (!ok_ || n > left_) {
      Fail();
      std::memset(out, 0, n);
      return;
    }
    std::memcpy(out, p_, n);
    p_ += n;
    left_ -= n;
  }
  uint64_t Fail() {
    ok_ = false;
    left_ = 0;
    return 0;
  }

 private:
  ByteCursor(const uint8_t* p, size_t n, bool ok) : p_(p), left_(n), ok_(ok) {}
  const uint8_t* p_;
  size_t left_;
  bool ok_ = true;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_SUMMARY_BYTE_CURSOR_H_

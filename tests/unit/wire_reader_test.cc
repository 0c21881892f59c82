// The wire format's varints (trace/wire_reader.h) against the plainest
// reading of the rule they implement: 7 bits a byte, low groups first,
// ended by the first byte below 0x80 among its first ten (bits past the
// 64th dropped); any other is refused, as is one the bytes end inside.
// SkipVarint passes over up to eight bytes a word at a time (SkipValue's
// varints: every field a reader skips, and a counted GPU time's): it must
// take exactly the bytes ReadVarint reads, and refuse what it refuses, for
// every length, value and place of the buffer's end.

#include "trace/wire_reader.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using ncclwatch::decoder::ReadVarint;
using ncclwatch::decoder::SkipVarint;

// The rule, a byte at a time: the bytes used, or 0 where it is refused.
size_t PlainVarint(const uint8_t* p, const uint8_t* end, uint64_t* out) {
  uint64_t v = 0;
  for (size_t i = 0; i < 10 && p + i < end; ++i) {
    v |= static_cast<uint64_t>(p[i] & 0x7f) << (7 * i);
    if ((p[i] & 0x80) == 0) {
      *out = v;
      return i + 1;
    }
  }
  return 0;
}

// `bytes` from `from`, the buffer ending at `end`: all three readings agree.
void Agree(const std::vector<uint8_t>& bytes, size_t from, size_t end) {
  const uint8_t* const b = bytes.data();
  uint64_t want = 0;
  const size_t used = PlainVarint(b + from, b + end, &want);
  const uint8_t* p = b + from;
  uint64_t got = ~want;
  INFO("from " << from << " end " << end << " first byte " << int{b[from]});
  REQUIRE(ReadVarint(p, b + end, &got) == (used != 0));
  if (used != 0) {
    CHECK(got == want);
    CHECK(static_cast<size_t>(p - (b + from)) == used);
  } else {
    CHECK(p == b + from);  // nothing consumed
  }
  const uint8_t* q = b + from;
  REQUIRE(SkipVarint(q, b + end) == (used != 0));
  if (used != 0) CHECK(static_cast<size_t>(q - (b + from)) == used);
}

}  // namespace

TEST_CASE("varints of every length and value read as the rule reads them", "[wire]") {
  std::mt19937_64 rng(25);
  for (int i = 0; i < 200000; ++i) {
    // A value of any width, encoded (sometimes with a longer, padded form),
    // or bytes at random; with bytes after it or the buffer ending inside.
    std::vector<uint8_t> bytes;
    if (i % 3 != 2) {
      uint64_t v = rng() >> (rng() % 64);
      const size_t pad = i % 7 == 0 ? rng() % 3 : 0;
      size_t n = 0;
      while (v >= 0x80 || pad > n) {
        bytes.push_back(static_cast<uint8_t>(v | 0x80));
        v >>= 7;
        ++n;
        if (v == 0 && n >= pad) break;
      }
      bytes.push_back(static_cast<uint8_t>(v & 0x7f));
    } else {
      for (size_t n = rng() % 14; n-- > 0;)
        bytes.push_back(static_cast<uint8_t>(rng() | (rng() % 4 != 0 ? 0x80 : 0)));
      if (bytes.empty()) bytes.push_back(0x80);
    }
    const size_t body = bytes.size();
    for (size_t tail = rng() % 12; tail-- > 0;) bytes.push_back(static_cast<uint8_t>(rng()));
    Agree(bytes, 0, bytes.size());
    Agree(bytes, 0, std::min(bytes.size(), static_cast<size_t>(rng() % (body + 1)) + 1));
  }
}

TEST_CASE("the edges: eight bytes, ten, eleven, 64 bits and past them", "[wire]") {
  for (size_t len = 1; len <= 11; ++len) {
    for (const uint8_t last : {uint8_t{0x00}, uint8_t{0x01}, uint8_t{0x7f}}) {
      std::vector<uint8_t> bytes(len - 1, 0xff);
      bytes.push_back(last);
      for (size_t tail = 0; tail <= 9; ++tail) {
        std::vector<uint8_t> b = bytes;
        b.resize(len + tail, 0x00);
        for (size_t end = 1; end <= b.size(); ++end) Agree(b, 0, end);
      }
    }
  }
  // UINT64_MAX: ten bytes, the last 0x01.
  std::vector<uint8_t> max(9, 0xff);
  max.push_back(0x01);
  const uint8_t* p = max.data();
  uint64_t v = 0;
  REQUIRE(ReadVarint(p, max.data() + max.size(), &v));
  CHECK(v == UINT64_MAX);
}

// SequenceWindow: one value per sequence number, dense for honest runs,
// bounded for crafted ones.

#include "model/sequence_window.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

using ncclwatch::decoder::SequenceWindow;

namespace {

std::vector<uint64_t> Keys(const SequenceWindow<int>& w) {
  std::vector<uint64_t> keys;
  w.ForEach([&](uint64_t seq, const int&) { keys.push_back(seq); });
  return keys;
}

}  // namespace

TEST_CASE("a contiguous run, grown up and down, keeps every value", "[window]") {
  SequenceWindow<int> w;
  for (uint64_t s = 100; s < 200; ++s) w.At(s) = static_cast<int>(s);
  for (uint64_t s = 99; s >= 50; --s) w.At(s) = static_cast<int>(s);
  REQUIRE(w.size() == 150);
  for (uint64_t s = 50; s < 200; ++s) {
    REQUIRE(w.Find(s) != nullptr);
    CHECK(*w.Find(s) == static_cast<int>(s));
  }
  CHECK(w.Find(49) == nullptr);
  CHECK(w.Find(200) == nullptr);
  const std::vector<uint64_t> keys = Keys(w);
  REQUIRE(keys.size() == 150);
  CHECK(keys.front() == 50);
  CHECK(keys.back() == 199);
}

TEST_CASE("numbers far apart are stored sparsely, not as the span between them",
          "[window][hostile]") {
  SequenceWindow<int> w;
  w.At(0) = 1;
  w.At(uint64_t{1} << 40) = 2;
  w.At(UINT64_MAX) = 3;
  w.At(UINT64_MAX - 1) = 4;
  w.At(1) = 5;
  CHECK(w.size() == 5);
  CHECK(*w.Find(0) == 1);
  CHECK(*w.Find(uint64_t{1} << 40) == 2);
  CHECK(*w.Find(UINT64_MAX) == 3);
  CHECK(*w.Find(UINT64_MAX - 1) == 4);
  CHECK(*w.Find(1) == 5);
  CHECK(w.Find(2) == nullptr);
  CHECK(Keys(w) == std::vector<uint64_t>{0, 1, uint64_t{1} << 40, UINT64_MAX - 1, UINT64_MAX});
}

TEST_CASE("the number after 2^64 - 1 is not appended to the run: it is 0, below it",
          "[window][hostile]") {
  SequenceWindow<int> w;
  w.At(UINT64_MAX) = 1;
  w.At(0) = 2;  // base + 1 wraps to 0
  w.At(1) = 3;
  CHECK(w.size() == 3);
  REQUIRE(w.Find(0) != nullptr);
  CHECK(*w.Find(0) == 2);
  CHECK(*w.Find(1) == 3);
  CHECK(*w.Find(UINT64_MAX) == 1);
  CHECK(Keys(w) == std::vector<uint64_t>{0, 1, UINT64_MAX});
}

TEST_CASE("a sparse value is taken into the dense run when the run reaches it", "[window]") {
  SequenceWindow<int> w;
  w.At(0) = 7;
  const uint64_t far = SequenceWindow<int>::kSlack * 2;
  w.At(far) = 9;  // beyond the slack: sparse for now
  for (uint64_t s = 1; s < far; ++s) w.At(s) = 1;
  CHECK(w.size() == far + 1);
  CHECK(*w.Find(far) == 9);
  w.At(far) = 10;  // the same value, not a second one
  CHECK(w.size() == far + 1);
  CHECK(*w.Find(far) == 10);
  CHECK(Keys(w).size() == far + 1);
}

TEST_CASE("a value is created once and found again", "[window]") {
  SequenceWindow<int> w;
  CHECK(w.empty());
  w.At(5) += 1;
  w.At(5) += 1;
  CHECK(w.size() == 1);
  CHECK(*w.Find(5) == 2);
  w.At(3);
  CHECK(w.size() == 2);
  CHECK(*w.Find(3) == 0);
  CHECK(w.Find(4) == nullptr);
}

TEST_CASE("numbers arriving in descending order are stored in linear time", "[window]") {
  // A stream whose numbers descend (crafted) must not move the whole run for
  // every new number: 1,000,000 of them finish at once.
  SequenceWindow<int> w;
  const uint64_t n = 1000000;
  for (uint64_t i = 0; i < n; ++i) w.At(n - i) = 1;
  CHECK(w.size() == n);
  CHECK(w.Find(1) != nullptr);
  CHECK(w.Find(n) != nullptr);
  CHECK(w.Find(0) == nullptr);
  CHECK(w.Find(n + 1) == nullptr);
}

TEST_CASE("room reserved up front changes nothing stored", "[window]") {
  SequenceWindow<int> plain, reserved;
  reserved.Reserve(1000);
  for (SequenceWindow<int>* w : {&plain, &reserved}) {
    for (uint64_t s = 500; s < 700; ++s) w->At(s) = static_cast<int>(s);
    for (uint64_t s = 499; s >= 400; --s) w->At(s) = static_cast<int>(s);
    w->At(uint64_t{1} << 40) = 7;
    w->Reserve(1 << 20);  // not empty any more: ignored
    w->At(800) = 8;
  }
  CHECK(Keys(plain) == Keys(reserved));
  CHECK(reserved.size() == plain.size());
  for (uint64_t s : Keys(plain)) CHECK(*plain.Find(s) == *reserved.Find(s));
}

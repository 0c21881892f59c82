// TableAllocator (decoder/model/table_allocator.h): small blocks from
// operator new, large ones mapped on their own at a 2 MiB boundary, and a
// Table behaves as the vector it is through growth, copies and clears.

#include "model/table_allocator.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>

#include "model/events.h"

namespace {

using ncclwatch::decoder::CollectiveEvent;
using ncclwatch::decoder::Table;
using ncclwatch::decoder::TableAllocator;

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

TEST_CASE("blocks of 2 MiB and more start on a 2 MiB boundary", "[model][table]") {
  TableAllocator<CollectiveEvent> a;
  const size_t rows = (size_t{3} << 20) / sizeof(CollectiveEvent);  // 3 MiB
  CollectiveEvent* big = a.allocate(rows);
  REQUIRE(big != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(big) % kHugePage == 0);
  // Every byte of the block is there to write.
  big[0].seq = 1;
  big[rows - 1].seq = 2;
  CHECK(big[0].seq + big[rows - 1].seq == 3);
  a.deallocate(big, rows);

  CollectiveEvent* small = a.allocate(10);  // from operator new: any alignment it gives
  REQUIRE(small != nullptr);
  small[9].seq = 7;
  CHECK(small[9].seq == 7);
  a.deallocate(small, 10);
}

TEST_CASE("an impossible size is bad_alloc, not a wrapped small block", "[model][table]") {
  TableAllocator<CollectiveEvent> a;
  CHECK_THROWS_AS(a.allocate(SIZE_MAX / 2), std::bad_alloc);
}

TEST_CASE("a Table grows across the threshold and keeps its rows", "[model][table]") {
  Table<uint64_t> t;
  const size_t n = (size_t{5} << 20) / sizeof(uint64_t);  // grows from 8 bytes to 5 MiB
  for (size_t i = 0; i < n; ++i) t.push_back(i * 3);
  REQUIRE(t.size() == n);
  CHECK(reinterpret_cast<uintptr_t>(t.data()) % kHugePage == 0);
  bool all = true;
  for (size_t i = 0; i < n; ++i) all = all && t[i] == i * 3;
  CHECK(all);
  Table<uint64_t> copy = t;
  CHECK(copy == t);
  t.clear();
  t.shrink_to_fit();
  CHECK(t.empty());
  CHECK(std::accumulate(copy.begin(), copy.end(), uint64_t{0}) == 3 * (n * (n - 1) / 2));
}

}  // namespace

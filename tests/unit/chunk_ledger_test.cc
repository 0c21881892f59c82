// ChunkLedger, KeptSlots and HeadTail (summary/chunk_ledger.h): which chunks
// of a ring the second reading of a summary may pass over, and what it adds
// for them.

#include "summary/chunk_ledger.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace {

using ncclwatch::decoder::ChunkLedger;
using ncclwatch::decoder::HeadTail;
using ncclwatch::decoder::KeptSlots;
using ncclwatch::decoder::LedgerItem;
using ncclwatch::decoder::LedgerItemKind;
using ncclwatch::decoder::TimeOrder;

constexpr TimeOrder::State kClaimOrder{};

TEST_CASE("a chunk whose every slot held a noted entry is found again, its items summed",
          "[summary]") {
  ChunkLedger l;
  l.BeginChunk(100, 4, 1000, kClaimOrder);
  l.Note(100, LedgerItemKind::kCollective, 0, 7, 1);
  l.Note(101, LedgerItemKind::kGpuTime, 5, 0, 0);
  l.Note(102, LedgerItemKind::kCollective, 0, 7, 2);
  l.Note(103, LedgerItemKind::kCollective, 0, 8, 4);
  l.BeginChunk(104, 4, 1000, kClaimOrder);
  l.Note(104, LedgerItemKind::kCollective, 0, 8, 8);  // only one of its four slots
  l.BeginChunk(108, 1, 1000, kClaimOrder);
  l.Note(108, LedgerItemKind::kCollective, 0, 8, 8);
  l.Rewind();
  const ChunkLedger::Chunk* c = l.Find(100, 4, 1000, kClaimOrder);
  REQUIRE(c != nullptr);
  const auto items = ChunkLedger::Items(*c);
  REQUIRE(items.size() == 3);
  CHECK(items[0].block == 7);
  CHECK(items[0].count == 2);
  CHECK(items[0].digest == 3);
  CHECK(items[1].kind == LedgerItemKind::kGpuTime);
  CHECK(items[1].stream == 5);
  CHECK(items[2].block == 8);
  CHECK(items[2].digest == 4);
  CHECK(l.Find(104, 4, 1000, kClaimOrder) == nullptr);  // slots held no entry: torn, say
  CHECK(l.Find(108, 1, 1000, kClaimOrder) == nullptr);  // the last: where it ends is unknown
}

TEST_CASE("a chunk is not found again where the ring moved, the chunks or the order differ",
          "[summary]") {
  ChunkLedger l;
  const TimeOrder::State before{10, 20}, after{30, 40};
  l.BeginChunk(0, 2, 50, before);
  l.Note(0, LedgerItemKind::kProgress, 1, 0, 0);
  l.Note(1, LedgerItemKind::kProgress, 1, 0, 0);
  l.BeginChunk(2, 2, 50, after);
  l.Rewind();
  CHECK(l.Find(0, 2, 51, before) == nullptr);  // a live writer claimed since
  l.Rewind();
  CHECK(l.Find(0, 3, 50, before) == nullptr);
  l.Rewind();
  CHECK(l.Find(0, 2, 50, after) == nullptr);
  l.Rewind();
  const ChunkLedger::Chunk* c = l.Find(0, 2, 50, before);
  REQUIRE(c != nullptr);
  CHECK(c->end == after);  // the order as the first reading left it
  CHECK(l.Find(2, 2, 50, after) == nullptr);
}

TEST_CASE("an entry read after its chunk is noted in it, and a pinned record handed out spoils",
          "[summary]") {
  ChunkLedger l;
  l.BeginChunk(0, 2, 10, kClaimOrder);
  l.Note(0, LedgerItemKind::kP2p, 3, 0, 1);
  l.BeginChunk(2, 2, 10, kClaimOrder);
  l.Note(2, LedgerItemKind::kP2p, 3, 0, 1);
  l.Note(1, LedgerItemKind::kP2p, 3, 0, 1);  // held for its time past its chunk's end
  l.Note(3, LedgerItemKind::kP2p, 3, 0, 1);
  l.BeginChunk(4, 2, 10, kClaimOrder);
  l.Note(4, LedgerItemKind::kGroup, 0, 0, 0);
  l.Pinned();  // a pinned record handed out while it was read
  l.Note(5, LedgerItemKind::kGroup, 0, 0, 0);
  l.BeginChunk(6, 2, 10, kClaimOrder);
  l.Note(9, LedgerItemKind::kGroup, 0, 0, 0);  // in no chunk: nothing
  l.Rewind();
  const ChunkLedger::Chunk* first = l.Find(0, 2, 10, kClaimOrder);
  REQUIRE(first != nullptr);
  CHECK(ChunkLedger::Items(*first)[0].count == 2);
  CHECK(l.Find(2, 2, 10, kClaimOrder) != nullptr);
  CHECK(l.Find(4, 2, 10, kClaimOrder) == nullptr);
}

TEST_CASE("a spoiled chunk, and one of more items than the ledger keeps, are read", "[summary]") {
  ChunkLedger l;
  const uint64_t n = ChunkLedger::kMaxItems + 1;
  l.BeginChunk(0, n, 100, kClaimOrder);
  for (uint64_t i = 0; i < n; ++i) l.Note(i, LedgerItemKind::kCollective, i, 0, 1);
  l.BeginChunk(n, 2, 100, kClaimOrder);
  l.Note(n, LedgerItemKind::kCollective, 0, 0, 1);
  l.Spoil(n + 1);  // a record the second reading keeps
  l.BeginChunk(n + 2, 2, 100, kClaimOrder);
  l.Rewind();
  CHECK(l.Find(0, n, 100, kClaimOrder) == nullptr);
  CHECK(l.Find(n, 2, 100, kClaimOrder) == nullptr);
}

TEST_CASE("kept slots: by region and slot, and whether a span of the ring holds one", "[summary]") {
  KeptSlots k;
  k.Add(true, 10);  // pinned slot 10
  k.Add(false, 20);
  k.Add(false, 20);
  k.Seal();
  CHECK(k.Has(true, 10));
  CHECK_FALSE(k.Has(false, 10));
  CHECK(k.Has(false, 20));
  CHECK_FALSE(k.AnyInRing(0, 20));
  CHECK(k.AnyInRing(0, 21));
  CHECK(k.AnyInRing(20, 1));
  CHECK_FALSE(k.AnyInRing(21, UINT64_MAX - 21));
  CHECK_FALSE(k.AnyInRing(5, 10));  // the pinned slot 10 is not the ring's
}

TEST_CASE("head and tail: the first and the last entries met", "[summary]") {
  HeadTail h(2, 3);
  for (uint64_t s = 0; s < 10; ++s) h.Add(false, s);
  CHECK(h.count() == 10);
  KeptSlots k;
  h.KeepAll(&k);
  k.Seal();
  for (uint64_t s = 0; s < 10; ++s) CHECK(k.Has(false, s) == (s < 2 || s >= 7));
  HeadTail few(2, 3);
  few.Add(true, 4);
  KeptSlots only;
  few.KeepAll(&only);
  only.Seal();
  CHECK(only.Has(true, 4));
}

}  // namespace

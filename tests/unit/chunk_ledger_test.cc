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

TEST_CASE("a chunk whose every slot held a noted entry is found again, its items summed",
          "[summary]") {
  ChunkLedger l;
  l.BeginChunk(100, 4, 1000);
  l.Note(100, LedgerItemKind::kCollective, 0, 7, 1);
  l.Note(101, LedgerItemKind::kGpuTime, 5, 0, 0);
  l.Note(102, LedgerItemKind::kCollective, 0, 7, 2);
  l.Note(103, LedgerItemKind::kCollective, 0, 8, 4);
  l.BeginChunk(104, 4, 1000);
  l.Note(104, LedgerItemKind::kCollective, 0, 8, 8);  // only one of its four slots
  l.Rewind();
  const ChunkLedger::Chunk* c = l.Find(100, 4, 1000);
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
  CHECK(l.Find(104, 4, 1000) == nullptr);  // slots held no entry: torn, say
}

TEST_CASE("a chunk is not found again where the ring moved or the chunks differ", "[summary]") {
  ChunkLedger l;
  l.BeginChunk(0, 2, 50);
  l.Note(0, LedgerItemKind::kProgress, 1, 0, 0);
  l.Note(1, LedgerItemKind::kProgress, 1, 0, 0);
  l.Rewind();
  CHECK(l.Find(0, 2, 51) == nullptr);  // a live writer claimed since
  l.Rewind();
  CHECK(l.Find(0, 3, 50) == nullptr);
  l.Rewind();
  CHECK(l.Find(0, 2, 50) != nullptr);
  CHECK(l.Find(2, 2, 50) == nullptr);  // no second chunk was seen
}

TEST_CASE("entries out of slot order are noted in their own chunk, and a spoiled chunk is read",
          "[summary]") {
  ChunkLedger l;
  l.BeginChunk(0, 2, 10);
  l.BeginChunk(2, 2, 10);
  l.Note(2, LedgerItemKind::kP2p, 3, 0, 1);
  l.Note(0, LedgerItemKind::kP2p, 3, 0, 1);  // the chunk before, after the next began
  l.Note(3, LedgerItemKind::kP2p, 3, 0, 1);
  l.Note(1, LedgerItemKind::kGroup, 0, 0, 0);
  l.Spoil(3);
  l.Note(9, LedgerItemKind::kP2p, 3, 0, 1);  // in no chunk: ignored
  l.Rewind();
  const ChunkLedger::Chunk* first = l.Find(0, 2, 10);
  REQUIRE(first != nullptr);
  CHECK(ChunkLedger::Items(*first).size() == 2);
  CHECK(l.Find(2, 2, 10) == nullptr);
}

TEST_CASE("a chunk of more items than the ledger keeps is read", "[summary]") {
  ChunkLedger l;
  const uint64_t n = ChunkLedger::kMaxItems + 1;
  l.BeginChunk(0, n, n);
  for (uint64_t i = 0; i < n; ++i) l.Note(i, LedgerItemKind::kCollective, i, 0, 1);
  l.Rewind();
  CHECK(l.Find(0, n, n) == nullptr);
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

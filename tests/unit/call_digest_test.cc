// CallDigest (summary/call_digest.h): a change of any number of a
// collective's signature changes its digest, and so does a block whose
// calls traded signatures between their numbers (the order inversion a
// node's summary must not hide in the calls it leaves out).

#include "summary/call_digest.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <vector>

#include "findings/collective_signature.h"

namespace {

using ncclwatch::decoder::CallDigest;
using ncclwatch::decoder::CollectiveSignature;

TEST_CASE("a collective's digest changes with its number and with each number of its signature",
          "[summary]") {
  const CollectiveSignature base(/*call=*/3, /*count=*/1024, /*datatype=*/7, /*redop=*/0,
                                 /*root=*/-1);
  std::vector<CollectiveSignature> changed(5, base);
  changed[0].call = 4;
  changed[1].count = 1023;
  changed[2].datatype = 6;
  changed[3].redop = 1;
  changed[4].root = 0;
  std::set<uint64_t> seen{CallDigest(100, base), CallDigest(101, base)};
  for (const CollectiveSignature& s : changed) seen.insert(CallDigest(100, s));
  CHECK(seen.size() == 7);
  // A field's value in another field's place: each packs into its own bits.
  CollectiveSignature swapped = base;
  swapped.call = static_cast<uint32_t>(base.datatype);
  swapped.datatype = static_cast<int32_t>(base.call);
  CHECK(CallDigest(100, swapped) != CallDigest(100, base));
  CollectiveSignature roles = base;
  roles.redop = base.root;
  roles.root = base.redop;
  CHECK(CallDigest(100, roles) != CallDigest(100, base));
  // The same call digests the same.
  CHECK(CallDigest(100, base) == CallDigest(100, CollectiveSignature(3, 1024, 7, 0, -1)));
}

TEST_CASE("a block whose calls traded signatures sums to another digest", "[summary]") {
  const CollectiveSignature all_reduce(3, 1024, 7, 0, -1);
  const CollectiveSignature broadcast(1, 256, 7, -1, 0);
  const uint64_t in_order = CallDigest(40, all_reduce) + CallDigest(41, broadcast);
  const uint64_t inverted = CallDigest(40, broadcast) + CallDigest(41, all_reduce);
  CHECK(in_order != inverted);
  // Two AllReduces that differ in their count alone, traded: the number
  // and the count are folded together.
  const CollectiveSignature small(3, 256, 7, 0, -1);
  CHECK(CallDigest(40, all_reduce) + CallDigest(41, small) !=
        CallDigest(40, small) + CallDigest(41, all_reduce));
  // Over many numbers and counts, no two calls of a block's size collide.
  std::set<uint64_t> digests;
  for (uint64_t seq = 0; seq < 256; ++seq)
    for (uint64_t count = 1; count <= 64; ++count)
      digests.insert(CallDigest(seq, CollectiveSignature(3, count, 7, 0, -1)));
  CHECK(digests.size() == 256 * 64);
}

}  // namespace

// GrowJoin (model/grown_communicators.h): the ranks ncclCommGrow gained are
// renamed to the existing ranks' identity through the existing root's link,
// and what they derive from the grown communicator follows; nothing is
// renamed without the link, and a crafted trace cannot merge two
// communicators it holds.

#include "model/grown_communicators.h"

#include <catch2/catch.hpp>
#include <map>

#include "model/process_trace.h"
#include "ncclwatch/trace_fields.h"

namespace {

namespace f = ncclwatch::fields;
using ncclwatch::decoder::CollectiveEvent;
using ncclwatch::decoder::CommMembership;
using ncclwatch::decoder::CommStream;
using ncclwatch::decoder::GrowJoin;
using ncclwatch::decoder::ProcessTrace;

constexpr uint64_t kParent = 0x10, kExisting = 0x20, kGrowId = 0x30;
constexpr uint64_t kSplitExisting = 0x40, kSplitGained = 0x50;

CommMembership Member(uint64_t comm, uint32_t call, uint64_t parent, uint64_t grow_id = 0,
                      int32_t color = 0) {
  CommMembership m;
  m.comm = comm;
  m.init_call = call;
  m.parent = parent;
  m.grow_id = grow_id;
  m.color = color;
  return m;
}

ProcessTrace ExistingRoot() {
  ProcessTrace t;
  t.comms.push_back(Member(kParent, f::kCommInitRank, 0));
  t.comms.push_back(Member(kExisting, f::kCommGrow, kParent, kGrowId));
  t.comms.push_back(Member(kSplitExisting, f::kCommSplit, kExisting, 0, 1));
  return t;
}

ProcessTrace Gained() {
  ProcessTrace t;
  t.comms.push_back(Member(kGrowId, f::kCommGrow, 0, kGrowId));
  t.comms.push_back(Member(kSplitGained, f::kCommSplit, kGrowId, 0, 1));
  for (uint64_t comm : {kGrowId, kSplitGained}) {
    CollectiveEvent c;
    c.comm = comm;
    t.collectives.push_back(c);
    CommStream s;
    s.comm = comm;
    t.streams.push_back(s);
    // What a node's summary left out of its calls there.
    ncclwatch::decoder::LeftOutCalls l;
    l.comm = comm;
    t.left_out.push_back(l);
    ncclwatch::decoder::LeftOutP2p p;
    p.comm = comm;
    t.left_out_p2p.push_back(p);
    t.left_out_gpu_times.push_back({comm, 7});
  }
  return t;
}

TEST_CASE("a gained rank takes the existing ranks' identity, and so do its splits",
          "[model][grow]") {
  GrowJoin join;
  const ProcessTrace root = ExistingRoot();
  CHECK_FALSE(GrowJoin::Gained(root));
  join.Learn(root);
  ProcessTrace t = Gained();
  REQUIRE(GrowJoin::Gained(t));
  REQUIRE(join.Join(&t));
  CHECK(t.comms[0].comm == kExisting);
  CHECK(t.comms[0].grow_id == kGrowId);  // kept: what the rank passed
  CHECK(t.comms[1].comm == kSplitExisting);
  CHECK(t.comms[1].parent == kExisting);
  CHECK(t.collectives[0].comm == kExisting);
  CHECK(t.collectives[1].comm == kSplitExisting);
  CHECK(t.streams[0].comm == kExisting);
  CHECK(t.streams[1].comm == kSplitExisting);
  // And what a summary left out (so the pair's sends left out meet its
  // peers' left-out receives under one communicator), listed as before.
  CHECK(t.left_out[0].comm == kExisting);
  CHECK(t.left_out[1].comm == kSplitExisting);
  CHECK(t.left_out_p2p[0].comm == kExisting);
  CHECK(t.left_out_p2p[1].comm == kSplitExisting);
  REQUIRE(t.left_out_gpu_times.size() == 2);
  CHECK(t.left_out_gpu_times[0].comm == kExisting);
  CHECK(t.left_out_gpu_times[1].comm == kSplitExisting);
  CHECK_FALSE(GrowJoin::Gained(t));
}

TEST_CASE("without the link nothing is renamed", "[model][grow]") {
  GrowJoin join;
  ProcessTrace existing = ExistingRoot();
  existing.comms[1].grow_id = 0;  // a non-root existing rank: no grow id
  join.Learn(existing);
  ProcessTrace t = Gained();
  CHECK_FALSE(join.Join(&t));
  CHECK(t.comms[0].comm == kGrowId);
  CHECK(t.comms[1].comm == kSplitGained);
}

TEST_CASE("a split the existing ranks did not make keeps the gained identity", "[model][grow]") {
  GrowJoin join;
  join.Learn(ExistingRoot());
  ProcessTrace t = Gained();
  t.comms[1].color = 2;  // another color than the existing ranks' split
  REQUIRE(join.Join(&t));
  CHECK(t.comms[0].comm == kExisting);
  CHECK(t.comms[1].comm == kSplitGained);
  CHECK(t.comms[1].parent == kExisting);
}

TEST_CASE("a crafted trace that holds both identities is not merged", "[model][grow]") {
  GrowJoin join;
  join.Learn(ExistingRoot());
  ProcessTrace t = Gained();
  t.comms.push_back(Member(kExisting, f::kCommInitRank, 0));
  CHECK_FALSE(join.Join(&t));
  CHECK(t.comms[0].comm == kGrowId);
  CHECK(t.comms[1].comm == kSplitGained);  // nor what derives from it
  CHECK(t.comms[2].comm == kExisting);
  // The first link learned stands.
  ProcessTrace liar = ExistingRoot();
  liar.comms[1].comm = 0x99;
  join.Learn(liar);
  ProcessTrace u = Gained();
  REQUIRE(join.Join(&u));
  CHECK(u.comms[0].comm == kExisting);
}

}  // namespace

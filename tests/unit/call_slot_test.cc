// The shim's call slots (ring_format.h, format 2) from end to end: the
// per-call record functions of shim/core/call_records.h write collectives,
// sends and receives and groups as fixed-layout slots; the decoder converts
// each into the Record it stands for (libprotobuf parses it field for field)
// and the model imports it directly, the same rows either way. Then many
// threads record at once while a reader reads the live file: no record is
// lost, none is torn, none is seen half-written. The tracer is started the
// way the shim starts it, into a private folder, once for the process.

#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/call_records.h"
#include "core/tracer.h"
#include "model/process_trace.h"
#include "ncclwatch/trace.pb.h"
#include "ncclwatch/trace_fields.h"
#include "support/traced_job.h"
#include "trace/trace_file.h"

namespace {

namespace f = ncclwatch::fields;
namespace pb = ncclwatch::trace::v1;
namespace shim = ncclwatch::shim;
using ncclwatch::decoder::LoadProcessTrace;
using ncclwatch::decoder::ProcessTrace;
using ncclwatch::decoder::TraceFile;
using ncclwatch::decoder::TraceFileStats;

void StartTracer() {
  // Made before the tracer, so removed after it at exit: the tracer keeps
  // its file for the life of the process, and the folder goes with it.
  static jobs::TempDir dir;
  setenv("NCCLWATCH_DIR", dir.path().c_str(), 1);
  setenv("NCCLWATCH_RING_SIZE", "64M", 1);  // the stress test's records, with room to spare
  shim::InitTracer();
  REQUIRE(shim::Tracing());
  shim::GrowTraceRing();  // as the shim does with a process's first communicator
  REQUIRE(shim::g_ring.ring_slots() == (64u << 20) / NCCLWATCH_SLOT_BYTES);
}

// The ring's per-call records as libprotobuf parses them (call slots
// converted), with each one's slot kind.
struct Parsed {
  std::vector<pb::Record> records;
  std::vector<uint8_t> kinds;
  TraceFileStats stats;
};
Parsed RingRecords() {
  auto file = TraceFile::Open(shim::g_ring.path());
  REQUIRE(file.ok());
  Parsed out;
  std::vector<uint8_t> kinds;
  (*file)->ForEachEntry(
      [&](bool pinned, uint64_t, uint8_t kind, absl::Span<const uint8_t>) {
        if (!pinned) kinds.push_back(kind);
      },
      &out.stats);
  size_t i = 0;
  (*file)->ForEachRecord(
      [&](bool pinned, uint64_t, absl::Span<const uint8_t> bytes) {
        if (pinned) return;
        const uint8_t kind = kinds.at(i++);
        pb::Record r;
        REQUIRE(r.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
        if (r.has_time_anchor()) return;
        out.records.push_back(r);
        out.kinds.push_back(kind);
      },
      &out.stats);
  return out;
}

}  // namespace

TEST_CASE("StoreCallSlot stores every field where the struct has it", "[shim][record]") {
  // Every byte of the source distinct, so a field stored at the wrong
  // offset, or a pair of 4-byte fields swapped, shows.
  ncclwatch_call_slot v;
  auto* bytes = reinterpret_cast<uint8_t*>(&v);
  for (size_t i = 0; i < sizeof(v); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  uint8_t slot[sizeof(ncclwatch_call_slot)];
  memset(slot, 0xee, sizeof(slot));
  shim::StoreCallSlot(slot, v, 0x1122334455667788ull, NCCLWATCH_RESULT_PENDING);
  ncclwatch_call_slot want = v;
  want.t = 0x1122334455667788ull;
  want.result = NCCLWATCH_RESULT_PENDING;
  CHECK(memcmp(slot, &want, sizeof(want)) == 0);
}

TEST_CASE("collectives, sends and groups are call slots that decode as their Records",
          "[shim][record][conformance]") {
  StartTracer();
  // Communicators the shim did not see made: adopted, numbered from 0.
  static int comm_a = 0;
  const void* caller = reinterpret_cast<const void*>(0x401234);
  shim::CallRecord g = shim::BeginGroup(f::kGroupStart, caller);
  shim::EndGroup(f::kGroupStart, g, 0);
  shim::CollectiveCall c = shim::BeginCollective(
      f::kAllReduce, reinterpret_cast<const void*>(0x1000), reinterpret_cast<const void*>(0x2000),
      1u << 20, 7, 0, -1, &comm_a, reinterpret_cast<const void*>(0x5000), caller);
  shim::EndCollective(c, 0);
  shim::P2pCall s = shim::BeginP2p(true, reinterpret_cast<const void*>(0x3000), 99, 2, 5, &comm_a,
                                   reinterpret_cast<const void*>(0x5000), caller);
  shim::EndP2p(s, 3);  // refused: not numbered
  shim::CallRecord ge = shim::BeginGroup(f::kGroupEnd, caller);
  shim::EndGroup(f::kGroupEnd, ge, 0);
  shim::CollectiveCall b = shim::BeginCollective(f::kBroadcast, nullptr, nullptr, 8, 0, -1, 2,
                                                 &comm_a, nullptr, caller);  // pending: no End

  const Parsed got = RingRecords();
  REQUIRE(got.records.size() == 5);
  CHECK(got.kinds == std::vector<uint8_t>{NCCLWATCH_SLOT_GROUP, NCCLWATCH_SLOT_COLLECTIVE,
                                          NCCLWATCH_SLOT_P2P, NCCLWATCH_SLOT_GROUP,
                                          NCCLWATCH_SLOT_COLLECTIVE});
  CHECK(got.stats.torn_slots == 0);
  const pb::Record& r0 = got.records[0];
  REQUIRE(r0.has_group());
  CHECK(r0.group().call() == pb::GROUP_START);
  CHECK(r0.group().depth() == 1);
  CHECK(r0.group().group() != 0);
  CHECK(r0.group().result() == 0);
  CHECK(r0.group().caller() == 0x401234);
  CHECK(r0.thread() >= 1);
  const pb::Record& r1 = got.records[1];
  REQUIRE(r1.has_collective());
  const auto& x = r1.collective();
  CHECK(x.call() == pb::ALL_REDUCE);
  CHECK(x.result() == 0);
  CHECK(x.seq() == 0);
  CHECK(x.count() == 1u << 20);
  CHECK(x.datatype() == 7);
  CHECK(x.has_redop());
  CHECK(x.redop() == 0);
  CHECK(!x.has_root());
  CHECK(x.stream() == 0x5000);
  CHECK(x.sendbuff() == 0x1000);
  CHECK(x.recvbuff() == 0x2000);
  CHECK(x.group() == r0.group().group());  // inside the group
  CHECK(x.caller() == 0x401234);
  CHECK(x.rank() == -1);  // adopted: rank unknown
  CHECK(x.comm() != 0);
  CHECK(r1.t() >= r0.t());
  const pb::Record& r2 = got.records[2];
  REQUIRE(r2.has_p2p());
  CHECK(r2.p2p().send());
  CHECK(r2.p2p().peer() == 5);
  CHECK(r2.p2p().count() == 99);
  CHECK(r2.p2p().datatype() == 2);
  CHECK(r2.p2p().buff() == 0x3000);
  CHECK(r2.p2p().result() == 3);
  CHECK(r2.p2p().comm() == x.comm());
  const pb::Record& r3 = got.records[3];
  REQUIRE(r3.has_group());
  CHECK(r3.group().call() == pb::GROUP_END);
  CHECK(r3.group().depth() == 0);
  const pb::Record& r4 = got.records[4];
  REQUIRE(r4.has_collective());
  CHECK(r4.collective().call() == pb::BROADCAST);
  CHECK(r4.collective().seq() == 1);  // the AllReduce was accepted
  CHECK(!r4.collective().has_redop());
  CHECK(r4.collective().root() == 2);
  CHECK(r4.collective().group() == 0);  // outside any group
  CHECK(r4.collective().result() == NCCLWATCH_RESULT_PENDING);
  (void)b;

  // The model's rows from the slots, as from the Records.
  auto model = LoadProcessTrace(shim::g_ring.path());
  REQUIRE(model.ok());
  const ProcessTrace& p = *model;
  REQUIRE(p.collectives.size() == 2);
  CHECK(p.collectives[0].count == 1u << 20);
  CHECK(p.collectives[0].redop == 0);
  CHECK(p.collectives[0].root == -1);
  CHECK(p.collectives[0].group == r0.group().group());
  CHECK(p.collectives[0].thread == r1.thread());
  CHECK(p.collectives[0].t == r1.t());
  CHECK(p.collectives[1].result == NCCLWATCH_RESULT_PENDING);
  REQUIRE(p.p2p.size() == 1);
  CHECK(p.p2p[0].result == 3);
  CHECK(p.p2p[0].send);
  REQUIRE(p.groups.size() == 2);
  CHECK(p.groups[1].call == f::kGroupEnd);
  CHECK(p.unparsed_records == 0);
}

TEST_CASE("threads record at once: no call slot is lost, torn or seen half-written",
          "[shim][record][stress]") {
  StartTracer();
  constexpr int kThreads = 4;
  constexpr uint64_t kCalls = 25000;  // 140,000 slots with the groups: the ring holds them
  const uint64_t ring_slots = shim::g_ring.header()->ring_slots;
  REQUIRE(ring_slots >= 2 * kThreads * kCalls);
  static int comms[kThreads];
  constexpr uint64_t kMark = 0xc0ffee;  // this test's calls' caller
  std::atomic<int> running{kThreads};
  std::atomic<uint64_t> bad_live{0}, live_reads{0};
  // A reader of the live file, all along: every record it takes must be whole.
  // It reads until the writers are done, and once at least: on a busy
  // machine the writers may all finish before its first read ends (the
  // full suite at -j2 did so twice in a row; a failed open is retried at
  // most 100 times once they are done, so a trace it cannot open fails the
  // check below instead of hanging).
  std::thread reader([&] {
    int tries_after = 0;
    while (running.load() > 0 || (live_reads.load() == 0 && tries_after++ < 100)) {
      auto file = TraceFile::Open(shim::g_ring.path());
      if (!file.ok()) continue;
      TraceFileStats stats;
      (*file)->ForEachEntry(
          [&](bool, uint64_t, uint8_t kind, absl::Span<const uint8_t> bytes) {
            if (kind != NCCLWATCH_SLOT_COLLECTIVE) return;
            const ncclwatch_call_slot s = ncclwatch::decoder::ReadCallSlot(bytes);
            if (s.caller != kMark) return;  // the other test's
            // Each field is derived from seq: a mix of two writes shows.
            if (s.count != s.seq * 3 + 1 || s.sendbuff != ~s.seq || s.recvbuff != s.seq << 8)
              bad_live.fetch_add(1);
          },
          &stats);
      live_reads.fetch_add(1);
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kThreads; ++w) {
    writers.emplace_back([&, w] {
      for (uint64_t i = 0; i < kCalls; ++i) {
        if (i % 5 == 0) {
          shim::CallRecord g = shim::BeginGroup(f::kGroupStart, nullptr);
          shim::EndGroup(f::kGroupStart, g, 0);
        }
        shim::CollectiveCall c = shim::BeginCollective(
            f::kAllReduce, reinterpret_cast<const void*>(~i), reinterpret_cast<const void*>(i << 8),
            i * 3 + 1, 7, 0, -1, &comms[w], nullptr, reinterpret_cast<const void*>(kMark));
        shim::EndCollective(c, 0);
        if (i % 5 == 0) {
          shim::CallRecord g = shim::BeginGroup(f::kGroupEnd, nullptr);
          shim::EndGroup(f::kGroupEnd, g, 0);
        }
      }
      running.fetch_sub(1);
    });
  }
  for (std::thread& t : writers) t.join();
  reader.join();
  CHECK(bad_live.load() == 0);
  CHECK(live_reads.load() >= 1);

  auto model = LoadProcessTrace(shim::g_ring.path());
  REQUIRE(model.ok());
  const ProcessTrace& p = *model;
  CHECK(p.stats.torn_slots == 0);
  CHECK(p.stats.lapped_slots == 0);
  // Every thread's communicator: every number once, in order, whole, returned.
  std::map<uint64_t, std::vector<const ncclwatch::decoder::CollectiveEvent*>> by_comm;
  for (const auto& e : p.collectives)
    if (e.caller == kMark) by_comm[e.comm].push_back(&e);
  REQUIRE(by_comm.size() == kThreads);
  for (const auto& [comm, calls] : by_comm) {
    REQUIRE(calls.size() == kCalls);
    uint32_t thread = calls.front()->thread;
    for (uint64_t i = 0; i < kCalls; ++i) {
      const auto& e = *calls[i];
      INFO("comm " << comm << " call " << i);
      REQUIRE(e.seq == i);
      REQUIRE(e.count == i * 3 + 1);
      REQUIRE(e.result == 0);
      REQUIRE(e.thread == thread);
      REQUIRE((i % 5 == 0) == (e.group != 0));
    }
  }
  CHECK(p.groups.size() >= 2 * kThreads * kCalls / 5);
}

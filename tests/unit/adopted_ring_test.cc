// A communicator the shim did not see made (CommRegistry::FindOrAdopt, on
// the hot path) grows the trace's small ring as an init call does, through
// GrowTraceRingForAdopted (core/tracer.h: the heartbeat thread calls it):
// before, a process whose communicators were all adopted kept a 64 KiB ring
// (512 slots) however long it ran. The tracer is started the way the shim
// starts it, into a private folder, once for the process.

#include <stdlib.h>

#include <catch2/catch.hpp>

#include "core/call_records.h"
#include "core/comm_registry.h"
#include "core/tracer.h"
#include "model/process_trace.h"
#include "ncclwatch/trace_fields.h"
#include "support/traced_job.h"

namespace {

namespace f = ncclwatch::fields;
namespace shim = ncclwatch::shim;
using ncclwatch::decoder::LoadProcessTrace;

TEST_CASE("collectives on an adopted communicator grow the small ring, nothing else does",
          "[shim][ring]") {
  jobs::TempDir dir;
  setenv("NCCLWATCH_DIR", dir.path().c_str(), 1);
  setenv("NCCLWATCH_RING_SIZE", "4M", 1);
  shim::InitTracer();
  REQUIRE(shim::Tracing());
  const uint64_t full = (4u << 20) / NCCLWATCH_SLOT_BYTES;
  REQUIRE(shim::TraceRingIsSmall());
  CHECK(shim::g_ring.ring_slots() < full);

  // No communicator yet: the heartbeat's look leaves the ring small.
  shim::GrowTraceRingForAdopted();
  CHECK(shim::TraceRingIsSmall());

  static int comm = 0;  // a handle no init call returned
  const void* caller = reinterpret_cast<const void*>(0x401234);
  for (int i = 0; i < 2000; ++i) {  // past the small ring's 512 slots
    shim::CollectiveCall c = shim::BeginCollective(f::kAllReduce, nullptr, nullptr, 64, 7, 0, -1,
                                                   &comm, nullptr, caller);
    shim::EndCollective(c, 0);
    if (i == 100) {
      CHECK(shim::g_comms.Adopted() == 1);
      CHECK(shim::TraceRingIsSmall());  // the hot path did not grow it
      shim::GrowTraceRingForAdopted();  // the heartbeat's next look
      CHECK_FALSE(shim::TraceRingIsSmall());
      CHECK(shim::g_ring.ring_slots() == full);
    }
  }
  auto t = LoadProcessTrace(shim::g_ring.path());
  REQUIRE(t.ok());
  // The 101 before the growth were still in the small ring; all kept.
  REQUIRE(t->collectives.size() == 2000);
  CHECK(t->collectives.front().seq == 0);
  CHECK(t->collectives.back().seq == 1999);
  CHECK(t->collectives.back().rank == -1);  // adopted: its rank unknown
}

}  // namespace

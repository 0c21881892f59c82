// The shim's record encoders against libprotobuf: a per-call record encoded
// in place in a ring slot, its result filled in afterwards, and a record too
// large for one slot, which gives its slot up as padding and is written
// across slots instead. The tracer is started the way the shim starts it,
// into a private folder.

#include "core/record_builder.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/tracer.h"
#include "ncclwatch/trace.pb.h"
#include "ncclwatch/trace_fields.h"
#include "support/traced_job.h"
#include "trace/trace_file.h"

namespace {

namespace f = ncclwatch::fields;
namespace pb = ncclwatch::trace::v1;
using ncclwatch::shim::AppendRingRecord;
using ncclwatch::shim::CallRecord;
using ncclwatch::wire::WireWriter;

// The ring's records, less time anchors.
std::vector<pb::Record> RingRecords(const std::string& path,
                                    ncclwatch::decoder::TraceFileStats* stats) {
  auto file = ncclwatch::decoder::TraceFile::Open(path);
  REQUIRE(file.ok());
  std::vector<pb::Record> out;
  (*file)->ForEachRecord(
      [&](bool pinned, uint64_t, absl::Span<const uint8_t> bytes) {
        if (pinned) return;
        pb::Record r;
        REQUIRE(r.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
        if (!r.has_time_anchor()) out.push_back(r);  // the ring's first slot brings one
      },
      stats);
  return out;
}

}  // namespace

TEST_CASE("per-call records are encoded in place, results patched, oversized ones spill",
          "[shim][record]") {
  static jobs::TempDir dir;  // the tracer keeps its file for the life of the process
  setenv("NCCLWATCH_DIR", dir.path().c_str(), 1);
  ncclwatch::shim::InitTracer();
  REQUIRE(ncclwatch::shim::Tracing());

  CallRecord api = AppendRingRecord(f::record::kApi, f::api::kResult, [](WireWriter& w) {
    w.Varint(f::api::kCall, f::kCommCount);
    w.Sint(f::api::kValue, -5);
  });
  REQUIRE(api.result.at != nullptr);
  // A record that cannot fit a slot's 112 bytes: a 200-character host.
  const std::string host(200, 'h');
  CallRecord big = AppendRingRecord(f::record::kProcessStart, 0, [&](WireWriter& w) {
    w.String(f::process_start::kHost, host.c_str());
  });
  CHECK(big.result.at == nullptr);
  api.Finish(4);

  ncclwatch::decoder::TraceFileStats stats;
  const std::vector<pb::Record> ring = RingRecords(ncclwatch::shim::g_ring.path(), &stats);
  REQUIRE(ring.size() == 2);
  REQUIRE(ring[0].has_api());
  CHECK(ring[0].api().call() == pb::COMM_COUNT);
  CHECK(ring[0].api().value() == -5);
  CHECK(ring[0].api().result() == 4);
  CHECK(ring[0].thread() >= 1);
  REQUIRE(ring[1].has_process_start());
  CHECK(ring[1].process_start().host() == host);
  CHECK(ring[1].t() >= ring[0].t());
  CHECK(stats.padding_slots == 1);
  CHECK(stats.torn_slots == 0);
}

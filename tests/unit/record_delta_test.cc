// RecordDelta (decoder/summary/record_delta.h): a record kept as its
// difference from the one before it of its context reads back as the same
// bytes, takes a few bytes where the record took tens, and a crafted
// difference is refused, never read past its bytes.
//
// Records are made with libprotobuf (the reference), and read from a trace
// the shim's own ring writer wrote (tests/bench/synthetic_trace.h).

#include "summary/record_delta.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ncclwatch/trace.pb.h"
#include "ncclwatch/wire_writer.h"
#include "summary/byte_cursor.h"
#include "support/traced_job.h"
#include "synthetic_trace.h"
#include "trace/trace_file.h"

namespace {

namespace pb = ncclwatch::trace::v1;
using namespace ncclwatch::decoder;

absl::Span<const uint8_t> Span(const std::string& s) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string Progress(uint64_t t, uint64_t comm, uint64_t done, uint64_t enqueued_t,
                     uint32_t pending) {
  pb::Record r;
  r.set_t(t);
  r.set_thread(2);
  pb::Progress* p = r.mutable_progress();
  p->set_comm(comm);
  p->set_collectives(done);
  p->set_enqueued_t(enqueued_t);
  p->set_pending(pending);
  p->set_issued(done + pending);
  return r.SerializeAsString();
}

std::string Inventory(int rank, const std::string& gpu) {
  pb::Record r;
  r.set_t(1000 + rank);
  r.set_thread(1);
  pb::Inventory* inv = r.mutable_inventory();
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"LOCAL_RANK", std::to_string(rank)},
                                                        {"MASTER_ADDR", "10.0.0.1"},
                                                        {"NCCL_SOCKET_IFNAME", "eth0"},
                                                        {"RANK", std::to_string(rank)},
                                                        {"WORLD_SIZE", "8"}}) {
    pb::Inventory::Variable* v = inv->add_env();
    v->set_name(name);
    v->set_value(value);
  }
  inv->set_nccl_version(22809);
  inv->set_nccl_path("/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9");
  inv->set_cuda_driver_version(13000);
  inv->set_framework("pytorch");
  inv->set_command_line("python train.py --model llama --batch 64");
  pb::Inventory::Gpu* g = inv->add_gpus();
  g->set_bdf(gpu);
  g->set_iommu_group(-1);
  return r.SerializeAsString();
}

// `now` written as its difference from `prev`, read back: the bytes of the
// difference, and `now` as read.
struct RoundTrip {
  std::string delta;
  std::string read;
  bool ok = false;
};
RoundTrip Through(const std::string& prev_bytes, const std::string& now_bytes) {
  FlatRecord prev, now;
  REQUIRE(prev.Parse(Span(prev_bytes)));
  REQUIRE(now.Parse(Span(now_bytes)));
  RoundTrip out;
  ByteSink sink(&out.delta);
  WriteRecordDelta(prev, now, &sink);
  ByteCursor c(reinterpret_cast<const uint8_t*>(out.delta.data()), out.delta.size());
  FlatRecord back;
  out.ok = ReadRecordDelta(prev, &c, &back) && c.ok() && c.left() == 0;
  out.read = back.Serialize();
  return out;
}

}  // namespace

TEST_CASE("record delta: a record reads back as its own bytes", "[record_delta]") {
  for (const std::string& bytes :
       {Progress(5'000'000, 0xabcdef0123456789ull, 40, 4'900'000, 2), Inventory(3, "0000:18:00.0"),
        pb::Record().SerializeAsString()}) {
    FlatRecord f;
    REQUIRE(f.Parse(Span(bytes)));
    CHECK(f.Serialize() == bytes);
  }
  FlatRecord f;
  REQUIRE(f.Parse(Span(Progress(1, 77, 2, 3, 0))));
  CHECK(f.ContextKey() == std::make_pair(uint32_t{31}, uint64_t{77}));
  REQUIRE(f.Parse(Span(Inventory(0, "x"))));
  CHECK(f.ContextKey().first == kInventoryBody);
}

TEST_CASE("record delta: what is not as the shim writes it is not flat", "[record_delta]") {
  FlatRecord f;
  // A varint with a redundant continuation byte (t = 1 as 0x81 0x00).
  const std::string long_varint = {0x08, static_cast<char>(0x81), 0x00};
  CHECK_FALSE(f.Parse(Span(long_varint)));
  // A group (wire type 3), and bytes cut short.
  CHECK_FALSE(f.Parse(Span(std::string{0x0b, 0x0c})));
  const std::string cut = Progress(1, 2, 3, 4, 5);
  CHECK_FALSE(f.Parse(Span(cut.substr(0, cut.size() - 1))));
}

TEST_CASE("record delta: the watcher's next record takes under half its bytes", "[record_delta]") {
  const uint64_t comm = 0x5ca1ab1e0ddba11ull;
  const std::string a = Progress(1'000'000'000, comm, 1000, 999'000'000, 1);
  const std::string b = Progress(1'020'000'000, comm, 1012, 1'019'000'000, 1);
  RoundTrip r = Through(a, b);
  REQUIRE(r.ok);
  CHECK(r.read == b);
  INFO(b.size() << " bytes whole, " << r.delta.size() << " as a difference");
  CHECK(r.delta.size() * 2 < b.size());
  // Pending 0 is not written (proto3): the shape changes, and still reads back.
  const std::string c = Progress(1'040'000'000, comm, 1013, 1'039'000'000, 0);
  r = Through(b, c);
  REQUIRE(r.ok);
  CHECK(r.read == c);
  r = Through(c, b);
  REQUIRE(r.ok);
  CHECK(r.read == b);
  // A record of another kind altogether.
  r = Through(Inventory(1, "0000:18:00.0"), b);
  REQUIRE(r.ok);
  CHECK(r.read == b);
}

TEST_CASE("record delta: a rank's inventory is the node's plus what differs", "[record_delta]") {
  const std::string node = Inventory(0, "0000:18:00.0");
  const std::string rank5 = Inventory(5, "0000:9a:00.0");
  RoundTrip r = Through(node, rank5);
  REQUIRE(r.ok);
  CHECK(r.read == rank5);
  INFO(rank5.size() << " bytes whole, " << r.delta.size() << " as a difference");
  // Its two variables, its GPU and its time: well under a quarter.
  CHECK(r.delta.size() * 4 < rank5.size());
}

TEST_CASE("record delta: contexts by kind and communicator, the inventory's first",
          "[record_delta]") {
  FlatRecord node;
  REQUIRE(node.Parse(Span(Inventory(0, "a"))));
  RecordContexts with(&node);
  RecordContexts without(nullptr);
  REQUIRE(with.At(0) != nullptr);
  CHECK(with.At(0)->Serialize() == Inventory(0, "a"));
  CHECK(without.At(0) == nullptr);
  FlatRecord p1, p2;
  REQUIRE(p1.Parse(Span(Progress(1, 7, 1, 1, 0))));
  REQUIRE(p2.Parse(Span(Progress(1, 8, 1, 1, 0))));
  CHECK(with.Find(p1) == -1);
  with.Remember(p1);
  with.Remember(p2);
  CHECK(with.Find(p1) == 1);
  CHECK(with.Find(p2) == 2);
  CHECK(with.At(3) == nullptr);
  FlatRecord inv;
  REQUIRE(inv.Parse(Span(Inventory(2, "b"))));
  CHECK(without.Find(inv) == 0);
  without.Remember(inv);
  CHECK(without.At(0)->Serialize() == Inventory(2, "b"));
  // Past kMaxRecordContexts communicators a record has no context.
  RecordContexts full(nullptr);
  for (uint64_t comm = 1; comm < kMaxRecordContexts + 10; ++comm) {
    FlatRecord f;
    REQUIRE(f.Parse(Span(Progress(1, comm, 1, 1, 0))));
    full.Remember(f);
  }
  FlatRecord last;
  REQUIRE(last.Parse(Span(Progress(1, kMaxRecordContexts + 5, 1, 1, 0))));
  CHECK(full.Find(last) == -1);
  REQUIRE(last.Parse(Span(Progress(1, 5, 1, 1, 0))));
  CHECK(full.Find(last) == 5);
}

TEST_CASE("record delta: every record of a trace the ring writer wrote is flat", "[record_delta]") {
  jobs::TempDir tmp;
  ncclwatch::bench::SyntheticJob job;
  job.ranks = 1;
  job.calls = 300;
  std::string error;
  REQUIRE(ncclwatch::bench::WriteSyntheticJob(tmp.path(), job, &error));
  size_t singles = 0, flat = 0;
  TraceFileStats stats;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    absl::StatusOr<std::unique_ptr<TraceFile>> file =
        TraceFile::Open(e.path().string(), ReadMode::kCopied);
    REQUIRE(file.ok());
    (*file)->ForEachEntry(
        [&](bool, uint64_t, uint8_t kind, absl::Span<const uint8_t> bytes) {
          if (kind != NCCLWATCH_SLOT_SINGLE) return;
          ++singles;
          FlatRecord f;
          if (f.Parse(bytes)) ++flat;
        },
        &stats);
  }
  CHECK(singles > 0);
  CHECK(flat == singles);
}

TEST_CASE("record delta: crafted differences are refused", "[record_delta]") {
  FlatRecord prev;
  REQUIRE(prev.Parse(Span(Progress(1, 7, 1, 1, 0))));
  auto refused = [&](const std::string& delta) {
    ByteCursor c(reinterpret_cast<const uint8_t*>(delta.data()), delta.size());
    FlatRecord now;
    return !ReadRecordDelta(prev, &c, &now) || !c.ok();
  };
  auto shape = [](std::vector<uint64_t> fields, const std::string& tail) {
    std::string d;
    ByteSink s(&d);
    s.U8(0);
    s.Varint(fields.size());
    for (uint64_t f : fields) s.Varint(f);
    return d + tail;
  };
  // A field's shape: its tag, then bits for a padded length (4), a field of
  // the body (2) and the body itself (1).
  const uint64_t t = ((1 << 3) | 0) << 3;                // Record.t, a varint
  const uint64_t body = (((31 << 3) | 2) << 3) | 1;      // the body
  const uint64_t comm = ((((1 << 3) | 1) << 3)) | 2;     // a fixed64 in the body
  const uint64_t fixed32 = ((((4 << 3) | 5) << 3)) | 2;  // a fixed32 in the body
  CHECK(refused(""));
  CHECK(refused(std::string(1, 2)));                                // neither flag
  CHECK(refused(shape({uint64_t{kMaxFlatFields} + 1}, "")));        // too many fields
  CHECK(refused(shape({((1 << 3) | 3) << 3}, std::string(1, 0))));  // a group
  CHECK(refused(shape({t | 4}, std::string(1, 0))));                // a padded varint
  CHECK(refused(shape({0}, std::string(1, 0))));                    // field number 0
  CHECK(refused(shape({comm}, std::string(1, 0))));                 // body fields, no body
  CHECK(refused(shape({body, body}, std::string(1, 0))));           // two bodies
  CHECK(refused(shape({t | 1}, std::string(1, 0))));                // a varint body
  CHECK(refused(shape({body}, std::string(1, 1))));                 // a value for the body
  CHECK(refused(shape({body, fixed32}, std::string(1, 2) + "\xfe\xff\xff\xff\x3f")));  // > 32 bits
  CHECK(refused(shape({t}, std::string(1, 1))));  // a difference cut short
  // A well-formed one, for contrast.
  std::string ok = shape({t, body, comm}, std::string(1, 1));
  ByteSink(&ok).Zigzag(5);
  ByteCursor c(reinterpret_cast<const uint8_t*>(ok.data()), ok.size());
  FlatRecord now;
  REQUIRE(ReadRecordDelta(prev, &c, &now));
  CHECK(c.left() == 0);
  CHECK(now.fields().size() == 3);
  CHECK(now.fields()[0].value == 1 + 5);
}

TEST_CASE("record delta: the records a trace's differences rebuild are bounded by its bytes",
          "[record_delta]") {
  RebuiltBudget budget;
  // The slack first: the first records, whatever the bytes so far.
  CHECK(budget.Spend(kRebuiltSlack, 0));
  CHECK_FALSE(budget.Spend(1, 0));
  // Then kRebuiltPerByte a byte read.
  CHECK(budget.Spend(kRebuiltPerByte * 10, 10));
  CHECK_FALSE(budget.Spend(1, 10));
  CHECK(budget.Spend(kRebuiltPerByte, 11));
  // A record past everything, and sizes that would wrap.
  CHECK_FALSE(budget.Spend(UINT64_MAX, 100));
  RebuiltBudget fresh;
  CHECK_FALSE(fresh.Spend(kRebuiltSlack + 1, 0));
}

TEST_CASE("record delta: the shim's two-byte lengths, across 128, and numbers that go down",
          "[record_delta]") {
  // As the shim writes them (WireWriter: a nested message's length in two
  // bytes, under 128 too).
  auto syscall = [](uint64_t t, size_t path_bytes, uint32_t result) {
    uint8_t buf[1024];
    ncclwatch::wire::WireWriter w(buf, sizeof(buf));
    w.Varint(1, t);
    w.Varint(2, 1);
    const size_t body = w.BeginMessage(28);
    w.Varint(1, 11);  // OPEN
    const std::string path(path_bytes, 'd');
    w.String(5, path.c_str());
    w.Fixed32(9, result);
    w.EndMessage(body);
    REQUIRE(w.ok());
    return std::string(reinterpret_cast<const char*>(buf), w.size());
  };
  const std::string short_one = syscall(100, 20, 5);   // a body of 31 bytes: padded
  const std::string long_one = syscall(200, 300, 3);   // of 311: two bytes, as needed
  const std::string short_again = syscall(90, 21, 2);  // time and result go down
  FlatRecord f;
  REQUIRE(f.Parse(Span(short_one)));
  REQUIRE(f.Parse(Span(long_one)));
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {short_one, long_one}, {long_one, short_again}, {short_one, short_again}}) {
    RoundTrip r = Through(a, b);
    REQUIRE(r.ok);
    CHECK(r.read == b);
  }
}

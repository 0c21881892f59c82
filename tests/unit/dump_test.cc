// `ncclwatch dump` prints every record kind trace.proto has. The kinds are
// read from the descriptors (Record's oneof body), so a kind added to the
// schema is in this test without a change here: for each, a record with
// every field set is written to a trace file by the shim's ring writer, and
// dump must name each one (in text and in JSON), never as unknown.

#include "commands/dump.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ncclwatch/trace.pb.h"
#include "ncclwatch/trace_fields.h"
#include "ring/ring_writer.h"
#include "support/traced_job.h"

namespace {

namespace gp = ::google::protobuf;
namespace pb = ::ncclwatch::trace::v1;
namespace f = ::ncclwatch::fields;
using ncclwatch::shim::Region;
using ncclwatch::shim::RingConfig;
using ncclwatch::shim::RingWriter;

// Sets every field of `m` (nested messages too, one element of each
// repeated field) to a value that is not its default.
void FillEveryField(gp::Message* m, int depth = 0) {
  const gp::Descriptor* d = m->GetDescriptor();
  const gp::Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* fd = d->field(i);
    if (fd->containing_oneof() != nullptr && !fd->containing_oneof()->is_synthetic()) continue;
    const bool rep = fd->is_repeated();
    switch (fd->cpp_type()) {
      case gp::FieldDescriptor::CPPTYPE_MESSAGE:
        if (depth < 3)
          FillEveryField(rep ? r->AddMessage(m, fd) : r->MutableMessage(m, fd), depth + 1);
        break;
      case gp::FieldDescriptor::CPPTYPE_ENUM: {
        const int v = fd->enum_type()->value(fd->enum_type()->value_count() - 1)->number();
        rep ? r->AddEnumValue(m, fd, v) : r->SetEnumValue(m, fd, v);
        break;
      }
      case gp::FieldDescriptor::CPPTYPE_STRING:
        rep ? r->AddString(m, fd, "x") : r->SetString(m, fd, "x");
        break;
      case gp::FieldDescriptor::CPPTYPE_BOOL:
        rep ? r->AddBool(m, fd, true) : r->SetBool(m, fd, true);
        break;
      case gp::FieldDescriptor::CPPTYPE_INT32:
        rep ? r->AddInt32(m, fd, 3) : r->SetInt32(m, fd, 3);
        break;
      case gp::FieldDescriptor::CPPTYPE_INT64:
        rep ? r->AddInt64(m, fd, 3) : r->SetInt64(m, fd, 3);
        break;
      case gp::FieldDescriptor::CPPTYPE_UINT32:
        rep ? r->AddUInt32(m, fd, 3) : r->SetUInt32(m, fd, 3);
        break;
      case gp::FieldDescriptor::CPPTYPE_UINT64:
        rep ? r->AddUInt64(m, fd, 3) : r->SetUInt64(m, fd, 3);
        break;
      case gp::FieldDescriptor::CPPTYPE_DOUBLE:
        rep ? r->AddDouble(m, fd, 3) : r->SetDouble(m, fd, 3);
        break;
      case gp::FieldDescriptor::CPPTYPE_FLOAT:
        rep ? r->AddFloat(m, fd, 3) : r->SetFloat(m, fd, 3);
        break;
    }
  }
}

// Every body of Record, by its field.
std::vector<const gp::FieldDescriptor*> Bodies() {
  const gp::OneofDescriptor* body = pb::Record::descriptor()->FindOneofByName("body");
  REQUIRE(body != nullptr);
  std::vector<const gp::FieldDescriptor*> out;
  for (int i = 0; i < body->field_count(); ++i) out.push_back(body->field(i));
  return out;
}

// What dump printed for each record: the text after "thread N ".
std::vector<std::string> Descriptions(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t thread = line.find(" thread ");
    REQUIRE(thread != std::string::npos);
    size_t at = line.find_first_not_of(' ', thread + 8);
    at = line.find_first_not_of(' ', line.find(' ', at));  // past the thread's number
    REQUIRE(at != std::string::npos);
    out.push_back(line.substr(at));
  }
  return out;
}

}  // namespace

TEST_CASE("dump prints every record kind of trace.proto, each field set", "[dump]") {
  const std::vector<const gp::FieldDescriptor*> bodies = Bodies();
  REQUIRE(bodies.size() >= 23);  // every kind up to nccl_not_seen, and any added since
  // The generated field numbers name the same bodies.
  for (const gp::FieldDescriptor* b : bodies) {
    INFO(b->name());
    CHECK(f::record::IsBody(static_cast<uint32_t>(b->number())));
    CHECK(f::record::BodyName(static_cast<uint32_t>(b->number())) == b->name());
  }

  jobs::TempDir dir;
  const std::string dir_path = dir.path();
  RingWriter w;
  RingConfig c;
  c.dir = dir_path.c_str();
  c.ring_bytes = 1 << 20;
  c.pid = 4242;
  char error[256];
  REQUIRE(w.Open(c, error, sizeof(error)));
  uint64_t t = 100;
  for (const gp::FieldDescriptor* b : bodies) {
    pb::Record r;
    r.set_t(t++);
    r.set_thread(1);
    FillEveryField(r.GetReflection()->MutableMessage(&r, b));
    const std::string bytes = r.SerializeAsString();
    REQUIRE(w.Append(Region::kRing, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  }

  SECTION("as text: one line per record, each named by its body") {
    std::ostringstream out, err;
    REQUIRE(ncclwatch::decoder::RunDump(w.path(), false, out, err) == 0);
    const std::vector<std::string> lines = Descriptions(out.str());
    REQUIRE(lines.size() == bodies.size());
    for (size_t i = 0; i < bodies.size(); ++i) {
      INFO(lines[i]);
      // Each by its body's name, but for the watcher's holds: "held".
      const std::string name =
          bodies[i]->name() == "held_operation" ? "held " : std::string(bodies[i]->name());
      CHECK(lines[i].rfind(name, 0) == 0);
      CHECK(lines[i].find("unknown") == std::string::npos);
      CHECK(lines[i].find("(no body)") == std::string::npos);
    }
    // A kind without words of its own is printed from its descriptor,
    // field by field.
    for (size_t i = 0; i < bodies.size(); ++i) {
      if (bodies[i]->name() != "nccl_not_seen") continue;
      CHECK(lines[i] == "nccl_not_seen reason=device_api path=x calls_seen=true");
    }
  }
  SECTION("as JSON: one object per record, with its body") {
    std::ostringstream out, err;
    REQUIRE(ncclwatch::decoder::RunDump(w.path(), true, out, err) == 0);
    std::istringstream lines(out.str());
    std::string line;
    size_t i = 0;
    while (std::getline(lines, line)) {
      REQUIRE(i < bodies.size());
      INFO(line);
      CHECK(line.find("\"" + bodies[i]->name() + "\":{") != std::string::npos);
      ++i;
    }
    CHECK(i == bodies.size());
  }
}

TEST_CASE("dump names a body this ncclwatch does not know by its number", "[dump]") {
  jobs::TempDir dir;
  const std::string dir_path = dir.path();
  RingWriter w;
  RingConfig c;
  c.dir = dir_path.c_str();
  c.ring_bytes = 1 << 20;
  c.pid = 4243;
  char error[256];
  REQUIRE(w.Open(c, error, sizeof(error)));
  // Record.t = 7, then field 99 (length-delimited, 2 bytes): a newer shim's body.
  const uint8_t bytes[] = {0x08, 0x07, 0x9a, 0x06, 0x02, 0x08, 0x01};
  REQUIRE(w.Append(Region::kRing, bytes, sizeof(bytes)));
  std::ostringstream out, err;
  REQUIRE(ncclwatch::decoder::RunDump(w.path(), false, out, err) == 0);
  const std::vector<std::string> lines = Descriptions(out.str());
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "body 99 (unknown to this ncclwatch, 2 bytes)");
}

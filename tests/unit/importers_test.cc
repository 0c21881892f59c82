// The importers by record family (model/import/): every body of trace.proto
// has exactly one importer, and each family, called through its own
// registrations (not through RecordImporter), turns a body libprotobuf wrote
// into the row its fields say, refuses a malformed body, and leaves no row
// behind when it does. (process_model_test.cc checks every field of every
// kind against libprotobuf through RecordImporter.)

#include <google/protobuf/descriptor.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/import/body_importer.h"
#include "model/process_trace.h"
#include "model/stream_builder.h"
#include "ncclwatch/trace.pb.h"
#include "ncclwatch/trace_fields.h"

namespace {

namespace gp = ::google::protobuf;
namespace pb = ::ncclwatch::trace::v1;
namespace f = ::ncclwatch::fields;
using ncclwatch::decoder::ProcessTrace;
using ncclwatch::decoder::StreamBuilder;
using ncclwatch::decoder::importing::BodyImporter;
using ncclwatch::decoder::importing::ImportContext;

// A family's importer for `body`, or nullptr.
const BodyImporter* Find(absl::Span<const BodyImporter> family, uint32_t body) {
  for (const BodyImporter& b : family)
    if (b.body == body) return &b;
  return nullptr;
}

// Imports the body of `r` with the family's importer for it, into `p`.
bool Import(absl::Span<const BodyImporter> family, const pb::Record& r, ProcessTrace* p,
            StreamBuilder* streams, uint64_t order = 1) {
  const gp::OneofDescriptor* oneof = pb::Record::descriptor()->FindOneofByName("body");
  const gp::FieldDescriptor* body = r.GetReflection()->GetOneofFieldDescriptor(r, oneof);
  REQUIRE(body != nullptr);
  const BodyImporter* importer = Find(family, static_cast<uint32_t>(body->number()));
  REQUIRE(importer != nullptr);
  const std::string bytes = r.GetReflection()->GetMessage(r, body).SerializeAsString();
  ImportContext c{p, streams, order, r.t(), r.thread()};
  return importer->import(
      c, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

// A body that is not protobuf: a length running past its end.
const uint8_t kMalformed[] = {0x0a, 0x7f, 0x01};

// Whether `body`'s importer refuses kMalformed (false), leaving `rows()` as it was.
template <typename Rows>
void RefusesMalformed(absl::Span<const BodyImporter> family, uint32_t body, Rows rows) {
  ProcessTrace p;
  StreamBuilder streams;
  const BodyImporter* importer = Find(family, body);
  REQUIRE(importer != nullptr);
  ImportContext c{&p, &streams, 1, 1, 1};
  const size_t before = rows(p);
  CHECK_FALSE(importer->import(c, absl::MakeConstSpan(kMalformed)));
  CHECK(rows(p) == before);
}

}  // namespace

TEST_CASE("every body of trace.proto has exactly one importer", "[import]") {
  std::map<uint32_t, int> registered;
  for (auto family : ncclwatch::decoder::importing::kFamilies)
    for (const BodyImporter& b : family()) {
      ++registered[b.body];
      CHECK(b.import != nullptr);
      INFO(b.body);
      CHECK(f::record::IsBody(b.body));
    }
  const gp::OneofDescriptor* body = pb::Record::descriptor()->FindOneofByName("body");
  REQUIRE(body != nullptr);
  for (int i = 0; i < body->field_count(); ++i) {
    INFO(body->field(i)->name());
    CHECK(registered[static_cast<uint32_t>(body->field(i)->number())] == 1);
  }
  CHECK(registered.size() == static_cast<size_t>(body->field_count()));
}

TEST_CASE("calls: collectives, sends and receives, groups, API calls", "[import]") {
  const auto family = ncclwatch::decoder::importing::CallImporters();
  ProcessTrace p;
  StreamBuilder streams;
  pb::Record r;
  r.set_t(7);
  r.set_thread(2);
  auto* c = r.mutable_collective();
  c->set_comm(0xabc);
  c->set_seq(3);
  c->set_call(pb::ALL_REDUCE);
  c->set_count(1024);
  c->set_datatype(7);
  c->set_redop(1);
  c->set_rank(1);
  REQUIRE(Import(family, r, &p, &streams, 1));
  REQUIRE(p.collectives.size() == 1);
  CHECK(p.collectives[0].comm == 0xabc);
  CHECK(p.collectives[0].seq == 3);
  CHECK(p.collectives[0].count == 1024);
  CHECK(p.collectives[0].redop == 1);
  CHECK(p.collectives[0].root == -1);  // not set: not rooted
  CHECK(p.collectives[0].rank == 1);
  CHECK(p.collectives[0].t == 7);
  CHECK(p.collectives[0].thread == 2);
  CHECK(p.collectives[0].order == 1);

  pb::Record s;
  s.mutable_p2p()->set_comm(0xabc);
  s.mutable_p2p()->set_send(true);
  s.mutable_p2p()->set_peer(5);
  s.mutable_p2p()->set_seq(9);
  REQUIRE(Import(family, s, &p, &streams, 2));
  REQUIRE(p.p2p.size() == 1);
  CHECK(p.p2p[0].send);
  CHECK(p.p2p[0].peer == 5);
  CHECK(p.p2p[0].seq == 9);

  pb::Record g;
  g.mutable_group()->set_call(pb::GROUP_END);
  g.mutable_group()->set_depth(0);
  g.mutable_group()->set_group(4);
  REQUIRE(Import(family, g, &p, &streams, 3));
  REQUIRE(p.groups.size() == 1);
  CHECK(p.groups[0].call == f::kGroupEnd);
  CHECK(p.groups[0].group == 4);

  pb::Record v;
  v.mutable_api()->set_call(pb::GET_VERSION);
  v.mutable_api()->set_value(22809);
  REQUIRE(Import(family, v, &p, &streams, 4));
  REQUIRE(p.apis.size() == 1);
  CHECK(p.nccl_version == 22809);  // what ncclGetVersion answered

  RefusesMalformed(family, f::record::kCollective,
                   [](const ProcessTrace& t) { return t.collectives.size(); });
  RefusesMalformed(family, f::record::kP2p, [](const ProcessTrace& t) { return t.p2p.size(); });
  RefusesMalformed(family, f::record::kGroup,
                   [](const ProcessTrace& t) { return t.groups.size(); });
  RefusesMalformed(family, f::record::kApi, [](const ProcessTrace& t) { return t.apis.size(); });
}

TEST_CASE("the process: identity, end, clock anchors, modules, inventory, signals", "[import]") {
  const auto family = ncclwatch::decoder::importing::ProcessImporters();
  ProcessTrace p;
  StreamBuilder streams;
  pb::Record start;
  start.mutable_process_start()->set_pid(4711);
  start.mutable_process_start()->set_host(
      std::string("node\xff"
                  "3",
                  6));  // not UTF-8: kept
  start.mutable_process_start()->set_global_rank(5);
  start.mutable_process_start()->set_rank_source("RANK");
  REQUIRE(Import(family, start, &p, &streams));
  CHECK(p.has_start);
  CHECK(p.pid == 4711);
  CHECK(p.host == std::string("node\xff"
                              "3",
                              6));
  CHECK(p.global_rank == 5);
  CHECK(p.rank_source == "RANK");

  pb::Record anchor;
  anchor.mutable_time_anchor()->set_t(100);
  anchor.mutable_time_anchor()->set_monotonic_ns(2000);
  anchor.mutable_time_anchor()->set_realtime_ns(3000);
  REQUIRE(Import(family, anchor, &p, &streams));
  REQUIRE(p.anchors.size() == 1);
  CHECK(p.anchors[0].realtime_ns == 3000);

  pb::Record module;
  module.mutable_module()->set_path("/lib/libnccl.so.2");
  module.mutable_module()->set_base(0x1000);
  module.mutable_module()->set_start(0x1000);
  module.mutable_module()->set_end(0x9000);
  REQUIRE(Import(family, module, &p, &streams));
  REQUIRE(p.modules.size() == 1);
  CHECK(p.ModuleAt(0x2000) == &p.modules[0]);

  pb::Record inventory;
  inventory.mutable_inventory()->set_nccl_version(22809);
  auto* env = inventory.mutable_inventory()->add_env();
  env->set_name("NCCL_SOCKET_IFNAME");
  env->set_value("eth0");
  auto* gpu = inventory.mutable_inventory()->add_gpus();
  gpu->set_bdf("0000:18:00.0");
  gpu->add_bridges()->set_acs_ctrl(0x0c);
  REQUIRE(Import(family, inventory, &p, &streams));
  CHECK(p.inventory.present);
  CHECK(p.inventory.env.at("NCCL_SOCKET_IFNAME") == "eth0");
  REQUIRE(p.inventory.gpus.size() == 1);
  REQUIRE(p.inventory.gpus[0].bridges.size() == 1);
  CHECK(p.inventory.gpus[0].bridges[0].acs_ctrl == 0x0c);
  CHECK(p.nccl_version == 22809);

  pb::Record signal;
  signal.mutable_fatal_signal()->set_signo(11);
  REQUIRE(Import(family, signal, &p, &streams));
  REQUIRE(p.signals.size() == 1);
  CHECK(p.signals[0].signo == 11);

  pb::Record end;
  end.mutable_process_end()->set_how(pb::ProcessEnd::EXIT);
  end.mutable_process_end()->set_exit_code(3);
  REQUIRE(Import(family, end, &p, &streams));
  REQUIRE(p.end.has_value());
  CHECK(p.end->exit_code == 3);

  RefusesMalformed(family, f::record::kModule,
                   [](const ProcessTrace& t) { return t.modules.size(); });
  RefusesMalformed(family, f::record::kFatalSignal,
                   [](const ProcessTrace& t) { return t.signals.size(); });
  RefusesMalformed(family, f::record::kProcessStart,
                   [](const ProcessTrace& t) { return static_cast<size_t>(t.has_start); });
}

TEST_CASE("communicators: a membership begun, returned and ended", "[import]") {
  const auto family = ncclwatch::decoder::importing::CommunicatorImporters();
  ProcessTrace p;
  StreamBuilder streams;
  pb::Record begin;
  begin.set_t(10);
  begin.mutable_comm_init_begin()->set_comm(0xc0);
  begin.mutable_comm_init_begin()->set_call(pb::COMM_SPLIT);
  begin.mutable_comm_init_begin()->set_rank(1);
  begin.mutable_comm_init_begin()->set_nranks(4);
  begin.mutable_comm_init_begin()->set_parent(0xb0);
  begin.mutable_comm_init_begin()->add_excluded(2);
  begin.mutable_comm_init_begin()->add_excluded(3);
  REQUIRE(Import(family, begin, &p, &streams, 1));
  REQUIRE(p.comms.size() == 1);
  CHECK(p.comms[0].init_call == f::kCommSplit);
  CHECK(p.comms[0].parent == 0xb0);
  CHECK(p.comms[0].excluded == std::vector<int32_t>{2, 3});
  CHECK(p.comms[0].init_order == 1);
  CHECK_FALSE(p.comms[0].init_returned);

  pb::Record returned;
  returned.mutable_comm_init_end()->set_comm(0xc0);
  returned.mutable_comm_init_end()->set_handle(0x1000);
  returned.mutable_comm_init_end()->set_rank(1);
  returned.mutable_comm_init_end()->set_nranks(3);
  REQUIRE(Import(family, returned, &p, &streams, 2));
  CHECK(p.comms[0].init_returned);
  CHECK(p.comms[0].handle == 0x1000);
  CHECK(p.comms[0].nranks == 3);  // as NCCL reported it
  CHECK(p.comms[0].Formed());

  pb::Record end;
  end.set_t(30);
  end.mutable_comm_end()->set_handle(0x1000);
  end.mutable_comm_end()->set_call(pb::COMM_DESTROY);
  REQUIRE(Import(family, end, &p, &streams, 3));
  CHECK(p.comms[0].end_call == f::kCommDestroy);
  CHECK(p.comms[0].end_order == 3);
  CHECK(p.comms[0].end_t == 30);

  RefusesMalformed(family, f::record::kCommInitBegin,
                   [](const ProcessTrace& t) { return t.comms.size(); });
}

TEST_CASE("forensics: system calls, NCCL's errors, CUDA calls, what the shim could not see",
          "[import]") {
  const auto family = ncclwatch::decoder::importing::ForensicsImporters();
  ProcessTrace p;
  StreamBuilder streams;
  pb::Record sys;
  sys.mutable_sys_call()->set_kind(pb::SysCall::FALLOCATE);
  sys.mutable_sys_call()->set_err(28);
  sys.mutable_sys_call()->set_path("/dev/shm/nccl-x");
  sys.mutable_sys_call()->set_size(1 << 20);
  REQUIRE(Import(family, sys, &p, &streams));
  REQUIRE(p.syscalls.size() == 1);
  CHECK(p.syscalls[0].kind == f::sys_call::kFallocate);
  CHECK(p.syscalls[0].err == 28);
  CHECK(p.syscalls[0].size == (1 << 20));

  pb::Record error;
  error.mutable_nccl_error()->set_call(pb::COMM_INIT_RANK);
  error.mutable_nccl_error()->set_result(2);
  error.mutable_nccl_error()->set_last_error("socket failure");
  REQUIRE(Import(family, error, &p, &streams));
  REQUIRE(p.errors.size() == 1);
  CHECK(p.errors[0].text == "socket failure");

  pb::Record cuda;
  cuda.mutable_cuda_call()->set_function(pb::CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE);
  cuda.mutable_cuda_call()->set_result(1);
  cuda.mutable_cuda_call()->set_fd(-1);
  REQUIRE(Import(family, cuda, &p, &streams));
  REQUIRE(p.cuda_calls.size() == 1);
  CHECK(p.cuda_calls[0].function == f::kCuMemImportFromShareableHandle);
  CHECK(p.cuda_calls[0].fd == -1);

  pb::Record unseen;
  unseen.mutable_nccl_not_seen()->set_reason(pb::NcclNotSeen::LINKED_IN);
  unseen.mutable_nccl_not_seen()->set_path("/app/train");
  REQUIRE(Import(family, unseen, &p, &streams));
  REQUIRE(p.not_seen.size() == 1);
  CHECK(p.not_seen[0].reason == f::nccl_not_seen::kLinkedIn);
  CHECK(p.not_seen[0].path == "/app/train");

  RefusesMalformed(family, f::record::kSysCall,
                   [](const ProcessTrace& t) { return t.syscalls.size(); });
  RefusesMalformed(family, f::record::kCudaCall,
                   [](const ProcessTrace& t) { return t.cuda_calls.size(); });
}

TEST_CASE("completion and liveness: tracking, progress, stalls, errors, the heartbeat",
          "[import]") {
  const auto family = ncclwatch::decoder::importing::CompletionImporters();
  ProcessTrace p;
  StreamBuilder streams;
  pb::Record tracking;
  tracking.mutable_completion_tracking()->set_comm(0xc0);
  tracking.mutable_completion_tracking()->set_mechanism(pb::CompletionTracking::CUDA_EVENTS);
  REQUIRE(Import(family, tracking, &p, &streams));
  REQUIRE(p.Tracking(0xc0) != nullptr);

  pb::Record progress;
  progress.mutable_progress()->set_comm(0xc0);
  progress.mutable_progress()->set_collectives(12);
  REQUIRE(Import(family, progress, &p, &streams));
  REQUIRE(p.LastProgress(0xc0) != nullptr);
  CHECK(p.LastProgress(0xc0)->collectives == 12);

  for (uint64_t beat = 1; beat <= 3; ++beat) {
    pb::Record h;
    h.set_t(100 * beat);
    h.mutable_heartbeat()->set_beat(beat);
    h.mutable_heartbeat()->set_interval_ms(1000);
    REQUIRE(Import(family, h, &p, &streams));
  }
  CHECK(p.liveness.beats == 3);
  CHECK(p.liveness.first_t == 100);
  CHECK(p.liveness.last_t == 300);
  CHECK(p.liveness.last_beat == 3);

  pb::Record stall;
  stall.mutable_stall()->set_comm(0xc0);
  stall.mutable_stall()->set_seq(12);
  stall.mutable_stall()->set_waited_ms(300000);
  REQUIRE(Import(family, stall, &p, &streams));
  REQUIRE(p.stalls.size() == 1);
  CHECK(p.stalls[0].waited_ms == 300000);

  pb::Record error;
  error.mutable_cuda_error()->set_result(214);
  error.mutable_cuda_error()->set_name("CUDA_ERROR_ECC_UNCORRECTABLE");
  REQUIRE(Import(family, error, &p, &streams));
  REQUIRE(p.cuda_errors.size() == 1);
  CHECK(p.cuda_errors[0].name == "CUDA_ERROR_ECC_UNCORRECTABLE");

  pb::Record untracked;
  untracked.mutable_untracked()->set_reason(pb::Untracked::CAPTURED);
  REQUIRE(Import(family, untracked, &p, &streams));
  REQUIRE(p.untracked.size() == 1);
  CHECK(p.untracked[0].reason == f::untracked::kCaptured);

  RefusesMalformed(family, f::record::kStall,
                   [](const ProcessTrace& t) { return t.stalls.size(); });
  RefusesMalformed(family, f::record::kHeartbeat,
                   [](const ProcessTrace& t) { return static_cast<size_t>(t.liveness.beats); });
}

// A GPU time: read field by field in the order the shim writes them (one
// per operation: millions), and in any other order, or with a field
// repeated (the last one holding), as protobuf reads it.
TEST_CASE("completion: a GPU time, in the shim's field order or any other", "[import]") {
  const auto family = ncclwatch::decoder::importing::CompletionImporters();
  auto read = [&](const std::string& body, ProcessTrace* p) {
    StreamBuilder streams;
    const BodyImporter* importer = Find(family, f::record::kGpuTime);
    REQUIRE(importer != nullptr);
    ImportContext c{p, &streams, 7, 99, 1};
    return importer->import(
        c, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  };
  pb::GpuTime g;
  g.set_comm(0xc0ffee);
  g.set_call(static_cast<pb::Call>(3));
  g.set_seq(41);
  g.set_collectives(42);
  g.set_group_ops(2);
  g.set_begin_ns(1000000007);
  g.set_end_ns(1000500007);
  g.set_gpu_ns(500000);
  g.set_anchor_error_ns(1234);
  const std::string in_order = g.SerializeAsString();
  // The same fields, last to first, then the number again (the last holds).
  std::string reversed;
  {
    const gp::Descriptor* d = pb::GpuTime::descriptor();
    for (int i = d->field_count(); i-- > 0;) {
      pb::GpuTime only = g;  // field i alone
      for (int k = 0; k < d->field_count(); ++k)
        if (k != i) only.GetReflection()->ClearField(&only, d->field(k));
      reversed += only.SerializeAsString();
    }
    pb::GpuTime seq;
    seq.set_seq(43);
    reversed += seq.SerializeAsString();
  }
  for (const bool shim_order : {true, false}) {
    const std::string& body = shim_order ? in_order : reversed;
    ProcessTrace p;
    REQUIRE(read(body, &p));
    REQUIRE(p.gpu_times.size() == 1);
    const auto& e = p.gpu_times[0];
    CHECK(e.order == 7);
    CHECK(e.t == 99);
    CHECK(e.comm == 0xc0ffee);
    CHECK(e.call == 3);
    CHECK(e.seq == (shim_order ? 41u : 43u));
    CHECK(e.collectives == 42);
    CHECK(e.group_ops == 2);
    CHECK(e.begin_ns == 1000000007);
    CHECK(e.end_ns == 1000500007);
    CHECK(e.gpu_ns == 500000);
    CHECK(e.anchor_error_ns == 1234);
  }
  // Cut inside a field the shim's order reads: refused, no row left.
  ProcessTrace p;
  CHECK_FALSE(read(in_order.substr(0, in_order.size() - 1), &p));
  CHECK(p.gpu_times.empty());
  RefusesMalformed(family, f::record::kGpuTime,
                   [](const ProcessTrace& t) { return t.gpu_times.size(); });
}

TEST_CASE("a GPU time's communicator alone: refused exactly where its row is", "[import]") {
  using ncclwatch::decoder::importing::ReadGpuTime;
  using ncclwatch::decoder::importing::ReadGpuTimeComm;
  pb::GpuTime g;
  g.set_comm(0xfeedfacecafebeefull);
  g.set_call(static_cast<pb::Call>(3));
  g.set_seq(1ull << 40);
  g.set_collectives(42);
  g.set_group_ops(2);
  g.set_begin_ns(UINT64_MAX);  // ten bytes
  g.set_end_ns(1000500007);
  g.set_gpu_ns(500000);
  g.set_anchor_error_ns(1234);
  const std::string whole = g.SerializeAsString();
  std::mt19937 rng(7);
  int refused = 0;
  for (int i = 0; i < 20000; ++i) {
    // Whole, cut, with bytes changed (high bits set or cleared: varints
    // longer or shorter, tags of other types and numbers), or spliced
    // with an unknown field; then a random tail, sometimes.
    std::string body = whole;
    if (i % 4 == 1) body.resize(rng() % (body.size() + 1));
    for (int k = static_cast<int>(rng() % 4); k-- > 0 && !body.empty();)
      body[rng() % body.size()] ^= static_cast<char>(1u << (rng() % 8));
    if (i % 7 == 3) body.insert(rng() % (body.size() + 1), std::string("\xf8\x07\x2a", 3));
    if (i % 5 == 2)
      for (int k = static_cast<int>(rng() % 12); k-- > 0;) body.push_back(static_cast<char>(rng()));
    const auto span =
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(body.data()), body.size());
    ncclwatch::decoder::GpuTimeEvent row;
    uint64_t comm = 1;
    const bool read = ReadGpuTime(span, &row);
    INFO("case " << i);
    REQUIRE(ReadGpuTimeComm(span, &comm) == read);
    if (read) CHECK(comm == row.comm);
    refused += read ? 0 : 1;
  }
  CHECK(refused > 1000);  // the refusals were tried, not only good bodies
  CHECK(refused < 19000);
  // Known answers, each: a field numbered 0, wire types 6 and 7 and 3, a
  // tag past 32 bits, a comm cut short, a varint of eleven bytes: refused;
  // an empty body, comm 0; comm twice, the last; a comm sent as a varint
  // (field 1, wire type 0), skipped; a tag written long (0x89 0x00: comm).
  const std::string eight = "\x01\x02\x03\x04\x05\x06\x07\x08";
  const std::string nine = "\x11\x12\x13\x14\x15\x16\x17\x18";
  const std::pair<std::string, int64_t> fixed[] = {
      {std::string("\x00\x01", 2), -1},
      {"\x0e", -1},
      {"\x0f", -1},
      {"\x0b", -1},
      {"\x80\x80\x80\x80\x10\x00", -1},
      {"\x09\x01\x02\x03", -1},
      {"\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", -1},
      {"", 0},
      {"\x09" + eight + "\x09" + nine, 0x1817161514131211},
      {"\x09" + eight + "\x08\x05", 0x0807060504030201},
      {std::string("\x89\x00", 2) + eight, 0x0807060504030201},
  };
  for (const auto& [body, want] : fixed) {
    const auto span =
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(body.data()), body.size());
    ncclwatch::decoder::GpuTimeEvent row;
    uint64_t comm = 1;
    INFO("body of " << body.size() << " bytes, want " << want);
    CHECK(ReadGpuTime(span, &row) == (want >= 0));
    REQUIRE(ReadGpuTimeComm(span, &comm) == (want >= 0));
    if (want >= 0) CHECK(comm == static_cast<uint64_t>(want));
  }
}

TEST_CASE("rendezvous: one row per socket kind, address and outcome, the latest count holding",
          "[import]") {
  const auto family = ncclwatch::decoder::importing::RendezvousImporters();
  ProcessTrace p;
  StreamBuilder streams;
  auto activity = [](pb::SocketActivity::Kind kind, const std::string& addr, int err,
                     uint64_t count, uint64_t first_t, uint64_t last_t) {
    pb::Record r;
    r.set_t(last_t);
    pb::SocketActivity* s = r.mutable_socket_activity();
    s->set_kind(kind);
    s->set_addr(addr);
    s->set_err(err);
    s->set_count(count);
    s->set_first_t(first_t);
    s->set_last_t(last_t);
    s->set_caller(0x4000);
    return r;
  };
  const std::string root("\x02\x00\x70\xa0\x0a\x00\x00\x01", 8);  // 10.0.0.1:28832
  // A connect refused twice, then four times: one row, its count 4.
  REQUIRE(Import(family, activity(pb::SocketActivity::CONNECT, root, 111, 2, 100, 150), &p,
                 &streams, 1));
  REQUIRE(Import(family, activity(pb::SocketActivity::CONNECT, root, 111, 4, 100, 300), &p,
                 &streams, 2));
  REQUIRE(p.socket_activity.size() == 1);
  CHECK(p.socket_activity[0].kind == 3);
  CHECK(p.socket_activity[0].addr == root);
  CHECK(p.socket_activity[0].err == 111);
  CHECK(p.socket_activity[0].count == 4);
  CHECK(p.socket_activity[0].first_t == 100);
  CHECK(p.socket_activity[0].last_t == 300);
  CHECK(p.socket_activity[0].order == 2);
  CHECK(p.socket_activity[0].caller == 0x4000);

  // An older record found later (a torn ring): the larger count holds, and
  // an earlier first call moves the row's start back.
  REQUIRE(
      Import(family, activity(pb::SocketActivity::CONNECT, root, 111, 1, 50, 50), &p, &streams, 3));
  REQUIRE(p.socket_activity.size() == 1);
  CHECK(p.socket_activity[0].count == 4);
  CHECK(p.socket_activity[0].last_t == 300);
  CHECK(p.socket_activity[0].first_t == 50);

  // Another outcome, or another kind, is a row of its own.
  REQUIRE(
      Import(family, activity(pb::SocketActivity::CONNECT, root, 0, 1, 400, 400), &p, &streams, 4));
  REQUIRE(
      Import(family, activity(pb::SocketActivity::LISTEN, root, 0, 1, 10, 10), &p, &streams, 5));
  CHECK(p.socket_activity.size() == 3);

  // A crafted trace with endless distinct rows stays bounded.
  for (int i = 0; i < 5000; ++i)
    REQUIRE(Import(family, activity(pb::SocketActivity::BIND, std::to_string(i), 0, 1, 1, 1), &p,
                   &streams, 10 + static_cast<uint64_t>(i)));
  CHECK(p.socket_activity.size() == 4096);

  RefusesMalformed(family, f::record::kSocketActivity,
                   [](const ProcessTrace& t) { return t.socket_activity.size(); });
}

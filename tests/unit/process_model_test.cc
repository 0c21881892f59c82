// The decoder's model of one process: records decoded by our own wire
// reader exactly as libprotobuf decodes them (every kind, odd values, bytes
// that are not UTF-8), malformed records counted and skipped, the timeline
// in true order across the file's two regions, and one stream per
// (communicator, rank) built once.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/job_analysis.h"
#include "model/process_trace.h"
#include "model/record_importer.h"
#include "ncclwatch/trace.pb.h"
#include "ncclwatch/trace_fields.h"
#include "ring/ring_writer.h"
#include "support/traced_job.h"
#include "trace/call_slot.h"
#include "trace/gpu_time_slot.h"
#include "trace/trace_file.h"

namespace {

namespace pb = ncclwatch::trace::v1;
namespace f = ncclwatch::fields;
using ncclwatch::decoder::CommStream;
using ncclwatch::decoder::JobAnalysis;
using ncclwatch::decoder::LoadProcessTrace;
using ncclwatch::decoder::ProcessTrace;
using ncclwatch::decoder::RecordImporter;
using ncclwatch::shim::Region;
using ncclwatch::shim::RingConfig;
using ncclwatch::shim::RingWriter;

ProcessTrace Import(const std::vector<pb::Record>& records) {
  ProcessTrace p;
  RecordImporter importer(&p);
  for (const pb::Record& r : records) {
    const std::string bytes = r.SerializeAsString();
    REQUIRE(importer.Import(
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  }
  return p;
}

// Random values of every width and sign, the extremes included.
class Values {
 public:
  explicit Values(uint32_t seed) : rng_(seed) {}
  uint64_t U64() {
    switch (rng_() % 4) {
      case 0:
        return 0;
      case 1:
        return UINT64_MAX - rng_() % 3;
      default:
        return (static_cast<uint64_t>(rng_()) << 32) ^ rng_();
    }
  }
  int32_t I32() {
    switch (rng_() % 4) {
      case 0:
        return -1;
      case 1:
        return rng_() % 2 ? INT32_MIN : INT32_MAX;
      default:
        return static_cast<int32_t>(rng_());
    }
  }
  int64_t I64() { return static_cast<int64_t>(U64()); }
  // Any bytes, NUL and invalid UTF-8 included.
  std::string Bytes() {
    std::string s(rng_() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng_());
    return s;
  }

 private:
  std::mt19937 rng_;
};

}  // namespace

TEST_CASE("per-call records decode as libprotobuf decodes them", "[model][conformance]") {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    Values v(seed);
    pb::Record c;
    c.set_t(v.U64());
    c.set_thread(static_cast<uint32_t>(v.U64()));
    auto* x = c.mutable_collective();
    x->set_result(v.I32());
    x->set_comm(v.U64());
    x->set_seq(v.U64());
    x->set_call(static_cast<pb::Call>(seed % 10));
    x->set_count(v.U64());
    x->set_datatype(v.I32());
    if (seed % 2) x->set_redop(v.I32());
    if (seed % 3) x->set_root(v.I32());
    x->set_stream(v.U64());
    x->set_group(v.U64());
    x->set_caller(v.U64());
    x->set_rank(v.I32());
    pb::Record p;
    p.set_t(v.U64());
    auto* y = p.mutable_p2p();
    y->set_result(v.I32());
    y->set_comm(v.U64());
    y->set_seq(v.U64());
    y->set_send(seed % 2);
    y->set_peer(v.I32());
    y->set_count(v.U64());
    y->set_datatype(v.I32());
    y->set_stream(v.U64());
    y->set_group(v.U64());
    y->set_caller(v.U64());
    y->set_rank(v.I32());
    pb::Record g;
    g.set_t(v.U64());
    g.mutable_group()->set_result(v.I32());
    g.mutable_group()->set_call(pb::GROUP_END);
    g.mutable_group()->set_group(v.U64());
    g.mutable_group()->set_depth(static_cast<uint32_t>(v.U64()));
    pb::Record a;
    a.set_t(v.U64());
    a.mutable_api()->set_result(0);
    a.mutable_api()->set_call(pb::GET_VERSION);
    a.mutable_api()->set_value(v.I64());

    const ProcessTrace t = Import({c, p, g, a});
    INFO("seed " << seed);
    REQUIRE(t.collectives.size() == 1);
    const auto& e = t.collectives[0];
    CHECK(e.t == c.t());
    CHECK(e.thread == c.thread());
    CHECK(e.result == x->result());
    CHECK(e.comm == x->comm());
    CHECK(e.seq == x->seq());
    CHECK(e.call == static_cast<uint32_t>(x->call()));
    CHECK(e.count == x->count());
    CHECK(e.datatype == x->datatype());
    CHECK(e.redop == (x->has_redop() ? x->redop() : -1));
    CHECK(e.root == (x->has_root() ? x->root() : -1));
    CHECK(e.stream == x->stream());
    CHECK(e.group == x->group());
    CHECK(e.caller == x->caller());
    CHECK(e.rank == x->rank());
    CHECK(e.order == 1);
    REQUIRE(t.p2p.size() == 1);
    const auto& q = t.p2p[0];
    CHECK(q.result == y->result());
    CHECK(q.comm == y->comm());
    CHECK(q.seq == y->seq());
    CHECK(q.send == y->send());
    CHECK(q.peer == y->peer());
    CHECK(q.count == y->count());
    CHECK(q.datatype == y->datatype());
    CHECK(q.stream == y->stream());
    CHECK(q.caller == y->caller());
    CHECK(q.rank == y->rank());
    CHECK(q.order == 2);
    REQUIRE(t.groups.size() == 1);
    CHECK(t.groups[0].group == g.group().group());
    CHECK(t.groups[0].depth == g.group().depth());
    CHECK(t.groups[0].result == g.group().result());
    REQUIRE(t.apis.size() == 1);
    CHECK(t.apis[0].value == a.api().value());
    CHECK(t.nccl_version == static_cast<int32_t>(a.api().value()));
    CHECK(t.last_order == 4);
  }
}

TEST_CASE("completion and liveness records decode as libprotobuf decodes them",
          "[model][conformance]") {
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    Values v(seed);
    std::vector<pb::Record> records(7);
    records[0].mutable_completion_tracking()->set_comm(v.U64());
    records[0].mutable_completion_tracking()->set_mechanism(pb::CompletionTracking::CUDA_EVENTS);
    records[0].mutable_completion_tracking()->set_why_not(v.Bytes());
    records[0].mutable_completion_tracking()->set_markers(static_cast<uint32_t>(v.U64()));
    records[0].mutable_completion_tracking()->set_device(v.I32());
    auto* pr = records[1].mutable_progress();
    pr->set_comm(v.U64());
    pr->set_collectives(v.U64());
    pr->set_enqueued_t(v.U64());
    pr->set_pending(static_cast<uint32_t>(v.U64()));
    pr->set_issued(v.U64());
    records[2].set_t(v.U64() | 2);  // after records[6]'s, which is half of it
    records[2].mutable_heartbeat()->set_beat(v.U64());
    records[2].mutable_heartbeat()->set_interval_ms(static_cast<uint32_t>(v.U64()));
    auto* st = records[3].mutable_stall();
    st->set_comm(v.U64());
    st->set_call(pb::SEND);
    st->set_seq(v.U64());
    st->set_peer(v.I32());
    st->set_send(seed % 2);
    st->set_waited_ms(v.U64());
    st->set_completed(v.U64());
    st->set_pending(static_cast<uint32_t>(v.U64()));
    st->set_group_ops(static_cast<uint32_t>(v.U64()));
    st->set_rank(v.I32());
    st->set_nranks(v.I32());
    auto* ce = records[4].mutable_cuda_error();
    ce->set_comm(v.U64());
    ce->set_result(v.I32());
    ce->set_name(v.Bytes());
    ce->set_text(v.Bytes());
    ce->set_device(v.I32());
    ce->set_where(pb::CudaError::EVENT_QUERY);
    ce->set_seq(v.U64());
    auto* ut = records[5].mutable_untracked();
    ut->set_comm(v.U64());
    ut->set_call(pb::ALL_REDUCE);
    ut->set_seq(v.U64());
    ut->set_reason(pb::Untracked::CAPTURED);
    records[6].set_t(records[2].t() / 2);
    records[6].mutable_heartbeat()->set_beat(records[2].heartbeat().beat() / 2);
    records[6].mutable_heartbeat()->set_interval_ms(7);

    const ProcessTrace t = Import(records);
    INFO("seed " << seed);
    REQUIRE(t.tracking.size() == 1);
    CHECK(t.tracking[0].comm == records[0].completion_tracking().comm());
    CHECK(t.tracking[0].mechanism == 1);
    CHECK(t.tracking[0].why_not == records[0].completion_tracking().why_not());
    CHECK(t.tracking[0].markers == records[0].completion_tracking().markers());
    CHECK(t.tracking[0].device == records[0].completion_tracking().device());
    REQUIRE(t.progress.size() == 1);
    CHECK(t.progress[0].comm == pr->comm());
    CHECK(t.progress[0].collectives == pr->collectives());
    CHECK(t.progress[0].enqueued_t == pr->enqueued_t());
    CHECK(t.progress[0].pending == pr->pending());
    CHECK(t.progress[0].issued == pr->issued());
    CHECK(t.liveness.beats == 2);
    CHECK(t.liveness.last_beat == records[2].heartbeat().beat());
    CHECK(t.liveness.last_t == records[2].t());
    CHECK(t.liveness.first_t == records[6].t());
    CHECK(t.liveness.interval_ms == records[2].heartbeat().interval_ms());
    REQUIRE(t.stalls.size() == 1);
    CHECK(t.stalls[0].comm == st->comm());
    CHECK(t.stalls[0].call == static_cast<uint32_t>(pb::SEND));
    CHECK(t.stalls[0].seq == st->seq());
    CHECK(t.stalls[0].peer == st->peer());
    CHECK(t.stalls[0].send == st->send());
    CHECK(t.stalls[0].waited_ms == st->waited_ms());
    CHECK(t.stalls[0].completed == st->completed());
    CHECK(t.stalls[0].pending == st->pending());
    CHECK(t.stalls[0].group_ops == st->group_ops());
    CHECK(t.stalls[0].rank == st->rank());
    CHECK(t.stalls[0].nranks == st->nranks());
    REQUIRE(t.cuda_errors.size() == 1);
    CHECK(t.cuda_errors[0].comm == ce->comm());
    CHECK(t.cuda_errors[0].result == ce->result());
    CHECK(t.cuda_errors[0].name == ce->name());
    CHECK(t.cuda_errors[0].text == ce->text());
    CHECK(t.cuda_errors[0].device == ce->device());
    CHECK(t.cuda_errors[0].where == 1);
    CHECK(t.cuda_errors[0].seq == ce->seq());
    REQUIRE(t.untracked.size() == 1);
    CHECK(t.untracked[0].comm == ut->comm());
    CHECK(t.untracked[0].seq == ut->seq());
    CHECK(t.untracked[0].call == static_cast<uint32_t>(pb::ALL_REDUCE));
    CHECK(t.untracked[0].reason == 1);
  }
}

TEST_CASE("identity, inventory and system calls keep every byte the OS gave",
          "[model][conformance]") {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    Values v(seed);
    pb::Record s;
    auto* st = s.mutable_process_start();
    st->set_pid(static_cast<uint32_t>(v.U64()));
    st->set_host(v.Bytes());
    st->set_global_rank(v.I32());
    st->set_world_size(v.I32());
    st->set_exe(v.Bytes());
    st->set_job_id(v.Bytes());
    pb::Record inv;
    auto* i = inv.mutable_inventory();
    for (int k = 0; k < 3; ++k) {
      auto* var = i->add_env();
      var->set_name("NCCL_VAR_" + std::to_string(k));
      var->set_value(v.Bytes() + "\xff\xfe");  // never UTF-8
    }
    i->set_nccl_version(v.I32());
    i->set_nccl_path(v.Bytes());
    i->set_shm_known(true);
    i->set_shm_size(v.U64());
    i->set_memlock_soft(v.U64());
    i->set_cgroup(v.Bytes());
    auto* itf = i->add_interfaces();
    itf->set_name("eth\xff" + std::to_string(seed));
    itf->set_flags(0x41);
    const unsigned char ipv4[16] = {2, 0, 0x1f, 0x90, 10,
                                    0, 0, 1};  // AF_INET (little-endian), port 8080, 10.0.0.1
    itf->set_addr(std::string(reinterpret_cast<const char*>(ipv4), sizeof(ipv4)));
    itf->set_prefix_len(24);
    pb::Record sc;
    auto* c = sc.mutable_sys_call();
    c->set_kind(pb::SysCall::FALLOCATE);
    c->set_ret(v.I64());
    c->set_err(v.I32());
    c->set_path(v.Bytes());
    c->set_size(v.I64());
    c->set_from_nccl(true);
    pb::Record err;
    err.mutable_nccl_error()->set_last_error(v.Bytes() + "\x1b]0;title\x07");
    err.mutable_nccl_error()->set_result(v.I32());
    pb::Record ib;
    auto* b = ib.mutable_comm_init_begin();
    b->set_comm(v.U64());
    b->set_rank(3);
    b->set_nranks(8);
    b->add_excluded(-5);
    b->add_excluded(INT32_MAX);
    b->set_bus_id(v.Bytes());

    const ProcessTrace t = Import({s, inv, sc, err, ib});
    INFO("seed " << seed);
    CHECK(t.has_start);
    CHECK(t.pid == st->pid());
    CHECK(t.host == st->host());
    CHECK(t.global_rank == st->global_rank());
    CHECK(t.world_size == st->world_size());
    CHECK(t.exe == st->exe());
    CHECK(t.job_id == st->job_id());
    REQUIRE(t.inventory.present);
    REQUIRE(t.inventory.env.size() == 3);
    CHECK(*t.inventory.Env("NCCL_VAR_1") == i->env(1).value());
    CHECK(t.inventory.nccl_path == i->nccl_path());
    CHECK(t.inventory.shm_size == i->shm_size());
    CHECK(t.inventory.memlock_soft == i->memlock_soft());
    CHECK(t.inventory.cgroup == i->cgroup());
    REQUIRE(t.inventory.interfaces.size() == 1);
    CHECK(t.inventory.interfaces[0].name == itf->name());
    CHECK(t.inventory.interfaces[0].prefix_len == 24);
    CHECK(t.inventory.interfaces[0].addr.Ip() == "10.0.0.1");
    REQUIRE(t.syscalls.size() == 1);
    CHECK(t.syscalls[0].path == c->path());
    CHECK(t.syscalls[0].ret == c->ret());
    CHECK(t.syscalls[0].err == c->err());
    CHECK(t.syscalls[0].size == (c->size() ? c->size() : -1));
    CHECK(t.syscalls[0].from_nccl);
    REQUIRE(t.errors.size() == 1);
    CHECK(t.errors[0].text == err.nccl_error().last_error());
    REQUIRE(t.comms.size() == 1);
    CHECK(t.comms[0].excluded == std::vector<int32_t>{-5, INT32_MAX});
    CHECK(t.comms[0].bus_id == b->bus_id());
    CHECK(t.comms[0].rank == 3);
  }
}

TEST_CASE("CUDA memory-sharing calls and the P2P path decode as libprotobuf decodes them",
          "[model][conformance]") {
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    Values v(seed);
    pb::Record r;
    r.set_t(v.U64());
    auto* c = r.mutable_cuda_call();
    c->set_function(static_cast<pb::CudaFunction>(seed % 2 ? pb::CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE
                                                           : pb::CUDA_IPC_OPEN_MEM_HANDLE));
    c->set_result(v.I32());
    c->set_via(static_cast<pb::CudaCall::Via>(seed % 5));
    c->set_device(v.I32());
    c->set_peer(v.I32());
    c->set_size(v.U64());
    c->set_ptr(v.U64());
    c->set_handle(v.U64());
    c->set_handle_type(static_cast<uint32_t>(v.U64()));
    c->set_flags(v.U64());
    c->set_fd(v.I32());
    c->set_can_access(v.I32());
    c->set_err(v.I32());
    c->set_in_call(pb::COMM_INIT_RANK);
    c->set_from_nccl(seed % 3 == 0);
    c->set_caller(v.U64());
    c->set_num_devices(static_cast<uint32_t>(v.U64()));
    c->set_access_flags(static_cast<uint32_t>(v.U64()));
    pb::Record inv;
    auto* i = inv.mutable_inventory();
    i->set_iommu_enabled(seed % 2);
    i->set_nvswitches(static_cast<uint32_t>(v.U64()));
    auto* g = i->add_gpus();
    g->set_bdf(v.Bytes());
    g->set_iommu_group(v.I32());
    auto* b = g->add_bridges();
    b->set_bdf(v.Bytes());
    b->set_acs_ctrl(v.I32());
    g->add_bridges()->set_acs_ctrl(-2);

    const ProcessTrace t = Import({r, inv});
    INFO("seed " << seed);
    REQUIRE(t.cuda_calls.size() == 1);
    const auto& e = t.cuda_calls[0];
    CHECK(e.t == r.t());
    CHECK(e.order == 1);
    CHECK(e.function == static_cast<uint32_t>(c->function()));
    CHECK(e.result == c->result());
    CHECK(e.via == static_cast<uint32_t>(c->via()));
    CHECK(e.device == c->device());
    CHECK(e.peer == c->peer());
    CHECK(e.size == c->size());
    CHECK(e.ptr == c->ptr());
    CHECK(e.handle == c->handle());
    CHECK(e.handle_type == c->handle_type());
    CHECK(e.flags == c->flags());
    CHECK(e.fd == c->fd());
    CHECK(e.can_access == c->can_access());
    CHECK(e.err == c->err());
    CHECK(e.in_call == static_cast<uint32_t>(c->in_call()));
    CHECK(e.from_nccl == c->from_nccl());
    CHECK(e.caller == c->caller());
    CHECK(e.num_devices == c->num_devices());
    CHECK(e.access_flags == c->access_flags());
    REQUIRE(t.inventory.present);
    CHECK(t.inventory.iommu_enabled == i->iommu_enabled());
    CHECK(t.inventory.nvswitches == i->nvswitches());
    REQUIRE(t.inventory.gpus.size() == 1);
    CHECK(t.inventory.gpus[0].bdf == g->bdf());
    CHECK(t.inventory.gpus[0].iommu_group == g->iommu_group());
    REQUIRE(t.inventory.gpus[0].bridges.size() == 2);
    CHECK(t.inventory.gpus[0].bridges[0].bdf == b->bdf());
    CHECK(t.inventory.gpus[0].bridges[0].acs_ctrl == b->acs_ctrl());
    CHECK(t.inventory.gpus[0].bridges[1].acs_ctrl == -2);
  }
}

TEST_CASE("a malformed record is refused, the next one still read", "[model][hostile]") {
  ProcessTrace p;
  RecordImporter importer(&p);
  pb::Record c;
  c.set_t(5);
  c.mutable_collective()->set_seq(3);
  const std::string good = c.SerializeAsString();
  auto span = [](const std::string& s) {
    return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  // Cut anywhere but right after the time stamp (a record with no body is
  // well-formed, and skipped as a kind this version does not know).
  for (size_t cut = 1; cut < good.size(); ++cut)
    if (cut != 2) CHECK_FALSE(importer.Import(span(good.substr(0, cut))));
  CHECK_FALSE(importer.Import(span(std::string("\x0b\x0c", 2))));  // a group wire type
  CHECK_FALSE(
      importer.Import(span(std::string("\xba\x01\xff\xff\x03", 5))));  // a length beyond the record
  CHECK(p.collectives.empty());
  CHECK(p.last_order == 0);
  CHECK(importer.Import(span(good)));
  REQUIRE(p.collectives.size() == 1);
  CHECK(p.collectives[0].seq == 3);
  CHECK(p.collectives[0].order == 1);
  CHECK(
      importer.Import(span(good.substr(0, 2))));  // no body: skipped, still counted in the timeline
  CHECK(p.last_order == 2);
}

namespace {

// A Record of time `t` whose body is the GpuTime `body` as given (any
// bytes): the envelope well-formed, whatever the body is.
std::string GpuTimeEnvelope(uint64_t t, const std::string& body) {
  pb::Record r;
  r.set_t(t);
  std::string bytes = r.SerializeAsString();
  auto varint = [&](uint64_t v) {
    for (; v >= 0x80; v >>= 7) bytes.push_back(static_cast<char>(v | 0x80));
    bytes.push_back(static_cast<char>(v));
  };
  varint(uint64_t{f::record::kGpuTime} << 3 | 2);
  varint(body.size());
  return bytes + body;
}

}  // namespace

TEST_CASE("a GPU time counted is not a row: its communicator and place as Import reads them",
          "[model]") {
  auto span = [](const std::string& s) {
    return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    Values v(seed);
    pb::Record g;
    g.set_t(v.U64());
    auto* gt = g.mutable_gpu_time();
    if (seed % 5 != 0) gt->set_comm(v.U64());  // none: communicator 0, as a row's
    gt->set_seq(v.U64());
    gt->set_collectives(v.U64());
    gt->set_begin_ns(v.U64());
    gt->set_end_ns(v.U64());
    pb::Record progress;
    progress.set_t(v.U64());
    progress.mutable_progress()->set_comm(v.U64());
    ProcessTrace rows;
    ProcessTrace counted;
    RecordImporter as_rows(&rows);
    RecordImporter counting(&counted);
    INFO("seed " << seed);
    for (const pb::Record& r : {g, progress, g}) {
      const std::string bytes = r.SerializeAsString();
      bool gpu_time = true;
      uint64_t comm = 1;
      REQUIRE(as_rows.Import(span(bytes)));
      REQUIRE(counting.Import(span(bytes), &gpu_time, &comm));
      CHECK(gpu_time == r.has_gpu_time());
      if (gpu_time) CHECK(comm == rows.gpu_times.back().comm);
    }
    CHECK(rows.gpu_times.size() == 2);
    CHECK(counted.gpu_times.empty());
    CHECK(counted.progress.size() == 1);
    CHECK(counted.last_order == rows.last_order);
    CHECK(counted.last_t == rows.last_t);
    // A body malformed inside a well-formed envelope (its last varint cut
    // short; a field of wire type 3): refused by both, no GPU time, no place.
    const std::string cut_body = g.gpu_time().SerializeAsString() + "\x18\xff";
    for (const std::string& body : {cut_body, std::string("\x0b\x01", 2)}) {
      const std::string bytes = GpuTimeEnvelope(g.t(), body);
      bool gpu_time = true;
      uint64_t comm = 0;
      CHECK_FALSE(as_rows.Import(span(bytes)));
      CHECK_FALSE(counting.Import(span(bytes), &gpu_time, &comm));
      CHECK_FALSE(gpu_time);
      CHECK(counted.last_order == rows.last_order);
      CHECK(rows.gpu_times.size() == 2);
    }
  }
}

namespace {

void Append(RingWriter& w, Region region, const pb::Record& r) {
  const std::string bytes = r.SerializeAsString();
  REQUIRE(w.Append(region, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

pb::Record Collective(uint64_t t, uint64_t comm, uint64_t seq, int32_t result = 0,
                      int32_t rank = 0) {
  pb::Record r;
  r.set_t(t);
  auto* c = r.mutable_collective();
  c->set_comm(comm);
  c->set_seq(seq);
  c->set_call(pb::ALL_REDUCE);
  c->set_count(1024);
  c->set_result(result);
  c->set_rank(rank);
  return r;
}

pb::Record Send(uint64_t t, uint64_t comm, uint64_t seq, int32_t peer, int32_t rank = 0) {
  pb::Record r;
  r.set_t(t);
  auto* c = r.mutable_p2p();
  c->set_comm(comm);
  c->set_seq(seq);
  c->set_send(true);
  c->set_peer(peer);
  c->set_count(8);
  c->set_rank(rank);
  return r;
}

pb::Record InitBegin(uint64_t t, uint64_t comm, int32_t rank, int32_t nranks) {
  pb::Record r;
  r.set_t(t);
  r.mutable_comm_init_begin()->set_comm(comm);
  r.mutable_comm_init_begin()->set_call(pb::COMM_INIT_RANK);
  r.mutable_comm_init_begin()->set_rank(rank);
  r.mutable_comm_init_begin()->set_nranks(nranks);
  return r;
}

pb::Record InitEnd(uint64_t t, uint64_t comm, uint64_t handle, int32_t rank) {
  pb::Record r;
  r.set_t(t);
  r.mutable_comm_init_end()->set_comm(comm);
  r.mutable_comm_init_end()->set_handle(handle);
  r.mutable_comm_init_end()->set_rank(rank);
  r.mutable_comm_init_end()->set_result(0);
  return r;
}

struct TraceWriter {
  jobs::TempDir dir;
  std::string dir_path = dir.path();
  RingWriter w;
  explicit TraceWriter(uint64_t ring_bytes = 1 << 20) {
    RingConfig c;
    c.dir = dir_path.c_str();
    c.ring_bytes = ring_bytes;
    c.pid = 4242;
    char err[256];
    REQUIRE(w.Open(c, err, sizeof(err)));
  }
};

// The streams as the decoder built them before StreamBuilder (a walk over
// the finished tables): the oracle the builder is checked against.
std::vector<CommStream> StreamsByWalkingTables(const ProcessTrace& t) {
  using ncclwatch::decoder::Accepted;
  std::vector<CommStream> streams;
  struct Progress {
    size_t stream = 0;
    bool seen = false;
    int64_t issued = 0;
  };
  std::map<std::pair<uint64_t, int32_t>, Progress> index;
  auto find = [&](uint64_t comm, int32_t rank) -> Progress& {
    auto [it, fresh] = index.emplace(std::make_pair(comm, rank), Progress{streams.size()});
    if (fresh) {
      CommStream s;
      s.comm = comm;
      s.rank = rank;
      streams.push_back(std::move(s));
    }
    return it->second;
  };
  for (size_t i = 0; i < t.comms.size(); ++i) {
    const auto& m = t.comms[i];
    if (m.comm != 0 && m.rank >= 0 && m.Formed())
      streams[find(m.comm, m.rank).stream].membership = static_cast<int>(i);
  }
  const bool nothing_lost = t.stats.ring_overwritten == 0 && t.stats.lapped_slots == 0;
  const bool lost_inside = t.stats.torn_slots != 0 || t.stats.lapped_slots != 0;
  size_t c = 0;
  auto take_collectives_until = [&](uint64_t order) {
    for (; c < t.collectives.size() && t.collectives[c].order < order; ++c) {
      const auto& e = t.collectives[c];
      if (e.comm == 0 || e.rank < 0 || !Accepted(e.result)) continue;
      Progress& pr = find(e.comm, e.rank);
      pr.seen = true;
      pr.issued =
          e.seq < static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(e.seq) + 1 : INT64_MAX;
      streams[pr.stream].collectives.push_back(static_cast<uint32_t>(c));
      if (e.result == NCCLWATCH_RESULT_PENDING)
        streams[pr.stream].pending_collectives.push_back(static_cast<uint32_t>(c));
    }
  };
  for (size_t i = 0; i < t.p2p.size(); ++i) {
    const auto& e = t.p2p[i];
    take_collectives_until(e.order);
    if (e.comm == 0 || e.rank < 0 || e.peer < 0 || !Accepted(e.result)) continue;
    Progress& pr = find(e.comm, e.rank);
    const int64_t before = lost_inside ? -1 : !pr.seen ? (nothing_lost ? 0 : -1) : pr.issued;
    streams[pr.stream].p2p.push_back(static_cast<uint32_t>(i));
    streams[pr.stream].collectives_before_p2p.push_back(before);
  }
  take_collectives_until(UINT64_MAX);
  for (CommStream& s : streams)
    s.holds_start =
        s.collectives.empty() ? nothing_lost : t.collectives[s.collectives.front()].seq == 0;
  return streams;
}

}  // namespace

TEST_CASE("the timeline is in true order across the pinned region and the ring", "[model]") {
  TraceWriter tw;
  const uint64_t comm = 0xabc;
  Append(tw.w, Region::kPinned, InitBegin(10, comm, 0, 2));
  Append(tw.w, Region::kPinned, InitEnd(20, comm, 0x1000, 0));
  for (uint64_t s = 0; s < 5; ++s) Append(tw.w, Region::kRing, Collective(100 + s, comm, s));
  pb::Record end;
  end.set_t(200);
  end.mutable_comm_end()->set_comm(comm);
  end.mutable_comm_end()->set_handle(0x1000);
  end.mutable_comm_end()->set_call(pb::COMM_DESTROY);
  Append(tw.w, Region::kPinned, end);
  pb::Record exit;
  exit.set_t(300);
  exit.mutable_process_end()->set_how(pb::ProcessEnd::EXIT);
  Append(tw.w, Region::kPinned, exit);

  absl::StatusOr<ProcessTrace> t = LoadProcessTrace(tw.w.path());
  REQUIRE(t.ok());
  REQUIRE(t->comms.size() == 1);
  REQUIRE(t->collectives.size() == 5);
  CHECK(t->comms[0].init_order == 1);
  CHECK(t->collectives.front().order == 3);
  CHECK(t->collectives.back().order == 7);
  CHECK(t->comms[0].end_order == 8);
  REQUIRE(t->end.has_value());
  CHECK(t->end->order == 9);

  // The process's last call, as the reports name it: the destroy, which
  // came after the last collective although its record is in the other region.
  JobAnalysis job;
  job.AddProcess(*t);
  job.Finish();
  REQUIRE(job.processes().size() == 1);
  CHECK(job.processes()[0].last.call == f::kCommDestroy);
}

TEST_CASE(
    "one stream per (communicator, rank): numbered calls, its start, collectives before each send",
    "[model]") {
  TraceWriter tw;
  const uint64_t a = 0xa, b = 0xb;
  Append(tw.w, Region::kPinned, InitBegin(1, a, 0, 2));
  Append(tw.w, Region::kPinned, InitEnd(2, a, 0x10, 0));
  Append(tw.w, Region::kPinned, InitBegin(3, b, 1, 2));
  Append(tw.w, Region::kPinned, InitEnd(4, b, 0x20, 1));
  Append(tw.w, Region::kRing, Collective(10, a, 0));
  Append(tw.w, Region::kRing, Collective(11, a, 1, /*result=*/4));  // refused: not numbered
  Append(tw.w, Region::kRing, Collective(12, a, 1));
  Append(tw.w, Region::kRing, Send(13, a, 0, 1));
  Append(tw.w, Region::kRing, Send(14, b, 0, 0, /*rank=*/1));
  Append(tw.w, Region::kRing, Collective(15, a, 2, NCCLWATCH_RESULT_PENDING));

  absl::StatusOr<ProcessTrace> t = LoadProcessTrace(tw.w.path());
  REQUIRE(t.ok());
  REQUIRE(t->streams.size() == 2);
  const CommStream& sa = t->streams[0].comm == a ? t->streams[0] : t->streams[1];
  const CommStream& sb = t->streams[0].comm == a ? t->streams[1] : t->streams[0];
  CHECK(sa.rank == 0);
  CHECK(sa.membership >= 0);
  REQUIRE(sa.collectives.size() == 3);  // #0, #1 (the accepted one), #2 (pending)
  CHECK(t->collectives[sa.collectives[1]].result == 0);
  CHECK(t->collectives[sa.collectives[2]].seq == 2);
  CHECK(sa.holds_start);
  REQUIRE(sa.p2p.size() == 1);
  CHECK(sa.collectives_before_p2p[0] == 2);
  CHECK(sb.rank == 1);
  CHECK_FALSE(sb.any());
  CHECK(sb.holds_start);  // nothing was overwritten
  REQUIRE(sb.p2p.size() == 1);
  CHECK(sb.collectives_before_p2p[0] == 0);
}

// It still counts the collectives before a send by their numbers.
TEST_CASE("a wrapped ring: the stream knows it lost its start", "[model]") {
  TraceWriter tw(64 * NCCLWATCH_SLOT_BYTES);
  const uint64_t comm = 0xc;
  for (uint64_t s = 0; s < 200; ++s) Append(tw.w, Region::kRing, Collective(10 + s, comm, s));
  Append(tw.w, Region::kRing, Send(300, comm, 0, 1));
  absl::StatusOr<ProcessTrace> t = LoadProcessTrace(tw.w.path());
  REQUIRE(t.ok());
  CHECK(t->stats.ring_overwritten > 0);
  REQUIRE(t->streams.size() == 1);
  CHECK_FALSE(t->streams[0].holds_start);
  CHECK(t->collectives[t->streams[0].collectives.front()].seq > 0);
  REQUIRE(t->streams[0].p2p.size() == 1);
  CHECK(t->streams[0].collectives_before_p2p[0] == 200);
}

TEST_CASE("a light reading counts GPU times by communicator as a whole reading holds them",
          "[model]") {
  using ncclwatch::decoder::EntryFn;
  using ncclwatch::decoder::EntryRead;
  using ncclwatch::decoder::LightReading;
  using ncclwatch::decoder::TraceFile;
  TraceWriter tw;
  const uint64_t comms[] = {0xa, 0xb, 0};  // 0: a GPU time without one
  for (uint64_t i = 0; i < 300; ++i) {
    pb::Record g;
    g.set_t(10 + i);
    auto* gt = g.mutable_gpu_time();
    const uint64_t comm = comms[i % 7 == 0 ? 2 : (i / 50) % 2];
    if (comm != 0) gt->set_comm(comm);
    gt->set_seq(i);
    gt->set_begin_ns(1000 + i);
    gt->set_end_ns(2000 + i);
    Append(tw.w, Region::kRing, g);
    if (i % 10 == 0) Append(tw.w, Region::kRing, Collective(10 + i, 0xa, i / 10));
    if (i % 40 == 0) {  // a malformed GPU time: no row, not counted
      const std::string bad = GpuTimeEnvelope(10 + i, std::string("\x0b\x01", 2));
      REQUIRE(tw.w.Append(Region::kRing, reinterpret_cast<const uint8_t*>(bad.data()), bad.size()));
    }
  }
  absl::StatusOr<std::unique_ptr<TraceFile>> file = TraceFile::Open(tw.w.path());
  REQUIRE(file.ok());
  ProcessTrace whole;
  ncclwatch::decoder::ReadProcessTrace(**file, &whole);
  ProcessTrace counted;
  std::map<uint64_t, uint64_t> told;  // GPU times the hook was told of, by communicator
  auto tell = [&](bool, uint64_t, EntryRead read_as, uint64_t comm) {
    if (read_as == EntryRead::kGpuTime) ++told[comm];
  };
  const EntryFn other = tell;
  LightReading light;
  light.other = &other;
  light.count_gpu_times = true;
  ncclwatch::decoder::ReadProcessTrace(**file, &counted, light);
  // The whole reading's rows, by communicator in the order first met.
  std::vector<std::pair<uint64_t, uint64_t>> want;
  for (const auto& e : whole.gpu_times) {
    auto at =
        std::find_if(want.begin(), want.end(), [&](const auto& w) { return w.first == e.comm; });
    if (at == want.end()) at = want.insert(want.end(), {e.comm, 0});
    ++at->second;
  }
  REQUIRE(want.size() == 3);
  CHECK(whole.gpu_times.size() == 300);
  CHECK(counted.gpu_times.empty());
  REQUIRE(counted.left_out_gpu_times.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(counted.left_out_gpu_times[i].comm == want[i].first);
    CHECK(counted.left_out_gpu_times[i].count == want[i].second);
    CHECK(told[want[i].first] == want[i].second);
  }
  CHECK(counted.records == whole.records);
  CHECK(counted.unparsed_records == whole.unparsed_records);
  CHECK(whole.unparsed_records == 8);
  CHECK(counted.last_order == whole.last_order);
  CHECK(counted.last_t == whole.last_t);
}

// A ring that lost a slot among those it holds (here torn: claimed, never
// published) may have lost a collective there, and a send after it would
// count one too few: no send's count is known.
TEST_CASE("a ring that lost a slot inside: no send knows the collectives before it", "[model]") {
  TraceWriter tw;
  const uint64_t comm = 0xc;
  for (uint64_t s = 0; s < 10; ++s) Append(tw.w, Region::kRing, Collective(10 + s, comm, s));
  ncclwatch::shim::SlotClaim claim;  // collective #10, torn
  REQUIRE(tw.w.ClaimSlot(&claim));
  std::memset(claim.payload, 'x', 16);
  Append(tw.w, Region::kRing, Send(30, comm, 0, 1));
  Append(tw.w, Region::kRing, Collective(40, comm, 11));
  absl::StatusOr<ProcessTrace> t = LoadProcessTrace(tw.w.path());
  REQUIRE(t.ok());
  CHECK(t->stats.torn_slots == 1);
  REQUIRE(t->streams.size() == 1);
  REQUIRE(t->streams[0].p2p.size() == 1);
  CHECK(t->streams[0].collectives_before_p2p[0] == -1);  // not 10 (it was 11)
}

namespace {

// A random mix of collectives and sends on several communicators and ranks
// (some refused, pending, on no communicator or no rank, some before any
// collective), with and without memberships, in a ring that wraps when
// `seed` is a multiple of 3.
void WriteRandomCalls(uint32_t seed, RingWriter& w) {
  std::mt19937 rng(seed);
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  const uint64_t comms[] = {0xa, 0xb, 0xc, 0};
  const int32_t results[] = {0, 0, 0, 4, 7, NCCLWATCH_RESULT_PENDING};
  uint64_t t = 1;
  for (uint64_t comm : {0xa, 0xb})
    if (pick(2) == 0) {
      Append(w, Region::kPinned, InitBegin(t++, comm, 0, 2));
      Append(w, Region::kPinned, InitEnd(t++, comm, comm << 4, 0));
    }
  uint64_t seq[4] = {pick(2), 0, 0, 0};
  const int calls = 50 + static_cast<int>(pick(150));
  for (int i = 0; i < calls; ++i) {
    const uint32_t c = pick(4);
    const int32_t rank = pick(8) == 0 ? -1 : static_cast<int32_t>(pick(2));
    if (pick(4) == 0) {
      const int32_t peer = pick(8) == 0 ? -1 : 1 - rank;
      Append(w, Region::kRing, Send(t++, comms[c], pick(5), peer, rank));
    } else {
      Append(w, Region::kRing, Collective(t++, comms[c], seq[c]++, results[pick(6)], rank));
    }
  }
}

uint64_t RingBytesFor(uint32_t seed) { return seed % 3 == 0 ? 64 * NCCLWATCH_SLOT_BYTES : 1 << 20; }

void CheckSameStreams(const std::vector<CommStream>& got, const std::vector<CommStream>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const CommStream& a = got[i];
    const CommStream& b = want[i];
    CHECK(a.comm == b.comm);
    CHECK(a.rank == b.rank);
    CHECK(a.membership == b.membership);
    CHECK(a.collectives == b.collectives);
    CHECK(a.pending_collectives == b.pending_collectives);
    CHECK(a.p2p == b.p2p);
    CHECK(a.collectives_before_p2p == b.collectives_before_p2p);
    CHECK(a.holds_start == b.holds_start);
  }
}

}  // namespace

TEST_CASE("the streams built while loading are those BuildStreams makes from the tables",
          "[model]") {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    TraceWriter tw(RingBytesFor(seed));
    WriteRandomCalls(seed, tw.w);
    absl::StatusOr<ProcessTrace> loaded = LoadProcessTrace(tw.w.path());
    REQUIRE(loaded.ok());
    ProcessTrace rebuilt = *loaded;
    rebuilt.streams.clear();
    ncclwatch::decoder::BuildStreams(&rebuilt);
    const std::vector<CommStream> want = StreamsByWalkingTables(*loaded);
    INFO("seed " << seed);
    CheckSameStreams(loaded->streams, want);
    CheckSameStreams(rebuilt.streams, want);
  }
}

TEST_CASE("traces loaded one after another into one ProcessTrace are as if each were alone",
          "[model]") {
  // LoadProcessTraceInto reuses the tables' and the streams' memory: nothing
  // of the trace before may show through.
  ProcessTrace reused;
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    TraceWriter tw(RingBytesFor(seed));
    WriteRandomCalls(seed, tw.w);
    INFO("seed " << seed);
    REQUIRE(ncclwatch::decoder::LoadProcessTraceInto(tw.w.path(), &reused).ok());
    absl::StatusOr<ProcessTrace> alone = LoadProcessTrace(tw.w.path());
    REQUIRE(alone.ok());
    CHECK(reused.records == alone->records);
    CHECK(reused.collectives.size() == alone->collectives.size());
    CHECK(reused.p2p.size() == alone->p2p.size());
    CheckSameStreams(reused.streams, alone->streams);
    CheckSameStreams(reused.streams, StreamsByWalkingTables(*alone));
  }
}

TEST_CASE("call slots decode as the Records they stand for, as libprotobuf reads those",
          "[model][conformance]") {
  using ncclwatch::decoder::CallSlotToRecord;
  using ncclwatch::decoder::kCallSlotRecordMax;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    Values v(seed);
    ncclwatch_call_slot s;
    s.t = v.U64();
    s.result = v.I32();
    s.thread = static_cast<uint32_t>(v.U64());
    s.comm = v.U64();
    s.seq = v.U64();
    s.count = v.U64();
    s.stream = v.U64();
    s.sendbuff = v.U64();
    s.recvbuff = v.U64();
    s.group = v.U64();
    s.caller = v.U64();
    s.call = seed % 3 == 0 ? static_cast<uint32_t>(v.U64()) : seed % 15;
    s.datatype = v.I32();
    s.redop = v.I32();
    s.root = v.I32();
    s.peer = v.I32();
    s.rank = v.I32();
    s.depth = static_cast<uint32_t>(v.U64());
    s.flags = static_cast<uint32_t>(v.U64());
    const uint8_t kinds[] = {NCCLWATCH_SLOT_COLLECTIVE, NCCLWATCH_SLOT_P2P, NCCLWATCH_SLOT_GROUP};
    for (const uint8_t kind : kinds) {
      INFO("seed " << seed << " kind " << int{kind});
      uint8_t bytes[kCallSlotRecordMax];
      const size_t n = CallSlotToRecord(kind, s, bytes);
      REQUIRE(n > 0);
      pb::Record r;
      REQUIRE(r.ParseFromArray(bytes, static_cast<int>(n)));
      CHECK(r.t() == s.t);
      CHECK(r.thread() == s.thread);
      const bool in_group = s.flags & NCCLWATCH_CALL_IN_GROUP;
      // The model's rows: straight from the slot, and from the Record's bytes.
      ProcessTrace direct, via;
      RecordImporter(&direct).ImportCallSlot(
          kind, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(&s), sizeof(s)));
      REQUIRE(RecordImporter(&via).Import(absl::MakeConstSpan(bytes, n)));
      if (kind == NCCLWATCH_SLOT_COLLECTIVE) {
        REQUIRE(r.has_collective());
        const auto& x = r.collective();
        CHECK(x.result() == s.result);
        CHECK(x.comm() == s.comm);
        CHECK(x.seq() == s.seq);
        CHECK(static_cast<uint32_t>(x.call()) == s.call);
        CHECK(x.count() == s.count);
        CHECK(x.datatype() == s.datatype);
        CHECK(x.has_redop() == (s.redop >= 0));
        CHECK(x.has_root() == (s.root >= 0));
        CHECK(x.stream() == s.stream);
        CHECK(x.sendbuff() == s.sendbuff);
        CHECK(x.recvbuff() == s.recvbuff);
        CHECK(x.group() == (in_group ? s.group : 0));
        CHECK(x.caller() == s.caller);
        CHECK(x.rank() == s.rank);
        REQUIRE(direct.collectives.size() == 1);
        REQUIRE(via.collectives.size() == 1);
        const auto& a = direct.collectives[0];
        const auto& b = via.collectives[0];
        CHECK(a.t == b.t);
        CHECK(a.thread == b.thread);
        CHECK(a.result == b.result);
        CHECK(a.comm == b.comm);
        CHECK(a.seq == b.seq);
        CHECK(a.call == b.call);
        CHECK(a.count == b.count);
        CHECK(a.datatype == b.datatype);
        CHECK(a.redop == b.redop);
        CHECK(a.root == b.root);
        CHECK(a.stream == b.stream);
        CHECK(a.group == b.group);
        CHECK(a.caller == b.caller);
        CHECK(a.rank == b.rank);
      } else if (kind == NCCLWATCH_SLOT_P2P) {
        REQUIRE(r.has_p2p());
        const auto& y = r.p2p();
        CHECK(y.result() == s.result);
        CHECK(y.send() == (s.call == f::kSend));
        CHECK(y.peer() == s.peer);
        CHECK(y.buff() == s.sendbuff);
        CHECK(y.group() == (in_group ? s.group : 0));
        REQUIRE(direct.p2p.size() == 1);
        REQUIRE(via.p2p.size() == 1);
        const auto& a = direct.p2p[0];
        const auto& b = via.p2p[0];
        CHECK(a.t == b.t);
        CHECK(a.result == b.result);
        CHECK(a.comm == b.comm);
        CHECK(a.seq == b.seq);
        CHECK(a.send == b.send);
        CHECK(a.peer == b.peer);
        CHECK(a.count == b.count);
        CHECK(a.datatype == b.datatype);
        CHECK(a.stream == b.stream);
        CHECK(a.group == b.group);
        CHECK(a.caller == b.caller);
        CHECK(a.rank == b.rank);
      } else {
        REQUIRE(r.has_group());
        CHECK(r.group().result() == s.result);
        CHECK(static_cast<uint32_t>(r.group().call()) == s.call);
        CHECK(r.group().group() == s.group);
        CHECK(r.group().depth() == s.depth);
        CHECK(r.group().caller() == s.caller);
        REQUIRE(direct.groups.size() == 1);
        REQUIRE(via.groups.size() == 1);
        const auto& a = direct.groups[0];
        const auto& b = via.groups[0];
        CHECK(a.t == b.t);
        CHECK(a.result == b.result);
        CHECK(a.call == b.call);
        CHECK(a.group == b.group);
        CHECK(a.depth == b.depth);
        CHECK(a.caller == b.caller);
      }
    }
  }
}

TEST_CASE("GPU-time slots decode as the GpuTime Records they stand for, as libprotobuf reads those",
          "[model][conformance]") {
  using ncclwatch::decoder::GpuTimeSlotComm;
  using ncclwatch::decoder::GpuTimeSlotToRecord;
  using ncclwatch::decoder::kGpuTimeSlotRecordMax;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    INFO("seed " << seed);
    Values v(seed);
    ncclwatch_gpu_time_slot s;
    std::memset(&s, 0xa5, sizeof(s));  // reserved bytes are not read
    s.t = v.U64();
    s.thread = static_cast<uint32_t>(v.U64());
    s.call = seed % 3 == 0 ? static_cast<uint32_t>(v.U64()) : seed % 15;
    s.comm = v.U64();
    s.seq = v.U64();
    s.collectives = v.U64();
    s.begin_ns = v.U64();
    s.end_ns = v.U64();
    s.gpu_ns = v.U64();
    s.anchor_error_ns = v.U64();
    s.group_ops = static_cast<uint32_t>(v.U64());
    const auto payload = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(&s), sizeof(s));
    uint8_t bytes[kGpuTimeSlotRecordMax];
    const size_t n = GpuTimeSlotToRecord(s, bytes);
    REQUIRE(n > 0);
    pb::Record r;
    REQUIRE(r.ParseFromArray(bytes, static_cast<int>(n)));
    CHECK(r.t() == s.t);
    CHECK(r.thread() == s.thread);
    REQUIRE(r.has_gpu_time());
    const pb::GpuTime& g = r.gpu_time();
    CHECK(g.comm() == s.comm);
    CHECK(static_cast<uint32_t>(g.call()) == s.call);
    CHECK(g.seq() == s.seq);
    CHECK(g.collectives() == s.collectives);
    CHECK(g.group_ops() == s.group_ops);
    CHECK(g.begin_ns() == s.begin_ns);
    CHECK(g.end_ns() == s.end_ns);
    CHECK(g.gpu_ns() == s.gpu_ns);
    CHECK(g.anchor_error_ns() == s.anchor_error_ns);
    // The model's rows: straight from the slot, and from the Record's bytes.
    ProcessTrace direct, via, counted;
    REQUIRE(RecordImporter(&direct).ImportGpuTimeSlot(payload));
    REQUIRE(RecordImporter(&via).Import(absl::MakeConstSpan(bytes, n)));
    REQUIRE(direct.gpu_times.size() == 1);
    REQUIRE(via.gpu_times.size() == 1);
    const auto& a = direct.gpu_times[0];
    const auto& b = via.gpu_times[0];
    CHECK(a.order == b.order);
    CHECK(a.t == b.t);
    CHECK(a.comm == b.comm);
    CHECK(a.call == b.call);
    CHECK(a.seq == b.seq);
    CHECK(a.collectives == b.collectives);
    CHECK(a.group_ops == b.group_ops);
    CHECK(a.begin_ns == b.begin_ns);
    CHECK(a.end_ns == b.end_ns);
    CHECK(a.gpu_ns == b.gpu_ns);
    CHECK(a.anchor_error_ns == b.anchor_error_ns);
    CHECK(direct.last_order == via.last_order);
    CHECK(direct.last_t == via.last_t);
    // Counted: no row, its communicator, its place in the timeline.
    uint64_t comm = 0;
    REQUIRE(RecordImporter(&counted).ImportGpuTimeSlot(payload, &comm));
    CHECK(comm == s.comm);
    CHECK(GpuTimeSlotComm(payload) == s.comm);
    CHECK(counted.gpu_times.empty());
    CHECK(counted.last_order == via.last_order);
    CHECK(counted.last_t == via.last_t);
  }
  ProcessTrace p;
  const uint8_t short_payload[NCCLWATCH_SLOT_PAYLOAD_BYTES - 1] = {};
  CHECK_FALSE(RecordImporter(&p).ImportGpuTimeSlot(absl::MakeConstSpan(short_payload)));
  CHECK(p.gpu_times.empty());
}

TEST_CASE(
    "a GPU-time slot is read in its place as a row and a count and a Record "
    "and in a format 3 ring it is torn",
    "[model]") {
  using ncclwatch::decoder::EntryFn;
  using ncclwatch::decoder::EntryRead;
  using ncclwatch::decoder::LightReading;
  using ncclwatch::decoder::TraceFile;
  using ncclwatch::decoder::TraceFileStats;
  TraceWriter tw;
  constexpr uint64_t kTimes = 120;
  for (uint64_t i = 0; i < kTimes; ++i) {
    Append(tw.w, Region::kRing, Collective(100 + 2 * i, 0xa, i));
    ncclwatch_gpu_time_slot g{};
    g.t = 101 + 2 * i;
    g.thread = 2;
    g.comm = i % 3 == 2 ? 0xb : 0xa;
    g.call = f::kAllReduce;
    g.seq = i;
    g.collectives = i + 1;
    g.begin_ns = 5000 + i;
    g.end_ns = 6000 + i;
    g.gpu_ns = 1000;
    g.anchor_error_ns = i % 2;
    REQUIRE(tw.w.AppendGpuTimeSlot(g));
  }
  {
    absl::StatusOr<std::unique_ptr<TraceFile>> file = TraceFile::Open(tw.w.path());
    REQUIRE(file.ok());
    ProcessTrace whole;
    ncclwatch::decoder::ReadProcessTrace(**file, &whole);
    REQUIRE(whole.gpu_times.size() == kTimes);
    REQUIRE(whole.collectives.size() == kTimes);
    CHECK(whole.unparsed_records == 0);
    CHECK(whole.stats.torn_slots == 0);
    for (uint64_t i = 0; i < kTimes; ++i) {
      const auto& e = whole.gpu_times[i];
      CHECK(e.order == whole.collectives[i].order + 1);  // right after its collective
      CHECK(e.t == 101 + 2 * i);
      CHECK(e.comm == (i % 3 == 2 ? 0xb : 0xa));
      CHECK(e.seq == i);
      CHECK(e.collectives == i + 1);
      CHECK(e.begin_ns == 5000 + i);
      CHECK(e.end_ns == 6000 + i);
      CHECK(e.gpu_ns == 1000);
      CHECK(e.anchor_error_ns == i % 2);
    }
    // Counted by communicator, told as GPU times, in the same places.
    ProcessTrace counted;
    std::map<uint64_t, uint64_t> told;
    auto tell = [&](bool, uint64_t, EntryRead read_as, uint64_t comm) {
      if (read_as == EntryRead::kGpuTime) ++told[comm];
    };
    const EntryFn other = tell;  // a reference: `tell` outlives it
    LightReading light;
    light.other = &other;
    light.count_gpu_times = true;
    ncclwatch::decoder::ReadProcessTrace(**file, &counted, light);
    CHECK(counted.gpu_times.empty());
    REQUIRE(counted.left_out_gpu_times.size() == 2);
    CHECK(counted.left_out_gpu_times[0].comm == 0xa);
    CHECK(counted.left_out_gpu_times[0].count == 80);
    CHECK(counted.left_out_gpu_times[1].comm == 0xb);
    CHECK(counted.left_out_gpu_times[1].count == 40);
    CHECK(told == std::map<uint64_t, uint64_t>{{0xa, 80}, {0xb, 40}});
    CHECK(counted.last_order == whole.last_order);
    CHECK(counted.last_t == whole.last_t);
    // As Records (`ncclwatch dump`'s reading): libprotobuf reads each.
    uint64_t seen = 0;
    TraceFileStats stats;
    (*file)->ForEachRecord(
        [&](bool, uint64_t, absl::Span<const uint8_t> bytes) {
          pb::Record r;
          REQUIRE(r.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
          if (!r.has_gpu_time()) return;
          CHECK(r.t() == 101 + 2 * seen);
          CHECK(r.thread() == 2);
          CHECK(r.gpu_time().seq() == seen);
          CHECK(r.gpu_time().end_ns() == 6000 + seen);
          ++seen;
        },
        &stats);
    CHECK(seen == kTimes);
  }
  // A format 3 reader's view: the kind did not exist, so such a slot is
  // torn, never a record; the protobuf records around it are read.
  const uint32_t three = 3;
  const int fd = open(tw.w.path(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(pwrite(fd, &three, sizeof(three), offsetof(ncclwatch_ring_header, format_version)) ==
          static_cast<ssize_t>(sizeof(three)));
  close(fd);
  absl::StatusOr<std::unique_ptr<TraceFile>> old = TraceFile::Open(tw.w.path());
  REQUIRE(old.ok());
  ProcessTrace p;
  ncclwatch::decoder::ReadProcessTrace(**old, &p);
  CHECK(p.gpu_times.empty());
  CHECK(p.collectives.size() == kTimes);
  CHECK(p.stats.torn_slots == kTimes);
}

// SyntheticProcess: a traced process written as a story, for the analyses'
// unit tests.
//
// Each call appends one trace.proto record, serialized with libprotobuf;
// Build() imports them with RecordImporter in the order they were written
// (the timeline's order) and finishes the trace as the loaders do, so the
// analyses read exactly the model a real trace file would give them, with no
// process, shim or ring file behind it.
//
//   SyntheticProcess p(/*global_rank=*/1);
//   p.Init(kComm, /*rank=*/1, /*nranks=*/2)
//       .Collective(kComm, 0)                                 // AllReduce of 1024 float32, sum
//       .Collective(kComm, 1, Broadcast(/*count=*/64, /*root=*/0))
//       .Send(kComm, 0, /*peer=*/0)
//       .Destroy(kComm)
//       .Exit(0);
//   ProcessTrace t = p.Build();
//
// Times: every record is 10 ticks after the one before, unless At() moves
// the clock. One time anchor maps tick t to realtime kRealtimeBase + t for
// every process, so times compare across processes as the diagnosis needs.
//
// Header-only, for tests; nothing is written to disk.

#ifndef NCCLWATCH_TESTS_UNIT_SYNTHETIC_PROCESS_H_
#define NCCLWATCH_TESTS_UNIT_SYNTHETIC_PROCESS_H_

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/comm_stream.h"
#include "model/process_trace.h"
#include "model/record_importer.h"
#include "ncclwatch/ring_format.h"
#include "ncclwatch/trace.pb.h"

namespace ncclwatch::testing {

namespace pb = ::ncclwatch::trace::v1;

// ncclDataType_t and ncclRedOp_t values (nccl.h).
constexpr int32_t kInt32 = 2;
constexpr int32_t kFloat16 = 6;
constexpr int32_t kFloat32 = 7;
constexpr int32_t kSum = 0;
constexpr int32_t kMax = 2;
// ncclResult_t: ncclInvalidArgument (a call NCCL refused), ncclInProgress.
constexpr int32_t kInvalidArgument = 4;
constexpr int32_t kInProgress = 7;

constexpr uint64_t kRealtimeBase = 1'700'000'000'000'000'000ULL;

// The arguments of one collective call.
struct Op {
  pb::Call call = pb::ALL_REDUCE;
  uint64_t count = 1024;
  int32_t datatype = kFloat32;
  std::optional<int32_t> redop = kSum;
  std::optional<int32_t> root;
  int32_t result = 0;
  uint64_t stream = 0x5100;
  std::optional<int32_t> rank;  // the communicator rank, when not the one Init gave

  Op& Datatype(int32_t d) {
    datatype = d;
    return *this;
  }
  Op& Redop(int32_t r) {
    redop = r;
    return *this;
  }
  Op& Root(int32_t r) {
    root = r;
    return *this;
  }
  Op& Result(int32_t r) {
    result = r;
    return *this;
  }
  Op& Pending() {
    result = NCCLWATCH_RESULT_PENDING;
    return *this;
  }
  Op& Stream(uint64_t s) {
    stream = s;
    return *this;
  }
  Op& Rank(int32_t r) {
    rank = r;
    return *this;
  }
};

inline Op AllReduce(uint64_t count = 1024) {
  Op o;
  o.count = count;
  return o;
}
inline Op AllGather(uint64_t count = 1024) {
  Op o;
  o.call = pb::ALL_GATHER;
  o.count = count;
  o.redop.reset();
  return o;
}
inline Op Broadcast(uint64_t count, int32_t root) {
  Op o;
  o.call = pb::BROADCAST;
  o.count = count;
  o.redop.reset();
  o.root = root;
  return o;
}
inline Op Bcast(uint64_t count, int32_t root) {
  Op o = Broadcast(count, root);
  o.call = pb::BCAST;
  return o;
}
inline Op Reduce(uint64_t count, int32_t root) {
  Op o;
  o.call = pb::REDUCE;
  o.count = count;
  o.root = root;
  return o;
}

// The arguments of one send or receive.
struct P2pArgs {
  uint64_t count = 8;
  int32_t datatype = kFloat32;
  int32_t result = 0;
  uint64_t stream = 0x5100;
};

inline P2pArgs Sized(uint64_t count, int32_t datatype = kFloat32) {
  return P2pArgs{count, datatype};
}

class SyntheticProcess {
 public:
  // A process the launcher named `global_rank` (-1: none, as without a launcher).
  explicit SyntheticProcess(int32_t global_rank = -1) : created_(NextCreated()) {
    pb::Record& s = Add();
    s.mutable_process_start()->set_pid(
        static_cast<uint32_t>(1000 + (global_rank < 0 ? 999 : global_rank)));
    s.mutable_process_start()->set_host("node0");
    s.mutable_process_start()->set_global_rank(global_rank);
    if (global_rank >= 0) s.mutable_process_start()->set_rank_source("RANK");
    pb::Record& a = Add();
    a.mutable_time_anchor()->set_t(0);
    a.mutable_time_anchor()->set_monotonic_ns(0);
    a.mutable_time_anchor()->set_realtime_ns(kRealtimeBase);
  }

  // The process ran on `host` (ProcessStart; "node0" unless said).
  SyntheticProcess& OnHost(const std::string& host) {
    records_.front().mutable_process_start()->set_host(host);
    return *this;
  }

  // The host's clock reads `ns` ahead of the true time (behind when
  // negative): its anchor pairs tick 0 with kRealtimeBase + ns, so every
  // realtime of the process is off by `ns`, as on a host NTP left behind.
  SyntheticProcess& ClockAhead(int64_t ns) {
    for (pb::Record& r : records_)
      if (r.has_time_anchor())
        r.mutable_time_anchor()->set_realtime_ns(
            static_cast<uint64_t>(static_cast<int64_t>(kRealtimeBase) + ns));
    return *this;
  }

  // The next record happens at tick `t` (later ones follow 10 ticks apart).
  SyntheticProcess& At(uint64_t t) {
    t_ = t - kTick;
    return *this;
  }

  // ncclCommInitRank of `comm` as `rank` of `nranks`, begun and returned.
  SyntheticProcess& Init(uint64_t comm, int32_t rank, int32_t nranks) {
    pb::Record& b = Add();
    auto* begin = b.mutable_comm_init_begin();
    begin->set_comm(comm);
    begin->set_call(pb::COMM_INIT_RANK);
    begin->set_rank(rank);
    begin->set_nranks(nranks);
    pb::Record& e = Add();
    auto* end = e.mutable_comm_init_end();
    end->set_comm(comm);
    end->set_result(0);
    end->set_handle(Handle(comm, rank));
    end->set_rank(rank);
    end->set_nranks(nranks);
    rank_of_[comm] = rank;
    return *this;
  }

  // Collective #seq of `comm`, on the rank Init gave unless op.rank says.
  SyntheticProcess& Collective(uint64_t comm, uint64_t seq, const Op& op = Op()) {
    pb::Record& r = Add();
    auto* c = r.mutable_collective();
    c->set_result(op.result);
    c->set_comm(comm);
    c->set_seq(seq);
    c->set_call(op.call);
    c->set_count(op.count);
    c->set_datatype(op.datatype);
    if (op.redop) c->set_redop(*op.redop);
    if (op.root) c->set_root(*op.root);
    c->set_stream(op.stream);
    c->set_caller(0x400000 + seq);
    c->set_rank(op.rank ? *op.rank : RankIn(comm));
    return *this;
  }

  // Collectives #first..#last of `comm`, all alike.
  SyntheticProcess& Collectives(uint64_t comm, uint64_t first, uint64_t last, const Op& op = Op()) {
    for (uint64_t s = first; s <= last; ++s) Collective(comm, s, op);
    return *this;
  }

  // Send #seq to `peer` (its number among this rank's sends to that peer).
  SyntheticProcess& Send(uint64_t comm, uint64_t seq, int32_t peer,
                         const P2pArgs& args = P2pArgs()) {
    return PointToPoint(true, comm, seq, peer, args);
  }
  // Receive #seq from `peer`.
  SyntheticProcess& Recv(uint64_t comm, uint64_t seq, int32_t peer,
                         const P2pArgs& args = P2pArgs()) {
    return PointToPoint(false, comm, seq, peer, args);
  }

  // ncclCommDestroy / ncclCommAbort of `comm`, returned.
  SyntheticProcess& Destroy(uint64_t comm) { return End(comm, pb::COMM_DESTROY); }
  // ncclCommFinalize of `comm`, entered and never returned.
  SyntheticProcess& FinalizePending(uint64_t comm) {
    End(comm, pb::COMM_FINALIZE);
    records_.back().mutable_comm_end()->set_result(NCCLWATCH_RESULT_PENDING);
    return *this;
  }
  SyntheticProcess& Abort(uint64_t comm) { return End(comm, pb::COMM_ABORT); }

  // exit(code).
  SyntheticProcess& Exit(int32_t code) {
    pb::Record& r = Add();
    r.mutable_process_end()->set_how(pb::ProcessEnd::EXIT);
    r.mutable_process_end()->set_exit_code(code);
    return *this;
  }

  // A fatal signal; `disposition` 0: the default action (the process died).
  SyntheticProcess& Signal(int32_t signo, uint32_t disposition = 0) {
    pb::Record& r = Add();
    r.mutable_fatal_signal()->set_signo(signo);
    r.mutable_fatal_signal()->set_disposition(disposition);
    return *this;
  }

  // ---- completion and liveness (the shim's watcher records)

  // Completion of `comm` tracked with CUDA events (or not, with the shim's reason).
  SyntheticProcess& Tracked(uint64_t comm, int32_t device = 0) {
    auto* c = Add().mutable_completion_tracking();
    c->set_comm(comm);
    c->set_mechanism(pb::CompletionTracking::CUDA_EVENTS);
    c->set_markers(64);
    c->set_device(device);
    return *this;
  }
  SyntheticProcess& NotTracked(uint64_t comm, const std::string& why) {
    auto* c = Add().mutable_completion_tracking();
    c->set_comm(comm);
    c->set_mechanism(pb::CompletionTracking::NONE);
    c->set_why_not(why);
    return *this;
  }

  // The GPU finished `comm`'s collectives #0..#collectives-1, and every
  // operation recorded up to now.
  SyntheticProcess& Progress(uint64_t comm, uint64_t collectives, uint32_t pending = 0) {
    const uint64_t through = t_;
    auto* p = Add().mutable_progress();
    p->set_comm(comm);
    p->set_collectives(collectives);
    p->set_enqueued_t(through);
    p->set_pending(pending);
    return *this;
  }

  // Heartbeats every `interval` ticks (ms apart as the shim says: the
  // synthetic clock is 1 tick = 1 ns, so tests pass `interval_ms` * 1e6)
  // from tick `from` through `to`; the clock ends at `to`.
  SyntheticProcess& Heartbeats(uint64_t from, uint64_t to, uint32_t interval_ms = 1000) {
    const uint64_t step = uint64_t{interval_ms} * 1'000'000;
    for (uint64_t t = from; t <= to; t += step) {
      At(t);
      auto* h = Add().mutable_heartbeat();
      h->set_beat(++beat_);
      h->set_interval_ms(interval_ms);
    }
    return *this;
  }

  // The stall watchdog: collective #seq of `comm` waited `waited_ms`.
  SyntheticProcess& Stall(uint64_t comm, uint64_t seq, uint64_t completed, uint64_t waited_ms) {
    auto* st = Add().mutable_stall();
    st->set_comm(comm);
    st->set_call(pb::ALL_REDUCE);
    st->set_seq(seq);
    st->set_peer(-1);
    st->set_waited_ms(waited_ms);
    st->set_completed(completed);
    st->set_pending(1);
    st->set_rank(RankIn(comm));
    return *this;
  }

  // A sticky CUDA error the watcher met on `comm`'s work.
  SyntheticProcess& CudaError(uint64_t comm, const std::string& name, int32_t result,
                              uint64_t completed, int32_t device = 0) {
    auto* e = Add().mutable_cuda_error();
    e->set_comm(comm);
    e->set_result(result);
    e->set_name(name);
    e->set_text("uncorrectable ECC error encountered");
    e->set_device(device);
    e->set_where(pb::CudaError::EVENT_QUERY);
    e->set_seq(completed);
    return *this;
  }

  // NCCL reported an asynchronous error on `comm` (ncclCommGetAsyncError).
  SyntheticProcess& AsyncError(uint64_t comm, int32_t result, const std::string& text) {
    auto* e = Add().mutable_nccl_error();
    e->set_call(pb::COMM_GET_ASYNC_ERROR);
    e->set_result(result);
    e->set_comm(comm);
    e->set_last_error(text);
    e->set_async(true);
    return *this;
  }

  // ncclGetUniqueId made the id of communicator `comm` (its process hosts the root).
  SyntheticProcess& UniqueId(uint64_t comm) {
    auto* a = Add().mutable_api();
    a->set_result(0);
    a->set_call(pb::GET_UNIQUE_ID);
    a->set_value(static_cast<int64_t>(comm));
    return *this;
  }

  // ncclCommInitRank of `comm` entered and never returned.
  SyntheticProcess& InitPending(uint64_t comm, int32_t rank, int32_t nranks) {
    auto* begin = Add().mutable_comm_init_begin();
    begin->set_comm(comm);
    begin->set_call(pb::COMM_INIT_RANK);
    begin->set_rank(rank);
    begin->set_nranks(nranks);
    return *this;
  }

  // ncclCommSplit of `parent` (its split #`index`) into `comm`, entered and
  // never returned (NCCL's split waits for every member of the parent).
  SyntheticProcess& SplitPending(uint64_t parent, uint32_t index, uint64_t comm, int32_t color,
                                 int32_t rank, int32_t nranks) {
    auto* begin = Add().mutable_comm_init_begin();
    begin->set_comm(comm);
    begin->set_call(pb::COMM_SPLIT);
    begin->set_parent(parent);
    begin->set_split_index(index);
    begin->set_color(color);
    begin->set_rank(rank);
    begin->set_nranks(nranks);
    return *this;
  }

  // Collective #seq of `comm` was issued during CUDA graph capture: not tracked.
  SyntheticProcess& Captured(uint64_t comm, uint64_t seq) {
    auto* u = Add().mutable_untracked();
    u->set_comm(comm);
    u->set_call(pb::ALL_REDUCE);
    u->set_seq(seq);
    u->set_reason(pb::Untracked::CAPTURED);
    return *this;
  }

  // A libnccl in the module map (the shim records the modules it saw).
  SyntheticProcess& LoadedNccl() {
    auto* m = Add().mutable_module();
    m->set_path("/usr/lib/libnccl.so.2");
    m->set_base(0x7f0000000000);
    m->set_start(0x7f0000000000);
    m->set_end(0x7f0000100000);
    return *this;
  }

  // The process's ring wrapped: the file no longer holds its oldest records
  // (those not written here), as a loaded trace's statistics say.
  SyntheticProcess& Wrapped(uint64_t slots = 1) {
    overwritten_ = slots;
    return *this;
  }

  // The watcher held collective #seq of `comm` (HeldOperation): its
  // arguments, and `completed` collectives done on the GPU.
  SyntheticProcess& Held(uint64_t comm, uint64_t seq, const Op& op, uint64_t completed) {
    auto* h = Add().mutable_held_operation();
    h->set_comm(comm);
    h->set_call(op.call);
    h->set_seq(seq);
    h->set_peer(-1);
    h->set_count(op.count);
    h->set_datatype(op.datatype);
    if (op.redop) h->set_redop(*op.redop);
    if (op.root) h->set_root(*op.root);
    h->set_caller(0x1000);
    h->set_enqueued_t(t_);
    h->set_completed(completed);
    h->set_rank(RankIn(comm));
    h->set_waited_ms(1000);
    return *this;
  }

  // The GPU began collective #seq of `comm` at tick `begin` and finished it
  // at tick `end` (GpuTime; the synthetic clock is CLOCK_MONOTONIC).
  SyntheticProcess& GpuTime(uint64_t comm, uint64_t seq, uint64_t begin, uint64_t end) {
    auto* g = Add().mutable_gpu_time();
    g->set_comm(comm);
    g->set_call(pb::ALL_REDUCE);
    g->set_seq(seq);
    g->set_collectives(seq + 1);
    g->set_begin_ns(begin);
    g->set_end_ns(end);
    g->set_gpu_ns(end - begin);
    g->set_anchor_error_ns(1000);
    return *this;
  }

  // The file was read (a live snapshot of it taken) at tick `t`.
  SyntheticProcess& ReadAt(uint64_t t) {
    read_t_ = t;
    return *this;
  }

  // The trace as the decoder's model holds it.
  decoder::ProcessTrace Build() const {
    decoder::ProcessTrace p;
    p.path = "synthetic";
    if (read_t_ > 0) p.read_ns = static_cast<int64_t>(kRealtimeBase + read_t_);
    p.created_realtime_ns =
        created_;  // with host and pid, the trace's identity: distinct per process built
    p.stats.ring_overwritten = overwritten_;
    p.stats.ring_claimed = overwritten_ + records_.size();
    decoder::RecordImporter importer(&p);
    for (const pb::Record& r : records_) {
      const std::string bytes = r.SerializeAsString();
      REQUIRE(importer.Import(
          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
      ++p.records;
    }
    decoder::FinishProcessTrace(&p);
    return p;
  }

 private:
  static constexpr uint64_t kTick = 10;

  static uint64_t NextCreated() {
    static uint64_t next = 1;
    return next++;
  }
  uint64_t created_;

  static uint64_t Handle(uint64_t comm, int32_t rank) {
    return 0x7f0000000000ULL + (comm & 0xffff) * 0x100 + static_cast<uint64_t>(rank & 0xff);
  }

  int32_t RankIn(uint64_t comm) const {
    auto it = rank_of_.find(comm);
    return it == rank_of_.end() ? 0 : it->second;
  }

  pb::Record& Add() {
    t_ += kTick;
    records_.emplace_back();
    records_.back().set_t(t_);
    return records_.back();
  }

  SyntheticProcess& End(uint64_t comm, pb::Call call) {
    pb::Record& r = Add();
    auto* e = r.mutable_comm_end();
    e->set_comm(comm);
    e->set_handle(Handle(comm, RankIn(comm)));
    e->set_call(call);
    e->set_result(0);
    e->set_rank(RankIn(comm));
    return *this;
  }

  SyntheticProcess& PointToPoint(bool send, uint64_t comm, uint64_t seq, int32_t peer,
                                 const P2pArgs& args) {
    pb::Record& r = Add();
    auto* p = r.mutable_p2p();
    p->set_result(args.result);
    p->set_comm(comm);
    p->set_seq(seq);
    p->set_send(send);
    p->set_peer(peer);
    p->set_count(args.count);
    p->set_datatype(args.datatype);
    p->set_stream(args.stream);
    p->set_caller(send ? 0x500000 + seq : 0x600000 + seq);
    p->set_rank(RankIn(comm));
    return *this;
  }

  uint64_t t_ = 0;
  uint64_t beat_ = 0;
  uint64_t overwritten_ = 0;
  uint64_t read_t_ = 0;
  std::vector<pb::Record> records_;
  std::map<uint64_t, int32_t> rank_of_;
};

// The stream of `comm`'s rank `rank` in `trace`; fails the test if absent.
inline const decoder::CommStream& StreamOf(const decoder::ProcessTrace& trace, uint64_t comm,
                                           int32_t rank) {
  for (const decoder::CommStream& s : trace.streams)
    if (s.comm == comm && s.rank == rank) return s;
  FAIL("no stream for rank " << rank << " of communicator " << comm);
  return trace.streams.front();  // not reached
}

}  // namespace ncclwatch::testing

#endif  // NCCLWATCH_TESTS_UNIT_SYNTHETIC_PROCESS_H_

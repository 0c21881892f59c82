#include "synthetic_trace.h"

#include <time.h>

#include <algorithm>
#include <string>
#include <utility>

#include "ncclwatch/trace_fields.h"
#include "ncclwatch/wire_writer.h"
#include "ring/ring_writer.h"

namespace ncclwatch::bench {
namespace {

namespace f = ncclwatch::fields;
using shim::Region;
using shim::RingWriter;
using wire::WireWriter;

constexpr uint64_t kWorldComm = 0x5eed0000c0ffee01ull;

uint64_t Now(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// One Record: t, thread, and a body built by `fill`.
template <typename Fill>
bool Put(RingWriter& ring, Region region, uint64_t t, uint32_t body_field, Fill fill) {
  uint8_t buf[512];
  WireWriter w(buf, sizeof(buf));
  w.Varint(f::record::kT, t);
  w.Varint(f::record::kThread, 0);
  size_t body = w.BeginMessage(body_field);
  fill(w);
  w.EndMessage(body);
  return w.ok() && ring.Append(region, buf, w.size());
}

}  // namespace

bool WriteSyntheticJob(const std::string& dir, const SyntheticJob& job, std::string* error) {
  const uint64_t start_ms = Now(CLOCK_REALTIME) / 1000000;
  const int end_rank = job.end_rank < 0 ? job.ranks : std::min(job.end_rank, job.ranks);
  for (int rank = job.first_rank; rank < end_rank; ++rank) {
    const uint64_t calls = rank == job.short_rank ? job.short_calls : job.calls;
    // The ring holds every call: one 128-byte slot per collective, send,
    // receive and GPU time, rounded up to a power of two.
    uint64_t ring_bytes = 64 << 10;
    const uint64_t slots =
        calls * (job.sends ? 3 : 1) * (job.gpu_times ? 2 : 1) * (job.progress ? 2 : 1) + 64;
    while (ring_bytes < slots * NCCLWATCH_SLOT_BYTES) ring_bytes <<= 1;
    if (job.ring_bytes != 0) ring_bytes = job.ring_bytes;
    const uint64_t progress_every = std::max<uint64_t>(1, job.progress_every);
    shim::RingConfig config;
    config.claim_block_fixed = job.claim_blocks;
    config.dir = dir.c_str();
    config.ring_bytes = ring_bytes;
    config.host = "synth";
    config.pid = static_cast<uint32_t>(100000 + rank);
    config.start_ms = start_ms;
    char err[256];
    RingWriter ring;
    if (!ring.Open(config, err, sizeof(err))) {
      *error = err;
      return false;
    }
    // Protobuf collectives are all format 1 had: mark the file so, so that
    // an ncclwatch from before format 2 reads it too (side by side).
    if (!job.call_slots) ring.header()->format_version = 1;
    // Without GPU-time slots a ring holds nothing format 3 lacks (the same
    // reason: a build from before format 4 reads it too).
    else if (!job.gpu_times || !job.gpu_time_slots)
      ring.header()->format_version = 3;
    uint64_t t = job.start_ns != 0 ? job.start_ns : Now(CLOCK_MONOTONIC);
    const uint64_t t0 = t;
    bool ok = Put(ring, Region::kPinned, t, f::record::kProcessStart, [&](WireWriter& w) {
      w.Varint(f::process_start::kPid, config.pid);
      w.String(f::process_start::kHost, "synth");
      w.Sint(f::process_start::kGlobalRank, rank);
      w.String(f::process_start::kRankSource, "RANK");
      w.Sint(f::process_start::kWorldSize, job.ranks);
      w.Sint(f::process_start::kLocalRank, rank % 8);
      w.String(f::process_start::kExe, "/opt/train/synthetic");
      w.Varint(f::process_start::kShimVersion, 1);
    });
    ok = ok && Put(ring, Region::kPinned, t, f::record::kTimeAnchor, [&](WireWriter& w) {
           w.Varint(f::time_anchor::kT, t);
           w.Varint(f::time_anchor::kMonotonicNs, t);
           w.Varint(f::time_anchor::kRealtimeNs,
                    job.start_realtime_ns != 0 ? job.start_realtime_ns : Now(CLOCK_REALTIME));
         });
    ok = ok && Put(ring, Region::kPinned, ++t, f::record::kCommInitBegin, [&](WireWriter& w) {
           w.Fixed64(f::comm_init_begin::kComm, kWorldComm);
           w.Varint(f::comm_init_begin::kCall, f::kCommInitRank);
           w.Sint(f::comm_init_begin::kNranks, job.ranks);
           w.Sint(f::comm_init_begin::kRank, rank);
           w.Sint(f::comm_init_begin::kBlocking, -1);
         });
    ok = ok && Put(ring, Region::kPinned, ++t, f::record::kCommInitEnd, [&](WireWriter& w) {
           w.Fixed64(f::comm_init_end::kComm, kWorldComm);
           w.Fixed32(f::comm_init_end::kResult, 0);
           w.Fixed64(f::comm_init_end::kHandle, 0x7f0000001000ull);
           w.Sint(f::comm_init_end::kRank, rank);
           w.Sint(f::comm_init_end::kDevice, rank % 8);
           w.Sint(f::comm_init_end::kNranks, job.ranks);
         });
    if (job.inventory) {
      const std::string local = std::to_string(rank % 8);
      const std::string global = std::to_string(rank);
      const std::string world = std::to_string(job.ranks);
      const std::string bdf = "0000:" + std::to_string(10 + rank % 8) + ":00.0";
      ok = ok && Put(ring, Region::kPinned, ++t, f::record::kInventory, [&](WireWriter& w) {
             for (const auto& [name, value] :
                  {std::pair<const char*, const char*>{"LOCAL_RANK", local.c_str()},
                   {"MASTER_ADDR", "10.0.0.1"},
                   {"MASTER_PORT", "29500"},
                   {"RANK", global.c_str()},
                   {"WORLD_SIZE", world.c_str()}}) {
               size_t v = w.BeginMessage(f::inventory::kEnv);
               w.String(f::inventory::variable::kName, name);
               w.String(f::inventory::variable::kValue, value);
               w.EndMessage(v);
             }
             w.Sint(f::inventory::kNcclVersion, 22809);
             w.String(f::inventory::kNcclPath, "/usr/lib/x86_64-linux-gnu/libnccl.so.2");
             w.Sint(f::inventory::kCudaDriverVersion, 13000);
             w.String(f::inventory::kCommandLine, "/opt/train/synthetic --steps 1000");
             size_t g = w.BeginMessage(f::inventory::kGpus);
             w.String(f::inventory::gpu::kBdf, bdf.c_str());
             w.Sint(f::inventory::gpu::kIommuGroup, -1);
             w.EndMessage(g);
           });
    }
    // Killed: every rank waits in #short_calls but the one that died before it.
    const uint64_t issued =
        job.killed ? (rank == job.short_rank ? job.short_calls : job.short_calls + 1) : calls;
    for (uint64_t seq = 0; ok && seq < issued; ++seq) {
      const bool diverge = rank == job.diverging_rank && seq == job.diverging_seq;
      if (job.start_ns != 0) {
        // One step a millisecond, each rank a little off, the slow one late.
        uint64_t h = (static_cast<uint64_t>(rank) << 32 | seq) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        t = t0 + 1000 + (seq + 1) * 1000000 + h % 300000 +
            (rank == job.slow_rank ? job.slow_ns : 0);
      } else {
        t += 1000;
      }
      if (rank == job.gap_rank && seq >= job.gap_first && seq - job.gap_first < job.gap_calls)
        continue;  // written over
      if (job.call_slots) {
        const bool collective = seq < job.collectives_until;
        ncclwatch_call_slot s{};
        s.t = t;
        if (job.killed && seq == job.short_calls) s.result = NCCLWATCH_RESULT_PENDING;
        s.comm = kWorldComm;
        s.seq = seq;
        s.call = f::kAllReduce;
        s.count = diverge ? 1000 : 1u << 20;
        s.datatype = 7;  // ncclFloat32
        s.redop = 0;     // ncclSum
        s.root = -1;
        s.stream = 0x5000;
        s.sendbuff = s.recvbuff = 0x7f1000000000ull;
        s.caller = 0x401234;
        s.rank = rank;
        if (collective) ok = ring.AppendCallSlot(NCCLWATCH_SLOT_COLLECTIVE, s);
        // Step `seq`'s send and receive (none on the killed job's last step).
        const uint64_t sends_every = std::max<uint64_t>(1, job.sends_every);
        const bool step_sends = job.sends && job.ranks > 1 && seq % sends_every == 0 &&
                                !(job.killed && seq == job.short_calls);
        for (const bool send : {true, false}) {
          if (!ok || !step_sends) break;
          ncclwatch_call_slot p{};
          p.t = t + (send ? 1 : 2);
          p.comm = kWorldComm;
          p.seq = seq / sends_every;
          p.call = send ? f::kSend : f::kRecv;
          p.peer = send ? (rank + 1) % job.ranks : (rank + job.ranks - 1) % job.ranks;
          p.count = 1u << 16;
          p.datatype = 7;
          p.redop = -1;
          p.root = -1;
          p.stream = 0x5000;
          p.sendbuff = 0x7f2000000000ull;
          p.caller = 0x401300;
          p.rank = rank;
          ok = ring.AppendCallSlot(NCCLWATCH_SLOT_P2P, p);
        }
        if (job.progress && seq % progress_every == progress_every - 1 &&
            !(job.killed && seq >= job.short_calls)) {
          ok = ok && Put(ring, Region::kRing, t + 3, f::record::kProgress, [&](WireWriter& w) {
                 w.Fixed64(f::progress::kComm, kWorldComm);
                 const uint64_t done = std::min(seq + 1, job.collectives_until);
                 w.Varint(f::progress::kCollectives, done);
                 w.Varint(f::progress::kEnqueuedT, t + 2);
                 w.Varint(f::progress::kIssued, done);
               });
        }
        if (job.gpu_times && collective && !job.gpu_time_slots) {
          ok = ok && Put(ring, Region::kRing, t + 1, f::record::kGpuTime, [&](WireWriter& w) {
                 w.Fixed64(f::gpu_time::kComm, kWorldComm);
                 w.Varint(f::gpu_time::kCall, f::kAllReduce);
                 w.Varint(f::gpu_time::kSeq, seq);
                 w.Varint(f::gpu_time::kCollectives, seq + 1);
                 w.Varint(f::gpu_time::kBeginNs, t);
                 w.Varint(f::gpu_time::kEndNs, t + 500000);
                 w.Varint(f::gpu_time::kGpuNs, 500000);
               });
        } else if (job.gpu_times && collective) {
          // As the watcher writes it: a GPU-time slot (format 4).
          ncclwatch_gpu_time_slot g{};
          g.t = t + 1;
          g.comm = kWorldComm;
          g.call = f::kAllReduce;
          g.seq = seq;
          g.collectives = seq + 1;
          g.begin_ns = t;
          g.end_ns = t + 500000;
          g.gpu_ns = 500000;
          ok = ok && ring.AppendGpuTimeSlot(g);
        }
        continue;
      }
      ok = Put(ring, Region::kRing, t, f::record::kCollective, [&](WireWriter& w) {
        w.Fixed32(f::collective::kResult, 0);
        w.Fixed64(f::collective::kComm, kWorldComm);
        w.Varint(f::collective::kSeq, seq);
        w.Varint(f::collective::kCall, f::kAllReduce);
        w.Varint(f::collective::kCount, diverge ? 1000 : 1u << 20);
        w.Sint(f::collective::kDatatype, 7);  // ncclFloat32
        w.Sint(f::collective::kRedop, 0);     // ncclSum
        w.Fixed64(f::collective::kStream, 0x5000);
        w.Fixed64(f::collective::kSendbuff, 0x7f1000000000ull);
        w.Fixed64(f::collective::kRecvbuff, 0x7f1000000000ull);
        w.Fixed64(f::collective::kCaller, 0x401234);
        w.Sint(f::collective::kRank, rank);
      });
    }
    if (!job.killed)
      ok = ok && Put(ring, Region::kPinned, ++t, f::record::kProcessEnd, [&](WireWriter& w) {
             w.Varint(f::process_end::kHow, f::process_end::kHowExit);
             w.Sint(f::process_end::kExitCode, 0);
           });
    // Unmapped now (the writer has no other close): a job of thousands of
    // ranks written by one process would otherwise hold every file mapped,
    // and its disk space with it, deleted or not, until the process exits.
    ring.DropInChild();
    if (!ok) {
      *error = "a synthetic record did not fit";
      return false;
    }
  }
  return true;
}

}  // namespace ncclwatch::bench

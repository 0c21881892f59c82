// make_trace_seeds OUT_DIR: writes the trace_file_fuzzer's seeds, small
// traces made by the shim's own ring writer: a ring that wrapped (200 calls
// in 64 slots), records that span several slots, a pinned region that
// overflowed into the ring, a trace with nothing in it, and one of call
// slots (format 2's fixed-layout collectives, sends, groups) and GPU-time
// slots (format 4) that wrapped. Each is a few
// tens of KiB; they are made when the fuzzers run, never checked in.

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#include <filesystem>
#include <string>

#include "ncclwatch/trace_fields.h"
#include "ncclwatch/wire_writer.h"
#include "ring/ring_writer.h"

namespace {

namespace f = ncclwatch::fields;
using ncclwatch::shim::Region;
using ncclwatch::shim::RingWriter;
using ncclwatch::wire::WireWriter;

constexpr uint64_t kComm = 0x5eed0000c0ffee01ull;

template <typename Fill>
bool Put(RingWriter& ring, Region region, uint64_t t, uint32_t body, Fill fill) {
  uint8_t buf[NCCLWATCH_MAX_RECORD_BYTES];
  WireWriter w(buf, sizeof(buf));
  w.Varint(f::record::kT, t);
  w.Varint(f::record::kThread, 0);
  const size_t at = w.BeginMessage(body);
  fill(w);
  w.EndMessage(at);
  return w.ok() && ring.Append(region, buf, w.size());
}

// One seed: `calls` collectives, `pinned_extra` more pinned records than
// the region holds, and a last error `error_len` bytes long.
bool Seed(const std::string& out, const std::string& name, int rank, int calls, int pinned_extra,
          size_t error_len, bool call_slots = false) {
  const std::string scratch = out + "/." + name;
  std::filesystem::create_directories(scratch);
  ncclwatch::shim::RingConfig config;
  config.dir = scratch.c_str();
  config.ring_bytes = 64 * NCCLWATCH_SLOT_BYTES;
  config.pinned_bytes = 64 * NCCLWATCH_SLOT_BYTES;
  config.host = "seed";
  config.pid = static_cast<uint32_t>(100 + rank);
  config.start_ms = 1;
  char error[256];
  RingWriter ring;
  if (!ring.Open(config, error, sizeof(error))) {
    fprintf(stderr, "make_trace_seeds: %s\n", error);
    return false;
  }
  uint64_t t = 1000;
  bool ok = Put(ring, Region::kPinned, t, f::record::kProcessStart, [&](WireWriter& w) {
    w.Varint(f::process_start::kPid, config.pid);
    w.String(f::process_start::kHost, "seed");
    w.Sint(f::process_start::kGlobalRank, rank);
    w.String(f::process_start::kRankSource, "RANK");
    w.Sint(f::process_start::kWorldSize, 2);
  });
  ok = ok && Put(ring, Region::kPinned, t, f::record::kTimeAnchor, [&](WireWriter& w) {
         w.Varint(f::time_anchor::kT, t);
         w.Varint(f::time_anchor::kMonotonicNs, t);
         w.Varint(f::time_anchor::kRealtimeNs, 1700000000000000000ull);
       });
  const int inits = pinned_extra > 0 ? 64 + pinned_extra : 1;  // the pinned region holds 64 slots
  for (int i = 0; ok && i < inits; ++i) {
    ok = Put(ring, Region::kPinned, ++t, f::record::kCommInitBegin, [&](WireWriter& w) {
      w.Fixed64(f::comm_init_begin::kComm, kComm + static_cast<uint64_t>(i));
      w.Varint(f::comm_init_begin::kCall, f::kCommInitRank);
      w.Sint(f::comm_init_begin::kNranks, 2);
      w.Sint(f::comm_init_begin::kRank, rank);
    });
  }
  for (int seq = 0; ok && seq < calls; ++seq) {
    if (call_slots) {  // format 2's fixed layout, as the shim writes collectives
      ncclwatch_call_slot s{};
      s.t = t += 1000;
      s.comm = kComm;
      s.seq = static_cast<uint64_t>(seq);
      s.call = seq % 4 == 3 ? f::kSend : f::kAllReduce;
      s.count = 1024;
      s.datatype = 7;
      s.redop = 0;
      s.root = -1;
      s.peer = 1 - rank;
      s.rank = rank;
      ok = ring.AppendCallSlot(seq % 4 == 3   ? NCCLWATCH_SLOT_P2P
                               : seq % 4 == 2 ? NCCLWATCH_SLOT_GROUP
                                              : NCCLWATCH_SLOT_COLLECTIVE,
                               s);
      if (ok && seq % 4 < 2) {  // its GPU time, as the watcher writes it (format 4)
        ncclwatch_gpu_time_slot g{};
        g.t = t + 500;
        g.comm = kComm;
        g.call = f::kAllReduce;
        g.seq = static_cast<uint64_t>(seq);
        g.collectives = static_cast<uint64_t>(seq) + 1;
        g.begin_ns = t + 100;
        g.end_ns = t + 400;
        g.gpu_ns = 300;
        ok = ring.AppendGpuTimeSlot(g);
      }
      continue;
    }
    ok = Put(ring, Region::kRing, t += 1000, f::record::kCollective, [&](WireWriter& w) {
      w.Fixed32(f::collective::kResult, 0);
      w.Fixed64(f::collective::kComm, kComm);
      w.Varint(f::collective::kSeq, static_cast<uint64_t>(seq));
      w.Varint(f::collective::kCall, f::kAllReduce);
      w.Varint(f::collective::kCount, 1024);
      w.Sint(f::collective::kDatatype, 7);
      w.Sint(f::collective::kRedop, 0);
      w.Sint(f::collective::kRank, rank);
    });
  }
  if (ok && error_len > 0) {
    const std::string text(error_len, 'e');
    ok = Put(ring, Region::kRing, ++t, f::record::kNcclError, [&](WireWriter& w) {
      w.Varint(f::nccl_error::kCall, f::kAllReduce);
      w.Fixed32(f::nccl_error::kResult, 2);
      w.Fixed64(f::nccl_error::kComm, kComm);
      w.String(f::nccl_error::kLastError, text.c_str());
    });
  }
  const std::string written = ring.path();
  munmap(ring.header(), ring.header()->file_bytes);
  std::error_code ec;
  std::filesystem::rename(written, out + "/" + name, ec);
  std::filesystem::remove_all(scratch);
  if (!ok || ec) fprintf(stderr, "make_trace_seeds: could not write %s\n", name.c_str());
  return ok && !ec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_trace_seeds OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  std::filesystem::create_directories(out);
  bool ok = Seed(out, "empty.trace", 0, 0, 0, 0);
  ok &= Seed(out, "few_calls.trace", 0, 5, 0, 0);
  ok &= Seed(out, "wrapped_ring.trace", 1, 200, 0, 0);
  ok &= Seed(out, "long_record.trace", 0, 3, 0, 2000);
  ok &= Seed(out, "pinned_overflow.trace", 1, 10, 70, 0);
  ok &= Seed(out, "call_slots.trace", 0, 100, 0, 0, true);
  return ok ? 0 : 1;
}

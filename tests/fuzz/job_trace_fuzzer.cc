// Fuzzes the decoder from trace to diagnosis with traces that are valid
// files holding absurd values: the fuzz input is read as a program that
// writes 1 to 4 processes' traces with the shim's own ring writer and wire
// encoder (shim/ring/ring_writer.h, proto/ncclwatch/wire_writer.h), so that
// every record parses and the model and the analyses see sequence numbers of
// 2^63, communicators of -5 or 2^31 ranks, peers outside the communicator,
// counts and times that wrap, instead of being refused at the first byte.
//
// Then: load each trace, JobAnalysis, Diagnose, and both reports; then
// summarize the traces and read the summary back. A crash,
// a leak, an allocation over -rss_limit_mb or a run over -timeout is a bug.
//
// Each trace is a tiny file (64 ring slots, so the ring wraps) in a scratch
// folder removed after every run.

#include <fuzzer/FuzzedDataProvider.h>
#include <google/protobuf/stubs/logging.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "fuzz_support.h"
#include "ncclwatch/trace_fields.h"
#include "ncclwatch/wire_writer.h"
#include "report/report.h"
#include "ring/ring_writer.h"
#include "summary/summary_reader.h"
#include "summary/summary_writer.h"

namespace {

namespace f = ncclwatch::fields;
using ncclwatch::shim::Region;
using ncclwatch::shim::RingWriter;
using ncclwatch::wire::WireWriter;

// A 64-bit value: mostly small or on a boundary, sometimes anything.
uint64_t Value(FuzzedDataProvider& in) {
  static constexpr uint64_t kEdges[] = {
      0,          1,          2,          3,          7,
      0x7fffffff, 0x80000000, 0xffffffff, 1ull << 32, 1ull << 40,
      1ull << 62, 1ull << 63, ~0ull,      ~0ull - 1,  0x7fffffffffffffff};
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return in.ConsumeIntegralInRange<uint64_t>(0, 8);
    case 1:
      return in.PickValueInArray(kEdges);
    case 2:
      return in.ConsumeIntegralInRange<uint64_t>(0, 1000);
    default:
      return in.ConsumeIntegral<uint64_t>();
  }
}
int64_t Signed(FuzzedDataProvider& in) {
  return in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-2, 8)
                          : static_cast<int64_t>(Value(in));
}
// Communicators: a few shared by the processes (so that analyses line them up), or any.
uint64_t Comm(FuzzedDataProvider& in) {
  static constexpr uint64_t kComms[] = {0x5eed0000c0ffee01ull, 0x5eed0000c0ffee02ull,
                                        0x5eed0000c0ffee03ull, 0};
  return in.ConsumeIntegralInRange<int>(0, 7) ? in.PickValueInArray(kComms)
                                              : in.ConsumeIntegral<uint64_t>();
}
std::string Text(FuzzedDataProvider& in, size_t max) { return in.ConsumeRandomLengthString(max); }

// Writes one record: t, thread, and a body of kind `body` built by `fill`.
template <typename Fill>
void Put(RingWriter& ring, FuzzedDataProvider& in, uint64_t* t, uint32_t body, Fill fill) {
  uint8_t buf[NCCLWATCH_MAX_RECORD_BYTES];
  WireWriter w(buf, sizeof(buf));
  *t += in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 1000000) : Value(in);
  w.Varint(f::record::kT, *t);
  w.Varint(f::record::kThread, in.ConsumeIntegralInRange<uint32_t>(0, 3));
  const size_t at = w.BeginMessage(body);
  fill(w);
  w.EndMessage(at);
  if (w.ok()) ring.Append(in.ConsumeBool() ? Region::kPinned : Region::kRing, buf, w.size());
}

// Writes one call slot (format 2's fixed layout for collectives, sends and
// receives, groups) of kind `kind`, every field fuzzed, to the ring.
void PutCallSlot(RingWriter& ring, FuzzedDataProvider& in, uint64_t* t, uint8_t kind, int index) {
  ncclwatch_call_slot s{};
  *t += in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 1000000) : Value(in);
  s.t = *t;
  s.thread = in.ConsumeIntegralInRange<uint32_t>(0, 3);
  s.result = in.ConsumeBool() ? 0 : static_cast<int32_t>(Signed(in));
  s.comm = Comm(in);
  s.seq = Value(in);
  s.call = in.ConsumeIntegralInRange<uint32_t>(0, 14);
  s.count = Value(in);
  s.datatype = static_cast<int32_t>(Signed(in));
  s.redop = in.ConsumeBool() ? -1 : static_cast<int32_t>(Signed(in));
  s.root = in.ConsumeBool() ? -1 : static_cast<int32_t>(Signed(in));
  s.peer = static_cast<int32_t>(Signed(in));
  s.stream = Value(in);
  s.sendbuff = Value(in);
  s.recvbuff = Value(in);
  s.group = Value(in);
  s.depth = static_cast<uint32_t>(Value(in));
  s.flags = in.ConsumeIntegral<uint32_t>();
  s.caller = Value(in);
  s.rank = in.ConsumeBool() ? index : static_cast<int32_t>(Signed(in));
  ring.AppendCallSlot(kind, s);
}

// A GPU time as the watcher writes it (format 4's fixed slot).
void PutGpuTimeSlot(RingWriter& ring, FuzzedDataProvider& in, uint64_t* t) {
  ncclwatch_gpu_time_slot g{};
  *t += in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 1000000) : Value(in);
  g.t = *t;
  g.thread = in.ConsumeIntegralInRange<uint32_t>(0, 3);
  g.call = in.ConsumeIntegralInRange<uint32_t>(0, 14);
  g.comm = Comm(in);
  g.seq = Value(in);
  g.collectives = in.ConsumeBool() ? g.seq + 1 : Value(in);
  g.group_ops = in.ConsumeIntegralInRange<uint32_t>(0, 4);
  g.begin_ns = Value(in);
  g.end_ns =
      in.ConsumeBool() ? g.begin_ns + in.ConsumeIntegralInRange<uint64_t>(0, 1000000) : Value(in);
  g.gpu_ns = Value(in);
  g.anchor_error_ns = Value(in);
  ring.AppendGpuTimeSlot(g);
}

void WriteProcess(FuzzedDataProvider& in, const std::string& dir, int index) {
  const std::string host = in.ConsumeBool() ? "node" + std::to_string(index % 2) : Text(in, 40);
  ncclwatch::shim::RingConfig config;
  config.dir = dir.c_str();
  config.ring_bytes = 64 * NCCLWATCH_SLOT_BYTES;
  config.pinned_bytes = 64 * NCCLWATCH_SLOT_BYTES;
  config.host = host.c_str();
  config.pid = static_cast<uint32_t>(1000 + index);
  config.start_ms = 1;
  char error[256];
  RingWriter ring;
  if (!ring.Open(config, error, sizeof(error))) return;
  uint64_t t = in.ConsumeIntegral<uint32_t>();
  const int records = in.ConsumeIntegralInRange<int>(0, 200);
  for (int r = 0; r < records && in.remaining_bytes() > 0; ++r) {
    switch (in.ConsumeIntegralInRange<int>(0, 16)) {
      case 0:
        Put(ring, in, &t, f::record::kProcessStart, [&](WireWriter& w) {
          w.Varint(f::process_start::kPid, in.ConsumeIntegral<uint32_t>());
          w.String(f::process_start::kHost, host.c_str());
          w.Sint(f::process_start::kGlobalRank, in.ConsumeBool() ? index : Signed(in));
          w.String(f::process_start::kRankSource, "RANK");
          w.Sint(f::process_start::kWorldSize, Signed(in));
          w.Sint(f::process_start::kLocalRank, Signed(in));
          w.String(f::process_start::kExe, Text(in, 20).c_str());
          w.String(f::process_start::kJobId, in.ConsumeBool() ? "job" : Text(in, 10).c_str());
          w.Varint(f::process_start::kShimVersion, 1);
        });
        break;
      case 1:
        Put(ring, in, &t, f::record::kTimeAnchor, [&](WireWriter& w) {
          w.Varint(f::time_anchor::kT, in.ConsumeBool() ? t : Value(in));
          w.Varint(f::time_anchor::kMonotonicNs, Value(in));
          w.Varint(f::time_anchor::kRealtimeNs, Value(in));
        });
        break;
      case 2:
        Put(ring, in, &t, f::record::kCommInitBegin, [&](WireWriter& w) {
          w.Fixed64(f::comm_init_begin::kComm, Comm(in));
          w.Varint(f::comm_init_begin::kCall, in.ConsumeIntegralInRange<uint32_t>(20, 26));
          w.Sint(f::comm_init_begin::kNranks, Signed(in));
          w.Sint(f::comm_init_begin::kRank, in.ConsumeBool() ? index : Signed(in));
          if (in.ConsumeBool()) {
            w.Fixed64(f::comm_init_begin::kParent, Comm(in));
            w.Sint(f::comm_init_begin::kColor, Signed(in));
            w.Sint(f::comm_init_begin::kKey, Signed(in));
            w.Varint(f::comm_init_begin::kSplitIndex, Value(in));
          }
          for (int i = in.ConsumeIntegralInRange<int>(0, 3); i > 0; --i)
            w.Sint(f::comm_init_begin::kExcluded, Signed(in));
          w.Sint(f::comm_init_begin::kBlocking, Signed(in));
          w.Fixed64(f::comm_init_begin::kCaller, Value(in));
          w.Sint(f::comm_init_begin::kDevice, Signed(in));
          w.String(f::comm_init_begin::kBusId,
                   in.ConsumeBool() ? "0000:18:00.0" : Text(in, 16).c_str());
        });
        break;
      case 3:
        Put(ring, in, &t, f::record::kCommInitEnd, [&](WireWriter& w) {
          w.Fixed64(f::comm_init_end::kComm, Comm(in));
          w.Fixed32(f::comm_init_end::kResult, static_cast<uint32_t>(Signed(in)));
          w.Fixed64(f::comm_init_end::kHandle, Value(in));
          w.Sint(f::comm_init_end::kRank, in.ConsumeBool() ? index : Signed(in));
          w.Sint(f::comm_init_end::kDevice, Signed(in));
          w.Sint(f::comm_init_end::kNranks, Signed(in));
        });
        break;
      case 4:
        Put(ring, in, &t, f::record::kCommEnd, [&](WireWriter& w) {
          w.Fixed64(f::comm_end::kComm, Comm(in));
          w.Fixed64(f::comm_end::kHandle, Value(in));
          w.Varint(f::comm_end::kCall, in.ConsumeIntegralInRange<uint32_t>(30, 33));
          w.Fixed32(f::comm_end::kResult, static_cast<uint32_t>(Signed(in)));
          w.Sint(f::comm_end::kRank, Signed(in));
        });
        break;
      case 7: {
        const uint8_t kind = in.PickValueInArray<uint8_t>(
            {NCCLWATCH_SLOT_COLLECTIVE, NCCLWATCH_SLOT_COLLECTIVE, NCCLWATCH_SLOT_P2P,
             NCCLWATCH_SLOT_GROUP, NCCLWATCH_SLOT_GPU_TIME});
        if (kind == NCCLWATCH_SLOT_GPU_TIME)
          PutGpuTimeSlot(ring, in, &t);
        else
          PutCallSlot(ring, in, &t, kind, index);
        break;
      }
      case 5:
      case 6:
        Put(ring, in, &t, f::record::kCollective, [&](WireWriter& w) {
          w.Fixed32(f::collective::kResult,
                    in.ConsumeBool() ? 0 : static_cast<uint32_t>(Signed(in)));
          w.Fixed64(f::collective::kComm, Comm(in));
          w.Varint(f::collective::kSeq, Value(in));
          w.Varint(f::collective::kCall, in.ConsumeIntegralInRange<uint32_t>(0, 12));
          w.Varint(f::collective::kCount, Value(in));
          w.Sint(f::collective::kDatatype, Signed(in));
          if (in.ConsumeBool()) w.Sint(f::collective::kRedop, Signed(in));
          if (in.ConsumeBool()) w.Sint(f::collective::kRoot, Signed(in));
          w.Fixed64(f::collective::kStream, Value(in));
          w.Fixed64(f::collective::kSendbuff, Value(in));
          w.Fixed64(f::collective::kRecvbuff, Value(in));
          if (in.ConsumeBool()) w.Varint(f::collective::kGroup, Value(in));
          w.Fixed64(f::collective::kCaller, Value(in));
          w.Sint(f::collective::kRank, in.ConsumeBool() ? index : Signed(in));
        });
        break;
      case 8:
        Put(ring, in, &t, f::record::kP2p, [&](WireWriter& w) {
          w.Fixed32(f::p2p::kResult, in.ConsumeBool() ? 0 : static_cast<uint32_t>(Signed(in)));
          w.Fixed64(f::p2p::kComm, Comm(in));
          w.Varint(f::p2p::kSeq, Value(in));
          w.Varint(f::p2p::kSend, in.ConsumeBool());
          w.Sint(f::p2p::kPeer, Signed(in));
          w.Varint(f::p2p::kCount, Value(in));
          w.Sint(f::p2p::kDatatype, Signed(in));
          w.Fixed64(f::p2p::kStream, Value(in));
          w.Fixed64(f::p2p::kBuff, Value(in));
          if (in.ConsumeBool()) w.Varint(f::p2p::kGroup, Value(in));
          w.Fixed64(f::p2p::kCaller, Value(in));
          w.Sint(f::p2p::kRank, in.ConsumeBool() ? index : Signed(in));
        });
        break;
      case 9:
        Put(ring, in, &t, f::record::kGroup, [&](WireWriter& w) {
          w.Fixed32(f::group::kResult, static_cast<uint32_t>(Signed(in)));
          w.Varint(f::group::kCall, in.ConsumeIntegralInRange<uint32_t>(12, 14));
          w.Varint(f::group::kGroup, Value(in));
          w.Varint(f::group::kDepth, Value(in));
          w.Fixed64(f::group::kCaller, Value(in));
        });
        break;
      case 10:
        Put(ring, in, &t, f::record::kApi, [&](WireWriter& w) {
          w.Fixed32(f::api::kResult, static_cast<uint32_t>(Signed(in)));
          w.Varint(f::api::kCall, in.ConsumeIntegralInRange<uint32_t>(0, 60));
          w.Fixed64(f::api::kComm, Comm(in));
          w.Sint(f::api::kValue, Signed(in));
        });
        break;
      case 11:
        Put(ring, in, &t, f::record::kFatalSignal, [&](WireWriter& w) {
          w.Sint(f::fatal_signal::kSigno, Signed(in));
          w.Sint(f::fatal_signal::kCode, Signed(in));
          w.Fixed64(f::fatal_signal::kAddress, Value(in));
          w.Sint(f::fatal_signal::kSenderPid, Signed(in));
          w.Sint(f::fatal_signal::kDisposition, Signed(in));
        });
        break;
      case 12:
        Put(ring, in, &t, f::record::kSysCall, [&](WireWriter& w) {
          w.Varint(f::sys_call::kKind, in.ConsumeIntegralInRange<uint32_t>(0, 20));
          w.Sint(f::sys_call::kRet, Signed(in));
          w.Sint(f::sys_call::kErr, Signed(in));
          w.Sint(f::sys_call::kFd, Signed(in));
          w.String(f::sys_call::kPath, in.ConsumeBool() ? "/dev/shm/nccl-x" : Text(in, 40).c_str());
          w.Varint(f::sys_call::kSize, Value(in));
          const std::string addr =
              in.ConsumeBytesAsString(in.ConsumeIntegralInRange<size_t>(0, 32));
          w.Bytes(f::sys_call::kAddr, addr.data(), addr.size());
          w.Varint(f::sys_call::kArg, Value(in));
          w.Varint(f::sys_call::kInCall, in.ConsumeIntegralInRange<uint32_t>(0, 60));
          w.Varint(f::sys_call::kFromNccl, in.ConsumeBool());
          w.Fixed64(f::sys_call::kCaller, Value(in));
        });
        break;
      case 13:
        Put(ring, in, &t, f::record::kNcclError, [&](WireWriter& w) {
          w.Varint(f::nccl_error::kCall, in.ConsumeIntegralInRange<uint32_t>(0, 60));
          w.Fixed32(f::nccl_error::kResult, static_cast<uint32_t>(Signed(in)));
          w.Fixed64(f::nccl_error::kComm, Comm(in));
          w.String(f::nccl_error::kLastError, Text(in, 120).c_str());
          w.Varint(f::nccl_error::kAsync, in.ConsumeBool());
        });
        break;
      case 14:
        Put(ring, in, &t, f::record::kInventory, [&](WireWriter& w) {
          w.Sint(f::inventory::kNcclVersion, Signed(in));
          w.Sint(f::inventory::kCudaDriverVersion, Signed(in));
          w.Sint(f::inventory::kCudaRuntimeVersion, Signed(in));
          for (int i = in.ConsumeIntegralInRange<int>(0, 3); i > 0; --i) {
            const size_t v = w.BeginMessage(f::inventory::kEnv);
            w.String(f::inventory::variable::kName,
                     in.ConsumeBool() ? "NCCL_SOCKET_IFNAME" : Text(in, 20).c_str());
            w.String(f::inventory::variable::kValue, Text(in, 20).c_str());
            w.EndMessage(v);
          }
          for (int i = in.ConsumeIntegralInRange<int>(0, 3); i > 0; --i) {
            const size_t v = w.BeginMessage(f::inventory::kInterfaces);
            w.String(f::inventory::interface::kName,
                     in.ConsumeBool() ? "eth0" : Text(in, 16).c_str());
            w.Varint(f::inventory::interface::kFlags, Value(in));
            const std::string addr =
                in.ConsumeBytesAsString(in.ConsumeIntegralInRange<size_t>(0, 32));
            w.Bytes(f::inventory::interface::kAddr, addr.data(), addr.size());
            w.Varint(f::inventory::interface::kPrefixLen, Value(in));
            w.EndMessage(v);
          }
          w.Varint(f::inventory::kShmKnown, in.ConsumeBool());
          w.Varint(f::inventory::kShmSize, Value(in));
          w.Varint(f::inventory::kShmFree, Value(in));
          w.Varint(f::inventory::kMemlockSoft, Value(in));
          for (int i = in.ConsumeIntegralInRange<int>(0, 2); i > 0; --i) {
            const size_t g = w.BeginMessage(f::inventory::kGpus);
            w.String(f::inventory::gpu::kBdf,
                     in.ConsumeBool() ? "0000:18:00.0" : Text(in, 16).c_str());
            w.Sint(f::inventory::gpu::kIommuGroup, Signed(in));
            for (int j = in.ConsumeIntegralInRange<int>(0, 2); j > 0; --j) {
              const size_t b = w.BeginMessage(f::inventory::gpu::kBridges);
              w.String(f::inventory::pci_bridge::kBdf, Text(in, 16).c_str());
              w.Sint(f::inventory::pci_bridge::kAcsCtrl, Signed(in));
              w.EndMessage(b);
            }
            w.EndMessage(g);
          }
          w.Varint(f::inventory::kIommuEnabled, in.ConsumeBool());
        });
        break;
      case 15:
        // A memory-sharing CUDA call, failed or not, from NCCL or not.
        Put(ring, in, &t, f::record::kCudaCall, [&](WireWriter& w) {
          w.Varint(f::cuda_call::kFunction, in.ConsumeIntegralInRange<uint32_t>(0, 60));
          w.Sint(f::cuda_call::kResult, in.ConsumeBool() ? 0 : Signed(in));
          w.Varint(f::cuda_call::kVia, in.ConsumeIntegralInRange<uint32_t>(0, 5));
          w.Sint(f::cuda_call::kDevice, Signed(in));
          w.Sint(f::cuda_call::kPeer, Signed(in));
          w.Varint(f::cuda_call::kHandleType, in.ConsumeIntegralInRange<uint32_t>(0, 9));
          w.Sint(f::cuda_call::kErr, Signed(in));
          w.Varint(f::cuda_call::kInCall, in.ConsumeIntegralInRange<uint32_t>(0, 60));
          w.Varint(f::cuda_call::kFromNccl, in.ConsumeBool());
          w.Fixed64(f::cuda_call::kCaller, Value(in));
        });
        break;
      default:
        Put(ring, in, &t, f::record::kProcessEnd, [&](WireWriter& w) {
          w.Varint(f::process_end::kHow, in.ConsumeIntegralInRange<uint32_t>(0, 3));
          w.Sint(f::process_end::kExitCode, Signed(in));
        });
        break;
    }
  }
  // The writer keeps its mapping for the life of a traced process; here, one run.
  munmap(ring.header(), ring.header()->file_bytes);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Strings with invalid UTF-8 are meant: libprotobuf refusing them need not be told.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  ncclwatch::fuzz::ScratchDir dir;
  const int processes = in.ConsumeIntegralInRange<int>(1, 4);
  for (int p = 0; p < processes; ++p) WriteProcess(in, dir.path(), p);

  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path(), ec))
    files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  ncclwatch::decoder::JobAnalysis job;
  for (const std::string& file : files) {
    absl::StatusOr<ncclwatch::decoder::ProcessTrace> trace = ncclwatch::fuzz::LoadTrace(file);
    if (trace.ok()) {
      job.AddProcess(std::move(*trace));
    } else {
      job.AddUnreadable(file, std::string(trace.status().message()));
    }
  }
  if (job.processes().empty()) return 0;
  job.Finish();
  const ncclwatch::decoder::Diagnosis d = ncclwatch::decoder::Diagnose(job);
  std::ostringstream human, json;
  const ncclwatch::decoder::Report report = ncclwatch::decoder::MakeTracedReport(job, d);
  ncclwatch::decoder::WriteHuman(report, human);
  ncclwatch::decoder::WriteJson(report, json);

  // The same traces summarized (two readings, each stream surveyed) with a
  // small window, and read back: what a node's `summarize` and a big
  // trace's diagnosis do with them.
  ncclwatch::decoder::SummaryOptions options;
  options.window = in.ConsumeIntegralInRange<uint32_t>(1, 64);
  options.gpu_times = in.ConsumeIntegralInRange<uint64_t>(1, 8);
  options.host = "fuzz";
  absl::StatusOr<std::string> summary = ncclwatch::decoder::BuildSummary(files, options);
  if (!summary.ok()) return 0;
  absl::StatusOr<std::unique_ptr<ncclwatch::decoder::SummaryReader>> reader =
      ncclwatch::decoder::SummaryReader::FromBytes(*summary, "fuzz");
  if (!reader.ok()) abort();  // a summary just made must read back
  ncclwatch::decoder::ProcessTrace t;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&t);
    if (!more.ok()) abort();
    if (!*more) break;
  }
  return 0;
}

// ProcessTrace: one traced process's timeline, the model every analysis reads.
//
// LoadProcessTrace reads a trace file (trace/trace_file.h) as hostile input,
// decodes each whole record straight from its bytes (model/record_importer.h;
// no libprotobuf, no allocation for the per-call records) and builds, once:
//   - the process's identity, inventory, modules and clock anchors;
//   - typed tables of its events (model/events.h), each in timeline order:
//     both regions of the file merged by time, so `order` is the true order
//     of what the process did;
//   - one CommStream per (communicator, rank) it holds: its numbered calls,
//     whether the trace still has #0, and what it issued before each
//     point-to-point call (model/comm_stream.h).
// Analyses read these and never re-derive them.
//
// Thread-safety: immutable after loading; different files may be loaded on
// different threads at once.

#ifndef NCCLWATCH_DECODER_MODEL_PROCESS_TRACE_H_
#define NCCLWATCH_DECODER_MODEL_PROCESS_TRACE_H_

#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "model/comm_stream.h"
#include "model/events.h"
#include "model/left_out_calls.h"
#include "ncclwatch/ring_format.h"
#include "trace/time_order.h"
#include "trace/trace_file.h"

namespace ncclwatch::decoder {

class TraceFile;

// The pid namespace of a host's init, whose numbers dmesg uses
// (PROC_PID_INIT_INO, include/linux/proc_ns.h): a process's pid in it is
// the host's number for it; in any other (a container's), two processes
// of one host may have the same pid.
constexpr uint64_t kInitPidNamespace = 0xEFFFFFFCu;

struct ProcessTrace {
  std::string path;
  uint32_t pid = 0;
  std::string host;
  int32_t global_rank = -1;  // from the launcher's environment
  std::string rank_source;
  int32_t world_size = -1;
  int32_t local_rank = -1;
  std::string exe;
  std::string job_id;
  uint64_t pid_namespace = 0;  // the inode of its /proc/self/ns/pid, 0 unknown (older shims)
  uint32_t clock = NCCLWATCH_CLOCK_MONOTONIC_NS;
  uint64_t created_realtime_ns =
      0;  // when the shim created the file (with host and pid, its identity)
  bool has_start = false;
  // Why the shim made the file: 0 at the first NCCL call, 1 when it found
  // NCCL loaded (the file holds what came before any NCCL call), 2 to say
  // what it could not see (trace.proto ProcessStart.traced_from).
  uint32_t traced_from = 0;
  int32_t nccl_version = 0;  // what ncclGetVersion returned (e.g. 22809), 0 if never called

  std::vector<TimeAnchorEvent> anchors;  // sorted by t
  std::vector<ModuleInfo> modules;
  std::vector<CommMembership> comms;
  std::vector<CollectiveEvent> collectives;
  std::vector<P2pEvent> p2p;
  std::vector<OneSidedEvent> one_sided;  // puts, signals and waits (NCCL 2.29)
  std::vector<GroupEvent> groups;
  std::vector<ApiEvent> apis;
  std::vector<FatalSignalEvent> signals;
  std::optional<ProcessEndEvent> end;
  std::vector<SysCallEvent> syscalls;
  std::vector<NcclErrorEvent> errors;
  std::vector<CudaCallEvent> cuda_calls;  // memory-sharing CUDA calls
  InventoryInfo inventory;
  std::vector<NcclNotSeenEvent> not_seen;  // what the shim could not see
  // Before the first NCCL call: the rendezvous's sockets, counted.
  std::vector<SocketActivityEvent> socket_activity;
  // Completion and liveness (the shim's watcher threads).
  std::vector<CompletionTrackingEvent> tracking;
  std::vector<ProgressEvent> progress;
  std::vector<StallEvent> stalls;
  std::vector<CudaErrorEvent> cuda_errors;
  std::vector<UntrackedEvent> untracked;
  std::vector<GpuTimeEvent> gpu_times;   // when the GPU began and finished each operation
  std::vector<HeldOperationEvent> held;  // the watcher's holds (the collectives the ring lost
                                         // among them restored into `collectives`)
  Liveness liveness;

  // One per (communicator, rank) that has a formed membership or a call.
  std::vector<CommStream> streams;

  // Read from a node's summary (ncclwatch summarize) rather than the trace
  // itself: the summary file, the host it was made on, and what it left out
  // of the trace's calls (`path` is then the trace's path on that host).
  std::string summary;
  std::string summary_host;
  // Read through its summary made in memory here (summary/job_inputs.h),
  // not from a node's summary file: the trace itself was read just now.
  bool summarized_here = false;
  // From a node's summary, made some time before.
  bool FromNodeSummary() const { return !summary.empty() && !summarized_here; }
  std::vector<LeftOutCalls> left_out;    // collectives, per (communicator, rank)
  std::vector<LeftOutP2p> left_out_p2p;  // sends and receives, per (comm, rank, peer, direction)
  uint64_t left_out_groups = 0;          // group calls (ncclGroupStart/End) left out
  // GPU times (GpuTime records) left out, per communicator (those with any).
  struct LeftOutGpuTimes {
    uint64_t comm = 0;
    uint64_t count = 0;
  };
  std::vector<LeftOutGpuTimes> left_out_gpu_times;
  // How many GPU times of communicator `comm` a summary left out (0: none,
  // or read from the trace itself).
  uint64_t LeftOutGpuTimesOf(uint64_t comm) const {
    for (const LeftOutGpuTimes& l : left_out_gpu_times)
      if (l.comm == comm) return l.count;
    return 0;
  }
  // One per stream (streams[i]), its kept calls digested by block: filled
  // by a summary's reader, empty for a trace read whole.
  std::vector<KeptBlocks> kept_blocks;

  TraceFileStats stats;
  uint64_t unparsed_records = 0;
  uint64_t records = 0;
  uint64_t last_t = 0;  // the latest record's time
  uint64_t last_order = 0;
  // Room for the call tables (collectives, sends and receives, group
  // calls) once each one's first row comes: the file's slots in use.
  // Reserved, the rows are resident only as far as they are filled (the
  // allocation is address space until written), and a table of millions of
  // calls is never copied and faulted in afresh as it grows, which was most
  // of the time reading a big ring took. 0: grown as rows come (a summary).
  size_t call_table_room = 0;
  // Before a call table's first row (the importers): room for the slots
  // the other call tables have not taken, unless a trace read before into
  // this ProcessTrace left it more (Reset keeps the tables' capacity). Where
  // the address space cannot be had (a limit on it, or strict overcommit:
  // vm.overcommit_memory=2 charges a reserve as if filled), the table grows
  // as rows come instead.
  template <typename Table>
  void MakeRoom(Table& table) {
    if (!table.empty()) return;
    const size_t taken = collectives.size() + p2p.size() + groups.size();
    if (call_table_room <= taken || table.capacity() >= call_table_room - taken) return;
    try {
      table.reserve(call_table_room - taken);
    } catch (const std::bad_alloc&) {
    }
  }
  // When this snapshot of the file was taken (CLOCK_REALTIME as reading
  // began): a live process's heartbeat is as fresh as it was then, whatever
  // time the reading of the other traces took.
  int64_t read_ns = 0;

  // The rank to name this process by: the launcher's, else its rank in the
  // first communicator it made, else -1.
  int32_t DisplayRank() const;
  // Trace-clock ticks to CLOCK_REALTIME / CLOCK_MONOTONIC nanoseconds.
  int64_t RealtimeNs(uint64_t t) const;
  int64_t MonotonicNs(uint64_t t) const;
  // A CLOCK_MONOTONIC time the process recorded (a GpuTime's begin or end)
  // on CLOCK_REALTIME, as its first anchor pairs the two; 0 without one.
  int64_t RealtimeOfMonotonicNs(uint64_t monotonic_ns) const;
  // The module holding `address`, or nullptr.
  const ModuleInfo* ModuleAt(uint64_t address) const;
  // The membership of identity `comm` (first match), or nullptr.
  const CommMembership* Membership(uint64_t comm) const;
  // The membership of `comm` with rank `rank`, or nullptr.
  const CommMembership* Membership(uint64_t comm, int32_t rank) const;
  // Whether a library dlopen'ed as `name` ("libibverbs.so") is in the
  // module map: a module whose file name starts with name's file name.
  bool Loaded(const std::string& name) const;
  // The order of the process's last call into NCCL that advanced a
  // communicator (a collective, send or receive, or group call), 0 if none.
  uint64_t LastCallOrder() const;
  // How `comm`'s completion was tracked, or nullptr when no record says.
  const CompletionTrackingEvent* Tracking(uint64_t comm) const;
  // The latest Progress of `comm` of its highest count, or nullptr; with
  // `reached_t`, also when the count first read that (the earliest Progress
  // of it: the watcher writes one whenever any operation completes).
  const ProgressEvent* LastProgress(uint64_t comm, uint64_t* reached_t = nullptr) const;
  // Back to an empty trace, keeping the tables' memory.
  void Reset();
};

// A trace's ticks to CLOCK_REALTIME nanoseconds, each exactly as
// ProcessTrace::RealtimeNs converts it, for times asked mostly in ascending
// order (a rank's calls): the nearest anchor is followed along instead of
// searched for every time (a time before the last one asked is searched).
// For an analysis that converts a time per call (the collective alignment).
// Holds a reference to the trace's anchors: use it while the trace lives.
class RealtimeClock {
 public:
  explicit RealtimeClock(const ProcessTrace& trace);
  int64_t operator()(uint64_t t);

 private:
  const std::vector<TimeAnchorEvent>& anchors_;
  const bool ticks_;  // TSC ticks with anchors; else the times are CLOCK_MONOTONIC's
  const double rate_;
  size_t lower_ = 0;  // the first anchor not before last_t_
  uint64_t last_t_ = 0;
};

absl::StatusOr<ProcessTrace> LoadProcessTrace(const std::string& path);

// After the last record is imported (RecordImporter): sorts the clock
// anchors and builds the streams. The loaders call it; tests that build a
// trace from records call it too.
void FinishProcessTrace(ProcessTrace* trace);

// Builds `trace->streams` from its tables (FinishProcessTrace's second step).
void BuildStreams(ProcessTrace* trace);
// Restores into `trace->collectives` and its streams the collectives the
// watcher held (HeldOperation) that the ring lost, and the GPU's count at
// the hold (FinishProcessTrace's last step).
void RestoreHeldOperations(ProcessTrace* trace);
// Its second half for one hold `h` whose call the ring lost (or a hold of a
// send or receive, or of a call a summary left out): the GPU's count at
// the hold, where no later Progress of its communicator says more. For a
// reader that keeps no collective rows (LightReading), which knows itself
// which held calls the ring kept.
void RestoreHeldProgress(ProcessTrace* trace, const HeldOperationEvent& h);
// Sorts `trace->anchors` by time (FinishProcessTrace's first step).
void SortAnchors(ProcessTrace* trace);

// The same into `trace`, which is reset first but keeps its tables' memory:
// loading many traces one after another into one ProcessTrace allocates
// (and faults in) that memory once. The file is read mapped, and read again
// copied when its reader cannot vouch for what it read in place
// (TraceFileStats::read_again: a live writer lapped it, or it shrank).
absl::Status LoadProcessTraceInto(const std::string& path, ProcessTrace* trace);

// How ReadProcessTrace reads a big trace for a reader that keeps its own
// account of its calls (summary/summary_writer.cc), so that the ring's size
// costs no memory: what is not kept still takes its place in the timeline
// (`order`) and counts as a record. Each hook gets the entry as
// TraceFile::ForEachEntry gives it: whether it lies in the pinned region,
// its first slot, and its bytes.
using CallSlotFn =
    absl::FunctionRef<void(bool pinned, uint64_t slot, absl::Span<const uint8_t> payload)>;
// What an entry that is not a handed-over call slot was read as: a GPU
// time or a Progress record (with its communicator), a group call's slot,
// or anything else.
enum class EntryRead { kGpuTime, kProgress, kGroup, kOther };
using EntryFn =
    absl::FunctionRef<void(bool pinned, uint64_t slot, EntryRead read_as, uint64_t comm)>;
// A chunk of the ring's slots, before its entries (ForEachEntry's `chunk`,
// with the reading's cursor and its time order's state).
using ChunkFn = absl::FunctionRef<void(uint64_t first_slot, uint64_t slots, uint64_t cursor,
                                       const TimeOrder::State& order)>;
struct LightReading {
  // Set: each collective's call slot (its payload) is handed to it instead
  // of becoming a row (a format-1 trace's Collective records still become
  // rows), and the held operations are not restored: the caller knows which
  // the ring lost (RestoreHeldProgress).
  const CallSlotFn* collective = nullptr;
  // Set: each send's and receive's call slot likewise.
  const CallSlotFn* p2p = nullptr;
  // Set: told of every other entry (a record, a group call's slot) once it
  // is read into the model as usual, and what it was read as.
  const EntryFn* other = nullptr;
  // Set: told where each chunk of the ring's slots begins.
  const ChunkFn* chunk = nullptr;
  // GPU times (one per operation) counted per communicator into
  // `left_out_gpu_times` instead of kept as rows.
  bool count_gpu_times = false;
};

// One reading of `file` into `trace` (reset first, its memory kept), as
// LoadProcessTraceInto reads it, for a caller that reads the file more than
// once: the caller reads it again copied where `trace->stats.read_again`
// says.
void ReadProcessTrace(const TraceFile& file, ProcessTrace* trace, const LightReading& light = {});

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_PROCESS_TRACE_H_

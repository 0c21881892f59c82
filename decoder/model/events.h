// The events of a process's timeline: one struct per record kind of
// trace.proto, decoded (model/record_importer.cc) into typed tables of
// ProcessTrace (model/process_trace.h).
//
// Every event that the timeline orders carries `order`, its position among
// all of the process's records in the order they happened (both regions of
// the trace file merged by time), and `t`, its trace-clock time. Strings that
// come from the operating system (paths, hosts, environment values,
// interface names, NCCL's error text) are kept as the bytes recorded: any
// byte survives, and the reports escape what they print.
//
// Adding a record kind: a struct here, a table in ProcessTrace, and an
// importer in its family (model/import/). Nothing else re-derives it.

#ifndef NCCLWATCH_DECODER_MODEL_EVENTS_H_
#define NCCLWATCH_DECODER_MODEL_EVENTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/numbering.h"
#include "trace/socket_address.h"

namespace ncclwatch::decoder {

// The fields are laid out without padding (96 bytes a row, not 104: the
// table is the decoder's largest), what the analyses compare first.
struct CollectiveEvent {
  CollectiveEvent() = default;
  // Every field given, in their order: the importer's row, stored straight
  // into the table (a row built on the stack and copied in is reloaded 16
  // bytes at a time, which the store buffer cannot forward from the 4- and
  // 8-byte stores that built it).
  CollectiveEvent(uint64_t order_, uint64_t t_, uint64_t comm_, uint64_t seq_, uint64_t count_,
                  uint32_t call_, int32_t datatype_, int32_t redop_, int32_t root_, int32_t result_,
                  int32_t rank_, uint64_t stream_, uint64_t group_, uint64_t caller_,
                  uint32_t thread_)
      : order(order_),
        t(t_),
        comm(comm_),
        seq(seq_),
        count(count_),
        call(call_),
        datatype(datatype_),
        redop(redop_),
        root(root_),
        result(result_),
        rank(rank_),
        stream(stream_),
        group(group_),
        caller(caller_),
        thread(thread_) {}

  uint64_t order = 0;  // position in the process's timeline
  uint64_t t = 0;
  uint64_t comm = 0;
  uint64_t seq = 0;
  uint64_t count = 0;
  uint32_t call = 0;  // trace.proto Call
  int32_t datatype = 0;
  int32_t redop = -1;  // -1: not a reduction
  int32_t root = -1;   // -1: not rooted
  int32_t result = kResultPending;
  int32_t rank = -1;
  uint64_t stream = 0;
  uint64_t group = 0;
  uint64_t caller = 0;
  uint32_t thread = 0;
};
static_assert(sizeof(CollectiveEvent) == 96, "a collective's row has padding again");

struct P2pEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint64_t comm = 0;
  uint64_t seq = 0;
  bool send = false;
  int32_t peer = -1;
  uint64_t count = 0;
  int32_t datatype = 0;
  uint64_t stream = 0;
  uint64_t group = 0;
  int32_t result = kResultPending;
  uint64_t caller = 0;
  int32_t rank = -1;
};

// A one-sided operation (NCCL 2.29, trace.proto OneSided): a put with its
// signal, or a signal alone, to `peer` (signal number `seq` this rank sent
// it), or a wait for signals from peers.
struct OneSidedEvent {
  struct Wait {
    int32_t peer = -1;
    int32_t op_cnt = 0;
    uint64_t seq = 0;  // signals from `peer` awaited before this wait
  };
  uint64_t order = 0;
  uint64_t t = 0;
  uint64_t comm = 0;
  int32_t rank = -1;
  uint32_t call = 0;  // kPutSignal, kSignal, kWaitSignal
  int32_t peer = -1;
  uint64_t seq = 0;
  uint64_t count = 0;
  int32_t datatype = 0;
  int32_t result = kResultPending;
  uint64_t caller = 0;
  std::vector<Wait> waits;
};

struct GroupEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint32_t call = 0;
  uint64_t group = 0;
  uint32_t depth = 0;
  int32_t result = kResultPending;
  uint64_t caller = 0;
};

struct ApiEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint32_t call = 0;
  uint64_t comm = 0;
  int64_t value = 0;
  int32_t result = kResultPending;
};

// One rank of one communicator in this process, from creation to end: the
// CommInitBegin, CommInitEnd and CommEnd records of that rank, joined.
struct CommMembership {
  uint64_t comm = 0;
  uint32_t init_call = 0;
  uint64_t handle = 0;
  int32_t rank = -1;
  int32_t nranks = -1;
  int32_t device = -1;
  uint64_t parent = 0;
  int32_t color = 0;
  int32_t key = 0;
  uint32_t split_index = 0;
  std::vector<int32_t> excluded;
  uint64_t grow_id = 0;  // ncclCommGrow: the identity of the id the rank passed, 0 none
  uint64_t init_t = 0;
  uint64_t init_order = 0;
  bool init_returned = false;
  int32_t init_result = kResultPending;
  uint64_t caller = 0;
  int32_t begin_device = -1;  // the calling thread's CUDA device when the init began
  std::string bus_id;         // its PCI bus id
  // The last finalize/destroy/abort/revoke, if any.
  uint32_t end_call = 0;
  int32_t end_result = kResultPending;
  uint64_t end_t = 0;
  uint64_t end_order = 0;

  // The init returned a communicator NCCL created (or is still creating, for
  // a non-blocking one).
  bool Formed() const { return init_returned && Accepted(init_result); }
};

struct FatalSignalEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  int32_t signo = 0;
  int32_t code = 0;
  uint64_t address = 0;
  int32_t sender_pid = 0;
  uint32_t disposition = 0;  // 0 default action, 1 ignored, 2 the program's handler
};

struct ProcessEndEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint32_t how = 0;
  int32_t exit_code = -1;
};

// NCCL code in the process the shim could not see into (trace.proto NcclNotSeen).
struct NcclNotSeenEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint32_t reason = 0;  // 1 linked in, 2 RTLD_DEEPBIND, 3 a second libnccl, 4 no slot left,
                        // 5 NCCL's code active, no call seen, 6 device-API communicators
  std::string path;
  uint64_t comm = 0;        // 6: the communicator whose GPUs communicate on their own
  bool calls_seen = false;  // the shim had seen NCCL calls when it was written
};

// Before the process's first NCCL call: its TCP socket calls of one kind, to
// or on one address, with one outcome, counted (trace.proto SocketActivity,
// shim/core/rendezvous_sockets.h). The importer keeps one row per (kind,
// address, err, deferred): the latest record's count, which holds.
struct SocketActivityEvent {
  uint64_t order = 0;  // of the latest record
  uint64_t t = 0;
  uint32_t kind = 0;      // 1 bind, 2 listen, 3 connect, 4 accept
  std::string addr;       // raw struct sockaddr bytes, "" none
  int32_t err = 0;        // 0 success, else the errno
  bool deferred = false;  // the outcome of a connect started non-blocking
  uint64_t count = 0;
  uint64_t first_t = 0;  // trace clock
  uint64_t last_t = 0;
  uint64_t caller = 0;
};

struct ModuleInfo {
  std::string path;
  uint64_t base = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  std::string build_id;
};

// The module of a module map that holds `address`, or nullptr.
inline const ModuleInfo* ModuleContaining(const std::vector<ModuleInfo>& modules,
                                          uint64_t address) {
  for (const ModuleInfo& m : modules)
    if (address >= m.start && address < m.end) return &m;
  return nullptr;
}

struct TimeAnchorEvent {
  uint64_t t = 0;
  uint64_t monotonic_ns = 0;
  uint64_t realtime_ns = 0;
};

// A C library call NCCL made (trace.proto SysCall).
struct SysCallEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint32_t kind = 0;  // trace.proto SysCall.Kind
  int64_t ret = 0;
  int32_t err = 0;  // errno when it failed
  int32_t fd = -1;
  std::string path;
  int64_t size = -1;
  int64_t offset = -1;
  std::optional<SocketAddress> addr;
  int32_t arg = 0;
  uint32_t in_call = 0;
  bool from_nccl = false;
  uint64_t caller = 0;
};

// A failed NCCL call or an asynchronous error, with NCCL's text.
struct NcclErrorEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint32_t call = 0;
  int32_t result = 0;
  uint64_t comm = 0;
  std::string text;
  bool async = false;
};

struct InterfaceInfo {
  std::string name;
  uint32_t flags = 0;
  SocketAddress addr;
  int prefix_len = 0;
  bool Up() const { return flags & 0x1; }
  bool Loopback() const { return flags & 0x8; }
  bool Running() const { return flags & 0x40; }
};

// A CUDA call that shares memory between processes or devices (trace.proto
// CudaCall): legacy IPC, cuMem shareable handles, multicast, peer access.
struct CudaCallEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint32_t function = 0;  // trace.proto CudaFunction
  int32_t result = 0;     // CUresult / cudaError_t
  uint32_t via = 0;       // trace.proto CudaCall.Via
  int32_t device = -1;
  int32_t peer = -1;
  uint64_t size = 0;
  uint64_t ptr = 0;
  uint64_t handle = 0;
  uint32_t handle_type = 0;  // CUmemAllocationHandleType
  uint64_t flags = 0;
  int32_t fd = -1;
  int32_t can_access = -1;
  int32_t err = 0;
  uint32_t in_call = 0;
  bool from_nccl = false;
  uint64_t caller = 0;
  uint32_t num_devices = 0;
  uint32_t access_flags = 0;
};

// A GPU's path to its peers (trace.proto Inventory.Gpu).
struct GpuPathInfo {
  std::string bdf;
  int32_t iommu_group = -1;
  struct Bridge {
    std::string bdf;
    int32_t acs_ctrl = -1;  // -1 unreadable, -2 no ACS capability
  };
  std::vector<Bridge> bridges;
};

// The process's inventory (trace.proto Inventory).
struct InventoryInfo {
  bool present = false;
  // Written when NCCL was found loaded, before any NCCL call: the NCCL and
  // CUDA versions were not asked (0 is "not asked", not "none").
  bool at_load = false;
  std::map<std::string, std::string> env;
  int32_t nccl_version = 0;
  std::string nccl_path;
  int32_t cuda_driver_version = 0;
  int32_t cuda_runtime_version = 0;
  std::string framework;
  std::string framework_path;
  std::vector<InterfaceInfo> interfaces;
  bool shm_known = false;
  uint64_t shm_size = 0;
  uint64_t shm_free = 0;
  uint64_t memlock_soft = 0;
  uint64_t memlock_hard = 0;
  std::string cgroup;
  std::string container;
  std::vector<GpuPathInfo> gpus;  // the P2P hardware path
  bool iommu_enabled = false;
  uint32_t nvswitches = 0;
  std::string command_line;  // arguments joined by blanks, credentials redacted

  const std::string* Env(const std::string& name) const {
    auto it = env.find(name);
    return it == env.end() ? nullptr : &it->second;
  }
};

// ---------------------------------------------------------------------------
// Completion and liveness, written by the shim's watcher threads (trace.proto
// CompletionTracking, Progress, Heartbeat, Stall, CudaError, Untracked).
// ---------------------------------------------------------------------------

// How a communicator's GPU completion was tracked in this process.
struct CompletionTrackingEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint64_t comm = 0;
  uint32_t mechanism = 0;  // 0 not tracked (`why_not`), 1 CUDA events
  std::string why_not;
  uint32_t markers = 0;
  int32_t device = -1;

  bool Tracked() const { return mechanism != 0; }
};

// The GPU had finished more of a communicator's work.
struct ProgressEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint64_t comm = 0;
  uint64_t collectives = 0;  // collectives #0 .. #collectives-1 completed
  uint64_t enqueued_t = 0;   // operations recorded at or before this time completed
  uint32_t pending = 0;
  uint64_t issued = 0;
};

// A communicator's oldest pending operation completed nothing for the
// stall time (NCCLWATCH_STALL).
struct StallEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint64_t comm = 0;
  uint32_t call = 0;
  uint64_t seq = 0;
  int32_t peer = -1;
  bool send = false;
  uint64_t waited_ms = 0;
  uint64_t completed = 0;
  uint32_t pending = 0;
  uint32_t group_ops = 0;
  int32_t rank = -1;
  int32_t nranks = -1;
};

// A CUDA error the watcher met while following a communicator's work.
struct CudaErrorEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint64_t comm = 0;
  int32_t result = 0;  // CUresult
  std::string name;    // CUDA_ERROR_ECC_UNCORRECTABLE
  std::string text;
  int32_t device = -1;
  uint32_t where = 0;  // 1 event query, 2 event record
  uint64_t seq = 0;    // collectives completed when it was seen
};

// An operation whose completion is not tracked (graph capture, not yet enqueued).
struct UntrackedEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint64_t comm = 0;
  uint32_t call = 0;
  uint64_t seq = 0;
  uint32_t reason = 0;  // 1 captured, 2 in progress (non-blocking)
};

// When the GPU began and finished one tracked operation (trace.proto
// GpuTime): CLOCK_MONOTONIC nanoseconds of its host (0 unknown), and the
// GPU's own measure of begin -> end (0 unknown).
struct GpuTimeEvent {
  uint64_t order = 0;
  uint64_t t = 0;  // when the watcher wrote it
  uint64_t comm = 0;
  uint32_t call = 0;
  uint64_t seq = 0;
  uint64_t collectives = 0;  // the communicator's collectives once it was done
  uint32_t group_ops = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint64_t gpu_ns = 0;
  uint64_t anchor_error_ns = 0;

  // A collective of its own (not a group's operations): collective number
  // `collectives - 1`.
  bool OneCollective() const { return group_ops == 0 && collectives > 0; }
};

// The oldest operation of a communicator that had not completed a second
// after the watcher saw it pending, held where the ring cannot lap it
// (trace.proto HeldOperation).
struct HeldOperationEvent {
  uint64_t order = 0;
  uint64_t t = 0;  // when it was held
  uint64_t comm = 0;
  uint32_t call = 0;
  uint64_t seq = 0;
  int32_t peer = -1;
  bool send = false;
  uint64_t count = 0;
  int32_t datatype = -1;
  int32_t redop = -1;
  int32_t root = -1;
  uint64_t caller = 0;
  uint64_t enqueued_t = 0;
  uint64_t completed = 0;
  uint32_t group_ops = 0;
  int32_t rank = -1;
  uint64_t waited_ms = 0;
};

// The watcher's heartbeats: how many, and when the first and last were written.
struct Liveness {
  uint64_t beats = 0;      // heartbeat records read
  uint64_t last_beat = 0;  // the highest beat number
  uint64_t first_t = 0;    // trace clock of the first and last read
  uint64_t last_t = 0;
  uint32_t interval_ms = 0;  // the interval the shim used
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_EVENTS_H_

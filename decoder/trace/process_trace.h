// ProcessTrace: what one traced process did, decoded from its trace file.
//
// LoadProcessTrace parses every whole record with libprotobuf into compact,
// typed events (a record that does not parse counts as torn) and keeps the
// clock anchors to turn trace-clock ticks into wall-clock time. Events are in
// the order the process wrote them (`order`), which within a thread is the
// order of its calls.
//
// Thread-safety: a ProcessTrace is immutable after loading.

#ifndef NCCLWATCH_DECODER_TRACE_PROCESS_TRACE_H_
#define NCCLWATCH_DECODER_TRACE_PROCESS_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <map>

#include "absl/status/statusor.h"
#include "ncclwatch/ring_format.h"
#include "trace/socket_address.h"
#include "trace/trace_file.h"

namespace ncclwatch::decoder {

constexpr int32_t kResultPending = NCCLWATCH_RESULT_PENDING;

struct CollectiveEvent {
  uint64_t order = 0;  // position among all of the process's records
  uint64_t t = 0;
  uint64_t comm = 0;
  uint64_t seq = 0;
  uint32_t call = 0;  // trace.proto Call
  uint64_t count = 0;
  int32_t datatype = 0;
  int32_t redop = -1;  // -1: not a reduction
  int32_t root = -1;   // -1: not rooted
  uint64_t stream = 0;
  uint64_t group = 0;
  int32_t result = kResultPending;
  uint64_t caller = 0;
  uint32_t thread = 0;
  int32_t rank = -1;
};

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

// One rank of one communicator in this process, from creation to end.
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
};

struct FatalSignalEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  int32_t signo = 0;
  int32_t code = 0;
  uint64_t address = 0;
  int32_t sender_pid = 0;
  uint32_t disposition = 0;
};

struct ProcessEndEvent {
  uint64_t order = 0;
  uint64_t t = 0;
  uint32_t how = 0;
  int32_t exit_code = -1;
};

struct ModuleInfo {
  std::string path;
  uint64_t base = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  std::string build_id;
};

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
  int32_t err = 0;    // errno when it failed
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

// The process's inventory (trace.proto Inventory).
struct InventoryInfo {
  bool present = false;
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

  const std::string* Env(const std::string& name) const {
    auto it = env.find(name);
    return it == env.end() ? nullptr : &it->second;
  }
};

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
  uint32_t clock = NCCLWATCH_CLOCK_MONOTONIC_NS;
  bool has_start = false;
  int32_t nccl_version = 0;  // what ncclGetVersion returned (e.g. 22809), 0 if never called

  std::vector<TimeAnchorEvent> anchors;
  std::vector<ModuleInfo> modules;
  std::vector<CommMembership> comms;
  std::vector<CollectiveEvent> collectives;
  std::vector<P2pEvent> p2p;
  std::vector<GroupEvent> groups;
  std::vector<ApiEvent> apis;
  std::vector<FatalSignalEvent> signals;
  std::optional<ProcessEndEvent> end;
  std::vector<SysCallEvent> syscalls;
  std::vector<NcclErrorEvent> errors;
  InventoryInfo inventory;

  TraceFileStats stats;
  uint64_t unparsed_records = 0;
  uint64_t records = 0;
  uint64_t last_t = 0;       // the latest record's time
  uint64_t last_order = 0;

  // The rank to name this process by: the launcher's, else its rank in the
  // first communicator it made, else -1.
  int32_t DisplayRank() const;
  // Trace-clock ticks to CLOCK_REALTIME / CLOCK_MONOTONIC nanoseconds.
  int64_t RealtimeNs(uint64_t t) const;
  int64_t MonotonicNs(uint64_t t) const;
  // The module holding `address`, or nullptr.
  const ModuleInfo* ModuleAt(uint64_t address) const;
  // The membership of handle/identity `comm` (first match), or nullptr.
  const CommMembership* Membership(uint64_t comm) const;
  // Whether a library dlopen'ed as `name` ("libibverbs.so") is in the
  // module map: a module whose file name starts with name's file name.
  bool Loaded(const std::string& name) const;
};

absl::StatusOr<ProcessTrace> LoadProcessTrace(const std::string& path);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_PROCESS_TRACE_H_

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

#include "absl/status/statusor.h"
#include "ncclwatch/ring_format.h"
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
};

absl::StatusOr<ProcessTrace> LoadProcessTrace(const std::string& path);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_PROCESS_TRACE_H_

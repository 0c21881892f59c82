// A Finding: one thing ncclwatch concluded about a job, as facts.
//
// The analyses (diagnosis.cc, init_failure.cc, logs/log_diagnosis.cc) fill
// a Finding with what they saw: its kind and role, the communicator, the
// collective's number, the ranks, and a payload with the facts of its kind
// (the groups of a mismatch, what a missing rank did instead, the two sides of
// a send, ...). They write no sentences: decoder/report/ renders every
// `detail`, `fix` and rank group's `doing` from these facts, for the human
// report and for the JSON contract alike (README.md, "JSON output").
//
//   analysis ──Finding{kind, role, comm, seq, ranks, facts}──> report
//                                                              ├─ RenderFinding: detail, fix,
//                                                              groups ├─ human report (headline
//                                                              first) └─ JSON writer
//
// A call site is a fact too (a process and a return address); the report
// names it ("train_loop+0x4909 (main)") from that process's module map.

#ifndef NCCLWATCH_DECODER_ANALYSIS_FINDING_H_
#define NCCLWATCH_DECODER_ANALYSIS_FINDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "analysis/collective_signature.h"
#include "analysis/last_call.h"

namespace ncclwatch::decoder {

// What a finding is about. The JSON names are in report/finding_text.h.
enum class FindingKind {
  kCollectiveMismatch,  // the ranks disagree on a collective
  kMissingRank,         // ranks never entered a collective the others entered
  kRankDied,            // the same, because the rank's process died
  kP2pMismatch,         // a send and its receive disagree, or lack the other
  kOrderInversion,      // two communicators' collectives in different orders
  kInitFailure,         // NCCL's initialisation failed (init forensics)
  // From explain (plain logs) only:
  kGpuFault,
  kOutOfMemory,
  kNvlinkFabric,
  kCudaIpcFailure,
  kCudaError,
  kWatchdogTimeout,
  kLogInsufficient,
  kNetworkError,       // the network failed under a running job (IB completion errors, sockets)
  kRendezvousFailure,  // the framework's rendezvous (TCPStore, c10d/etcd) before NCCL
  kDdpUsage,           // DistributedDataParallel misused (unused parameters, multiple forwards)
  kTeardownHang,       // the job hung or was aborted while tearing its process groups down
  // Notes:
  kMissingTraces,
  kUnreadableTraces,
  kDuplicateTraces,
  kP2pPath,     // note: PCIe ACS redirection on the bridges above a host's GPUs
  kConfigSkew,  // note: ranks whose NCCL_* settings, versions or interfaces differ
  kNcclNotVisible,
};

// Its place in the story.
enum class FindingRole {
  kRootCause,    // the first cause, one per job
  kConsequence,  // what followed from it
  kWarning,      // a risk that did not (yet) break the job: the job stays healthy
  kNote,         // about the input (traces missing or unreadable)
};

// A call in one process, named by the report from that process's modules.
struct CallSiteRef {
  int process = -1;      // index into the job's processes; -1: unknown
  uint64_t address = 0;  // the return address in the caller
};

// ---------------------------------------------------------------- payloads

// collective_mismatch from traces: the groups of ranks that called the same
// thing at collective `seq`.
struct CollectiveMismatchFacts {
  struct Group {
    std::vector<int> ranks;
    CollectiveSignature call;  // the collective with its arguments
    CallSiteRef site;
  };
  std::vector<Group> groups;     // the majority (what NCCL expected) first, then the deviants
  std::vector<int> not_reached;  // ranks that had not reached collective `seq`
};

// How a rank that stopped before a collective left it.
enum class Departure {
  kLeftCommunicator,    // destroyed, finalized, aborted or revoked it (end_call)
  kExited,              // its process exited without destroying it
  kOtherCommunicators,  // alive, calling other communicators
  kDiedOfSignal,        // a crash signal, or a signal before the others waited
  kAliveUntilSignal,    // alive outside NCCL until the job was ended by a signal
  kKilledUntraced,      // no end at all, where the rest of the job's traces end (SIGKILL, OOM)
  kStopped,             // no end recorded, like every trace of the job
};

// What Classify (diagnosis.cc) found a missing rank did instead.
struct DepartureFacts {
  FindingKind kind = FindingKind::kMissingRank;  // or kRankDied
  Departure how = Departure::kStopped;
  uint32_t end_call = 0;         // kLeftCommunicator: the call that ended it
  std::optional<int> exit_code;  // when the process exited
  int signo = 0;                 // the signal that ended it, when one did
  LastCall later_call;           // kOtherCommunicators: its last call on another communicator
  CallSiteRef later_site;        // ... and where it was made
};

// missing_rank and rank_died from traces: ranks that never entered
// collective `seq`.
struct MissingRankFacts {
  CollectiveSignature call;          // the collective the others entered
  std::vector<int> entered;          // the ranks that entered it
  std::optional<uint64_t> last_seq;  // the missing ranks' last collective on it
  CallSiteRef last_site;             // where that one was called
  DepartureFacts departure;
};

// p2p_mismatch: a send and a receive that disagree, or lack the other.
struct P2pMismatchFacts {
  enum class Problem { kSizeMismatch, kOrderMismatch, kSendNotReceived, kReceiveNotSent };
  struct Side {
    uint64_t count = 0;
    int32_t datatype = 0;
    int64_t collectives_before = 0;  // collectives the rank had issued on the communicator
    CallSiteRef site;
  };
  Problem problem = Problem::kSizeMismatch;
  int sender = -1;  // global ranks
  int receiver = -1;
  Side send, receive;
  uint64_t other_side_posted = 0;  // the missing side's count of posted operations to that peer
};

// order_inversion: collective `seq` of `comm` and `other_seq` of
// `other_comm`, issued in one order by `rank` and in the other by
// `reference_rank`.
struct OrderInversionFacts {
  int rank = -1;
  int reference_rank = -1;
  uint64_t other_comm = 0;
  uint64_t other_seq = 0;
  bool comm_first = true;    // `rank` issued collective `seq` of `comm` first
  bool same_stream = false;  // a certain deadlock; on different streams a warning
};

// missing_traces: `ranks` are communicator ranks of `comm` with no trace.
struct MissingTracesFacts {};

// unreadable_traces: why each file could not be read.
struct UnreadableTracesFacts {
  std::vector<std::string> errors;
};

// duplicate_traces: files that hold the same process's trace (the same host,
// pid and creation time: a folder given twice, a copy), read once.
struct DuplicateTracesFacts {
  struct Duplicate {
    std::string path;   // the file not read
    std::string first;  // the file read for that process
  };
  std::vector<Duplicate> duplicates;
};

// nccl_not_visible: processes with NCCL code the shim could not see into
// (linked into a module other than libnccl.so, behind RTLD_DEEPBIND, a
// second libnccl.so, a lookup beyond its library slots): their calls to it
// may be missing from the traces, so a healthy verdict does not cover them.
struct NcclNotVisibleFacts {
  struct Item {
    int process = -1;
    int rank = -1;  // display rank, -1 unknown
    std::string host;
    uint32_t pid = 0;
    uint32_t reason = 0;  // NcclNotSeenEvent::reason
    std::string path;
    bool calls_seen = false;
  };
  std::vector<Item> items;
};

// init_failure: which cause, the subsystem named, the errno, the processes,
// and by cause what was measured. Fields a cause does not use stay empty, so
// two ranks whose facts are equal have the same cause and are reported together.
enum class InitCause {
  kNoInterface,           // network: no usable socket interface (NCCL_SOCKET_IFNAME)
  kSharedMemory,          // shm: /dev/shm too small
  kBootstrapRefused,      // bootstrap: nothing listens at the root's address
  kBootstrapUnreachable,  // bootstrap: the root's address cannot be reached
  kDuplicateGpu,          // gpu: two ranks on one GPU
  kVersionSkew,           // version: ranks with different NCCL versions
  kDriverTooOld,          // version: a CUDA driver older than the runtime
  kInfiniBand,            // ib
  kFabric,                // fabric: NVLink fabric, NVLS
  kPeerToPeer,            // p2p: CUDA IPC between local GPUs
  kCuda,                  // cuda
  kUnknown,               // a failure none of the above explains
  kWaitedUnexplained,     // waiting: ranks that waited, and no trace shows a failure
  kWaitedForCause,        // waiting: ranks that waited for the causes reported before them
  kCatalogued,            // a message of the catalogue (logs/message_catalogue.h): `message`
  // From the memory-sharing CUDA calls the traces hold (gpu_sharing_failure.h):
  kIpcImportRefused,       // ipc: another process's GPU memory could not be imported
  kFabricManager,          // fabric: multicast objects or fabric handles refused
  kPeerAccessUnsupported,  // p2p: the GPUs cannot access each other
};

// What a failed memory-sharing CUDA call showed (kIpcImportRefused,
// kFabricManager, kPeerAccessUnsupported).
struct GpuSharingFacts {
  std::string function;  // "cuMemImportFromShareableHandle"
  int32_t result = 0;    // its CUresult / cudaError_t
  std::string handle;    // "POSIX file descriptor", "fabric", "legacy CUDA IPC", ""
  bool in_container = false;
  std::string container;                 // "docker", ...
  std::vector<std::string> acs_bridges;  // PCIe bridges above the GPU with ACS redirect enabled
  bool iommu = false;                    // an IOMMU is enabled
  int device = -1;
  int peer = -1;

  bool operator==(const GpuSharingFacts& o) const {
    return function == o.function && result == o.result && handle == o.handle &&
           in_container == o.in_container && container == o.container &&
           acs_bridges == o.acs_bridges && iommu == o.iommu;
  }
};

struct InitInterface {
  std::string name;
  std::string ip;
  int prefix_len = 0;
  bool down = false;
  bool loopback = false;

  bool operator==(const InitInterface& o) const {
    return name == o.name && ip == o.ip && prefix_len == o.prefix_len && down == o.down &&
           loopback == o.loopback;
  }
};

struct InitVersionGroup {
  std::vector<int> ranks;
  int32_t version = 0;  // NCCL's code: 22809
  std::string path;     // the libnccl.so loaded, when known

  bool operator==(const InitVersionGroup& o) const {
    return ranks == o.ranks && version == o.version && path == o.path;
  }
};

struct InitFailureFacts {
  InitCause cause = InitCause::kUnknown;
  std::string
      subsystem;  // network, bootstrap, shm, version, gpu, ib, fabric, p2p, cuda, unknown, waiting
  int err = 0;    // errno, 0 when none
  std::vector<uint32_t> pids;
  bool has_pids = true;  // the ranks that only waited list none

  // Facts the JSON contract names (set by the causes that measure them).
  std::optional<std::optional<std::string>> socket_ifname;  // network: the value, or unset (null)
  std::optional<std::vector<std::string>> interfaces;       // network: the interfaces' names
  std::optional<std::optional<std::string>> address;        // bootstrap: the root's address
  struct Shm {
    std::optional<std::string> path;
    std::optional<int64_t> requested;
    std::optional<uint64_t> shm_size, shm_free;
  };
  std::optional<Shm> shm;
  std::optional<std::vector<std::string>> versions;  // version skew: "2.28.9"
  struct Cuda {
    std::optional<std::string> driver, runtime;  // "13.0"
  };
  std::optional<Cuda> cuda;                          // driver too old
  std::optional<std::optional<std::string>> bus_id;  // gpu
  struct Memlock {
    std::optional<uint64_t> bytes;  // unset: unknown
    bool unlimited = false;
  };
  std::optional<Memlock> memlock;  // ib

  // Further facts the words are made of.
  std::string host;       // the rank's host, where the words name it
  std::string nccl_text;  // NCCL's own words that named the cause
  std::vector<std::string>
      failed_loads;  // libraries NCCL could not load (plugins it merely probes left out)
  bool interfaces_known = false;              // the rank's interfaces were inventoried
  std::vector<InitInterface> interface_list;  // IPv4 first; link-local and repeats left out
  std::string suggest_interface;              // an interface to pin NCCL_SOCKET_IFNAME to
  std::string shm_call;          // shm: the failing call ("fallocate"), or what NCCL said it did
  bool shm_call_traced = false;  // ... seen in the trace (sized "of"), not in NCCL's words ("to")
  int attempts = 0;              // bootstrap: connection attempts to the same address
  std::vector<std::pair<std::string, std::vector<int>>>
      comm_ids;         // bootstrap: NCCL_COMM_ID values, when they differ
  std::string root_ip;  // bootstrap: the root's IP
  int root_port = 0;
  bool root_on_local_net = true;  // bootstrap: an interface of the rank is on the root's network
  std::string virtual_bootstrap_iface;  // bootstrap: a container or virtual bridge NCCL picked
  std::vector<InitVersionGroup> version_groups;  // version skew
  bool driver_known = false;            // driver too old: the driver's presence was recorded
  bool low_memlock = false;             // ib: RLIMIT_MEMLOCK below what NCCL pins
  std::optional<std::string> buffsize;  // cuda, out of memory: NCCL_BUFFSIZE
  bool out_of_memory = false;           // cuda: the failure was an out-of-memory
  std::string call;                     // unknown: the failed call; waiting: the call waited in
  int result = -1;                      // unknown: its ncclResult_t, -1 unknown
  std::vector<std::string> until;       // waiting: how the waiting ranks ended
  std::string message;  // the catalogue's id of the rank's message that names the cause (or
                        // its subsystem), "" when none does
  std::optional<GpuSharingFacts> sharing;  // ipc, fabric, p2p from the CUDA calls traced
};

// Findings of explain (logs/log_diagnosis.cc): what the log lines showed.
enum class LogCause {
  kXid,               // gpu_fault: an Xid in dmesg (xid, bus_id)
  kGpuFailed,         // gpu_fault: an ECC error, a GPU off the bus or unavailable (line)
  kGpuOutOfMemory,    // out_of_memory, memory "gpu" (line)
  kHostOutOfMemory,   // out_of_memory, memory "host": the kernel's OOM killer (line)
  kFabric,            // nvlink_fabric (line)
  kCudaIpc,           // cuda_ipc_failure (line)
  kKernelError,       // cuda_error (line)
  kLauncherDeath,     // rank_died: the launcher's report (signo, line)
  kLostPeer,          // rank_died: ranks lost the connection to a peer (who, peers)
  kWatchdogMismatch,  // collective_mismatch: ranks timed out in different collectives (timeouts)
  kWatchdogMissing,   // missing_rank: ranks that never timed out where the others did (timeouts,
                      // timed_out)
  kWatchdogTimeout,   // watchdog_timeout (timeouts, timeout_ms)
  kUnseenRanks,       // log_insufficient note: ranks the logs hold nothing of
  kUnexplainedError,  // log_insufficient: an NCCL error the logs do not explain (line)
  kNoInfoLines,       // log_insufficient note: NCCL's warnings without its INFO lines
  kCatalogued,        // a message of the catalogue (logs/message_catalogue.h): message, line,
                      // address
  kTorchMismatch,     // collective_mismatch PyTorch itself detected (TORCH_DISTRIBUTED_DEBUG=
                      // DETAIL): timeouts holds each rank's collective (seq 0)
};

struct LogFacts {
  LogCause cause = LogCause::kUnexplainedError;
  std::string line;                       // the log line it was seen in
  std::optional<int> xid;                 // gpu_fault
  std::optional<std::string> bus_id;      // gpu_fault
  std::optional<std::string> memory;      // out_of_memory: "gpu" or "host"
  std::optional<std::string> timeout_ms;  // watchdog_timeout: PyTorch's number, as it printed it
  std::optional<int> signo;               // rank_died (the launcher's report)
  std::optional<std::string> peer;        // rank_died (the first lost peer's address)
  std::vector<std::string> peers;         // rank_died: every lost peer's address
  std::vector<int> who;                   // rank_died: the ranks that lost them
  // PyTorch's watchdog: the collectives ranks timed out in, by (seq, op, numel).
  struct Timeout {
    std::vector<int> ranks;
    uint64_t seq = 0;
    std::string op;     // "ALLREDUCE"
    std::string numel;  // "" unknown
  };
  std::vector<Timeout> timeouts;
  std::vector<int> timed_out;          // kWatchdogMissing: the ranks that timed out
  std::string message;                 // kCatalogued: the catalogue's id of the message
  std::optional<std::string> address;  // kCatalogued: the host:port a rendezvous message names
};

// p2p_path and config_skew notes (analysis/setup_notes.h).
struct SetupFacts {
  // p2p_path: the host, the bridges with ACS redirection, the GPUs below them.
  std::string host;
  std::vector<std::string> bridges;
  std::vector<std::string> gpus;
  bool iommu = false;
  // config_skew: each setting that differs, with the ranks of each value
  // ("" for unset), the most common value first.
  struct Setting {
    std::string name;  // "NCCL_SOCKET_IFNAME", "NCCL version", "CUDA driver", "interface"
    std::vector<std::pair<std::string, std::vector<int>>> values;
  };
  std::vector<Setting> settings;
};

using FindingFacts =
    std::variant<std::monostate, CollectiveMismatchFacts, MissingRankFacts, P2pMismatchFacts,
                 OrderInversionFacts, MissingTracesFacts, UnreadableTracesFacts,
                 DuplicateTracesFacts, InitFailureFacts, LogFacts, NcclNotVisibleFacts, SetupFacts>;

struct Finding {
  FindingKind kind = FindingKind::kLogInsufficient;
  FindingRole role = FindingRole::kRootCause;
  std::optional<uint64_t> comm;
  std::optional<uint64_t> seq;  // per-communicator collective (or p2p) number
  std::vector<int> ranks;       // the global ranks that deviate
  std::string field;    // op|count|datatype|redop|root (collective_mismatch), order (p2p_mismatch)
  int nranks = -1;      // the communicator's size
  int64_t when_ns = 0;  // realtime of the event it starts from
  int job = 0;
  FindingFacts facts;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_FINDING_H_

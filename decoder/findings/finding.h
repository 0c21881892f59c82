// A Finding: one thing ncclwatch concluded about a job, as facts.
//
// The analyses (the diagnosis families, init_failure.cc, analysis/log_diagnosis.cc) fill
// a Finding with what they saw: its kind and role, the communicator, the
// collective's number, the ranks, and a payload with the facts of its kind
// (the groups of a mismatch, what a missing rank did instead, the two sides of
// a send, ...). They write no sentences: decoder/report/ renders every
// `detail`, `fix` and rank group's `doing` from these facts, for the human
// report and for the JSON contract alike (README.md, "JSON output").
//
// clang-format off
//   analysis ──Finding{kind, role, comm, seq, ranks, facts}──> report
//                                                               ├─ RenderFinding: detail, fix, groups
//                                                               ├─ human report (headline first)
//                                                               └─ JSON writer
// clang-format on
//
// A call site is a fact too (a process and a return address); the report
// names it ("train_loop+0x4909 (main)") from that process's module map.

#ifndef NCCLWATCH_DECODER_FINDINGS_FINDING_H_
#define NCCLWATCH_DECODER_FINDINGS_FINDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "findings/collective_signature.h"
#include "findings/mismatch_field.h"
#include "findings/straggler_evidence.h"
#include "knowledge/area.h"
#include "model/last_call.h"

namespace ncclwatch::decoder {

// What a finding is about. The JSON names are in report/finding_text.h.
enum class FindingKind {
  kCollectiveMismatch,  // the ranks disagree on a collective
  kMissingRank,         // ranks never entered a collective the others entered
  kRankDied,            // the same, because the rank's process died
  kP2pMismatch,         // a send and its receive disagree, or lack the other
  kOrderInversion,      // two communicators' collectives in different orders
  kInitFailure,         // NCCL's initialisation failed (init forensics)
  // Completion and liveness (the shim's watcher records):
  kNeverCompleted,      // an operation every rank entered that never completed on the GPUs
  kNcclAsyncError,      // NCCL reported an asynchronous error (ncclCommGetAsyncError)
  kRankFrozen,          // a process that stopped living (heartbeat stopped) while alive
  kRankExitError,       // a rank exited with an error code, nothing else went wrong
  kHangUnexplained,     // the job hung or was killed, and no trace shows why
  kKilledWhileRunning,  // a launcher or scheduler signal ended the job while it progressed
  kTraceOverwritten,    // the ring lost the records that could show the cause
  kNcclCallsUnseen,     // a rank loaded NCCL, and none of its calls were seen
  // Fail-slow (warnings: the job may be healthy and slow):
  kStraggler,  // a rank whose host enqueues a communicator's collectives last, again and again
  // From explain (plain logs) only:
  kGpuFault,  // (also from a trace's CudaError: DeviceErrorFacts)
  kOutOfMemory,
  kNvlinkFabric,
  kCudaIpcFailure,
  kCudaError,  // (also from a trace's CudaError: DeviceErrorFacts)
  kWatchdogTimeout,
  kLogInsufficient,
  kNetworkError,       // the network failed under a running job (IB completion errors, sockets)
  kRendezvousFailure,  // the framework's rendezvous (TCPStore, c10d/etcd) before NCCL
                       // (also from traces: RendezvousFacts)
  kDdpUsage,           // DistributedDataParallel misused (unused parameters, multiple forwards)
  kTeardownHang,       // the job hung or was aborted while tearing its process groups down
  // Notes:
  kMissingTraces,
  kUnreadableTraces,
  kDuplicateTraces,
  kP2pPath,     // note: PCIe ACS redirection on the bridges above a host's GPUs
  kConfigSkew,  // note: ranks whose NCCL_* settings, versions or interfaces differ
  kNcclNotVisible,
  kSummaryGap,   // node summaries left out calls the analyses needed (or that differ)
  kGpuTopology,  // warning: a host's GPU topology (nvidia-smi topo -m) has a link below its
                 // kind, or a NIC no GPU reaches within PXB
};

// Its place in the story.
enum class FindingRole {
  kRootCause,    // the first cause, one per job
  kConsequence,  // what followed from it
  kWarning,      // a risk that did not (yet) break the job: the job stays healthy
  kNote,         // about the input (traces missing or unreadable)
};

// Where a hang is, as the DDP hang checklist classifies it.
enum class HangPhase {
  kStartup,   // init, rendezvous, or the communicator's first collective (where NCCL connects)
  kStep,      // a training step's collective or send/receive
  kTeardown,  // finalize, destroy or abort
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
  kAliveIdle,  // its heartbeat went on (until the others' traces end, or now), no NCCL call pending
  kDiedFirst,  // no end recorded; its heartbeat stopped well before the others' (kind rank_died)
  kFrozen,     // the process exists, stopped (kind rank_frozen), or its heartbeat went stale
  kWaitingOnGpu,  // its GPU never finished an earlier operation (later_call) of the communicator
  kWentOn,        // it went on to other NCCL work (later_call) without the call the others made
  kSuspended,  // it suspended the communicator (later_call: ncclCommSuspend) and never resumed it
};

// What Classify (analysis/diagnosis/collectives.cc) found a missing rank did instead.
struct DepartureFacts {
  FindingKind kind = FindingKind::kMissingRank;  // or kRankDied
  Departure how = Departure::kStopped;
  uint32_t end_call = 0;         // kLeftCommunicator: the call that ended it
  std::optional<int> exit_code;  // when the process exited
  int signo = 0;                 // the signal that ended it, when one did
  LastCall later_call;           // kOtherCommunicators: its last call on another communicator
  CallSiteRef later_site;        // ... and where it was made
  // From the heartbeat: how long before the others' (kDiedFirst, kFrozen),
  // whether the job was live when diagnosed, the state letter /proc showed.
  int64_t stopped_before_ns = 0;
  bool live = false;
  char proc_state = 0;
  int until_signo = 0;  // kAliveIdle: the signal that ended it with the rest of the job
};

// missing_rank and rank_died from traces: ranks that never entered
// collective `seq`.
struct MissingRankFacts {
  CollectiveSignature call;  // the collective the others entered
  // Or, where the others wait in a call that makes a communicator from this
  // one (ncclCommSplit, ncclCommShrink: collective over it), that call and
  // which of the communicator's splits it is; `call` is then unset.
  uint32_t creation_call = 0;
  uint32_t split_index = 0;
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
  // One-sided (NCCL 2.29), kReceiveNotSent only: the receiver waits
  // (ncclWaitSignal) for signals the sender never sent (ncclPutSignal,
  // ncclSignal); other_side_posted is the signals it sent, `awaited` those
  // the receiver's waits need.
  bool one_sided = false;
  uint64_t awaited = 0;

  // Whether a side never posted what the other did (a send never received,
  // a receive never sent), rather than the two sides disagreeing.
  bool Unmatched() const {
    return problem == Problem::kSendNotReceived || problem == Problem::kReceiveNotSent;
  }
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
// As a root cause, nothing else was found, and without them the job cannot be
// called healthy.
struct MissingTracesFacts {
  // A communicator ncclCommGrow made whose two sides could not be joined
  // (model/grown_communicators.h): the ranks it gained record the grow id,
  // the existing ranks an identity derived from their parent, and only the
  // trace of the existing rank that made the id links them; it is not among
  // the inputs. The missing ranks may be there under the other identity.
  bool grow_unjoined = false;
};

// never_completed: an operation (`comm`, `seq`) every rank entered and that
// did not complete on the GPUs; `ranks` are those whose progress stopped first.
struct NeverCompletedFacts {
  LastCall op;  // the operation: call, communicator, number (peer and direction for P2P)
  std::optional<CollectiveSignature> collective;  // a collective's arguments
  std::vector<int> entered;                       // the ranks that entered it
  uint64_t completed = 0;  // collectives of `comm` the named ranks' GPUs completed
  enum class By {
    kCompleted,     // the named ranks completed fewer collectives than the others
    kLastProgress,  // as many; their last completion came first
    kTie,           // no rank stopped before the others: every member is named
  };
  By by = By::kTie;
  int64_t stopped_ns = 0;     // the named ranks' last completion (realtime), 0 none
  int64_t waited_ns = 0;      // how long it had been pending when the traces end (or now)
  bool stall_record = false;  // the shim's stall watchdog wrote a Stall for it
  bool live = false;          // the job was live when diagnosed
  struct Others {
    std::vector<int> ranks;
    uint64_t completed = 0;
  };
  std::vector<Others> others;  // the rest of the members, by their completed count
  CallSiteRef site;            // where the named rank issued it
  // Ranks whose record of the operation their ring overwrote: whether every
  // rank called it alike (a mismatch hangs the same way) cannot be seen.
  std::vector<int> arguments_lost;
};

// gpu_fault or cuda_error from a trace (a CUDA error the watcher met), and
// nccl_async_error (ncclCommGetAsyncError): the first rank that reported it.
struct DeviceErrorFacts {
  bool nccl = false;   // an NCCL async error; else a CUDA error
  int32_t result = 0;  // CUresult, or ncclResult_t
  std::string name;    // "CUDA_ERROR_ECC_UNCORRECTABLE" (CUDA only)
  std::string text;    // cuGetErrorString, or NCCL's last error text
  int32_t device = -1;
  std::string bus_id;  // the GPU's, when its communicator recorded one
  std::string host;
  std::optional<uint64_t> completed;  // collectives of `comm` completed when it was seen
  std::vector<int> also;              // ranks that reported an error after it
  std::vector<int> waiting;           // ranks left waiting (their hangs are consequences)
};

// rank_frozen, and rank_died decided by liveness alone (every rank had entered
// the operation): a process that stopped living before the others.
struct StoppedRankFacts {
  enum class State {
    kDead,            // post-mortem, or its process is gone: it died (or froze and was killed)
    kStopped,         // live: the process exists and is stopped (T in /proc/PID/stat)
    kHeartbeatStale,  // live: its heartbeat is stale while the others' are fresh
  };
  State state = State::kDead;
  char proc_state = 0;
  int signo = 0;                 // the signal recorded, if any
  int64_t stopped_ns = 0;        // its last sign of life (heartbeat or record)
  int64_t before_others_ns = 0;  // how long before the others' last sign of life (or now)
  LastCall doing;                // its oldest pending operation, or its last call
  CallSiteRef site;
  std::vector<int> waiting;  // the ranks left waiting
  // Died before the launcher tore the rest down: the signal every other rank
  // recorded (0 if not so), and how long after this rank's last sign of life.
  int teardown_signo = 0;
  int64_t teardown_after_ns = 0;
};

// What a rank was doing when a hang was seen (hang_unexplained's groups).
enum class RankActivity {
  kInCall,       // blocked inside an NCCL call that had not returned
  kGpuPending,   // its GPU had not finished an operation
  kIdle,         // alive, no NCCL call pending (outside NCCL)
  kProgressing,  // live, completing work
  kExited,       // exited with code 0
  kExitedError,  // exited with an error code
  kSignal,       // ended by a signal
  kKilled,       // its trace stops with no exit or signal (SIGKILL, OOM)
};

// hang_unexplained: the job is not healthy and no trace shows why.
struct HangFacts {
  struct Group {
    std::vector<int> ranks;
    RankActivity activity = RankActivity::kIdle;
    LastCall call;      // the call it was in or had made last
    int exit_code = 0;  // kExitedError
    int signo = 0;      // kSignal
  };
  std::vector<Group> groups;
  bool live = false;
  bool tracked = false;  // GPU completion was tracked on every rank
};

// killed_while_running: every rank that did not finish was ended by the
// launcher's or scheduler's signal (a walltime, a cancel) while nothing was
// stuck: what each rank had done last, and how long before the signal it
// last made progress.
struct KilledWhileRunningFacts {
  struct Rank {
    int rank = -1;
    LastCall last;                 // its last NCCL call
    int64_t progress_ns = 0;       // its last progress: an operation completed or a call made
    int64_t before_signal_ns = 0;  // how long before its signal that was
    bool finished = false;         // it had exited cleanly before the others were ended
  };
  int signo = 0;
  int64_t signal_ns = 0;  // the first rank's signal
  int64_t spread_ns = 0;  // from the first rank's signal to the last's
  std::vector<Rank> ranks;
};

// rank_exit_error: a rank exited with an error code, and nothing else was found.
struct ExitErrorFacts {
  int exit_code = 0;
  int signo = 0;  // a signal it handled before exiting, if any
  LastCall last;  // its last NCCL call
  bool tracked = false;
  bool work_done = false;        // tracked, and every operation it issued had completed
  std::vector<int> ended_after;  // ranks that did not end cleanly after it (killed, waiting)
};

// trace_overwritten, nccl_calls_unseen: what the traces could not show.
struct BlindSpotFacts {
  std::vector<uint32_t> pids;
  uint64_t ring_bytes = 0;    // trace_overwritten: the ring's size
  uint64_t needed_bytes = 0;  // ... a ring that would have held the whole run
  uint64_t overwritten = 0;   // ... slots lost (wrapped or lapped while read)
  double span_s = 0;          // ... the run's length, first record to last
  double records_per_s = 0;
  std::string nccl_path;  // nccl_calls_unseen: the libnccl it loaded
};

// unreadable_traces: why each file could not be read, and the folders and
// links that may hold traces and were not read (each error names its path).
// With any of the latter, and nothing else found, it is the root cause.
struct UnreadableTracesFacts {
  std::vector<std::string> errors;
  std::vector<std::string> not_searched;
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
    uint64_t comm = 0;  // device-API communicators: the communicator
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
  kRootGone,  // bootstrap: the process that made the unique id (the root) ended before the others
              // connected
  kDuplicateGpu,       // gpu: two ranks on one GPU
  kVersionSkew,        // version: ranks with different NCCL versions
  kDriverTooOld,       // version: a CUDA driver older than the runtime
  kNoDriver,           // cuda: no CUDA driver loaded at all (the inventory saw no libcuda)
  kInfiniBand,         // ib
  kFabric,             // fabric: NVLink fabric, NVLS
  kPeerToPeer,         // p2p: CUDA IPC between local GPUs
  kCuda,               // cuda
  kUnknown,            // a failure none of the above explains
  kWaitedUnexplained,  // waiting: ranks that waited, and no trace shows a failure
  kWaitedForCause,     // waiting: ranks that waited for the causes reported before them
  kCatalogued,         // a message of the catalogue (knowledge/message_catalogue.h): `message`
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

// How a rank that waited in its init ended: an exit code, or a signal.
struct RankEnd {
  std::optional<int> exit_code;
  int signo = 0;

  bool operator==(const RankEnd& o) const { return exit_code == o.exit_code && signo == o.signo; }
  bool operator<(const RankEnd& o) const {
    return std::tie(exit_code, signo) < std::tie(o.exit_code, o.signo);
  }
};

struct InitFailureFacts {
  InitCause cause = InitCause::kUnknown;
  Area subsystem = Area::kUnknown;  // network, bootstrap, shm, version, gpu, ib, fabric, p2p,
                                    // ipc, cuda, unknown, waiting (or a catalogued cause's)
  int err = 0;                      // errno, 0 when none
  std::vector<uint32_t> pids;
  bool has_pids = true;  // the ranks that only waited list none

  // Facts the JSON contract names, set by the causes that measure them. The
  // cause decides which the JSON carries (a setting the rank left unset is
  // null): socket_ifname for kNoInterface, address for kBootstrapRefused and
  // kBootstrapUnreachable, bus_id for kDuplicateGpu; the others where set.
  std::optional<std::string> socket_ifname;            // network: NCCL_SOCKET_IFNAME, or unset
  std::optional<std::vector<std::string>> interfaces;  // network: the interfaces' names
  std::optional<std::string> address;                  // bootstrap: the root's address, if known
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
  std::optional<Cuda> cuda;           // driver too old
  std::optional<std::string> bus_id;  // gpu: the GPU's PCI bus id, if known
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
  std::vector<RankEnd> until;           // waiting: how the waiting ranks ended, each way once
  std::string message;  // the catalogue's id of the rank's message that names the cause (or
                        // its subsystem), "" when none does
  // kRootGone: how the root's process ended (an exit code, a signal, or no
  // record at all: killed), and the ranks that could not connect to it.
  std::optional<int> exit_code;
  int signo = 0;
  std::vector<int> could_not_connect;
  std::optional<GpuSharingFacts> sharing;  // ipc, fabric, p2p from the CUDA calls traced
};

// Findings of explain (analysis/log_diagnosis.cc): what the log lines showed.
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
  kNotice,            // log_insufficient warning: an NCCL notice (2.32's ATTN) the catalogue
                      // does not name (line)
  kCatalogued,        // a message of the catalogue (knowledge/message_catalogue.h): message, line,
                      // address
  kTorchMismatch,     // collective_mismatch PyTorch itself detected (TORCH_DISTRIBUTED_DEBUG=
                      // DETAIL): timeouts holds each rank's collective (seq 0)
  kCrash,             // rank_died: the process's own crash report (signo, hit, subsystem, tool)
  kStacks,            // hang_unexplained: where each rank waits, from its stack (waits)
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
  // kCrash: what the crash hit (a function, "all_reduce (distributed_c10d.py:2501)", a module
  // "libnccl.so.2", an exception type), the part of the stack it belongs to ("nccl", "cuda",
  // "c10d", "pytorch"; "" the program's own or unknown), and who reported it ("faulthandler",
  // "glog", "kernel", "shell", "c++").
  std::optional<std::string> hit;
  std::optional<Area> subsystem;
  std::optional<std::string> tool;
  // The process the line names by its pid (the OOM killer's victim, a crash's), as the node's
  // kernel or the process numbers it; the rank is found from it beside traces.
  std::optional<int> pid;
  // kStacks: the ranks by where their stacks wait ("ncclCommAbort", with its place's words),
  // and the tools that printed them.
  struct Wait {
    std::vector<int> ranks;          // -1: a process of unknown rank
    std::string frame;               // the frame that says where: "ncclCommAbort", "all_reduce"
    std::string place;               // "NCCL's communicator teardown", "" when no frame says
    std::optional<HangPhase> phase;  // none when no frame says
    Area subsystem = Area::kNone;    // nccl, c10d, cuda, jax/coordination
  };
  std::vector<Wait> waits;
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

// summary_gap: calls that node summaries (`ncclwatch summarize`) left out,
// where the analyses needed them (analysis/summary_gaps.h): not compared
// with other ranks' calls, or known only to differ, somewhere in the range.
struct SummaryGapFacts {
  struct Gap {
    bool differ = false;  // the digests disagree (else: not compared)
    // Sends from `sender` to `receiver` (numbered per pair and direction),
    // not the communicator's collectives.
    bool sends = false;
    int sender = -1;  // global ranks, for sends
    int receiver = -1;
    uint64_t comm = 0;
    uint64_t first_seq = 0;
    uint64_t last_seq = 0;
    std::vector<int> left_out_ranks;          // whose summaries left the calls out
    std::vector<std::string> left_out_nodes;  // their nodes: "HOST (SUMMARY FILE)"
    std::vector<int> other_ranks;             // not compared with them / compared, by digest
    std::vector<std::string> other_nodes;     // their nodes, or trace files
    // Not compared only because the other ranks' rings begin inside the
    // range (analysis/summary_gaps.h `ring_start`).
    bool ring_start = false;
  };
  std::vector<Gap> gaps;
  size_t more = 0;  // gaps beyond those listed
  // Every gap, listed or not, is a ring start's: the note alone, the job
  // not called a problem over it.
  bool ring_starts_only = true;
};

// straggler: a rank that came last to a communicator's collectives far more
// often than chance allows (analysis/arrival_skew.h), with the figures.
struct StragglerFacts : StragglerEvidence {
  // kHost: its host enqueued last; kGpu: its GPU reached the collective
  // last while its host enqueued in time (or later by less than its GPU added);
  // kLink: its communicators' collectives took longer, once every member had
  // arrived, than those of the other communicators of their kind (its link:
  // NIC, NVLinks). For kLink "last" reads "slow": times_last is how many
  // collectives were slow, median_late_ns how much longer than usual.
  enum class Cause { kHost, kGpu, kLink };
  Cause cause = Cause::kHost;
  int64_t host_late_ns = 0;     // kGpu: its host's lateness meanwhile, median (0: on time)
  uint64_t host_on_time = 0;    // kGpu: of times_last, how often its host was on time
  std::vector<int> link_ranks;  // kLink: the ranks its slow communicators share, when not one
  int64_t usual_ns = 0;         // kLink: the kind's usual time from the last arrival to the end
  int kind_comms = 0;           // kLink: communicators of its kind (members) compared
  int rank = -1;                // global
  // The members' hosts. Above 1: whether the job's own collectives aligned
  // every one of their clocks (analysis/host_clocks.h), and how far apart two
  // aligned times may still be; not aligned: compared as they read.
  int hosts = 1;
  bool clocks_aligned = false;
  int64_t clock_residual_ns = 0;
  std::vector<uint64_t> also_comms;  // other communicators it straggles in
};

// rendezvous_failure from traces (analysis/rendezvous.h): why the ranks
// never got past the framework's rendezvous.
struct RendezvousFacts {
  enum class Cause { kSettingsDiffer, kPortInUse, kRefused, kUnreachable, kRanksMissing };
  Cause cause = Cause::kRanksMissing;
  // kSettingsDiffer: MASTER_ADDR, MASTER_PORT or WORLD_SIZE, each with the
  // ranks of each value ("" unset), the reference (rank 0's) value first.
  std::vector<SetupFacts::Setting> settings;
  std::string address;      // the master's address the failures were at: "127.0.0.1:29500"
  int err = 0;              // their errno: EADDRINUSE, ECONNREFUSED, ...; 0 none (no answer)
  uint64_t attempts = 0;    // how many such calls, all ranks together
  int64_t span_ns = 0;      // from the first to the last
  std::vector<int> failed;  // the ranks whose calls failed so
  int world_size = -1;
  std::vector<int> started;  // ranks with a trace
  std::vector<int> missing;  // ranks below WORLD_SIZE with none: they never came
  std::vector<int> waiting;  // ranks left in the rendezvous (no NCCL call, no clean exit)
  std::vector<int> server;   // ranks that listened at the master's port (the store's server)
  int64_t joined = -1;       // connections the server accepted, -1 unknown
  // The processes are torchrun's agents, not ranks: every list above holds
  // node ranks (--node-rank), WORLD_SIZE is --nnodes, and the settings are
  // torchrun's options. `backend` is the rendezvous backend (rank 0's).
  bool agents = false;
  std::string backend;
};

// gpu_topology (analysis/gpu_topology_check.h): what stands out in a
// host's `nvidia-smi topo -m`.
struct GpuTopologyFacts {
  std::string file;  // where the matrix was printed: "FILE:LINE"
  int gpus = 0;
  int nics = 0;
  // GPU pairs whose link falls below the one most pairs have (`usual`,
  // "NV18"): a link down or missing. Each pair once, lower GPU first.
  struct Link {
    std::string a, b;  // "GPU3", "GPU5"; for a NIC: the NIC ("mlx5_0"), its nearest GPU
    std::string link;  // "NV16", "SYS"
  };
  std::string usual;
  int usual_pairs = 0;  // pairs with it, of gpus * (gpus - 1) / 2
  std::vector<Link> weak;
  // NICs no GPU reaches within PXB (NCCL's default GPU Direct RDMA level):
  // each with its nearest GPU and that link.
  std::vector<Link> far_nics;
};

using FindingFacts =
    std::variant<std::monostate, CollectiveMismatchFacts, MissingRankFacts, P2pMismatchFacts,
                 OrderInversionFacts, MissingTracesFacts, UnreadableTracesFacts,
                 DuplicateTracesFacts, InitFailureFacts, LogFacts, NcclNotVisibleFacts,
                 NeverCompletedFacts, DeviceErrorFacts, StoppedRankFacts, HangFacts, ExitErrorFacts,
                 BlindSpotFacts, SetupFacts, KilledWhileRunningFacts, StragglerFacts,
                 RendezvousFacts, SummaryGapFacts, GpuTopologyFacts>;

// An operation of a live job not yet done everywhere: what a `running`
// verdict shows.
struct PendingOperation {
  uint64_t comm = 0;
  uint64_t seq = 0;
  LastCall call;                 // the operation, as the first rank that entered it called it
  std::vector<int> entered;      // global ranks that entered it
  std::vector<int> not_entered;  // ... and those that had not
  int64_t since_ns = 0;          // when the first rank entered it (realtime)
  int64_t pending_ns = 0;        // from then until the diagnosis
};

struct Finding {
  FindingKind kind = FindingKind::kLogInsufficient;
  FindingRole role = FindingRole::kRootCause;
  std::optional<uint64_t> comm;
  std::optional<uint64_t> seq;                 // per-communicator collective (or p2p) number
  std::vector<int> ranks;                      // the global ranks that deviate
  MismatchField field = MismatchField::kNone;  // collective_mismatch, p2p_mismatch
  int nranks = -1;                             // the communicator's size
  int64_t when_ns = 0;                         // realtime of the event it starts from
  int job = 0;
  std::optional<HangPhase> phase;  // where the hang is (findings about a hang)
  FindingFacts facts;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_FINDINGS_FINDING_H_

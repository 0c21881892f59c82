// InitEvidence: what one rank left behind about its NCCL initialisation,
// from its trace (InitEvidenceOf, kept in the job model) or from its
// NCCL_DEBUG log (logs/), in one form, so that one classifier
// (analysis/init_failure.h) reads both.
//
// Everything is optional: a trace has syscalls and an inventory, a log has
// WARN lines and what INFO lines reveal (version, interface, root address).

#ifndef NCCLWATCH_DECODER_MODEL_INIT_EVIDENCE_H_
#define NCCLWATCH_DECODER_MODEL_INIT_EVIDENCE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/fate.h"
#include "model/process_trace.h"
#include "trace/socket_address.h"

namespace ncclwatch::decoder {

struct InitEvidence {
  int process = -1;  // the source's index (a trace, or a rank's log)
  int rank = -1;     // the global rank, -1 when unknown
  std::string host;
  uint32_t pid = 0;

  // An NCCL call that failed, with NCCL's text for why (ncclGetLastError,
  // or the WARN lines the log shows before the failure).
  struct Failure {
    int64_t when_ns = 0;
    std::string call;     // "ncclCommInitRank", or "" when a log does not say
    int32_t result = -1;  // ncclResult_t, -1 unknown
    std::string text;
    bool async = false;
    std::string location;  // logs: NCCL's source file the WARN line names ("misc/socket.cc")
  };
  std::vector<Failure> failures;
  std::vector<std::string> warnings;  // every NCCL WARN text (logs)

  // A C library call of NCCL's that failed.
  struct SysFailure {
    int64_t when_ns = 0;
    std::string call;  // "connect", "fallocate", ...
    int err = 0;
    std::string path;
    int64_t size = -1;
    std::optional<SocketAddress> addr;
  };
  std::vector<SysFailure> sys_failures;

  // A CUDA call that shares memory between processes or devices and failed
  // (traces: CudaCall records; benign answers such as "already enabled" left out).
  struct CudaFailure {
    int64_t when_ns = 0;
    uint32_t function = 0;  // trace.proto CudaFunction
    int32_t result = 0;
    uint32_t handle_type = 0;
    int err = 0;
    int device = -1;
    int peer = -1;
    bool from_nccl = false;
  };
  std::vector<CudaFailure> cuda_failures;
  std::vector<GpuPathInfo> gpus;  // the P2P hardware path (inventory)
  bool iommu_enabled = false;

  std::vector<std::string> failed_loads;  // libraries NCCL dlopen'ed that did not load
  std::optional<SocketAddress>
      bootstrap_addr;                      // where NCCL bound its bootstrap (its chosen interface)
  std::string bootstrap_iface;             // that interface's name, when known
  std::optional<SocketAddress> root_addr;  // the bootstrap root it connected to

  // The inventory (traces), or what the log printed of it.
  int32_t nccl_version = 0;
  std::string nccl_path;
  int32_t cuda_driver_version = 0;
  int32_t cuda_runtime_version = 0;
  bool driver_known = false;  // cuda_driver_version 0 then means no driver is loaded
  std::map<std::string, std::string> env;
  bool interfaces_known = false;
  std::vector<InterfaceInfo> interfaces;
  std::optional<uint64_t> shm_size, shm_free;
  std::optional<uint64_t> memlock_soft;
  std::string container;
  std::string bus_id;  // the GPU of its communicator init ("0000:18:00.0")
  int device = -1;

  bool init_pending = false;    // an init call never returned (it waited until the process ended)
  bool init_succeeded = false;  // some communicator was created
  std::string pending_call;     // "ncclCommInitRank"
  uint64_t comm = 0;            // the communicator it was making (traces)
  int64_t end_ns = 0;           // when its trace or log ends
  // How it ended, as facts (traces): an exit code, a signal, or neither
  // recorded (SIGKILL, OOM, or still running).
  std::optional<int> exit_code;
  int signo = 0;
  bool end_known = false;  // the source can tell (a trace); a log cannot

  // The communicator identity of the ncclUniqueId it made (ncclGetUniqueId),
  // 0 none: its process hosts that communicator's bootstrap root.
  uint64_t made_unique_id = 0;
  bool formed_from_unique_id = false;  // it called an init with that id itself

  const std::string* Env(const std::string& name) const {
    auto it = env.find(name);
    return it == env.end() ? nullptr : &it->second;
  }
  // The time of its first failure (of any kind), or INT64_MAX.
  int64_t FirstFailureNs() const;
  // Whether it shows a failure of any kind (an NCCL call, a C library call,
  // a CUDA call).
  bool AnyFailure() const {
    return !failures.empty() || !sys_failures.empty() || !cuda_failures.empty();
  }
  // What the same process's log says that its trace did not: the log's WARN
  // texts (NCCL's words for a failure; a trace keeps only the last, through
  // ncclGetLastError) and what the trace left unknown (interface, bus id,
  // versions, settings). The trace's own facts and times stay.
  void AddFromLog(const InitEvidence& log);
};

// A process's init evidence from its trace: `process` its index in the job,
// `rank` its display rank, and how it ended (`fate`, its trace's last record
// at `end_ns`).
InitEvidence InitEvidenceOf(const ProcessTrace& t, int process, int rank, int64_t end_ns,
                            const Fate& fate);

// Whether a CUDA call that shares GPU memory failed in a way that matters:
// not success, and not an answer such as "peer access already enabled".
bool GpuSharingFailed(uint32_t function, int32_t result);
// Whether the call enables or asks peer access between two GPUs.
bool PeerAccessCall(uint32_t function);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_INIT_EVIDENCE_H_

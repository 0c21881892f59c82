// Init forensics in words: each InitCause's detail and fix, from the facts
// analysis/init_failure.cc measured.

#include "report/init_text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "knowledge/cuda_names.h"
#include "knowledge/message_catalogue.h"
#include "knowledge/nccl_semantics.h"
#include "report/finding_text.h"
#include "report/names.h"

namespace ncclwatch::decoder {
namespace {

std::string HostPhrase(const InitFailureFacts& x) { return x.host.empty() ? "its host" : x.host; }

// "eth0 10.0.0.1/24, lo 127.0.0.1/8 (loopback)"
std::string InterfaceList(const InitFailureFacts& x) {
  std::vector<std::string> parts;
  for (const InitInterface& i : x.interface_list) {
    std::string s = absl::StrCat(i.name, " ", i.ip, "/", i.prefix_len);
    if (i.down)
      absl::StrAppend(&s, " (down)");
    else if (i.loopback)
      absl::StrAppend(&s, " (loopback)");
    parts.push_back(s);
  }
  return parts.empty() ? "none with an address" : absl::StrJoin(parts, ", ");
}

// "; NCCL could not load libibverbs.so, libnccl-net.so"
std::string FailedLoads(const InitFailureFacts& x) {
  return x.failed_loads.empty()
             ? ""
             : absl::StrCat("; NCCL could not load ", absl::StrJoin(x.failed_loads, ", "));
}

std::string RanksOrProcess(const std::vector<int>& ranks) {
  return RanksNoun(ranks, "the process");
}

// "cuMemImportFromShareableHandle failed with CUDA_ERROR_NOT_PERMITTED
// (operation not permitted)"
std::string FailedCall(const GpuSharingFacts& s, int err) {
  const bool runtime = absl::StartsWith(s.function, "cuda");
  const std::string text = CudaResultText(s.result);
  std::string out = absl::StrCat(s.function, " failed with ", CudaResultName(s.result, runtime));
  if (!text.empty()) absl::StrAppend(&out, " (", text, ")");
  if (err != 0) absl::StrAppend(&out, ", errno ", ErrnoName(err));
  return out;
}

// The words of the causes gpu_sharing_failure.cc finds from the CUDA calls.
void GpuSharingWords(const InitFailureFacts& x, const GpuSharingFacts& s, std::string* detail,
                     std::string* fix) {
  const std::string where =
      s.in_container ? absl::StrCat(" in a container (", s.container, ")") : "";
  switch (x.cause) {
    case InitCause::kIpcImportRefused:
      if (s.handle == "POSIX file descriptor") {
        *detail = absl::StrFormat(
            " could not import another local rank's GPU memory during init%s: %s; NCCL shares "
            "its buffers between local ranks as cuMem POSIX file descriptors passed over a Unix "
            "socket, which needs the ranks to share the host's IPC and PID namespaces (and, for "
            "NCCL versions that fetch the descriptor with pidfd_getfd, CAP_SYS_PTRACE)",
            where, FailedCall(s, x.err));
        *fix =
            "run the node's ranks in one container, or start each with docker run --ipc=host "
            "--pid=host (Kubernetes: hostIPC and hostPID; add --cap-add SYS_PTRACE for NCCL "
            "2.19-2.22); or set NCCL_CUMEM_ENABLE=0 to share through legacy CUDA IPC instead";
      } else {
        *detail = absl::StrFormat(
            " could not open another local rank's GPU memory during init%s: %s; a legacy CUDA IPC "
            "handle can only be opened by a process that shares the exporter's IPC and PID "
            "namespaces and sees its GPU",
            where, FailedCall(s, x.err));
        *fix =
            "run the node's ranks in one container, or with docker run --ipc=host --pid=host "
            "(Kubernetes: hostIPC and hostPID), with every local GPU visible to every rank; "
            "NCCL_P2P_DISABLE=1 avoids CUDA IPC (slower, through /dev/shm)";
      }
      return;
    case InitCause::kFabricManager:
      if (s.handle == "fabric") {
        *detail = absl::StrFormat(
            " could not share GPU memory through an NVLink fabric handle during init: %s; fabric "
            "handles need the NVIDIA Fabric Manager (and IMEX across nodes) running and the "
            "GPUs registered with the fabric",
            FailedCall(s, x.err));
        *fix =
            "start the Fabric Manager on the node (systemctl start nvidia-fabricmanager, the same "
            "version as the driver) and, for multi-node NVLink, the IMEX daemon (nvidia-imex) with "
            "its channel visible in the container; or NCCL_MNNVL_ENABLE=0 NCCL_CUMEM_ENABLE=0";
      } else {
        *detail = absl::StrFormat(
            " could not set up NVLink SHARP (NVLS) multicast during init: %s; multicast objects "
            "are created by the NVSwitch fabric, which the NVIDIA Fabric Manager must have "
            "initialised",
            FailedCall(s, x.err));
        *fix =
            "start the Fabric Manager on the node (systemctl start nvidia-fabricmanager, the same "
            "version as the driver; nvidia-smi -q shows the fabric state), or disable NVLS with "
            "NCCL_NVLS_ENABLE=0";
      }
      return;
    case InitCause::kPeerAccessUnsupported: {
      std::string path;
      if (!s.acs_bridges.empty()) {
        path = absl::StrCat("; PCIe ACS redirects peer traffic on ",
                            s.acs_bridges.size() == 1 ? "bridge " : "bridges ",
                            absl::StrJoin(s.acs_bridges, ", "), " above the GPUs");
      }
      if (s.iommu) absl::StrAppend(&path, path.empty() ? "; " : ", and ", "an IOMMU is enabled");
      const std::string devices = s.device >= 0 && s.peer >= 0
                                      ? absl::StrFormat(" (device %d to %d)", s.device, s.peer)
                                      : "";
      *detail =
          absl::StrFormat(" could not enable peer access between local GPUs%s during init: %s%s",
                          devices, FailedCall(s, x.err), path);
      *fix =
          "check the GPU topology with nvidia-smi topo -m: peers need NVLink or a PCIe path "
          "without ACS redirection (disable ACS on the PCIe switches, or boot with iommu=pt / "
          "intel_iommu=off on bare metal); NCCL_P2P_DISABLE=1 works around it (slower)";
      return;
    }
    default:
      return;
  }
}

// The detail after the ranks' noun, and the fix, of a cause.
void Words(const InitFailureFacts& x, std::string* detail, std::string* fix) {
  const std::string address = x.address.value_or("");
  switch (x.cause) {
    case InitCause::kNoInterface: {
      const std::string have = x.interfaces_known ? InterfaceList(x) : "unknown (no inventory)";
      const std::optional<std::string>& ifname = x.socket_ifname;
      *detail =
          ifname
              ? absl::StrFormat(
                    ": NCCL_SOCKET_IFNAME=%s matches no usable interface on %s, so NCCL found no "
                    "socket interface for its bootstrap; the interfaces there are: %s",
                    *ifname, HostPhrase(x), have)
              : absl::StrFormat(
                    ": NCCL found no usable socket interface on %s (it skips loopback and "
                    "interfaces that are down); the interfaces there are: %s",
                    HostPhrase(x), have);
      *fix = absl::StrCat(
          "set NCCL_SOCKET_IFNAME on every rank to the interface that reaches the other nodes",
          x.suggest_interface.empty()
              ? ""
              : absl::StrCat(" (here: NCCL_SOCKET_IFNAME=", x.suggest_interface, ")"),
          ", or unset it; a value is a prefix (eth matches eth0, eth1), =eth0 matches exactly, "
          "^docker,lo excludes");
      return;
    }
    case InitCause::kSharedMemory: {
      const InitFailureFacts::Shm shm = x.shm.value_or(InitFailureFacts::Shm{});
      const char* size_word =
          x.shm_call_traced ? " of " : " to ";  // "fallocate of 9.2 MiB", "extending it to 9.2 MiB"
      std::string room;
      if (shm.shm_size) {
        room =
            absl::StrFormat("; /dev/shm on %s is %s (%s free when NCCL began)", HostPhrase(x),
                            Bytes(*shm.shm_size), shm.shm_free ? Bytes(*shm.shm_free) : "unknown");
      }
      *detail = absl::StrFormat(
          " could not make NCCL's shared-memory segment in /dev/shm: %s%s%s%s (each connection "
          "between two local "
          "ranks takes such a segment)",
          x.shm_call.empty() ? "making it" : x.shm_call,
          shm.requested ? absl::StrCat(size_word, Bytes(static_cast<uint64_t>(*shm.requested)))
                        : "",
          x.err ? absl::StrCat(" failed with ", ErrnoName(x.err)) : " failed", room);
      *fix = CauseOf(CatalogueCause::kShm).fix;
      return;
    }
    case InitCause::kBootstrapRefused:
    case InitCause::kBootstrapUnreachable: {
      const std::string where = address.empty() ? "its bootstrap root" : address;
      const std::string tries = x.attempts > 1 ? absl::StrCat(", ", x.attempts, " attempts") : "";
      if (x.cause == InitCause::kBootstrapRefused) {
        std::string listen;
        if (!x.comm_ids.empty()) {
          std::vector<std::string> parts;
          for (const auto& [v, ranks] : x.comm_ids)
            parts.push_back(absl::StrCat(RanksOrProcess(ranks), " NCCL_COMM_ID=", v));
          listen = absl::StrCat("; the ranks disagree on the root's address: ",
                                absl::StrJoin(parts, ", "));
        }
        *detail = absl::StrFormat(
            " could not connect to the bootstrap root at %s (%s%s): nothing listens there; the "
            "root (rank 0 with "
            "NCCL_COMM_ID, else the process that made the ncclUniqueId) never started it there, "
            "had exited, or the "
            "address or port is wrong%s",
            where, ErrnoName(x.err), tries, listen);
        *fix =
            "make every rank use the same root address and port (NCCL_COMM_ID, or "
            "MASTER_ADDR/MASTER_PORT for the "
            "launcher's store), and make sure the root process is alive and reaches "
            "ncclCommInitRank";
        return;
      }
      std::string local;
      if (x.interfaces_known) {
        local = absl::StrCat("; its interfaces are ", InterfaceList(x),
                             x.root_on_local_net
                                 ? ""
                                 : absl::StrCat(", none of them on the network of ", x.root_ip));
      }
      if (!x.virtual_bootstrap_iface.empty()) {
        absl::StrAppend(&local, "; NCCL picked ", x.virtual_bootstrap_iface,
                        ", a container or virtual bridge");
      }
      *detail = absl::StrFormat(" could not reach the bootstrap root at %s (%s%s)%s", where,
                                ErrnoName(x.err), tries, local);
      *fix = absl::StrCat(
          "give this node a route to ", address.empty() ? "the root" : x.root_ip,
          ", or pin NCCL_SOCKET_IFNAME on every rank to the interface on the network the ranks "
          "share",
          x.suggest_interface.empty() ? "" : absl::StrCat(" (", x.suggest_interface, ")"),
          !address.empty() && x.root_port > 0
              ? absl::StrCat("; check that no firewall drops port ", x.root_port)
              : "");
      return;
    }
    case InitCause::kRootGone: {
      const std::string how = x.exit_code ? absl::StrCat("exited with code ", *x.exit_code)
                              : x.signo   ? absl::StrCat("died of ", SignalName(x.signo))
                                          : "ended with no exit or signal recorded (killed)";
      *detail = absl::StrFormat(
          " made the ncclUniqueId, so its process hosted the communicator's bootstrap root, and "
          "%s%s before %s connected to it; they could not connect, or waited, because of that",
          how, x.host.empty() ? "" : absl::StrCat(" on ", x.host),
          RanksNoun(x.could_not_connect, "the other ranks"));
      *fix =
          "find why this rank ended before ncclCommInitRank (its own error output, the "
          "launcher's log); the rank that makes the unique id must stay alive until every rank "
          "has joined the communicator";
      return;
    }
    case InitCause::kDuplicateGpu: {
      const std::string bus = x.bus_id.value_or("");
      *detail = absl::StrFormat(
          " use the same GPU%s on %s: NCCL refuses two ranks of one communicator on one device "
          "(\"Duplicate GPU "
          "detected\")",
          bus.empty() ? "" : absl::StrCat(" (PCI bus id ", bus, ")"), HostPhrase(x));
      *fix = CauseOf(CatalogueCause::kGpu).fix;
      return;
    }
    case InitCause::kVersionSkew: {
      std::vector<std::string> parts;
      for (const InitVersionGroup& g : x.version_groups) {
        parts.push_back(absl::StrCat(RanksOrProcess(g.ranks), " NCCL ",
                                     NcclVersionString(g.version),
                                     g.path.empty() ? "" : absl::StrCat(" (", g.path, ")")));
      }
      if (!x.nccl_text.empty()) parts.push_back(x.nccl_text);
      *detail = absl::StrFormat(": the NCCL version differs from the rest of the job: %s",
                                absl::StrJoin(parts, "; "));
      *fix = CauseOf(CatalogueCause::kVersionSkew).fix;
      return;
    }
    case InitCause::kDriverTooOld: {
      const InitFailureFacts::Cuda cuda = x.cuda.value_or(InitFailureFacts::Cuda{});
      const std::string driver = cuda.driver ? absl::StrCat("CUDA ", *cuda.driver)
                                 : x.driver_known
                                     ? "none loaded: no libcuda.so.1, or one that could not load"
                                     : "its version is not in the log";
      const std::string runtime =
          cuda.runtime ? absl::StrCat(" (CUDA runtime ", *cuda.runtime, ")") : "";
      *detail = absl::StrFormat(
          ": the CUDA driver (%s) is older than the CUDA runtime NCCL uses%s; NCCL said: %s",
          driver, runtime, x.nccl_text.empty() ? "nothing" : x.nccl_text);
      *fix = CauseOf(CatalogueCause::kDriverOld).fix;
      return;
    }
    case InitCause::kNoDriver:
      *detail = absl::StrFormat(
          ": no CUDA driver is loaded in the process (no libcuda.so.1, or one that could not load: "
          "no GPU or NVIDIA driver on this machine, or not visible in its container); NCCL said: "
          "%s",
          x.nccl_text.empty() ? "nothing" : x.nccl_text);
      *fix = CauseOf(CatalogueCause::kDriver).fix;
      return;
    case InitCause::kInfiniBand: {
      const std::string what = !x.nccl_text.empty()
                                   ? x.nccl_text
                                   : absl::StrCat(x.call, " failed with ", ErrnoName(x.err));
      const uint64_t memlock = x.memlock && x.memlock->bytes ? *x.memlock->bytes : 0;
      *detail =
          absl::StrFormat(": InfiniBand verbs failed during init: %s%s%s", what,
                          x.low_memlock ? absl::StrCat("; RLIMIT_MEMLOCK is only ", Bytes(memlock),
                                                       ", and NCCL pins its buffers for the NIC")
                                        : "",
                          FailedLoads(x));
      *fix = CauseOf(x.low_memlock ? CatalogueCause::kIbMemlock : CatalogueCause::kIb).fix;
      return;
    }
    case InitCause::kFabric:
      *detail = absl::StrFormat(
          ": the NVLink fabric (NVSwitch, NVLS multicast) was not usable during init: %s",
          x.nccl_text);
      *fix = CauseOf(CatalogueCause::kFabric).fix;
      return;
    case InitCause::kPeerToPeer:
      *detail = absl::StrFormat(
          " could not map another local GPU's memory (P2P / CUDA IPC) during init: %s",
          x.nccl_text);
      *fix = CauseOf(CatalogueCause::kP2p).fix;
      return;
    case InitCause::kCatalogued: {
      // The catalogue's words for the message (knowledge/message_catalogue.h).
      const CatalogueMessage* m = MessageById(x.message);
      if (m == nullptr) break;
      *detail = absl::StrFormat(" %s: %s", m->meaning, x.nccl_text);
      *fix = CauseOf(*m).fix;
      return;
    }
    case InitCause::kCuda:
      *detail =
          absl::StrFormat(": a CUDA call failed during NCCL init: %s",
                          x.nccl_text.empty() ? "ncclUnhandledCudaError (no text)" : x.nccl_text);
      if (x.out_of_memory) {
        *fix = absl::StrCat(
            "free GPU memory before creating the communicator (NCCL allocates its buffers at init, "
            "NCCL_BUFFSIZE per connection and channel",
            x.buffsize ? absl::StrCat(", set to ", *x.buffsize, " here") : "",
            "): lower NCCL_BUFFSIZE or NCCL_MAX_NCHANNELS, create communicators before the model "
            "and "
            "optimizer fill the GPU, or cap the framework's cache (PYTORCH_CUDA_ALLOC_CONF)");
      } else {
        *fix = CauseOf(CatalogueCause::kCuda).fix;
      }
      return;
    case InitCause::kUnknown:
      *detail =
          absl::StrFormat(": %s failed with %s: %s%s", x.call.empty() ? "NCCL init" : x.call,
                          x.result >= 0 ? ResultName(x.result) : "an error",
                          x.nccl_text.empty() ? "NCCL gave no text" : x.nccl_text, FailedLoads(x));
      *fix =
          "run again with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV and read this rank's "
          "first WARN line";
      return;
    case InitCause::kIpcImportRefused:
    case InitCause::kFabricManager:
    case InitCause::kPeerAccessUnsupported:
      if (x.sharing) GpuSharingWords(x, *x.sharing, detail, fix);
      return;
    case InitCause::kWaitedUnexplained:
    case InitCause::kWaitedForCause:
      break;
  }
}

// How the waiting ranks ended, each way once, in the order of the words.
std::string Until(const std::vector<RankEnd>& until) {
  if (until.empty()) return "";
  std::set<std::string> words;
  for (const RankEnd& e : until)
    words.insert(e.exit_code ? absl::StrCat("exited with code ", *e.exit_code)
                             : SignalName(e.signo));
  return absl::StrCat(" (until: ", absl::StrJoin(words, ", "), ")");
}

}  // namespace

void RenderInitFailure(const Finding& f, const InitFailureFacts& x, FindingText* t) {
  const std::string ended = Until(x.until);
  const std::string call = x.call.empty() ? "NCCL init" : x.call;
  if (x.cause == InitCause::kWaitedUnexplained) {
    t->detail = absl::StrFormat(
        "%s waited in %s%s, and no rank's trace shows a failure: a rank of the job may never "
        "have started the init (its trace is missing, or it is stuck before it)",
        RanksOrProcess(f.ranks), call, ended);
    t->fix =
        "check that every rank of the job started and reached ncclCommInitRank (the launcher's "
        "log, and each "
        "rank's trace folder)";
    t->groups.push_back({f.ranks, "waited for the others"});
    return;
  }
  if (x.cause == InitCause::kWaitedForCause) {
    t->detail = absl::StrFormat("%s failed or waited in %s because of the rank(s) above%s",
                                RanksOrProcess(f.ranks), call, ended);
    t->fix = "nothing to fix on these ranks: fix the failure above";
    t->groups.push_back({f.ranks, "waited for the others"});
    return;
  }
  // The ranks, or the processes by pid where no rank is known; the sentence
  // starts with them.
  // pid 0: a process explain knows only from lines without a prefix.
  const bool no_pids = std::all_of(x.pids.begin(), x.pids.end(), [](uint32_t p) { return p == 0; });
  const std::string noun = !f.ranks.empty() ? RanksOrProcess(f.ranks)
                           : no_pids        ? "a process of the job (the logs name no rank or pid)"
                           : x.pids.size() == 1
                               ? absl::StrCat("the process (pid ", x.pids[0], ")")
                               : absl::StrCat("processes ", absl::StrJoin(x.pids, ", "));
  std::string rest;
  Words(x, &rest, &t->fix);
  t->detail = noun + rest;
  if (!t->detail.empty())
    t->detail[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t->detail[0])));
  if (!f.ranks.empty()) {
    t->groups.push_back(
        {f.ranks, absl::StrCat("init failed: ", AreaName(x.subsystem),
                               x.err ? absl::StrCat(" (", ErrnoName(x.err), ")") : "")});
  }
}

}  // namespace ncclwatch::decoder

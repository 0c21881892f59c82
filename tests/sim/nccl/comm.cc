#include "nccl/comm.h"

#include <cuda_runtime_api.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>

#include "common/sim_env.h"
#include "nccl/debug.h"
#include "nccl/group.h"
#include "nccl/nvls.h"
#include "nccl/params.h"

namespace ncclsim::nccl {
namespace {

constexpr int kSplitTagBase = 0x5000;
constexpr int kShrinkTagBase = 0x6000;

// Where a new communicator's bootstrap comes from.
struct InitSource {
  std::vector<BootstrapHandle> handles;  // ncclCommInitRank*
  ncclComm* parent = nullptr;            // ncclCommSplit / ncclCommShrink
  std::vector<int> members;              // parent ranks, in new-rank order
  int tag = 0;
};

#define SIM_CUDACHECK(cmd)                                    \
  do {                                                        \
    cudaError_t sim_err = (cmd);                              \
    if (sim_err != cudaSuccess) {                             \
      WARN("Cuda failure '%s'", cudaGetErrorString(sim_err)); \
      return ncclUnhandledCudaError;                          \
    }                                                         \
  } while (0)

void ShowVersionOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    char line[64];
    std::snprintf(line, sizeof(line), "NCCL version %s+cuda%d.%d", NcclVersionString().c_str(),
                  CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
    if (DebugLevel() == kLogVersion || DebugLevel() == kLogWarn) {
      VERSION_LOG("%s", line);
    } else {
      INFO(kAll, "%s", line);
    }
  });
}

// NCCL's int64 form of a PCI bus id: the hex digits without separators.
int64_t BusIdToInt64(const char* bus) {
  char hex[32];
  size_t n = 0;
  for (const char* p = bus; *p && n + 1 < sizeof(hex); ++p)
    if (*p != ':' && *p != '.') hex[n++] = *p;
  hex[n] = '\0';
  return std::strtoll(hex, nullptr, 16);
}

ncclResult_t ExchangePeerInfo(ncclComm* comm) {
  comm->peers.assign(comm->nranks, PeerInfo{});
  PeerInfo& me = comm->peers[comm->rank];
  me.rank = comm->rank;
  me.cuda_dev = comm->cuda_dev;
  me.bus_id = comm->bus_id;
  me.host_hash = HostHash();
  me.version = NcclVersionCode();
  me.pid = static_cast<int32_t>(getpid());
  struct stat st;
  if (stat("/dev/shm", &st) != 0) {
    WARN("Call to stat failed: %s", strerror(errno));
    return ncclSystemError;
  }
  me.shm_dev = st.st_dev;
  NCCLCHECK(comm->bootstrap->AllGather(comm->peers.data(), sizeof(PeerInfo)));
  const PeerInfo& self = comm->peers[comm->rank];
  for (int i = 0; i < comm->nranks; ++i) {
    const PeerInfo& p = comm->peers[i];
    if (p.version != self.version) {
      WARN("Mismatched NCCL version detected : rank %d version %d rank %d version %d", i, p.version,
           comm->rank, self.version);
      return ncclInvalidUsage;
    }
    if (i != comm->rank && p.host_hash == self.host_hash && p.bus_id == self.bus_id) {
      WARN("Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx", comm->rank, i,
           static_cast<unsigned long>(self.bus_id));
      return ncclInvalidUsage;
    }
  }
  std::set<uint64_t> hosts;
  comm->local_ranks = 0;
  comm->local_rank = 0;
  for (int i = 0; i < comm->nranks; ++i) {
    hosts.insert(comm->peers[i].host_hash);
    if (comm->peers[i].host_hash == self.host_hash) {
      if (i < comm->rank) ++comm->local_rank;
      ++comm->local_ranks;
    }
  }
  comm->nnodes = static_cast<int>(hosts.size());
  return ncclSuccess;
}

ncclResult_t InitSteps(ncclComm* comm, const InitSource& src, const char* func_name) {
  SIM_CUDACHECK(cudaSetDevice(comm->cuda_dev));
  ShowVersionOnce();
  int driver = 0;
  (void)cudaDriverGetVersion(&driver);
  INFO(kInit, "cudaDriverVersion %d", driver);
  NCCLCHECK(BootstrapNetInit());
  char bus[32] = {0};
  SIM_CUDACHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), comm->cuda_dev));
  comm->bus_id = BusIdToInt64(bus);
  if (src.parent == nullptr) {
    INFO(kInit,
         "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init START",
         func_name, static_cast<void*>(comm), comm->rank, comm->nranks, comm->cuda_dev,
         comm->cuda_dev, static_cast<unsigned long>(comm->bus_id),
         static_cast<unsigned long long>(comm->comm_hash));
    if (EnvRaw("NCCL_COMM_ID") != nullptr && comm->rank == 0)
      NCCLCHECK(BootstrapCreateRoot(src.handles[0]));
    NCCLCHECK(Bootstrap::Init(src.handles, comm->rank, comm->nranks, &comm->abort_flag,
                              &comm->bootstrap));
  } else {
    INFO(kInit,
         "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx parent %p splitCount %d "
         "color %d key %d - Init "
         "START",
         func_name, static_cast<void*>(comm), comm->rank, comm->nranks, comm->cuda_dev,
         comm->cuda_dev, static_cast<unsigned long>(comm->bus_id), static_cast<void*>(src.parent),
         src.parent->split_count, comm->split_color, comm->split_key);
    NCCLCHECK(Bootstrap::FromParent(*src.parent->bootstrap, src.members, comm->rank, src.tag,
                                    comm->comm_hash, &comm->abort_flag, &comm->bootstrap));
  }
  NCCLCHECK(ExchangePeerInfo(comm));
  INFO(kInit, "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d",
       static_cast<void*>(comm), comm->rank, comm->nranks, comm->nnodes, comm->local_ranks,
       comm->local_rank, 0);
  if (comm->nnodes > 1) {
    WARN(
        "ncclsim: the ranks of this communicator are on %d hosts; the simulator has no inter-node "
        "transport",
        comm->nnodes);
    return ncclSystemError;
  }
  NCCLCHECK(comm->transport.Setup(*comm->bootstrap, comm->peers, comm->rank));
  NCCLCHECK(NvlsSetup(comm));
  comm->signals_awaited.assign(static_cast<size_t>(comm->nranks), 0);
  comm->progress.Start(&comm->transport, comm->nranks);
  return ncclSuccess;
}

ncclResult_t RunInit(ncclComm* comm, const InitSource& src, const char* func_name) {
  ncclResult_t rc = InitSteps(comm, src, func_name);
  if (rc != ncclSuccess) {
    comm->progress.Stop();
    comm->transport.Close();
    if (comm->bootstrap) comm->bootstrap->Close();
    comm->state = CommState::kFailed;
    comm->async_error = rc;
    return rc;
  }
  comm->state = CommState::kReady;
  comm->async_error = ncclSuccess;
  if (src.parent == nullptr) {
    INFO(kInit,
         "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init "
         "COMPLETE",
         func_name, static_cast<void*>(comm), comm->rank, comm->nranks, comm->cuda_dev,
         comm->cuda_dev, static_cast<unsigned long>(comm->bus_id),
         static_cast<unsigned long long>(comm->comm_hash));
  } else {
    INFO(kInit,
         "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx parent %p splitCount %d "
         "color %d key %d - Init "
         "COMPLETE",
         func_name, static_cast<void*>(comm), comm->rank, comm->nranks, comm->cuda_dev,
         comm->cuda_dev, static_cast<unsigned long>(comm->bus_id), static_cast<void*>(src.parent),
         src.parent->split_count, comm->split_color, comm->split_key);
  }
  return ncclSuccess;
}

bool ConfigBlocking(const ncclConfig_t* config, bool inherited) {
  if (config == nullptr || config->blocking == NCCL_CONFIG_UNDEF_INT) return inherited;
  return config->blocking != 0;
}

ncclResult_t CheckConfig(const ncclConfig_t* config) {
  if (config == nullptr) return ncclSuccess;
  if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1) {
    WARN("Invalid config blocking attribute value %d", config->blocking);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// Runs `job` as a blocking, non-blocking or grouped call, as the comm asks.
ncclResult_t Schedule(ncclComm* comm, std::function<ncclResult_t()> job) {
  if (GroupDepth() > 0) {
    GroupDeferJob(std::move(job));
    return ncclSuccess;
  }
  if (!comm->blocking) {
    comm->async_error = ncclInProgress;
    comm->background = std::thread([job] { (void)job(); });
    return ncclInProgress;
  }
  return job();
}

ncclComm* NewChild(ncclComm* parent, const ncclConfig_t* config) {
  auto* c = new ncclComm();
  c->cuda_dev = parent->cuda_dev;
  c->blocking = ConfigBlocking(config, parent->blocking);
  c->name = (config && config->commName) ? config->commName : "";
  c->parent = parent;
  return c;
}

void Teardown(ncclComm* comm) {
  comm->progress.Stop();
  comm->transport.Close();
  if (comm->bootstrap) comm->bootstrap->Close();
}

void JoinBackground(ncclComm* comm) {
  if (comm->background.joinable() && comm->background.get_id() != std::this_thread::get_id())
    comm->background.join();
}

}  // namespace

bool IsComm(ncclComm_t comm) { return comm != nullptr && comm->magic == ncclComm::kMagic; }

ncclResult_t CommEnsureReady(ncclComm_t comm, const char* opname) {
  if (comm == nullptr) {
    WARN("%s : comm argument is NULL", opname);
    return ncclInvalidArgument;
  }
  if (!IsComm(comm) || comm->state == CommState::kDestroyed) {
    WARN("Error: corrupted comm object detected");
    return ncclInvalidArgument;
  }
  if (__atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE)) return ncclInternalError;
  const ncclResult_t err = static_cast<ncclResult_t>(comm->async_error.load());
  if (err == ncclInProgress) {
    WARN("Attempt to use communicator before the previous operation returned ncclSuccess");
    return ncclInvalidArgument;
  }
  if (err != ncclSuccess) return err;
  if (comm->state == CommState::kRevoked || comm->state == CommState::kFinalized) {
    WARN("%s : communicator %p is %s", opname, static_cast<void*>(comm),
         comm->state == CommState::kRevoked ? "revoked" : "finalized");
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

void CommSetAsyncError(ncclComm_t comm, ncclResult_t error) {
  int expected = ncclSuccess;
  comm->async_error.compare_exchange_strong(expected, error);
}

ncclResult_t CommInitRank(ncclComm_t* out, int nranks, std::vector<BootstrapHandle> handles,
                          int rank, const ncclConfig_t* config, const char* func_name) {
  if (out == nullptr) {
    WARN("%s : comm argument is NULL", func_name);
    return ncclInvalidArgument;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    WARN("Invalid rank requested : %d/%d", rank, nranks);
    return ncclInvalidArgument;
  }
  NCCLCHECK(CheckConfig(config));
  int dev = 0;
  SIM_CUDACHECK(cudaGetDevice(&dev));
  NCCLCHECK(BootstrapNetInit());
  auto* comm = new ncclComm();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->cuda_dev = dev;
  comm->blocking = ConfigBlocking(config, true);
  comm->name = (config && config->commName) ? config->commName : "";
  comm->comm_hash = Fnv1a(handles.data(), handles.size() * sizeof(BootstrapHandle));
  *out = comm;
  std::string name(func_name);
  ncclResult_t rc = Schedule(comm, [comm, handles, name] {
    InitSource src;
    src.handles = handles;
    return RunInit(comm, src, name.c_str());
  });
  if (rc != ncclSuccess && rc != ncclInProgress) *out = nullptr;
  return rc;
}

ncclResult_t CommSplit(ncclComm_t parent, int color, int key, ncclComm_t* out,
                       const ncclConfig_t* config) {
  NCCLCHECK(CommEnsureReady(parent, "CommSplit"));
  if (out == nullptr) {
    WARN("CommSplit : newcomm argument is NULL");
    return ncclInvalidArgument;
  }
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    WARN("CommSplit : invalid color %d", color);
    return ncclInvalidArgument;
  }
  NCCLCHECK(CheckConfig(config));
  ncclComm* child = color == NCCL_SPLIT_NOCOLOR ? nullptr : NewChild(parent, config);
  *out = child;
  auto job = [parent, color, key, child] {
    struct ColorKey {
      int32_t color;
      int32_t key;
    };
    std::vector<ColorKey> all(parent->nranks);
    all[parent->rank] = ColorKey{color, key};
    NCCLCHECK(parent->bootstrap->AllGather(all.data(), sizeof(ColorKey)));
    const int split_index = parent->split_count++;
    if (color == NCCL_SPLIT_NOCOLOR) {
      INFO(kInit, "Rank %d has color with NCCL_SPLIT_NOCOLOR, not creating a new communicator",
           parent->rank);
      return ncclSuccess;
    }
    InitSource src;
    src.parent = parent;
    for (int r = 0; r < parent->nranks; ++r)
      if (all[r].color == color) src.members.push_back(r);
    std::stable_sort(src.members.begin(), src.members.end(),
                     [&all](int a, int b) { return all[a].key < all[b].key; });
    src.tag = kSplitTagBase + split_index;
    child->rank = static_cast<int>(std::find(src.members.begin(), src.members.end(), parent->rank) -
                                   src.members.begin());
    child->nranks = static_cast<int>(src.members.size());
    child->split_color = color;
    child->split_key = key;
    const int64_t mix[3] = {static_cast<int64_t>(parent->comm_hash), split_index, color};
    child->comm_hash = Fnv1a(mix, sizeof(mix));
    return RunInit(child, src, "ncclCommSplit");
  };
  if (child == nullptr) {
    if (GroupDepth() > 0) {
      GroupDeferJob(job);
      return ncclSuccess;
    }
    return job();
  }
  ncclResult_t rc = Schedule(child, job);
  if (rc != ncclSuccess && rc != ncclInProgress) *out = nullptr;
  return rc;
}

ncclResult_t CommShrink(ncclComm_t parent, const int* exclude, int nexclude, ncclComm_t* out,
                        const ncclConfig_t* config, int flags) {
  if (!IsComm(parent) || parent->state == CommState::kDestroyed) {
    WARN("CommShrink : comm argument is NULL");
    return ncclInvalidArgument;
  }
  if (out == nullptr || nexclude < 0 || (nexclude > 0 && exclude == nullptr)) {
    WARN("CommShrink : invalid arguments");
    return ncclInvalidArgument;
  }
  NCCLCHECK(CheckConfig(config));
  std::set<int> excluded;
  for (int i = 0; i < nexclude; ++i) {
    if (exclude[i] < 0 || exclude[i] >= parent->nranks) {
      WARN("CommShrink : invalid rank %d in the exclude list (ranks are 0..%d)", exclude[i],
           parent->nranks - 1);
      return ncclInvalidArgument;
    }
    excluded.insert(exclude[i]);
  }
  if (excluded.count(parent->rank)) {
    WARN("CommShrink : rank %d is in the exclude list and cannot take part in the shrink",
         parent->rank);
    return ncclInvalidArgument;
  }
  // NCCL_SHRINK_ABORT: the parent's in-flight work is abandoned first.
  if (flags & NCCL_SHRINK_ABORT) parent->progress.Abort(ncclInternalError);
  ncclComm* child = NewChild(parent, config);
  *out = child;
  auto job = [parent, excluded, child] {
    InitSource src;
    src.parent = parent;
    for (int r = 0; r < parent->nranks; ++r)
      if (!excluded.count(r)) src.members.push_back(r);
    const int split_index = parent->split_count++;
    src.tag = kShrinkTagBase + split_index;
    child->rank = static_cast<int>(std::find(src.members.begin(), src.members.end(), parent->rank) -
                                   src.members.begin());
    child->nranks = static_cast<int>(src.members.size());
    const int64_t mix[3] = {static_cast<int64_t>(parent->comm_hash), split_index, -2};
    child->comm_hash = Fnv1a(mix, sizeof(mix));
    return RunInit(child, src, "ncclCommShrink");
  };
  ncclResult_t rc = Schedule(child, job);
  if (rc != ncclSuccess && rc != ncclInProgress) *out = nullptr;
  return rc;
}

ncclResult_t CommGetGrowId(ncclComm_t comm, BootstrapHandle* out) {
  NCCLCHECK(CommEnsureReady(comm, "ncclCommGetUniqueId"));
  if (out == nullptr) {
    WARN("CommGetUniqueId : uniqueId argument is NULL");
    return ncclInvalidArgument;
  }
  if (EnvRaw("NCCL_COMM_ID") != nullptr) {
    WARN("ncclCommGetUniqueId should not be called when NCCL_COMM_ID is set");
    return ncclInvalidUsage;
  }
  return BootstrapGetUniqueId(out);
}

ncclResult_t CommGrow(ncclComm_t parent, int nranks, const BootstrapHandle* id, int rank,
                      ncclComm_t* out, const ncclConfig_t* config) {
  if (out == nullptr) return ncclInvalidArgument;
  if (nranks <= 0) {
    WARN("ncclCommGrow: total ranks must be positive, got %d", nranks);
    return ncclInvalidArgument;
  }
  if (parent != nullptr && IsComm(parent) && nranks <= parent->nranks) {
    WARN("ncclCommGrow: total ranks %d is less than current ranks %d", nranks, parent->nranks);
    return ncclInvalidArgument;
  }
  *out = nullptr;
  NCCLCHECK(CheckConfig(config));
  ncclComm* child = nullptr;
  if (parent != nullptr) {
    NCCLCHECK(CommEnsureReady(parent, "ncclCommGrow"));
    if (rank != -1) {
      WARN("ncclCommGrow: existing ranks must pass rank=-1, got %d", rank);
      return ncclInvalidArgument;
    }
    child = NewChild(parent, config);
    child->rank = parent->rank;
  } else {
    if (rank < 0) {
      WARN("ncclCommGrow: new ranks must pass valid rank >= 0, got %d", rank);
      return ncclInvalidArgument;
    }
    if (id == nullptr) {
      WARN("ncclCommGrow: new ranks must pass non-NULL uniqueId");
      return ncclInvalidArgument;
    }
    if (rank >= nranks) {
      WARN("ncclCommGrow: new rank %d exceeds total ranks %d", rank, nranks);
      return ncclInvalidArgument;
    }
    NCCLCHECK(BootstrapNetInit());
    int dev = 0;
    SIM_CUDACHECK(cudaGetDevice(&dev));
    child = new ncclComm();
    child->cuda_dev = dev;
    child->blocking = ConfigBlocking(config, true);
    child->name = (config && config->commName) ? config->commName : "";
    child->rank = rank;
  }
  child->nranks = nranks;
  INFO(kInit, "ncclCommGrow: %s rank creating new communicator with %d total ranks",
       parent != nullptr ? "existing" : "new", nranks);
  *out = child;
  const BootstrapHandle given = id != nullptr ? *id : BootstrapHandle{};
  const bool has_id = id != nullptr;
  auto job = [parent, child, given, has_id] {
    BootstrapHandle handle = given;
    if (parent != nullptr) {
      // The existing ranks agree on the id: the one that made it passes it
      // (NCCL hands it to the parent's first and last rank, which bring the
      // rest; here every existing rank learns it from the parent's bootstrap).
      struct Offer {
        int32_t has;
        int32_t pad;
        BootstrapHandle handle;
      };
      std::vector<Offer> offers(parent->nranks);
      offers[parent->rank].has = has_id ? 1 : 0;
      offers[parent->rank].handle = given;
      NCCLCHECK(parent->bootstrap->AllGather(offers.data(), sizeof(Offer)));
      ++parent->split_count;  // as NCCL counts a grow among the parent's children
      bool found = false;
      for (const Offer& o : offers) {
        if (o.has) {
          handle = o.handle;
          found = true;
          break;
        }
      }
      if (!found) {
        WARN("ncclCommGrow: no existing rank passed the id made by ncclCommGetUniqueId");
        return ncclInvalidArgument;
      }
    }
    child->comm_hash = Fnv1a(&handle, sizeof(handle));
    InitSource src;
    src.handles = {handle};
    return RunInit(child, src, "ncclCommGrow");
  };
  ncclResult_t rc = Schedule(child, job);
  if (rc != ncclSuccess && rc != ncclInProgress) *out = nullptr;
  return rc;
}

ncclResult_t CommFinalize(ncclComm_t comm) {
  NCCLCHECK(CommEnsureReady(comm, "CommFinalize"));
  if (comm->blocking) {
    comm->progress.WaitIdle();
    comm->state = CommState::kFinalized;
    return ncclSuccess;
  }
  JoinBackground(comm);
  comm->async_error = ncclInProgress;
  comm->background = std::thread([comm] {
    comm->progress.WaitIdle();
    comm->state = CommState::kFinalized;
    comm->async_error = ncclSuccess;
  });
  return ncclInProgress;
}

ncclResult_t CommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (!IsComm(comm) || comm->state == CommState::kDestroyed) {
    WARN("Error: corrupted comm object detected");
    return ncclInvalidArgument;
  }
  JoinBackground(comm);
  // Outstanding work is flushed first: a hung collective keeps destroy waiting,
  // as it does with real NCCL (use ncclCommAbort to get out).
  if (comm->state != CommState::kFailed) comm->progress.WaitIdle();
  Teardown(comm);
  INFO(kInit, "comm %p rank %d nranks %d cudaDev %d busId %lx - Destroy COMPLETE",
       static_cast<void*>(comm), comm->rank, comm->nranks, comm->cuda_dev,
       static_cast<unsigned long>(comm->bus_id));
  comm->state = CommState::kDestroyed;
  return ncclSuccess;
}

ncclResult_t CommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (!IsComm(comm) || comm->state == CommState::kDestroyed) {
    WARN("Error: corrupted comm object detected");
    return ncclInvalidArgument;
  }
  INFO(kInit, "comm %p rank %d nRanks %d cudaDev %d busId %lx - Abort START",
       static_cast<void*>(comm), comm->rank, comm->nranks, comm->cuda_dev,
       static_cast<unsigned long>(comm->bus_id));
  __atomic_store_n(&comm->abort_flag, 1u, __ATOMIC_RELEASE);
  comm->progress.Abort(ncclInternalError);
  JoinBackground(comm);
  comm->progress.WaitIdle();
  Teardown(comm);
  INFO(kInit, "comm %p rank %d nranks %d cudaDev %d busId %lx - Abort COMPLETE",
       static_cast<void*>(comm), comm->rank, comm->nranks, comm->cuda_dev,
       static_cast<unsigned long>(comm->bus_id));
  comm->state = CommState::kDestroyed;
  return ncclSuccess;
}

ncclResult_t CommRevoke(ncclComm_t comm, int flags) {
  if (!IsComm(comm) || comm->state == CommState::kDestroyed) {
    WARN("Error: corrupted comm object detected");
    return ncclInvalidArgument;
  }
  if (flags != NCCL_REVOKE_DEFAULT) {
    WARN("CommRevoke : revokeFlags must be NCCL_REVOKE_DEFAULT (0), got %d", flags);
    return ncclInvalidArgument;
  }
  INFO(kInit, "comm %p rank %d nRanks %d cudaDev %d busId %lx - Revoke START",
       static_cast<void*>(comm), comm->rank, comm->nranks, comm->cuda_dev,
       static_cast<unsigned long>(comm->bus_id));
  comm->progress.Abort(ncclInvalidUsage);
  comm->progress.WaitIdle();
  comm->state = CommState::kRevoked;
  INFO(kInit, "comm %p rank %d nRanks %d cudaDev %d busId %lx - Revoke COMPLETE, result %d",
       static_cast<void*>(comm), comm->rank, comm->nranks, comm->cuda_dev,
       static_cast<unsigned long>(comm->bus_id), 0);
  return ncclSuccess;
}

}  // namespace ncclsim::nccl

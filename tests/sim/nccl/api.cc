// The public entry points of the simulator's libnccl.so.2: every function of
// the nccl.h it is built with (2.28 to 2.32), and the device API's
// communicators and window pointers (nccl_device.h), each also exported
// under its profiling name (pncclX), which, as in NCCL, is an alias of the
// same code. Where NCCL calls one of its own entry points through its
// exported symbol, so does the simulator, so an interposer sees what it sees
// with NCCL: ncclBcast calls ncclBroadcast. Other calls between entry points
// (ncclCommInitAll -> InitRank) go to the internal functions.

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stddef.h>
// nccl_device.h needs size_t declared first.
#include <nccl_device.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "common/sim_env.h"
#include "nccl/bootstrap.h"
#include "nccl/comm.h"
#include "nccl/debug.h"
#include "nccl/group.h"
#include "nccl/params.h"

using namespace ncclsim::nccl;  // NOLINT: this file is the API surface of that namespace

// Defines `ret func(args)` and makes `p##func` an alias of it.
#define SIM_NCCL_API(ret, func, ...)                                                        \
  extern "C" __attribute__((visibility("default"))) ret func(__VA_ARGS__);                  \
  extern "C" __attribute__((visibility("default"), alias(#func))) ret p##func(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"))) ret func(__VA_ARGS__)

namespace {

// A window as the host knows it: NCCL's ncclWindow_vidmem (the device
// API's view, nccl_device.h) points to it through winHost, as NCCL's does to
// its own host record.
struct SimWindow {
  void* buff;
  size_t size;
  int flags;
  ncclComm_t comm;
  int index;  // in the communicator's registration order (the same on every rank)
};

SimWindow* HostOf(ncclWindow_t win) {
  return win != nullptr ? static_cast<SimWindow*>(win->winHost) : nullptr;
}

struct Registration {
  void* buff;
  size_t size;
};

ncclResult_t Coll(Func func, const void* sendbuff, void* recvbuff, size_t count,
                  ncclDataType_t type, ncclRedOp_t op, int root, ncclComm_t comm,
                  cudaStream_t stream) {
  OpArgs a;
  a.func = func;
  a.sendbuff = sendbuff;
  a.recvbuff = recvbuff;
  a.count = count;
  a.datatype = type;
  a.redop = op;
  a.peer = root;
  a.stream = stream;
  return Enqueue(comm, a);
}

ncclResult_t UniqueId(ncclUniqueId* out) {
  if (out == nullptr) {
    WARN("ncclGetUniqueId : uniqueId argument is NULL");
    return ncclInvalidArgument;
  }
  NCCLCHECK(BootstrapNetInit());
  BootstrapHandle handle;
  NCCLCHECK(BootstrapGetUniqueId(&handle));
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out->internal, &handle, sizeof(handle));
  return ncclSuccess;
}

BootstrapHandle HandleOf(const ncclUniqueId& id) {
  BootstrapHandle h;
  std::memcpy(&h, id.internal, sizeof(h));
  return h;
}

double ReadScalar(const void* p, ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return *static_cast<const int8_t*>(p);
    case ncclUint8:
      return *static_cast<const uint8_t*>(p);
    case ncclInt32:
      return *static_cast<const int32_t*>(p);
    case ncclUint32:
      return *static_cast<const uint32_t*>(p);
    case ncclInt64:
      return static_cast<double>(*static_cast<const int64_t*>(p));
    case ncclUint64:
      return static_cast<double>(*static_cast<const uint64_t*>(p));
    case ncclFloat16:
      return HalfToFloat(*static_cast<const uint16_t*>(p));
    case ncclFloat32:
      return *static_cast<const float*>(p);
    case ncclFloat64:
      return *static_cast<const double*>(p);
    case ncclBfloat16:
      return Bfloat16ToFloat(*static_cast<const uint16_t*>(p));
    case ncclFloat8e4m3:
      return Fp8E4M3ToFloat(*static_cast<const uint8_t*>(p));
    case ncclFloat8e5m2:
      return Fp8E5M2ToFloat(*static_cast<const uint8_t*>(p));
    default:
      return 0;
  }
}

}  // namespace

// ------------------------------------------------------------ version, errors

SIM_NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NcclVersionCode();
  return ncclSuccess;
}

SIM_NCCL_API(const char*, ncclGetErrorString, ncclResult_t code) {
  switch (code) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

SIM_NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  (void)comm;  // as in NCCL: the last error of the process
  return LastError();
}

SIM_NCCL_API(void, ncclResetDebugInit) {}

// ------------------------------------------------------------ communicators

SIM_NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) { return UniqueId(uniqueId); }

SIM_NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
             int rank) {
  return CommInitRank(comm, nranks, {HandleOf(commId)}, rank, nullptr, "ncclCommInitRank");
}

SIM_NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks,
             ncclUniqueId commId, int rank, ncclConfig_t* config) {
  return CommInitRank(comm, nranks, {HandleOf(commId)}, rank, config, "ncclCommInitRankConfig");
}

SIM_NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
             int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) {
    WARN("ncclCommInitRankScalable : invalid number of unique ids %d", nId);
    return ncclInvalidArgument;
  }
  std::vector<BootstrapHandle> handles;
  for (int i = 0; i < nId; ++i) handles.push_back(HandleOf(commIds[i]));
  return CommInitRank(newcomm, nranks, handles, myrank, config, "ncclCommInitRankScalable");
}

SIM_NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr) {
    WARN("ncclCommInitAll : comms argument is NULL");
    return ncclInvalidArgument;
  }
  if (ndev < 1) {
    WARN("Invalid device count requested : %d", ndev);
    return ncclInvalidArgument;
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    WARN("Cuda failure '%s'", cudaGetErrorString(err));
    return ncclUnhandledCudaError;
  }
  for (int i = 0; i < ndev; ++i) {
    const int d = devlist ? devlist[i] : i;
    if (d < 0 || d >= count) {
      WARN("Invalid device %d (found %d devices)", d, count);
      return ncclInvalidArgument;
    }
  }
  ncclUniqueId id;
  NCCLCHECK(UniqueId(&id));
  int saved = 0;
  (void)cudaGetDevice(&saved);
  NCCLCHECK(GroupStart());
  ncclResult_t rc = ncclSuccess;
  for (int i = 0; i < ndev && rc == ncclSuccess; ++i) {
    (void)cudaSetDevice(devlist ? devlist[i] : i);
    rc = CommInitRank(comms + i, ndev, {HandleOf(id)}, i, nullptr, "ncclCommInitAll");
  }
  ncclResult_t end = GroupEnd();
  (void)cudaSetDevice(saved);
  return rc != ncclSuccess ? rc : end;
}

SIM_NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
             ncclConfig_t* config) {
  return CommSplit(comm, color, key, newcomm, config);
}

SIM_NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
             int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return CommShrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
}

SIM_NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) { return CommFinalize(comm); }
SIM_NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) { return CommDestroy(comm); }
SIM_NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) { return CommAbort(comm); }
SIM_NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  return CommRevoke(comm, revokeFlags);
}

SIM_NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  if (!IsComm(comm) || asyncError == nullptr) {
    WARN("ncclCommGetAsyncError : invalid arguments");
    return ncclInvalidArgument;
  }
  *asyncError = static_cast<ncclResult_t>(comm->async_error.load());
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  if (!IsComm(comm) || count == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  if (!IsComm(comm) || device == nullptr) return ncclInvalidArgument;
  *device = comm->cuda_dev;
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  if (!IsComm(comm) || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

// ------------------------------------------------------------ memory and registration

SIM_NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  if (ptr == nullptr) return ncclInvalidArgument;
  cudaError_t err = cudaMalloc(ptr, size);
  if (err != cudaSuccess) {
    WARN("Cuda failure '%s'", cudaGetErrorString(err));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  cudaError_t err = cudaFree(ptr);
  if (err != cudaSuccess) {
    WARN("Cuda failure '%s'", cudaGetErrorString(err));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
             void** handle) {
  NCCLCHECK(CommEnsureReady(comm, "CommRegister"));
  if (handle == nullptr) return ncclInvalidArgument;
  *handle = new Registration{buff, size};
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  if (!IsComm(comm) || handle == nullptr) return ncclInvalidArgument;
  delete static_cast<Registration*>(handle);
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
             ncclWindow_t* win, int winFlags) {
  NCCLCHECK(CommEnsureReady(comm, "CommWindowRegister"));
  if (win == nullptr) return ncclInvalidArgument;
  if ((winFlags & NCCL_WIN_COLL_SYMMETRIC) &&
      reinterpret_cast<uintptr_t>(buff) % NCCL_WIN_REQUIRED_ALIGNMENT != 0) {
    WARN("CommWindowRegister : buffer %p is not %d-byte aligned", buff,
         NCCL_WIN_REQUIRED_ALIGNMENT);
    return ncclInvalidArgument;
  }
  const int index = comm->next_window++;
  *win = new ncclWindow_vidmem();
  (*win)->winHost = new SimWindow{buff, size, winFlags, comm, index};
  (*win)->lsaRank = comm->local_rank;
  (*win)->worldRank = comm->rank;
  // Puts from peers land in it without a call of this rank's (NCCL 2.29).
  OneSidedState& os = comm->progress.one_sided();
  {
    std::lock_guard<std::mutex> lock(os.mu);
    if (os.windows.size() <= static_cast<size_t>(index)) os.windows.resize(index + 1);
    os.windows[index] = OneSidedState::Window{static_cast<char*>(buff), size};
  }
  comm->progress.ServeOneSidedWhenIdle();
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  SimWindow* w = HostOf(win);
  if (!IsComm(comm) || w == nullptr || w->comm != comm) return ncclInvalidArgument;
  OneSidedState& os = comm->progress.one_sided();
  {
    std::lock_guard<std::mutex> lock(os.mu);
    if (static_cast<size_t>(w->index) < os.windows.size())
      os.windows[w->index] = OneSidedState::Window{};
  }
  delete w;
  delete win;
  return ncclSuccess;
}

// ------------------------------------------------------------ reduction operators

SIM_NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
             ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  NCCLCHECK(CommEnsureReady(comm, "ncclRedOpCreatePreMulSum"));
  if (op == nullptr || scalar == nullptr || DataTypeSize(datatype) == 0) {
    WARN("ncclRedOpCreatePreMulSum : invalid arguments");
    return ncclInvalidArgument;
  }
  // Device memory is host memory here, so a device-resident scalar can be
  // read now too.
  (void)residence;
  Reduction r;
  r.type = datatype;
  r.op = ncclSum;
  r.premultiply = true;
  r.scalar = ReadScalar(scalar, datatype);
  std::lock_guard<std::mutex> lock(comm->mu);
  const int id = comm->next_redop++;
  comm->premul_ops[id] = r;
  *op = static_cast<ncclRedOp_t>(id);
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  if (!IsComm(comm)) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(comm->mu);
  if (op < ncclNumOps || comm->premul_ops.erase(op) == 0) {
    WARN("ncclRedOpDestroy : operation %d is not a user-created operation of this communicator",
         op);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// ------------------------------------------------------------ collectives

SIM_NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
             cudaStream_t stream) {
  return Coll(Func::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

// As NCCL's: a call of ncclBroadcast, through its exported symbol.
SIM_NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
             ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

SIM_NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return Coll(Func::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

SIM_NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Coll(Func::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

SIM_NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff,
             size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
             cudaStream_t stream) {
  return Coll(Func::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

SIM_NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
             ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return Coll(Func::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}

SIM_NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return Coll(Func::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream);
}

SIM_NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return Coll(Func::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

SIM_NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return Coll(Func::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

SIM_NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
             int peer, ncclComm_t comm, cudaStream_t stream) {
  return Coll(Func::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream);
}

SIM_NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype,
             int peer, ncclComm_t comm, cudaStream_t stream) {
  return Coll(Func::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

// ------------------------------------------------------------ groups

SIM_NCCL_API(ncclResult_t, ncclGroupStart) { return GroupStart(); }
SIM_NCCL_API(ncclResult_t, ncclGroupEnd) { return GroupEnd(); }
SIM_NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  return GroupSimulateEnd(simInfo);
}

// ------------------------------------------------------------ the device API (nccl_device.h)

// Device-API communicators: the simulator runs no kernels, so one is made
// and destroyed, and what the host reads of it is filled in.
SIM_NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm,
             ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm) {
  NCCLCHECK(CommEnsureReady(comm, "ncclDevCommCreate"));
  if (reqs == nullptr || outDevComm == nullptr) {
    WARN("ncclDevCommCreate : invalid arguments");
    return ncclInvalidArgument;
  }
  std::memset(static_cast<void*>(outDevComm), 0, sizeof(*outDevComm));
  outDevComm->rank = comm->rank;
  outDevComm->nRanks = comm->nranks;
  std::lock_guard<std::mutex> lock(comm->mu);
  ++comm->dev_comms;
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, ncclDevComm_t const* devComm) {
  if (!IsComm(comm) || devComm == nullptr) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(comm->mu);
  if (comm->dev_comms > 0) --comm->dev_comms;
  return ncclSuccess;
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)

SIM_NCCL_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t* props) {
  NCCLCHECK(CommEnsureReady(comm, "ncclCommQueryProperties"));
  if (props == nullptr) return ncclInvalidArgument;
  props->rank = comm->rank;
  props->nRanks = comm->nranks;
  props->cudaDev = comm->cuda_dev;
  props->nvmlDev = comm->cuda_dev;
  props->deviceApiSupport = true;  // device-API communicators can be made (no kernel runs)
  props->hostRmaSupport = true;    // ncclPutSignal, ncclSignal, ncclWaitSignal
  return ncclSuccess;
}

namespace {

// A window's memory as a rank sees it: on one host, device memory is host
// memory mapped by every process, so each rank's own buffer stands for all.
ncclResult_t WindowPointer(ncclWindow_t window, size_t offset, void** out, const char* fn) {
  const SimWindow* w = HostOf(window);
  if (w == nullptr || out == nullptr) {
    WARN("%s : invalid arguments", fn);
    return ncclInvalidArgument;
  }
  if (offset > w->size) {
    WARN("%s : offset %zu is beyond the window's %zu bytes", fn, offset, w->size);
    return ncclInvalidArgument;
  }
  *out = static_cast<char*>(w->buff) + offset;
  return ncclSuccess;
}

}  // namespace

SIM_NCCL_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset,
             void** outPtr) {
  return WindowPointer(window, offset, outPtr, "ncclGetLsaMultimemDevicePointer");
}

SIM_NCCL_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset,
             ncclMultimemHandle multimem, void** outPtr) {
  (void)multimem;
  return WindowPointer(window, offset, outPtr, "ncclGetMultimemDevicePointer");
}

SIM_NCCL_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank,
             void** outPtr) {
  if (HostOf(window) != nullptr && (lsaRank < 0 || lsaRank >= HostOf(window)->comm->local_ranks)) {
    WARN("ncclGetLsaDevicePointer : invalid lsaRank %d", lsaRank);
    return ncclInvalidArgument;
  }
  return WindowPointer(window, offset, outPtr, "ncclGetLsaDevicePointer");
}

SIM_NCCL_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer,
             void** outPtr) {
  if (HostOf(window) != nullptr && (peer < 0 || peer >= HostOf(window)->comm->nranks)) {
    WARN("ncclGetPeerDevicePointer : invalid peer %d", peer);
    return ncclInvalidArgument;
  }
  return WindowPointer(window, offset, outPtr, "ncclGetPeerDevicePointer");
}

// ------------------------------------------------------------ growing, suspending (2.29)

SIM_NCCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId) {
  BootstrapHandle handle;
  NCCLCHECK(CommGetGrowId(comm, &handle));
  std::memset(uniqueId, 0, sizeof(*uniqueId));
  std::memcpy(uniqueId->internal, &handle, sizeof(handle));
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId,
             int rank, ncclComm_t* newcomm, ncclConfig_t* config) {
  BootstrapHandle handle;
  if (uniqueId != nullptr) handle = HandleOf(*uniqueId);
  return CommGrow(comm, nRanks, uniqueId != nullptr ? &handle : nullptr, rank, newcomm, config);
}

SIM_NCCL_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  NCCLCHECK(CommEnsureReady(comm, "ncclCommSuspend"));
  if (flags & NCCL_SUSPEND_MEM) {
    INFO(kInit, "ncclCommSuspend: rank %d suspending memory", comm->rank);
    comm->suspended = true;
  }
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommResume, ncclComm_t comm) {
  NCCLCHECK(CommEnsureReady(comm, "ncclCommResume"));
  INFO(kInit, "ncclCommResume: rank %d resuming all resources", comm->rank);
  comm->suspended = false;
  return ncclSuccess;
}

// The memory a communicator holds: its connections' receive buffers.
SIM_NCCL_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat,
             uint64_t* value) {
  NCCLCHECK(CommEnsureReady(comm, "ncclCommMemStats"));
  if (value == nullptr) return ncclInvalidArgument;
  const uint64_t buffers =
      static_cast<uint64_t>(comm->nranks > 0 ? comm->nranks - 1 : 0) * SimpleBufferBytes();
  switch (stat) {
    case ncclStatGpuMemTotal:
    case ncclStatGpuMemPersist:
      *value = buffers;
      return ncclSuccess;
    case ncclStatGpuMemSuspend:
      *value = 0;
      return ncclSuccess;
    case ncclStatGpuMemSuspended:
      *value = comm->suspended ? 1 : 0;
      return ncclSuccess;
    default:
      return ncclInvalidArgument;
  }
}

SIM_NCCL_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win,
             void** outUserPtr) {
  if (!IsComm(comm) || outUserPtr == nullptr) return ncclInvalidArgument;
  if (HostOf(win) == nullptr) {
    WARN("ncclWinGetUserPtr : win argument is NULL");
    return ncclInvalidArgument;
  }
  *outUserPtr = HostOf(win)->buff;
  return ncclSuccess;
}

// ------------------------------------------------------------ one-sided (2.29)

namespace {

// The checks NCCL makes before it queues a put, a signal or a wait.
ncclResult_t CheckOneSided(ncclComm_t comm, int sigIdx, int ctx, unsigned int flags) {
  int driver = 0;
  (void)cudaDriverGetVersion(&driver);
  if (driver < 12050) {
    WARN("One-sided RMA requires CUDA driver 12.5 or later (found %d.%d).", driver / 1000,
         (driver % 1000) / 10);
    return ncclInvalidUsage;
  }
  if (ctx != 0) {
    WARN("Context %d is invalid (must be 0)", ctx);
    return ncclInvalidArgument;
  }
  if (sigIdx != 0) {
    WARN("Signal index %d is invalid (must be 0)", sigIdx);
    return ncclInvalidArgument;
  }
  if (flags != 0) {
    WARN("Flags %u is invalid (must be 0)", flags);
    return ncclInvalidArgument;
  }
  (void)comm;
  return ncclSuccess;
}

}  // namespace

SIM_NCCL_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count,
             ncclDataType_t datatype, int peer, ncclWindow_t peerWin, size_t peerWinOffset,
             int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  NCCLCHECK(CommEnsureReady(comm, "PutSignal"));
  NCCLCHECK(CheckOneSided(comm, sigIdx, ctx, flags));
  if (HostOf(peerWin) == nullptr) {
    WARN("ncclPutSignal: peerWin is NULL");
    return ncclInvalidArgument;
  }
  if (localbuff == nullptr) {
    WARN("ncclPutSignal: srcBuff is NULL");
    return ncclInvalidArgument;
  }
  OpArgs a;
  a.func = Func::kPutSignal;
  a.sendbuff = localbuff;
  a.count = count;
  a.datatype = datatype;
  a.peer = peer;
  a.stream = stream;
  a.window = HostOf(peerWin)->index;
  a.window_offset = peerWinOffset;
  return Enqueue(comm, a);
}

SIM_NCCL_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags,
             ncclComm_t comm, cudaStream_t stream) {
  NCCLCHECK(CommEnsureReady(comm, "Signal"));
  NCCLCHECK(CheckOneSided(comm, sigIdx, ctx, flags));
  OpArgs a;
  a.func = Func::kSignal;
  a.count = 0;
  a.datatype = ncclInt8;
  a.peer = peer;
  a.stream = stream;
  return Enqueue(comm, a);
}

SIM_NCCL_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs,
             ncclComm_t comm, cudaStream_t stream) {
  NCCLCHECK(CommEnsureReady(comm, "WaitSignal"));
  NCCLCHECK(CheckOneSided(comm, 0, 0, 0));
  if (signalDescs == nullptr || nDesc == 0) {
    WARN("ncclWaitSignal: invalid arguments");
    return ncclInvalidArgument;
  }
  for (int i = 0; i < nDesc; ++i) {
    const ncclWaitSignalDesc_t& d = signalDescs[i];
    if (d.opCnt <= 0) {
      WARN("ncclWaitSignal: descriptor %d has invalid opCnt %d", i, d.opCnt);
      return ncclInvalidArgument;
    }
    if (d.sigIdx != 0) {
      WARN("ncclWaitSignal: descriptor %d has invalid sigIdx %d (must be 0)", i, d.sigIdx);
      return ncclInvalidArgument;
    }
    if (d.ctx != 0) {
      WARN("ncclWaitSignal: descriptor %d has invalid context %d (must be 0)", i, d.ctx);
      return ncclInvalidArgument;
    }
    if (d.peer < 0 || d.peer >= comm->nranks) {
      WARN("ncclWaitSignal: descriptor %d has invalid peer %d", i, d.peer);
      return ncclInvalidArgument;
    }
  }
  OpArgs a;
  a.func = Func::kWaitSignal;
  a.count = 0;
  a.datatype = ncclInt32;
  a.stream = stream;
  // The counts each peer's signals must reach, in call order (NCCL keeps
  // them per peer on the host the same way).
  for (int i = 0; i < nDesc; ++i) {
    uint64_t& awaited = comm->signals_awaited[signalDescs[i].peer];
    awaited += static_cast<uint64_t>(signalDescs[i].opCnt);
    a.wait_until.emplace_back(signalDescs[i].peer, awaited);
  }
  return Enqueue(comm, a);
}

#endif  // 2.29

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 30, 0)

// ------------------------------------------------------------ parameters (2.30)

// NCCL's parameters, as the simulator knows them: the variables it reads,
// with their values from the environment or its defaults.
struct ncclParamHandle {
  const char* key;
  std::string value;
};

namespace {

std::vector<ncclParamHandle>& Params() {
  static std::vector<ncclParamHandle>* params = [] {
    auto* p = new std::vector<ncclParamHandle>;
    const struct {
      const char* key;
      const char* fallback;
    } known[] = {{"NCCL_BUFFSIZE", "4194304"}, {"NCCL_SHM_DISABLE", "0"},
                 {"NCCL_P2P_DISABLE", "0"},    {"NCCL_CUMEM_ENABLE", "1"},
                 {"NCCL_NVLS_ENABLE", "2"},    {"NCCL_SOCKET_IFNAME", ""},
                 {"NCCL_DEBUG", ""},           {"NCCL_DEBUG_SUBSYS", ""}};
    for (const auto& k : known) {
      const char* env = ncclsim::EnvRaw(k.key);
      p->push_back(ncclParamHandle{k.key, env != nullptr ? env : k.fallback});
    }
    return p;
  }();
  return *params;
}

ncclParamHandle* FindParam(const char* key) {
  if (key == nullptr) return nullptr;
  for (ncclParamHandle& p : Params())
    if (std::strcmp(p.key, key) == 0) return &p;
  return nullptr;
}

template <typename T>
ncclResult_t ParamAs(ncclParamHandle_t h, T* out) {
  if (h == nullptr || out == nullptr) return ncclInvalidArgument;
  char* end = nullptr;
  const long long v = std::strtoll(h->value.c_str(), &end, 0);
  if (h->value.empty() || end == nullptr || *end != '\0') return ncclInvalidArgument;
  *out = static_cast<T>(v);
  return ncclSuccess;
}

thread_local std::vector<const char*> t_keys;

}  // namespace

SIM_NCCL_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key) {
  if (out == nullptr) return ncclInvalidArgument;
  ncclParamHandle* p = FindParam(key);
  if (p == nullptr) {
    WARN("ncclParamBind: unknown parameter %s", key ? key : "(null)");
    return ncclInvalidArgument;
  }
  *out = p;
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclParamGetI8, ncclParamHandle_t h, int8_t* out) {
  return ParamAs(h, out);
}
SIM_NCCL_API(ncclResult_t, ncclParamGetI16, ncclParamHandle_t h, int16_t* out) {
  return ParamAs(h, out);
}
SIM_NCCL_API(ncclResult_t, ncclParamGetI32, ncclParamHandle_t h, int32_t* out) {
  return ParamAs(h, out);
}
SIM_NCCL_API(ncclResult_t, ncclParamGetI64, ncclParamHandle_t h, int64_t* out) {
  return ParamAs(h, out);
}
SIM_NCCL_API(ncclResult_t, ncclParamGetU8, ncclParamHandle_t h, uint8_t* out) {
  return ParamAs(h, out);
}
SIM_NCCL_API(ncclResult_t, ncclParamGetU16, ncclParamHandle_t h, uint16_t* out) {
  return ParamAs(h, out);
}
SIM_NCCL_API(ncclResult_t, ncclParamGetU32, ncclParamHandle_t h, uint32_t* out) {
  return ParamAs(h, out);
}
SIM_NCCL_API(ncclResult_t, ncclParamGetU64, ncclParamHandle_t h, uint64_t* out) {
  return ParamAs(h, out);
}

SIM_NCCL_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out) {
  if (h == nullptr || out == nullptr) return ncclInvalidArgument;
  *out = h->value.c_str();
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len) {
  if (h == nullptr || out == nullptr || len == nullptr || maxLen < 0) return ncclInvalidArgument;
  const int n = static_cast<int>(std::min<size_t>(h->value.size(), static_cast<size_t>(maxLen)));
  std::memcpy(out, h->value.data(), static_cast<size_t>(n));
  *len = n;
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value,
             int* valueLen) {
  ncclParamHandle* p = FindParam(key);
  if (p == nullptr || value == nullptr || valueLen == nullptr) return ncclInvalidArgument;
  *value = p->value.c_str();
  *valueLen = static_cast<int>(p->value.size());
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen) {
  if (table == nullptr || tableLen == nullptr) return ncclInvalidArgument;
  t_keys.clear();
  for (const ncclParamHandle& p : Params()) t_keys.push_back(p.key);
  *table = t_keys.data();
  *tableLen = static_cast<int>(t_keys.size());
  return ncclSuccess;
}

SIM_NCCL_API(void, ncclParamDumpAll) {
  for (const ncclParamHandle& p : Params()) INFO(kEnv, "%s=%s", p.key, p.value.c_str());
}

#endif  // 2.30

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 31, 0)

// ------------------------------------------------------------ collectives with a config (2.31)

namespace {

// A per-call config: NULL is the plain call; otherwise it must have been
// made with NCCL_COLLCONFIG_INITIALIZER.
ncclResult_t CheckCollConfig(const ncclCollConfig_t* config, const char* fn) {
  if (config == nullptr) return ncclSuccess;
  if (config->magic != NCCL_API_MAGIC || config->size < offsetof(ncclCollConfig_t, ext)) {
    WARN("%s : config is not initialized with NCCL_COLLCONFIG_INITIALIZER", fn);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t ConfigColl(Func func, const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t type, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream, const ncclCollConfig_t* config, const char* fn) {
  NCCLCHECK(CheckCollConfig(config, fn));
  return Coll(func, sendbuff, recvbuff, count, type, op, root, comm, stream);
}

}  // namespace

SIM_NCCL_API(ncclResult_t, ncclAllReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
             const ncclCollConfig_t* config) {
  return ConfigColl(Func::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm, stream,
                    config, "ncclAllReduceConfig");
}

SIM_NCCL_API(ncclResult_t, ncclBroadcastConfig, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
             const ncclCollConfig_t* config) {
  return ConfigColl(Func::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm,
                    stream, config, "ncclBroadcastConfig");
}

SIM_NCCL_API(ncclResult_t, ncclReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
             cudaStream_t stream, const ncclCollConfig_t* config) {
  return ConfigColl(Func::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream,
                    config, "ncclReduceConfig");
}

SIM_NCCL_API(ncclResult_t, ncclAllGatherConfig, const void* sendbuff, void* recvbuff,
             size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
             const ncclCollConfig_t* config) {
  return ConfigColl(Func::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm,
                    stream, config, "ncclAllGatherConfig");
}

SIM_NCCL_API(ncclResult_t, ncclReduceScatterConfig, const void* sendbuff, void* recvbuff,
             size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
             cudaStream_t stream, const ncclCollConfig_t* config) {
  return ConfigColl(Func::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm,
                    stream, config, "ncclReduceScatterConfig");
}

SIM_NCCL_API(ncclResult_t, ncclAlltoAllConfig, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
             const ncclCollConfig_t* config) {
  return ConfigColl(Func::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream,
                    config, "ncclAlltoAllConfig");
}

SIM_NCCL_API(ncclResult_t, ncclGatherConfig, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
             const ncclCollConfig_t* config) {
  return ConfigColl(Func::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream,
                    config, "ncclGatherConfig");
}

SIM_NCCL_API(ncclResult_t, ncclScatterConfig, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
             const ncclCollConfig_t* config) {
  return ConfigColl(Func::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm,
                    stream, config, "ncclScatterConfig");
}

#endif  // 2.31

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 32, 0)

// Socket encryption: the simulator's sockets stay plain; the mode is checked.
SIM_NCCL_API(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t* config) {
  if (config == nullptr || config->magic != NCCL_API_MAGIC) {
    WARN("ncclSetEncryption : config is not initialized with NCCL_ENCRYPTION_CONFIG_INITIALIZER");
    return ncclInvalidArgument;
  }
  if (config->mode != NCCL_ENCRYPTION_MODE_NONE && config->mode != NCCL_ENCRYPTION_MODE_PSK) {
    WARN("ncclSetEncryption : invalid mode %d", config->mode);
    return ncclInvalidArgument;
  }
  if (config->mode == NCCL_ENCRYPTION_MODE_PSK && config->psk == nullptr) {
    WARN("ncclSetEncryption : PSK mode without a key");
    return ncclInvalidArgument;
  }
  INFO(kInit, "ncclSetEncryption: mode %d", config->mode);
  return ncclSuccess;
}

#endif  // 2.32

// The public entry points of the simulator's libnccl.so.2: every function of
// nccl.h 2.28, each also exported under its profiling name (pncclX), which,
// as in NCCL, is an alias of the same code. Calls between entry points
// (ncclBcast -> Broadcast, ncclCommInitAll -> InitRank) go to the internal
// functions, never back through the exported symbols, so an interposer sees
// exactly the calls the program made.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <mutex>
#include <vector>

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

struct ncclWindow_vidmem {
  void* buff;
  size_t size;
  int flags;
  ncclComm_t comm;
};

namespace {

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
  *win = new ncclWindow_vidmem{buff, size, winFlags, comm};
  return ncclSuccess;
}

SIM_NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  if (!IsComm(comm) || win == nullptr || win->comm != comm) return ncclInvalidArgument;
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

SIM_NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
             ncclComm_t comm, cudaStream_t stream) {
  return Coll(Func::kBroadcast, buff, buff, count, datatype, ncclSum, root, comm, stream);
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

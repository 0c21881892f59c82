// An NCCL with exactly the entry points of nccl.h 2.18 (soname
// libnccl.so.2), for the tests of what a program sees of the entry points
// its NCCL lacks (tests/preload, absent_probe): with this library loaded,
// every entry point added since 2.18 must stay absent under the shim too.
// Each function answers as an NCCL with no GPU might: ncclGetVersion 2.18.3,
// ncclGetErrorString a text, the rest ncclSystemError (or a null string).

#include <nccl.h>

extern "C" {

#define NCCL_2_18_FN(ret, name, value, ...)                                      \
  __attribute__((visibility("default"))) ret name(__VA_ARGS__) { return value; } \
  __attribute__((visibility("default"), alias(#name))) ret p##name(__VA_ARGS__);

NCCL_2_18_FN(ncclResult_t, ncclGetUniqueId, ncclSystemError, ncclUniqueId*)
NCCL_2_18_FN(ncclResult_t, ncclCommInitRankConfig, ncclSystemError, ncclComm_t*, int, ncclUniqueId,
             int, ncclConfig_t*)
NCCL_2_18_FN(ncclResult_t, ncclCommInitRank, ncclSystemError, ncclComm_t*, int, ncclUniqueId, int)
NCCL_2_18_FN(ncclResult_t, ncclCommInitAll, ncclSystemError, ncclComm_t*, int, const int*)
NCCL_2_18_FN(ncclResult_t, ncclCommFinalize, ncclSystemError, ncclComm_t)
NCCL_2_18_FN(ncclResult_t, ncclCommDestroy, ncclSystemError, ncclComm_t)
NCCL_2_18_FN(ncclResult_t, ncclCommAbort, ncclSystemError, ncclComm_t)
NCCL_2_18_FN(ncclResult_t, ncclCommSplit, ncclSystemError, ncclComm_t, int, int, ncclComm_t*,
             ncclConfig_t*)
NCCL_2_18_FN(const char*, ncclGetLastError, nullptr, ncclComm_t)
NCCL_2_18_FN(ncclResult_t, ncclCommGetAsyncError, ncclSystemError, ncclComm_t, ncclResult_t*)
NCCL_2_18_FN(ncclResult_t, ncclCommCount, ncclSystemError, const ncclComm_t, int*)
NCCL_2_18_FN(ncclResult_t, ncclCommCuDevice, ncclSystemError, const ncclComm_t, int*)
NCCL_2_18_FN(ncclResult_t, ncclCommUserRank, ncclSystemError, const ncclComm_t, int*)
NCCL_2_18_FN(ncclResult_t, ncclRedOpCreatePreMulSum, ncclSystemError, ncclRedOp_t*, void*,
             ncclDataType_t, ncclScalarResidence_t, ncclComm_t)
NCCL_2_18_FN(ncclResult_t, ncclRedOpDestroy, ncclSystemError, ncclRedOp_t, ncclComm_t)
NCCL_2_18_FN(ncclResult_t, ncclReduce, ncclSystemError, const void*, void*, size_t, ncclDataType_t,
             ncclRedOp_t, int, ncclComm_t, cudaStream_t)
NCCL_2_18_FN(ncclResult_t, ncclBcast, ncclSystemError, void*, size_t, ncclDataType_t, int,
             ncclComm_t, cudaStream_t)
NCCL_2_18_FN(ncclResult_t, ncclBroadcast, ncclSystemError, const void*, void*, size_t,
             ncclDataType_t, int, ncclComm_t, cudaStream_t)
NCCL_2_18_FN(ncclResult_t, ncclAllReduce, ncclSystemError, const void*, void*, size_t,
             ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)
NCCL_2_18_FN(ncclResult_t, ncclReduceScatter, ncclSystemError, const void*, void*, size_t,
             ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)
NCCL_2_18_FN(ncclResult_t, ncclAllGather, ncclSystemError, const void*, void*, size_t,
             ncclDataType_t, ncclComm_t, cudaStream_t)
NCCL_2_18_FN(ncclResult_t, ncclSend, ncclSystemError, const void*, size_t, ncclDataType_t, int,
             ncclComm_t, cudaStream_t)
NCCL_2_18_FN(ncclResult_t, ncclRecv, ncclSystemError, void*, size_t, ncclDataType_t, int,
             ncclComm_t, cudaStream_t)
NCCL_2_18_FN(ncclResult_t, ncclGroupStart, ncclSystemError)
NCCL_2_18_FN(ncclResult_t, ncclGroupEnd, ncclSystemError)

__attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = 21803;
  return ncclSuccess;
}
__attribute__((visibility("default"), alias("ncclGetVersion"))) ncclResult_t pncclGetVersion(int*);

__attribute__((visibility("default"))) const char* ncclGetErrorString(ncclResult_t) {
  return "unhandled system error (the 2.18 stand-in has no GPU)";
}
__attribute__((visibility("default"), alias("ncclGetErrorString")))
const char* pncclGetErrorString(ncclResult_t);

}  // extern "C"

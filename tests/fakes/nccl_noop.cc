// A do-nothing NCCL (soname libnccl.so.2): every entry point the benchmarks
// call returns at once, so what is measured on top of it is the shim's cost.

#include <nccl.h>

namespace {
// Each ncclCommInitRank makes a communicator of its own, as NCCL does:
// threads that each init one (shim_loop --threads) must not share one, or
// the shim's per-communicator state is one cache line both write.
constexpr int kComms = 64;
alignas(128) int g_comm_storage[kComms][32];
int g_next_comm = 0;
}  // namespace

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) id->internal[i] = static_cast<char>(i);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int, ncclUniqueId, int) {
  const int n = __atomic_fetch_add(&g_next_comm, 1, __ATOMIC_RELAXED) % kComms;
  *comm = reinterpret_cast<ncclComm_t>(g_comm_storage[n]);
  return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t, int* device) {
  *device = 0;
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                           cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t, int* count) {
  *count = 8;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t, int* rank) {
  *rank = 3;
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* error) {
  *error = ncclSuccess;
  return ncclSuccess;
}
const char* ncclGetLastError(ncclComm_t) { return ""; }
ncclResult_t ncclCommDestroy(ncclComm_t) { return ncclSuccess; }
ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

}  // extern "C"

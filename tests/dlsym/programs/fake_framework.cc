// libfake_framework.so: a framework library with NCCL linked into it, whose
// entry points it exports (stand-ins here), loaded by dlsym_probe in a
// local scope as Python extensions are. framework_init() calls "its" NCCL
// through the PLT, so the calls reach the shim's hooks through the global
// lookup; they must go on to these definitions, as without the shim.

#include <nccl.h>

#include <cstring>

extern "C" {

__attribute__((visibility("default"))) ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 3, sizeof(*id));
  return ncclSuccess;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommInitRank(ncclComm_t* comm, int,
                                                                     ncclUniqueId, int) {
  *comm = nullptr;
  return ncclSuccess;
}

__attribute__((visibility("default"))) int framework_init() {
  ncclUniqueId id;
  ncclComm_t comm;
  const int a = ncclGetUniqueId(&id);
  const int b = ncclCommInitRank(&comm, 1, id, 0);
  return a * 10 + b + (id.internal[0] == 3 ? 100 : 0);
}
}

// static_nccl_main: a program with NCCL linked into it, as a framework
// built with NCCL's static library is: here NCCL's entry points are the
// program's own definitions (stand-ins), so its calls to them never go
// through the dynamic linker. Built twice: as is, and with -rdynamic (the
// definitions exported, as some frameworks' libraries do).

#include <nccl.h>

#include <cstdio>
#include <cstring>

extern "C" {
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 7, sizeof(*id));
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int, ncclUniqueId, int) {
  *comm = nullptr;
  return ncclSuccess;
}
}

int main() {
  ncclUniqueId id;
  ncclComm_t comm;
  std::printf("ncclGetUniqueId -> %d\n", static_cast<int>(ncclGetUniqueId(&id)));
  std::printf("ncclCommInitRank -> %d\n", static_cast<int>(ncclCommInitRank(&comm, 1, id, 0)));
  return 0;
}

// A plugin linked against NCCL, the way a Python extension module is: the
// program loads it with dlopen(RTLD_LOCAL), so NCCL lands in a local scope
// that the shim's RTLD_NEXT lookup cannot see.

#include <nccl.h>

extern "C" int PluginRun(int* version) {
  ncclUniqueId id;
  const ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) return r;
  return ncclGetVersion(version);
}

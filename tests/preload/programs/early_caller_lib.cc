// A library that calls NCCL from its constructor: that call may reach the
// shim before the shim's own constructor has run.

#include <nccl.h>

#include <cstdio>

int g_early_result = -1;

__attribute__((constructor)) static void CallNcclEarly() {
  ncclUniqueId id;
  g_early_result = ncclGetUniqueId(&id);
}

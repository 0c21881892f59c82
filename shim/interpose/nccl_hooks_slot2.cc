// The NCCL hooks of library slot 2 (interpose/nccl_wrappers.h): the wrappers
// dlsym hands out for an NCCL other than the one the global lookup finds.
// HOT PATH: as nccl_hooks.cc.

#define NCCLWATCH_SLOT 2
#include "interpose/nccl_hooks.cc"  // NOLINT(bugprone-suspicious-include)

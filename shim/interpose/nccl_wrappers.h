// The wrappers dlsym and dlvsym hand out for NCCL's entry points
// (interpose/dl_hooks.cc): a lookup of nccl* or pnccl* that found a real
// function gets the shim's wrapper forwarding to exactly that function.
//
// The exported hooks (nccl_hooks.cc) forward to g_real, the NCCL the dynamic
// linker's global lookup finds: a lookup that found g_real's function gets
// the exported hook. One that found another library's (a second NCCL)
// gets the wrapper of one of a few library slots (resolve/real_nccl.h's
// g_real_slots), each a table of its own filled from that library
// (nccl_hooks_slot<k>.cc compile the hooks once more per slot). A lookup
// that needs a slot when all are taken gets the real function, unwrapped,
// and the trace says so (core/nccl_visibility.h).
//
// Not on the hot path, not signal-safe: it walks the module list; slots are
// filled under a spin lock (concurrent dlsym calls, never a signal handler).

#ifndef NCCLWATCH_SHIM_INTERPOSE_NCCL_WRAPPERS_H_
#define NCCLWATCH_SHIM_INTERPOSE_NCCL_WRAPPERS_H_

#include "resolve/real_nccl.h"

namespace ncclwatch::shim {

// Each slot's wrappers, in nccl_functions.inc's order (defined by
// nccl_hooks.cc and nccl_hooks_slot<k>.cc).
extern void* const g_wrappers_slot0[kNcclFunctions];
extern void* const g_wrappers_slot1[kNcclFunctions];
extern void* const g_wrappers_slot2[kNcclFunctions];
extern void* const g_wrappers_slot3[kNcclFunctions];

// What a dlsym/dlvsym of `name` that found `real` should return: the
// shim's wrapper forwarding to exactly `real` when `name` is an entry point
// the shim wraps (nccl* or pnccl*), else `real`.
void* WrapNcclLookup(const char* name, void* real);

// In a forked child (pthread_atfork): the slots' lock, let go (a thread of
// the parent that held it is not in the child).
void NcclWrappersForkChild();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_INTERPOSE_NCCL_WRAPPERS_H_

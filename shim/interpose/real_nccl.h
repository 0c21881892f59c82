// The real NCCL entry points, which every hook forwards to.
//
// Resolved at start-up (the constructor) and, for an NCCL loaded later with
// dlopen, on the first call that finds one missing: first the next definition
// after the shim in the global scope (dlsym RTLD_NEXT), then an already
// loaded libnccl.so.2 even if it sits in a dlopen'ed local scope (PyTorch
// loads it that way), then any loaded module that exports the function (a
// library with NCCL linked in, in a local scope). That first-call resolution is the one place a
// hook is not async-signal-safe (dlsym may allocate); every later call only reads a pointer.
//
// Several NCCLs in one process. The exported hooks (nccl_hooks.cc) forward
// to g_real, the NCCL the dynamic linker's global lookup finds. A program
// that gets an entry point with dlsym or dlvsym (interpose/dl_hooks.cc) is
// handed the shim's wrapper for the library its lookup found: the exported
// hook when that is g_real's function, else the wrapper of one of a few
// library slots, each a RealNccl table of its own filled from that library
// (nccl_hooks_slot<k>.cc compile the hooks once more per slot). A lookup
// that needs a slot when all are taken gets the real function, unwrapped,
// and the trace says so (core/nccl_visibility.h).

#ifndef NCCLWATCH_SHIM_INTERPOSE_REAL_NCCL_H_
#define NCCLWATCH_SHIM_INTERPOSE_REAL_NCCL_H_

#include <nccl.h>

namespace ncclwatch::shim {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct RealNccl {
#define NCCLWATCH_NCCL_FN(name) decltype(&::name) name;
#include "interpose/nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN
};
#pragma GCC diagnostic pop

extern RealNccl g_real;

// The entry points, in nccl_functions.inc's order.
inline constexpr int kNcclFunctions = 0
#define NCCLWATCH_NCCL_FN(name) +1
#include "interpose/nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN
    ;
static_assert(sizeof(RealNccl) == kNcclFunctions * sizeof(void*), "one pointer per entry point");

// Library slots for NCCLs reached through dlsym/dlvsym: [0] is g_real's
// (the exported hooks), [1..] the others. g_real_slots[0] is unused.
inline constexpr int kNcclSlots = 4;
extern RealNccl g_real_slots[kNcclSlots];
// Each slot's wrappers, in nccl_functions.inc's order (defined by
// nccl_hooks.cc and nccl_hooks_slot<k>.cc).
extern void* const g_wrappers_slot0[kNcclFunctions];
extern void* const g_wrappers_slot1[kNcclFunctions];
extern void* const g_wrappers_slot2[kNcclFunctions];
extern void* const g_wrappers_slot3[kNcclFunctions];

// What a dlsym/dlvsym of `name` that found `real` should return: the
// shim's wrapper forwarding to exactly `real` when `name` is an entry point
// the shim wraps (nccl* or pnccl*), else `real`. Not signal-safe (walks the
// module list); only from the dl hooks.
void* WrapNcclLookup(const char* name, void* real);

// Resolves every entry point not resolved yet.
void ResolveRealNccl();

// What a hook returns when no NCCL provides its function (the program could
// not have called it without the shim): one line on stderr, ncclSystemError.
ncclResult_t NoRealNccl(const char* name);

}  // namespace ncclwatch::shim

// NCCLWATCH_TABLE: the table the hooks of this translation unit forward to;
// NCCLWATCH_REAL(name): its function `name`. g_real's is resolved on first
// need; a slot's was filled when dlsym handed its wrapper out.
#if defined(NCCLWATCH_SLOT) && NCCLWATCH_SLOT > 0
#define NCCLWATCH_TABLE (::ncclwatch::shim::g_real_slots[NCCLWATCH_SLOT])
#define NCCLWATCH_REAL(name) (NCCLWATCH_TABLE.name)
#else
#define NCCLWATCH_TABLE (::ncclwatch::shim::g_real)
#define NCCLWATCH_REAL(name)                                      \
  (__builtin_expect(::ncclwatch::shim::g_real.name != nullptr, 1) \
       ? ::ncclwatch::shim::g_real.name                           \
       : (::ncclwatch::shim::ResolveRealNccl(), ::ncclwatch::shim::g_real.name))
#endif

#endif  // NCCLWATCH_SHIM_INTERPOSE_REAL_NCCL_H_

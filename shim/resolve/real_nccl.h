// The real NCCL entry points, which every hook forwards to.
//
// Resolved at start-up (the shim's constructor) and, for an NCCL loaded
// later with dlopen, on the first call that finds one missing: first the
// next definition after the shim in the global scope (dlsym RTLD_NEXT), then
// an already loaded libnccl.so.2 even if it sits in a dlopen'ed local scope
// (PyTorch loads it that way), then any loaded module that exports the
// function (a library with NCCL linked in, in a local scope). That
// resolution is the one place a hook is not async-signal-safe (dlsym may
// allocate); every later call only reads a pointer. A function no loaded
// module has (an entry point newer than the NCCL loaded) is remembered as
// missing: it is looked for again only once the loader has loaded or
// unloaded a module since (LoaderGeneration), not on every call.
//
// Several NCCLs in one process: RealNccl g_real is the NCCL the dynamic
// linker's global lookup finds; g_real_slots[k] are tables of the others
// that dlsym handed wrappers out for (interpose/nccl_wrappers.h fills them,
// nccl_hooks_slot<k>.cc forward to them).
//
// This room (shim/resolve/) finds real functions and nothing else: it
// includes only itself, glibc and the NCCL and CUDA headers (the build
// gives it no other include path).

#ifndef NCCLWATCH_SHIM_RESOLVE_REAL_NCCL_H_
#define NCCLWATCH_SHIM_RESOLVE_REAL_NCCL_H_

#include <stddef.h>
// The device API's host functions (ncclDevCommCreate, ...) are declared in
// nccl_device.h, which needs size_t before it.
#include <nccl.h>
#include <nccl_device.h>

namespace ncclwatch::shim {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct RealNccl {
#define NCCLWATCH_NCCL_FN(name) decltype(&::name) name;
#include "nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN
};
#pragma GCC diagnostic pop

extern RealNccl g_real;

// The entry points, in nccl_functions.inc's order.
inline constexpr int kNcclFunctions = 0
#define NCCLWATCH_NCCL_FN(name) +1
#include "nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN
    ;
static_assert(sizeof(RealNccl) == kNcclFunctions * sizeof(void*), "one pointer per entry point");

// The entry point `name` ("ncclAllReduce", or its "pnccl" alias) as an index
// in nccl_functions.inc's order, or -1; and the index's name.
int NcclFunctionIndex(const char* name);
const char* NcclFunctionName(int index);
// A table's entries, in that order.
inline void** NcclEntries(RealNccl& table) { return reinterpret_cast<void**>(&table); }

// Library slots for NCCLs reached through dlsym/dlvsym: [0] is g_real's
// (the exported hooks), [1..] the others. g_real_slots[0] is unused.
inline constexpr int kNcclSlots = 4;
extern RealNccl g_real_slots[kNcclSlots];

// Resolves every entry point not resolved yet (unless nothing was loaded
// since the last time some stayed missing).
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

#endif  // NCCLWATCH_SHIM_RESOLVE_REAL_NCCL_H_

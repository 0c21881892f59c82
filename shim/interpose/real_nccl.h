// The real NCCL entry points, which every hook forwards to.
//
// Resolved at start-up (the constructor) and, for an NCCL loaded later with
// dlopen, on the first call that finds one missing: first the next definition
// after the shim in the global scope (dlsym RTLD_NEXT), then an already
// loaded libnccl.so.2 even if it sits in a dlopen'ed local scope (PyTorch
// loads it that way). That first-call resolution is the one place a hook is
// not async-signal-safe (dlsym may allocate); every later call only reads a
// pointer.

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

// Resolves every entry point not resolved yet.
void ResolveRealNccl();

// What a hook returns when no NCCL provides its function (the program could
// not have called it without the shim): one line on stderr, ncclSystemError.
ncclResult_t NoRealNccl(const char* name);

}  // namespace ncclwatch::shim

#define NCCLWATCH_REAL(name)                                      \
  (__builtin_expect(::ncclwatch::shim::g_real.name != nullptr, 1) \
       ? ::ncclwatch::shim::g_real.name                           \
       : (::ncclwatch::shim::ResolveRealNccl(), ::ncclwatch::shim::g_real.name))

#endif  // NCCLWATCH_SHIM_INTERPOSE_REAL_NCCL_H_

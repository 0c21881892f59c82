// Start-up (and first-call) symbol resolution; not on the hot path.

#include "interpose/real_nccl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

namespace ncclwatch::shim {

RealNccl g_real;

namespace {

void* FindReal(const char* name) {
  if (void* p = dlsym(RTLD_NEXT, name)) return p;
  // NCCL loaded in a local scope (dlopen without RTLD_GLOBAL, as Python
  // extensions are): find the library itself, without loading anything.
  static const char* const kNames[] = {"libnccl.so.2", "libnccl.so"};
  for (const char* lib : kNames) {
    if (void* h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD)) {
      void* p = dlsym(h, name);
      dlclose(h);  // drops the reference RTLD_NOLOAD took
      if (p) return p;
    }
  }
  return nullptr;
}

}  // namespace

void ResolveRealNccl() {
#define NCCLWATCH_NCCL_FN(name)                                                              \
  if (g_real.name == nullptr)                                                                \
    __atomic_store_n(&g_real.name, reinterpret_cast<decltype(g_real.name)>(FindReal(#name)), \
                     __ATOMIC_RELEASE);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include "interpose/nccl_functions.inc"
#pragma GCC diagnostic pop
#undef NCCLWATCH_NCCL_FN
}

ncclResult_t NoRealNccl(const char* name) {
  // Said once per process: a program that loops on the error must not
  // flood its own stderr.
  static int said = 0;
  if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) == 0) {
    char line[256];
    const int n = snprintf(
        line, sizeof(line),
        "ncclwatch: %s: no NCCL library provides it; returning ncclSystemError (said once)\n",
        name);
    if (n > 0) (void)!write(2, line, static_cast<size_t>(n));
  }
  return ncclSystemError;
}

}  // namespace ncclwatch::shim

// Start-up (and first-call) symbol resolution; not on the hot path.

#include "real_nccl.h"

#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "elf_symbols.h"
#include "loaded_module.h"
#include "nccl_exports.h"

namespace ncclwatch::shim {

RealNccl g_real;
RealNccl g_real_slots[kNcclSlots];

namespace {

// The first module other than the shim that defines `name`.
struct AnyDefinition {
  const char* name;
  uintptr_t self;
  void* found = nullptr;
};

int AnyDefinitionCallback(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<AnyDefinition*>(data);
  if (LoadSegmentAt(info, s->self) != nullptr) return 0;  // the shim
  s->found = FindDynamicSymbol(info, s->name);
  return s->found != nullptr;
}

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
  // NCCL linked into a library loaded in a local scope that exports its
  // entry points (a framework's): its own calls to them reach the shim
  // through the global lookup, and must go on to its definitions, as
  // without the shim. (core/nccl_visibility.h notes such a library.)
  AnyDefinition any;
  any.name = name;
  any.self = reinterpret_cast<uintptr_t>(&AnyDefinitionCallback);
  dl_iterate_phdr(AnyDefinitionCallback, &any);
  return any.found;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
const char* const kNcclNames[kNcclFunctions] = {
#define NCCLWATCH_NCCL_FN(name) #name,
#include "nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN
};
#pragma GCC diagnostic pop

// The loader's generation when a resolution last left some entry point
// missing (UINT64_MAX: none did yet).
uint64_t g_missing_since = UINT64_MAX;

}  // namespace

int NcclFunctionIndex(const char* name) {
  if (name == nullptr) return -1;
  if (strncmp(name, "pnccl", 5) == 0) ++name;
  if (strncmp(name, "nccl", 4) != 0) return -1;
  for (int i = 0; i < kNcclFunctions; ++i)
    if (strcmp(kNcclNames[i], name) == 0) return i;
  return -1;
}

const char* NcclFunctionName(int index) {
  return index >= 0 && index < kNcclFunctions ? kNcclNames[index] : nullptr;
}

void ResolveRealNccl() {
  // A lookup that found nothing is made again only when the loader has
  // loaded or unloaded something since (a dlopen of NCCL): not on every
  // call of an entry point this NCCL does not have. What that costs then is
  // one look at the loader's counts (LoaderGeneration).
  // The shim's exports follow what is loaded (an entry point no NCCL has
  // stays absent to the program).
  UpdateNcclExports();
  const uint64_t generation = LoaderGeneration();
  if (generation == __atomic_load_n(&g_missing_since, __ATOMIC_ACQUIRE)) return;
  bool missing = false;
  void** entries = NcclEntries(g_real);
  for (int i = 0; i < kNcclFunctions; ++i) {
    if (__atomic_load_n(&entries[i], __ATOMIC_ACQUIRE) != nullptr) continue;
    void* p = FindReal(kNcclNames[i]);
    if (p == nullptr) {
      missing = true;
      continue;
    }
    __atomic_store_n(&entries[i], p, __ATOMIC_RELEASE);
  }
  // The generation from before the lookups: a module loaded during them
  // counts as new next time.
  __atomic_store_n(&g_missing_since, missing ? generation : UINT64_MAX, __ATOMIC_RELEASE);
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

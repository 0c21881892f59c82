// Start-up (and first-call) symbol resolution; not on the hot path.

#include "interpose/real_nccl.h"

#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/elf_symbols.h"
#include "core/nccl_visibility.h"

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
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && s->self >= lo && s->self < lo + ph.p_memsz) return 0;  // the shim
  }
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
#include "interpose/nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN
};
#pragma GCC diagnostic pop

void* const* const kWrappers[kNcclSlots] = {g_wrappers_slot0, g_wrappers_slot1, g_wrappers_slot2,
                                            g_wrappers_slot3};

void** Entries(RealNccl& table) { return reinterpret_cast<void**>(&table); }

// Which library each slot holds (its load address); 0 for a free slot.
uintptr_t g_slot_base[kNcclSlots];
int g_slots_lock = 0;  // dlsym calls from several threads: a spin lock (not the hot path)

int FunctionIndex(const char* name) {
  if (strncmp(name, "pnccl", 5) == 0) ++name;
  if (strncmp(name, "nccl", 4) != 0) return -1;
  for (int i = 0; i < kNcclFunctions; ++i)
    if (strcmp(kNcclNames[i], name) == 0) return i;
  return -1;
}

// The module that holds address `addr`, and whether it is the shim.
struct ModuleSearch {
  uintptr_t addr;
  uintptr_t self;  // an address inside the shim
  bool found = false;
  bool is_shim = false;
  dl_phdr_info info;
};

bool Contains(const dl_phdr_info* info, uintptr_t a) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && a >= lo && a < lo + ph.p_memsz) return true;
  }
  return false;
}

int FindModuleCallback(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<ModuleSearch*>(data);
  if (!Contains(info, s->addr)) return 0;
  s->found = true;
  s->is_shim = Contains(info, s->self);
  s->info = *info;
  return 1;
}

}  // namespace

void* WrapNcclLookup(const char* name, void* real) {
  if (real == nullptr || name == nullptr) return real;
  const int fn = FunctionIndex(name);
  if (fn < 0) return real;
  ModuleSearch m;
  m.addr = reinterpret_cast<uintptr_t>(real);
  m.self = reinterpret_cast<uintptr_t>(&WrapNcclLookup);
  dl_iterate_phdr(FindModuleCallback, &m);
  if (!m.found || m.is_shim) return real;  // already the shim's own hook (RTLD_DEFAULT), or odd
  ResolveRealNccl();
  if (__atomic_load_n(&Entries(g_real)[fn], __ATOMIC_ACQUIRE) == real) return g_wrappers_slot0[fn];
  while (__atomic_exchange_n(&g_slots_lock, 1, __ATOMIC_ACQUIRE) != 0) sched_yield();
  void* wrapper = nullptr;
  const uintptr_t base = m.info.dlpi_addr;
  for (int k = 1; k < kNcclSlots && wrapper == nullptr; ++k) {
    if (g_slot_base[k] != base) continue;
    void** entries = Entries(g_real_slots[k]);
    if (entries[fn] == nullptr) __atomic_store_n(&entries[fn], real, __ATOMIC_RELEASE);
    if (entries[fn] == real) wrapper = kWrappers[k][fn];
  }
  for (int k = 1; k < kNcclSlots && wrapper == nullptr; ++k) {
    if (g_slot_base[k] != 0) continue;
    // A new library (or another version of a function of one in a slot):
    // the slot forwards every entry point to this library, `fn` to `real`.
    void** entries = Entries(g_real_slots[k]);
    for (int i = 0; i < kNcclFunctions; ++i)
      __atomic_store_n(&entries[i], FindDynamicSymbol(&m.info, kNcclNames[i]), __ATOMIC_RELEASE);
    __atomic_store_n(&entries[fn], real, __ATOMIC_RELEASE);
    g_slot_base[k] = base;
    wrapper = kWrappers[k][fn];
  }
  __atomic_store_n(&g_slots_lock, 0, __ATOMIC_RELEASE);
  if (wrapper != nullptr) return wrapper;
  NoteNcclNotSeen(NcclNotSeen::kSlotsFull, m.info.dlpi_name);
  return real;
}

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

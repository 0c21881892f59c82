// Not on the hot path (see nccl_wrappers.h).

#include "interpose/nccl_wrappers.h"

#include <link.h>
#include <sched.h>
#include <string.h>

#include "core/nccl_visibility.h"
#include "resolve/elf_symbols.h"
#include "resolve/loaded_module.h"

namespace ncclwatch::shim {
namespace {

void* const* const kWrappers[kNcclSlots] = {g_wrappers_slot0, g_wrappers_slot1, g_wrappers_slot2,
                                            g_wrappers_slot3};

// Which library each slot holds (its load address); 0 for a free slot.
uintptr_t g_slot_base[kNcclSlots];
int g_slots_lock = 0;  // dlsym calls from several threads: a spin lock (not the hot path)

// The module that holds address `addr`, and whether it is the shim.
struct ModuleSearch {
  uintptr_t addr;
  uintptr_t self;  // an address inside the shim
  bool found = false;
  bool is_shim = false;
  dl_phdr_info info;
};

int FindModuleCallback(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<ModuleSearch*>(data);
  if (LoadSegmentAt(info, s->addr) == nullptr) return 0;
  s->found = true;
  s->is_shim = LoadSegmentAt(info, s->self) != nullptr;
  s->info = *info;
  return 1;
}

}  // namespace

void NcclWrappersForkChild() { __atomic_store_n(&g_slots_lock, 0, __ATOMIC_RELEASE); }

void* WrapNcclLookup(const char* name, void* real) {
  if (real == nullptr || name == nullptr) return real;
  const int fn = NcclFunctionIndex(name);
  if (fn < 0) return real;
  ModuleSearch m;
  m.addr = reinterpret_cast<uintptr_t>(real);
  m.self = reinterpret_cast<uintptr_t>(&WrapNcclLookup);
  dl_iterate_phdr(FindModuleCallback, &m);
  if (!m.found || m.is_shim) return real;  // already the shim's own hook (RTLD_DEFAULT), or odd
  ResolveRealNccl();
  if (__atomic_load_n(&NcclEntries(g_real)[fn], __ATOMIC_ACQUIRE) == real)
    return g_wrappers_slot0[fn];
  while (__atomic_exchange_n(&g_slots_lock, 1, __ATOMIC_ACQUIRE) != 0) sched_yield();
  void* wrapper = nullptr;
  const uintptr_t base = m.info.dlpi_addr;
  for (int k = 1; k < kNcclSlots && wrapper == nullptr; ++k) {
    if (g_slot_base[k] != base) continue;
    void** entries = NcclEntries(g_real_slots[k]);
    if (entries[fn] == nullptr) __atomic_store_n(&entries[fn], real, __ATOMIC_RELEASE);
    if (entries[fn] == real) wrapper = kWrappers[k][fn];
  }
  for (int k = 1; k < kNcclSlots && wrapper == nullptr; ++k) {
    if (g_slot_base[k] != 0) continue;
    // A new library (or another version of a function of one in a slot):
    // the slot forwards every entry point to this library, `fn` to `real`.
    void** entries = NcclEntries(g_real_slots[k]);
    for (int i = 0; i < kNcclFunctions; ++i)
      __atomic_store_n(&entries[i], FindDynamicSymbol(&m.info, NcclFunctionName(i)),
                       __ATOMIC_RELEASE);
    __atomic_store_n(&entries[fn], real, __ATOMIC_RELEASE);
    g_slot_base[k] = base;
    wrapper = kWrappers[k][fn];
  }
  __atomic_store_n(&g_slots_lock, 0, __ATOMIC_RELEASE);
  if (wrapper != nullptr) return wrapper;
  NoteNcclNotSeen(NcclNotSeen::kSlotsFull, m.info.dlpi_name);
  return real;
}

}  // namespace ncclwatch::shim

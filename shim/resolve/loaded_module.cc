// Not on the hot path (see loaded_module.h).

#include "loaded_module.h"

#include <stddef.h>

namespace ncclwatch::shim {

const ElfW(Phdr) * LoadSegmentAt(const dl_phdr_info* info, uintptr_t addr) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && addr >= lo && addr - lo < ph.p_memsz) return &ph;
  }
  return nullptr;
}

bool LoadSpan(const dl_phdr_info* info, uintptr_t* lo, uintptr_t* hi) {
  uintptr_t low = UINTPTR_MAX, high = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t a = info->dlpi_addr + ph.p_vaddr;
    low = a < low ? a : low;
    high = a + ph.p_memsz > high ? a + ph.p_memsz : high;
  }
  if (high == 0) return false;
  *lo = low;
  *hi = high;
  return true;
}

uint64_t LoaderGeneration() {
  uint64_t generation = UINT64_MAX;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) {
        // dlpi_adds and dlpi_subs come after the fields every glibc has.
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
          *static_cast<uint64_t*>(data) = info->dlpi_adds + info->dlpi_subs;
        return 1;  // the first module is enough: the counts are the loader's
      },
      &generation);
  if (generation != UINT64_MAX) return generation;
  // A loader without the counts: never the same twice, so nothing is
  // taken as unchanged.
  static uint64_t calls = 0;
  return (uint64_t{1} << 63) | __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
}

}  // namespace ncclwatch::shim

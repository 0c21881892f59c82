// Where a loaded module lies in memory, from its PT_LOAD segments (one of
// dl_iterate_phdr's dl_phdr_info): the one reading of program headers that
// the module scans, the symbol lookups and the dl hooks share.
//
// And the loader's generation: how many modules it has loaded and unloaded,
// so that a lookup that found nothing is not made again until something new
// is loaded (RealNccl, real_cuda.h).
//
// Not on the hot path: LoadSegmentAt and LoadSpan read only memory and are
// async-signal-safe, but their callers walk the module list under the
// loader's lock; LoaderGeneration takes that lock.

#ifndef NCCLWATCH_SHIM_RESOLVE_LOADED_MODULE_H_
#define NCCLWATCH_SHIM_RESOLVE_LOADED_MODULE_H_

#include <link.h>
#include <stdint.h>

namespace ncclwatch::shim {

// The PT_LOAD segment of `info` that holds address `addr`, or nullptr.
const ElfW(Phdr) * LoadSegmentAt(const dl_phdr_info* info, uintptr_t addr);

// The address range [*lo, *hi) the PT_LOAD segments of `info` span
// (absolute addresses); false when it has none.
bool LoadSpan(const dl_phdr_info* info, uintptr_t* lo, uintptr_t* hi);

// The loader's count of modules loaded plus unloaded since the process
// began (dl_phdr_info's dlpi_adds and dlpi_subs): it changes whenever the
// set of modules may have.
uint64_t LoaderGeneration();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_RESOLVE_LOADED_MODULE_H_

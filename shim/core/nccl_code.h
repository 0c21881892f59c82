// Where NCCL's code is: the address ranges of the NCCL library and of the
// plugins it loads (libnccl-net*, libnccl-tuner*, libnccl-profiler*,
// libnccl-env*), so the libc hooks can tell a call NCCL made from the rest
// of the process's calls by the caller's address.
//
// HOT PATH: FromNccl() allocates nothing, takes no lock, makes no system
// call and is async-signal-safe. AddNcclCode() runs under the loader's lock
// when modules are scanned (tracer.cc), never on the hot path.

#ifndef NCCLWATCH_SHIM_CORE_NCCL_CODE_H_
#define NCCLWATCH_SHIM_CORE_NCCL_CODE_H_

#include <stdint.h>

namespace ncclwatch::shim {

// Whether a module of this path is NCCL or one of its plugins: its file name
// starts with "libnccl.so" or "libnccl-".
bool IsNcclModule(const char* path);

// Adds [start, end) (a module's loaded segments). Ranges are never removed:
// a plugin unloaded and its range reused is rare and only costs a record.
void AddNcclCode(uintptr_t start, uintptr_t end);

inline constexpr int kMaxNcclCode = 16;
extern uintptr_t g_nccl_code_lo[kMaxNcclCode];
extern uintptr_t g_nccl_code_hi[kMaxNcclCode];
extern int g_nccl_code_count;

inline bool FromNccl(const void* pc) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(pc);
  const int n = __atomic_load_n(&g_nccl_code_count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i)
    if (a >= g_nccl_code_lo[i] && a < g_nccl_code_hi[i]) return true;
  return false;
}

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_NCCL_CODE_H_

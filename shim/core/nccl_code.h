// Where NCCL's code is: the address ranges of the NCCL library and of the
// plugins it loads (libnccl-net*, libnccl-tuner*, libnccl-profiler*,
// libnccl-env*), so the libc hooks can tell a call NCCL made from the rest
// of the process's calls by the caller's address.
//
// And the code NCCL drives: the libraries it calls into and that act for it
// (the CUDA driver and runtime, verbs and its providers), by name, and every
// module first seen loaded while a thread was inside an NCCL call (NCCL's
// own dlopens: NVML, plugins' dependencies). A failed C library call inside
// an NCCL init from such code is evidence about NCCL's init; one from
// anywhere else (the program's own code, a signal handler of the program's
// that ran on the thread meanwhile) is not (core/syscall_records.h).
//
// HOT PATH: FromNccl() and FromNcclDriven() allocate nothing, take no lock,
// make no system call and are async-signal-safe. AddNcclCode() and
// AddNcclDrivenCode() run under the loader's lock when modules are scanned
// (tracer.cc), never on the hot path.

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

// Whether a module of this path is one NCCL drives (by name): libcuda.so*,
// libcudart.so*, libnvidia-*, libibverbs.so*, librdmacm.so*, libmlx5.so*.
bool IsNcclDrivenModule(const char* path);
void AddNcclDrivenCode(uintptr_t start, uintptr_t end);

inline constexpr int kMaxNcclDrivenCode = 32;
extern uintptr_t g_nccl_driven_lo[kMaxNcclDrivenCode];
extern uintptr_t g_nccl_driven_hi[kMaxNcclDrivenCode];
extern int g_nccl_driven_count;

// NCCL's code, or code NCCL drives.
inline bool FromNcclDriven(const void* pc) {
  if (FromNccl(pc)) return true;
  const uintptr_t a = reinterpret_cast<uintptr_t>(pc);
  const int n = __atomic_load_n(&g_nccl_driven_count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i)
    if (a >= g_nccl_driven_lo[i] && a < g_nccl_driven_hi[i]) return true;
  return false;
}

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_NCCL_CODE_H_

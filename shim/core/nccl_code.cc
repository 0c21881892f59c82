#include "core/nccl_code.h"

#include <string.h>

namespace ncclwatch::shim {

uintptr_t g_nccl_code_lo[kMaxNcclCode];
uintptr_t g_nccl_code_hi[kMaxNcclCode];
int g_nccl_code_count = 0;

bool IsNcclModule(const char* path) {
  if (path == nullptr) return false;
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  // libnccl.so[.2], and the plugins libnccl-net*.so, libnccl-tuner*.so, ...
  // (not libncclwatch.so itself).
  return strncmp(base, "libnccl.so", 10) == 0 || strncmp(base, "libnccl-", 8) == 0;
}

uintptr_t g_nccl_driven_lo[kMaxNcclDrivenCode];
uintptr_t g_nccl_driven_hi[kMaxNcclDrivenCode];
int g_nccl_driven_count = 0;

bool IsNcclDrivenModule(const char* path) {
  if (path == nullptr) return false;
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  static const char* const kPrefixes[] = {"libcuda.so",    "libcudart.so", "libnvidia-",
                                          "libibverbs.so", "librdmacm.so", "libmlx5.so"};
  for (const char* p : kPrefixes)
    if (strncmp(base, p, strlen(p)) == 0) return true;
  return false;
}

void AddNcclDrivenCode(uintptr_t start, uintptr_t end) {
  const int n = __atomic_load_n(&g_nccl_driven_count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i)
    if (g_nccl_driven_lo[i] == start && g_nccl_driven_hi[i] == end) return;
  if (n >= kMaxNcclDrivenCode) return;
  g_nccl_driven_lo[n] = start;
  g_nccl_driven_hi[n] = end;
  __atomic_store_n(&g_nccl_driven_count, n + 1, __ATOMIC_RELEASE);
}

void AddNcclCode(uintptr_t start, uintptr_t end) {
  const int n = __atomic_load_n(&g_nccl_code_count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i)
    if (g_nccl_code_lo[i] == start && g_nccl_code_hi[i] == end) return;
  if (n >= kMaxNcclCode) return;
  g_nccl_code_lo[n] = start;
  g_nccl_code_hi[n] = end;
  __atomic_store_n(&g_nccl_code_count, n + 1, __ATOMIC_RELEASE);
}

}  // namespace ncclwatch::shim

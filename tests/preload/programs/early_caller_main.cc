// Prints what the early library's constructor got from NCCL.

#include <cstdio>

extern int g_early_result;

int main() {
  std::printf("early ncclGetUniqueId returned %d\n", g_early_result);
  return 0;
}

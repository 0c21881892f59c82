// interposer_main: calls ncclGetVersion and ncclGetUniqueId, linked with
// libnccl_interposer.so in front of libnccl.so.2.

#include <nccl.h>

#include <cstdio>

int main() {
  int version = 0;
  const ncclResult_t r = ncclGetVersion(&version);
  std::printf("ncclGetVersion -> %d, %d\n", static_cast<int>(r), version);
  ncclUniqueId id;
  std::printf("ncclGetUniqueId -> %d\n", static_cast<int>(ncclGetUniqueId(&id)));
  return 0;
}

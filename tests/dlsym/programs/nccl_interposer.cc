// libnccl_interposer.so: a library in front of NCCL, as NCCL profilers and
// fault injectors are: it defines ncclGetVersion, counts the call, and
// forwards it to the next definition with dlsym(RTLD_NEXT, ...). Which
// definition is "next" depends on who asks: asked as this library it is
// NCCL's; asked as anyone in front of it (the shim), it would be this one
// again, and the call would never end.

#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>

extern "C" __attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int* version) {
  using Fn = ncclResult_t (*)(int*);
  static Fn next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "ncclGetVersion"));
  if (next == nullptr ||
      reinterpret_cast<void*>(next) == reinterpret_cast<void*>(&ncclGetVersion)) {
    std::printf("interposer: no next ncclGetVersion\n");
    return ncclInternalError;
  }
  // Said once: the shim asks ncclGetVersion itself at the first init call
  // (for its inventory), through whatever the global lookup finds.
  static bool said = false;
  if (!said) std::printf("interposer: forwarding ncclGetVersion\n");
  said = true;
  return next(version);
}

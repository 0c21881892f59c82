// absent_probe: what a program finds of each NCCL entry point the shim
// intercepts, the way programs ask whether the NCCL they loaded has one: a
// weak reference (the program is linked with -lnccl, every entry point
// referenced weakly, so it starts with any NCCL), dlsym with RTLD_DEFAULT
// and with the library's handle, and dlerror's text when not found. Run
// with and without libncclwatch.so, the outputs must be the same: an entry
// point the loaded NCCL lacks stays absent.
//
//   absent_probe        one line per entry point: NAME weak=0|1 default=0|1 handle=0|1
//                       [dlerror=...]; then ncclGetVersion's answer

#include <dlfcn.h>
#include <nccl.h>
#include <nccl_device.h>
#include <stddef.h>

#include <cstdio>
#include <cstring>
#include <string>

// Every entry point the shim intercepts, referenced weakly.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define NCCLWATCH_STR(x) #x
#define NCCLWATCH_NCCL_FN(name) NCCLWATCH_WEAK(name)
#define NCCLWATCH_WEAK(name) _Pragma(NCCLWATCH_STR(weak name))
#include "resolve/nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN

namespace {

struct Entry {
  const char* name;
  void* weak;
};

const Entry kEntries[] = {
#define NCCLWATCH_NCCL_FN(name) {#name, reinterpret_cast<void*>(&::name)},
#include "resolve/nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN
};
#pragma GCC diagnostic pop

}  // namespace

int main() {
  void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  for (const Entry& e : kEntries) {
    dlerror();
    void* by_default = dlsym(RTLD_DEFAULT, e.name);
    // dlerror's text lives until the next call into the loader: copied now.
    const char* text = by_default == nullptr ? dlerror() : nullptr;
    const std::string error = text != nullptr ? text : "";
    void* by_handle = handle != nullptr ? dlsym(handle, e.name) : nullptr;
    std::printf("%s weak=%d default=%d handle=%d", e.name, e.weak != nullptr, by_default != nullptr,
                by_handle != nullptr);
    if (!error.empty()) std::printf(" dlerror=%s", error.c_str());
    std::printf("\n");
  }
  int version = 0;
  const ncclResult_t result = ncclGetVersion(&version);
  std::printf("ncclGetVersion -> %d %d\n", static_cast<int>(result), version);
  return 0;
}

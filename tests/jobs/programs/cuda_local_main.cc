// cuda_local_main PLUGIN: loads PLUGIN in a local scope and prints what its
// cudaIpcOpenMemHandle of a handle nobody exported returned.

#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::printf("dlopen failed: %s\n", dlerror());
    return 1;
  }
  auto fn = reinterpret_cast<int (*)()>(dlsym(h, "PluginIpcOpen"));
  if (fn == nullptr) return 1;
  std::printf("cudaIpcOpenMemHandle returned %d\n", fn());
  return 0;
}

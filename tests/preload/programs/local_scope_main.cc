// Loads local_scope_plugin with RTLD_LOCAL (as Python imports extensions)
// and prints what its NCCL calls returned.

#include <dlfcn.h>

#include <cstdio>
#include <string>

int main(int, char** argv) {
  std::string path = argv[0];
  path = path.substr(0, path.rfind('/') + 1) + "liblocal_scope_plugin.so";
  void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  auto run = reinterpret_cast<int (*)(int*)>(dlsym(plugin, "PluginRun"));
  int version = 0;
  const int result = run(&version);
  std::printf("plugin result %d version %d\n", result, version);
  return result == 0 ? 0 : 1;
}

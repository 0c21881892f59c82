// Loads dlopen_origin_lib by its full path and asks it to load its sibling
// by bare name; prints what came back (42 when the sibling was found).

#include <dlfcn.h>

#include <cstdio>
#include <string>

int main(int, char** argv) {
  std::string path = argv[0];
  path = path.substr(0, path.rfind('/') + 1) + "libdlopen_origin_lib.so";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  auto load = reinterpret_cast<int (*)()>(dlsym(lib, "LoadSibling"));
  std::printf("sibling answered %d\n", load());
  return 0;
}

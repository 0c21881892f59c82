// A library whose RUNPATH ($ORIGIN/sub) is the only way to find the library
// it dlopens by bare name: glibc searches the RUNPATH of dlopen's caller, so
// this works only if whatever sits in front of dlopen keeps the caller.

#include <dlfcn.h>

extern "C" int LoadSibling() {
  void* h = dlopen("libdlopen_target.so", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return 0;
  auto answer = reinterpret_cast<int (*)()>(dlsym(h, "TargetAnswer"));
  return answer ? answer() : 0;
}

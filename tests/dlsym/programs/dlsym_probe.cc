// dlsym_probe: NCCL reached through dlopen and dlsym, as Python's ctypes and
// frameworks' loaders reach it, printing what each call gave so that a run
// with libncclwatch.so preloaded can be compared with one without. Not
// linked with -lnccl.
//
//   dlsym_probe local            ctypes' CDLL: dlopen(RTLD_LOCAL), then dlsym and
//                                dlvsym on the handle (nccl* and pnccl*)
//   dlsym_probe copies DIR...    one libnccl.so.2 from each DIR (copies of one
//                                library: separate NCCLs), ncclGetUniqueId of each
//   dlsym_probe deepbind         dlopen(RTLD_DEEPBIND), then dlsym on the handle
//   dlsym_probe init             ctypes-style: ncclGetUniqueId, then a one-rank
//                                ncclCommInitRank (uniqueid_probe's output lines)
//   dlsym_probe symbols NAME...  dlopen(RTLD_GLOBAL), then whether dlsym finds each
//                                name in the handle and with RTLD_DEFAULT
//   dlsym_probe raw              dlopen(RTLD_LOCAL), then ncclGetUniqueId found by
//                                reading the library's symbol table, without dlsym
//   dlsym_probe framework PATH   dlopen(RTLD_LOCAL) a library with NCCL linked in,
//                                then its framework_init()

#include <dlfcn.h>
#include <link.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

void* Open(const std::string& path, int flags) {
  void* h = dlopen(path.c_str(), flags);
  if (h == nullptr) {
    std::printf("dlopen %s failed: %s\n", path.c_str(), dlerror());
    std::exit(2);
  }
  return h;
}

template <typename Fn>
Fn Sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (p == nullptr) {
    std::printf("dlsym %s failed: %s\n", name, dlerror());
    std::exit(2);
  }
  return reinterpret_cast<Fn>(p);
}

void UniqueId(decltype(&ncclGetUniqueId) get, const char* what) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::printf("%s -> %d\n", what, static_cast<int>(get(&id)));
}

int Local() {
  void* h = Open("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  int version = 0;
  const ncclResult_t r = Sym<decltype(&ncclGetVersion)>(h, "ncclGetVersion")(&version);
  std::printf("ncclGetVersion -> %d, %d\n", static_cast<int>(r), version);
  UniqueId(Sym<decltype(&ncclGetUniqueId)>(h, "ncclGetUniqueId"), "ncclGetUniqueId");
  UniqueId(Sym<decltype(&ncclGetUniqueId)>(h, "pncclGetUniqueId"), "pncclGetUniqueId");
  auto error_string = Sym<decltype(&ncclGetErrorString)>(h, "ncclGetErrorString");
  std::printf("ncclGetErrorString(3) = %s\n", error_string(ncclInternalError));
  // dlvsym asks for an exact version, which NCCL's unversioned exports do
  // not have: not found, with and without the shim alike.
  std::printf("dlvsym found: %d\n", dlvsym(h, "ncclGetUniqueId", "NCCL_2.0") != nullptr);
  std::printf("dlsym of a name NCCL lacks: %d\n", dlsym(h, "ncclNoSuchFunction") != nullptr);
  return 0;
}

int Copies(int n, char** dirs) {
  for (int i = 0; i < n; ++i) {
    void* h = Open(std::string(dirs[i]) + "/libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    UniqueId(Sym<decltype(&ncclGetUniqueId)>(h, "ncclGetUniqueId"),
             ("copy " + std::to_string(i)).c_str());
  }
  return 0;
}

int DeepBind() {
  void* h = Open("libnccl.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  int version = 0;
  const ncclResult_t r = Sym<decltype(&ncclGetVersion)>(h, "ncclGetVersion")(&version);
  std::printf("ncclGetVersion -> %d, %d\n", static_cast<int>(r), version);
  return 0;
}

int Init() {
  void* h = Open("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  auto get_id = Sym<decltype(&ncclGetUniqueId)>(h, "ncclGetUniqueId");
  auto init = Sym<decltype(&ncclCommInitRank)>(h, "ncclCommInitRank");
  auto error_string = Sym<decltype(&ncclGetErrorString)>(h, "ncclGetErrorString");
  auto last_error = Sym<decltype(&ncclGetLastError)>(h, "ncclGetLastError");
  auto destroy = Sym<decltype(&ncclCommDestroy)>(h, "ncclCommDestroy");
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  ncclResult_t r = get_id(&id);
  std::printf("result %d %s\n", r, error_string(r));
  std::printf("lasterror %s\n", last_error(nullptr));
  if (r != ncclSuccess) return 0;
  ncclComm_t comm = nullptr;
  r = init(&comm, 1, id, 0);
  std::printf("init result %d %s\n", r, error_string(r));
  std::printf("init lasterror %s\n", last_error(nullptr));
  if (r == ncclSuccess) destroy(comm);
  return 0;
}

int Symbols(int n, char** names) {
  void* h = Open("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
  for (int i = 0; i < n; ++i) {
    std::printf("%s handle=%d default=%d\n", names[i], dlsym(h, names[i]) != nullptr,
                dlsym(RTLD_DEFAULT, names[i]) != nullptr);
  }
  return 0;
}

// `name` from the handle's dynamic symbol table, read in memory (its
// symbols come right before its string table, as linkers lay them out).
void* WithoutDlsym(void* handle, const char* name) {
  link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == nullptr) return nullptr;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  auto at = [&](ElfW(Addr) p) { return p < lm->l_addr ? lm->l_addr + p : p; };
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symtab = reinterpret_cast<const ElfW(Sym)*>(at(d->d_un.d_ptr));
    if (d->d_tag == DT_STRTAB) strtab = reinterpret_cast<const char*>(at(d->d_un.d_ptr));
  }
  if (symtab == nullptr || strtab == nullptr || reinterpret_cast<const char*>(symtab) > strtab)
    return nullptr;
  for (const ElfW(Sym)* s = symtab + 1; reinterpret_cast<const char*>(s + 1) <= strtab; ++s) {
    if (s->st_shndx != SHN_UNDEF && std::strcmp(strtab + s->st_name, name) == 0)
      return reinterpret_cast<void*>(lm->l_addr + s->st_value);
  }
  return nullptr;
}

int Framework(const char* path) {
  void* h = Open(path, RTLD_NOW | RTLD_LOCAL);
  std::printf("framework_init -> %d\n", Sym<int (*)()>(h, "framework_init")());
  return 0;
}

int Raw() {
  void* h = Open("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  void* p = WithoutDlsym(h, "ncclGetUniqueId");
  std::printf("found without dlsym: %d\n", p != nullptr);
  if (p != nullptr) UniqueId(reinterpret_cast<decltype(&ncclGetUniqueId)>(p), "ncclGetUniqueId");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "local") return Local();
  if (mode == "copies") return Copies(argc - 2, argv + 2);
  if (mode == "deepbind") return DeepBind();
  if (mode == "init") return Init();
  if (mode == "symbols") return Symbols(argc - 2, argv + 2);
  if (mode == "raw") return Raw();
  if (mode == "framework" && argc > 2) return Framework(argv[2]);
  std::printf(
      "usage: dlsym_probe local|copies DIR...|deepbind|init|symbols NAME...|raw|framework PATH\n");
  return 2;
}

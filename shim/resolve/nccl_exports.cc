// Not on the hot path (see nccl_exports.h).

#include "nccl_exports.h"

#include <elf.h>
#include <link.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "elf_symbols.h"
#include "loaded_module.h"
#include "named_lock.h"
#include "real_nccl.h"

namespace ncclwatch::shim {
namespace {

// A glibc function through a pointer the compiler cannot see through, so the
// call loads it from the GOT (filled by a GLOB_DAT relocation, which glibc
// applies before the shim's IRELATIVE ones) instead of going through the PLT,
// which is not bound yet when UpdateAtLoad runs.
template <typename F>
F* ViaGot(F* f) {
  asm("" : "+r"(f));
  return f;
}

// The shim's two exports of an entry point: ncclX and its alias pncclX.
constexpr int kNames = 2;

// What one walk of the module list found. Plain words, no arrays to
// initialise: at load the compiler must not call memset or memcpy (PLT).
static_assert(kNcclFunctions <= 128, "two words of bits");
struct Scan {
  uintptr_t self;  // an address inside the shim
  // The shim's module (what Store and the symbol lookups need of it).
  ElfW(Addr) self_addr;
  const ElfW(Phdr) * self_phdr;
  ElfW(Half) self_phnum;
  bool self_found;
  uint64_t defined[2];  // bit i: a module other than the shim defines entry point i
  bool any;             // some module does
  bool Defined(int i) const { return (defined[i / 64] >> (i % 64)) & 1; }
  dl_phdr_info SelfInfo() const {
    dl_phdr_info info;
    info.dlpi_addr = self_addr;
    info.dlpi_name = "";
    info.dlpi_phdr = self_phdr;
    info.dlpi_phnum = self_phnum;
    return info;
  }
};

// "pncclX" for "ncclX", into `out` (no C library).
void Prefixed(const char* name, char* out, size_t n) {
  size_t i = 0;
  out[i++] = 'p';
  for (; *name != '\0' && i + 1 < n; ++name) out[i++] = *name;
  out[i] = '\0';
}

int ScanCallback(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Scan*>(data);
  if (LoadSegmentAt(info, s->self) != nullptr) {
    s->self_addr = info->dlpi_addr;
    s->self_phdr = info->dlpi_phdr;
    s->self_phnum = info->dlpi_phnum;
    s->self_found = true;
    return 0;
  }
  for (int i = 0; i < kNcclFunctions; ++i) {
    if (s->Defined(i)) continue;
    if (FindDynamicSymbol(info, NcclFunctionName(i)) != nullptr) {
      s->defined[i / 64] |= uint64_t{1} << (i % 64);
      s->any = true;
    }
  }
  return 0;
}

// The value each export had in the file (0 until first seen), and whether
// it is hidden now.
uint64_t g_value[kNcclFunctions][kNames];
bool g_hidden[kNcclFunctions];
NamedLock g_lock;  // named by its holder (Update)
// The loader's generation the last update saw (UINT64_MAX: none yet, or
// only the one at load, which could not ask).
uint64_t g_generation = UINT64_MAX;

// Stores `value` into a symbol's st_value in the shim's own read-only
// mapping: the page made writable for the store, then as it was.
void Store(const dl_phdr_info& self, ElfW(Sym) * sym, uint64_t value) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(&sym->st_value);
  const ElfW(Phdr)* seg = LoadSegmentAt(&self, at);
  if (seg == nullptr) return;
  int prot = 0;
  if (seg->p_flags & PF_R) prot |= PROT_READ;
  if (seg->p_flags & PF_W) prot |= PROT_WRITE;
  if (seg->p_flags & PF_X) prot |= PROT_EXEC;
  uintptr_t page = 4096;
  if (const unsigned long p = ViaGot(&getauxval)(AT_PAGESZ)) page = p;
  const uintptr_t lo = at & ~(page - 1);
  const uintptr_t hi = (at + sizeof(sym->st_value) + page - 1) & ~(page - 1);
  auto protect = ViaGot(&mprotect);
  if ((prot & PROT_WRITE) == 0 &&
      protect(reinterpret_cast<void*>(lo), hi - lo, prot | PROT_WRITE | PROT_READ) != 0)
    return;  // left as it is: the export stays as it was
  __atomic_store_n(&sym->st_value, value, __ATOMIC_RELEASE);
  if ((prot & PROT_WRITE) == 0) protect(reinterpret_cast<void*>(lo), hi - lo, prot);
}

// `me`: the caller's name for the lock (g_lock): NamedLock::ThisThread(),
// or 1 at load, when only one thread runs and the shim's TLS offsets may
// not be relocated yet. The lock held by `me` itself (a signal handler's
// NCCL call that came back here on the thread updating) leaves the exports
// as they are: waiting would wait for the frame it interrupted, forever.
void Update(bool at_load, uintptr_t me) {
  if (!g_lock.Take(me, [] {})) return;
  const uint64_t generation = at_load ? UINT64_MAX : LoaderGeneration();
  if (!at_load && generation == g_generation) {
    g_lock.Give();
    return;
  }
  Scan s;
  s.self = reinterpret_cast<uintptr_t>(&Update);
  s.self_found = false;
  s.defined[0] = s.defined[1] = 0;
  s.any = false;
  ViaGot (&dl_iterate_phdr)(ScanCallback, &s);
  if (s.self_found) {
    const dl_phdr_info self = s.SelfInfo();
    for (int i = 0; i < kNcclFunctions; ++i) {
      // No NCCL loaded at all: everything shown, for the one a framework
      // loads later.
      const bool hide = s.any && !s.Defined(i);
      if (hide == g_hidden[i]) continue;
      char prefixed[96];
      Prefixed(NcclFunctionName(i), prefixed, sizeof(prefixed));
      const char* names[kNames] = {NcclFunctionName(i), prefixed};
      for (int k = 0; k < kNames; ++k) {
        ElfW(Sym)* sym = FindDynamicSymbolEntry(&self, names[k]);
        if (sym == nullptr) continue;
        if (g_value[i][k] == 0) g_value[i][k] = sym->st_value;
        Store(self, sym, hide ? 0 : g_value[i][k]);
      }
      g_hidden[i] = hide;
    }
  }
  g_generation = generation;
  g_lock.Give();
}

}  // namespace

// A signal handler's NCCL call comes here through ResolveRealNccl (the
// process's first NCCL call, an entry point the loaded NCCL lacks).
void UpdateNcclExports() { Update(false, NamedLock::ThisThread()); }

void NcclExportsBeforeFork() {
  g_lock.BeforeFork(NamedLock::ThisThread(), [] { sched_yield(); });
}
void NcclExportsAfterFork() { g_lock.AfterFork(); }

bool NcclExportHidden(int index) {
  return index >= 0 && index < kNcclFunctions &&
         __atomic_load_n(&g_hidden[index], __ATOMIC_ACQUIRE);
}

}  // namespace ncclwatch::shim

// The update at load: glibc calls an IRELATIVE relocation's resolver while
// it relocates the shim, which is before it relocates the program. The
// resolver's answer is a function nothing calls; `g_exports_at_load`, which
// holds it, is only there so that the linker emits the relocation.
extern "C" {
__attribute__((visibility("hidden"))) void NcclwatchExportsLoaded() {}
__attribute__((visibility("hidden"))) void (*NcclwatchExportsAtLoad())() {
  ncclwatch::shim::Update(true, 1);
  return &NcclwatchExportsLoaded;
}
__attribute__((visibility("hidden"), ifunc("NcclwatchExportsAtLoad"))) void NcclwatchExportsIfunc();
__attribute__((visibility("hidden"),
               used)) void (*volatile g_exports_at_load)() = &NcclwatchExportsIfunc;
}

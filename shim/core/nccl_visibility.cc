// Not on the hot path (see nccl_visibility.h).

#include "core/nccl_visibility.h"

#include <errno.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "core/comm_registry.h"
#include "core/errno_guard.h"
#include "core/inventory.h"
#include "core/nccl_code.h"
#include "core/record_builder.h"
#include "core/startup_stack.h"
#include "core/tracer.h"
#include "core/watcher.h"
#include "ncclwatch/trace_fields.h"
#include "resolve/elf_symbols.h"
#include "resolve/loaded_module.h"
#include "resolve/named_lock.h"

namespace ncclwatch::shim {

int g_nccl_code_active = 0;
uintptr_t g_untraced_callers[kUntracedCallers];
unsigned g_untraced_next = 0;

namespace {

namespace f = fields;

// One look at a time (dlopen and dlsym from several threads), the lock
// naming its holder (resolve/named_lock.h): a
// signal handler that comes back here on the thread that holds it (its
// exit(), a dlopen, a dlsym of an NCCL name) skips its own look, where
// waiting would wait, forever, for the frame it interrupted (which finishes
// the look when the handler returns; an exit() in the handler loses only
// what that look would have noted).
NamedLock g_lock;

void Yield() { sched_yield(); }

// Runs `fn` under the lock, unless this thread holds it already.
template <typename Fn>
void Look(Fn&& fn) {
  if (!g_lock.Take(NamedLock::ThisThread(), Yield)) return;
  fn();
  g_lock.Give();
}

// What was noted already, by (reason, path hash).
constexpr int kMaxNoted = 64;
uint64_t g_noted[kMaxNoted];
int g_noted_count = 0;

// Modules already looked at, by load address and name.
constexpr int kMaxSeen = 1024;
uint64_t g_seen[kMaxSeen];
int g_seen_count = 0;
// The loader's counts of loads and unloads at the last look, and how many
// modules there were: while nothing was unloaded, modules keep their places
// in the list and the new ones come last.
unsigned long long g_last_adds = ~0ull, g_last_subs = ~0ull;
size_t g_last_modules = 0;

// The first libnccl.so found, and whether NCCL is in the process at all.
uintptr_t g_first_nccl = 0;
char g_first_nccl_path[512];
bool g_has_nccl = false;

// RTLD_DEEPBIND dlopens waiting for NCCL to show up.
constexpr int kMaxDeep = 8;
char g_deep[kMaxDeep][256];
int g_deep_count = 0;

void CopyName(char* to, size_t n, const char* from) {
  size_t i = 0;
  for (; i + 1 < n && from[i] != '\0'; ++i) to[i] = from[i];
  to[i] = '\0';
}

bool IsLibnccl(const char* path) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strncmp(base, "libnccl.so", 10) == 0;
}

void Note(NcclNotSeen reason, const char* path) {
  const uint64_t key = HashBytes(path, strlen(path), static_cast<uint64_t>(reason) * 0x9e37ull);
  for (int i = 0; i < g_noted_count; ++i)
    if (g_noted[i] == key) return;
  if (g_noted_count >= kMaxNoted) return;
  g_noted[g_noted_count++] = key;
  const bool calls_seen = NcclCallsSeen();
  if (!EnsureTraceFile(TracedFrom::kNotSeen)) return;
  LargeRecordBuilder r(f::record::kNcclNotSeen);
  namespace k = f::nccl_not_seen;
  r.w().Varint(k::kReason, static_cast<uint32_t>(reason));
  r.w().String(k::kPath, path);
  if (calls_seen) r.w().Varint(k::kCallsSeen, 1);
  r.Append(Region::kPinned);
}

struct Scan {
  uintptr_t self;  // an address in the shim
  bool first = true;
  size_t index = 0;
  size_t skip = 0;  // modules at the start of the list known already
  // Findings, written after the walk (not under the loader's lock).
  struct Found {
    NcclNotSeen reason;
    char path[512];
  };
  Found found[8];
  int nfound = 0;
};

void Add(Scan* s, NcclNotSeen reason, const char* path) {
  if (s->nfound >= 8) return;
  Scan::Found& x = s->found[s->nfound++];
  x.reason = reason;
  CopyName(x.path, sizeof(x.path), path);
}

int ScanCallback(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Scan*>(data);
  const bool exe = s->first;
  if (exe) {
    if (info->dlpi_adds == g_last_adds && info->dlpi_subs == g_last_subs) return 1;  // no change
    s->skip = info->dlpi_subs == g_last_subs ? g_last_modules : 0;
    g_last_adds = info->dlpi_adds;
    g_last_subs = info->dlpi_subs;
  }
  s->first = false;
  if (s->index++ < s->skip) return 0;
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const uint64_t key = HashBytes(name, strlen(name), info->dlpi_addr);
  for (int i = 0; i < g_seen_count; ++i)
    if (g_seen[i] == key) return 0;
  if (g_seen_count < kMaxSeen) g_seen[g_seen_count++] = key;
  if (LoadSegmentAt(info, s->self) != nullptr) return 0;  // the shim exports NCCL's names itself
  if (!exe && name[0] == '\0') return 0;                  // the vDSO
  if (IsNcclModule(name)) {
    // NCCL's code (libnccl.so, its plugins), known to the libc hooks before
    // there is a trace file, so that its calls can raise ACTIVE_UNSEEN.
    uintptr_t lo = 0, hi = 0;
    if (LoadSpan(info, &lo, &hi)) AddNcclCode(lo, hi);
  }
  if (IsLibnccl(name)) {
    g_has_nccl = true;
    if (g_first_nccl == 0) {
      g_first_nccl = info->dlpi_addr;
      CopyName(g_first_nccl_path, sizeof(g_first_nccl_path), name);
    } else if (g_first_nccl != info->dlpi_addr) {
      Add(s, NcclNotSeen::kSecondLibrary, name);
    }
    return 0;
  }
  bool linked_in = FindDynamicSymbol(info, "ncclCommInitRank") != nullptr ||
                   FindDynamicSymbol(info, "ncclGetUniqueId") != nullptr;
  char exe_path[512] = {0};
  if (exe) {
    const ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
    if (n > 0) exe_path[n] = '\0';
    // An executable that links NCCL in without exporting it: its static
    // symbol table, when it has one (bounded: a huge unstripped binary is
    // not read at every start).
    if (!linked_in) linked_in = FileDefinesSymbol("/proc/self/exe", "ncclCommInitRank", 64u << 20);
    name = exe_path;
  }
  if (linked_in) {
    g_has_nccl = true;
    if (g_first_nccl_path[0] == '\0') CopyName(g_first_nccl_path, sizeof(g_first_nccl_path), name);
    Add(s, NcclNotSeen::kLinkedIn, name);
  }
  return 0;
}

// Under the lock (Look).
void Check() {
  Scan s;
  s.self = reinterpret_cast<uintptr_t>(&CheckNcclVisibility);
  dl_iterate_phdr(ScanCallback, &s);
  if (s.index > 0) g_last_modules = s.index;
  // NCCL is in the process: traced from now on (core/tracer.h), before any
  // note below makes the file for a reason of its own.
  if (g_has_nccl && NoteNcclLoaded()) {
    RecordLoadInventory(g_first_nccl_path);
    StartHeartbeat();
  }
  for (int i = 0; i < s.nfound; ++i) Note(s.found[i].reason, s.found[i].path);
  for (unsigned i = 0; i < kUntracedCallers; ++i) {
    const uintptr_t a = __atomic_load_n(&g_untraced_callers[i], __ATOMIC_RELAXED);
    if (a != 0 && FromNccl(reinterpret_cast<const void*>(a)))
      __atomic_store_n(&g_nccl_code_active, 1, __ATOMIC_RELAXED);
  }
  if (__atomic_load_n(&g_nccl_code_active, __ATOMIC_RELAXED) != 0 && !NcclCallsSeen())
    Note(NcclNotSeen::kActiveUnseen, g_first_nccl_path[0] != '\0' ? g_first_nccl_path : "NCCL");
  if (g_has_nccl) {
    for (int i = 0; i < g_deep_count; ++i) Note(NcclNotSeen::kDeepBind, g_deep[i]);
    g_deep_count = 0;
  }
}

}  // namespace

// Each runs on the shim's start-up stack: a whole record, a scan's findings
// and a file's symbol table read (64 KiB) are on it, and a dlopen, dlsym or
// exit may come from a thread with a small stack.

void NoteNcclNotSeen(NcclNotSeen reason, const char* path) {
  ErrnoGuard keep;
  RunOnStartupStack([&] { Look([&] { Note(reason, path != nullptr ? path : ""); }); });
}

void CheckNcclVisibility() {
  ErrnoGuard keep;
  if (__atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) == kOff) return;
  RunOnStartupStack([] { Look(Check); });
}

void NcclVisibilityBeforeFork() { g_lock.BeforeFork(NamedLock::ThisThread(), Yield); }
void NcclVisibilityAfterFork() { g_lock.AfterFork(); }

void NoteDeepBindDlopen(const char* name) {
  if (name == nullptr || __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) == kOff) return;
  ErrnoGuard keep;
  RunOnStartupStack([&] {
    Look([&] {
      Check();
      if (g_has_nccl) {
        Note(NcclNotSeen::kDeepBind, name);
      } else if (g_deep_count < kMaxDeep) {
        CopyName(g_deep[g_deep_count], sizeof(g_deep[0]), name);
        ++g_deep_count;
      }
    });
  });
}

}  // namespace ncclwatch::shim

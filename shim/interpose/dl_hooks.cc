// dlopen, dlsym and dlvsym, watched without being wrapped. glibc resolves a
// dlopen's search path (the caller's RUNPATH, $ORIGIN) and namespace, and a
// dlsym/dlvsym(RTLD_NEXT/RTLD_DEFAULT, ...), from the caller's return
// address, so a wrapper that called glibc's would change what gets found.
// The shim's are trampolines instead: they note the call (arguments and
// caller) and jump to glibc's with the caller's return address still on the
// stack, as if it had been called directly. Whether a library loaded shows
// in the module map, which the shim records again when each NCCL init call
// returns. A dlopen with RTLD_DEEPBIND is noted (core/nccl_visibility.h),
// and each dlopen first looks at what the previous ones loaded.
//
// NCCL entry points looked up with dlsym or dlvsym (nccl*, pnccl*; XLA's
// and TensorFlow's NCCL loaders, vLLM's pynccl through ctypes): the shim
// asks glibc itself, as the caller, and hands back its wrapper for what
// glibc found (interpose/real_nccl.h: the exported hook when that is the
// NCCL the global lookup finds, else a library slot's wrapper), which
// forwards every call to exactly that function. To ask as the caller for
// RTLD_NEXT and RTLD_DEFAULT, the shim calls glibc's dlsym with a return
// address inside the caller's module: the address of a `ret` instruction
// byte found there, which returns to the shim (NcclwatchCallAs below). With
// a real handle the caller does not matter and glibc's is called directly.
// (A CPU shadow stack (CET SHSTK) would refuse that return; where no `ret`
// byte is found, or the caller is in no module, the lookup goes through
// unwrapped.)
//
// Lookups the shim makes itself pass straight through, as does everything
// when NCCLWATCH=0.
//
// The CUDA driver's memory-sharing entry points looked up with dlsym (how
// real NCCL's statically linked runtime finds the driver) are handed back
// wrapped the same way (interpose/cuda_hooks.h, WrapDriverSymbol).
//
// One exception, where the caller does not matter: NCCL (or a plugin of its)
// looking up a verbs function (ibv_*) in a library handle with dlvsym, as it
// does for libibverbs. Then the shim looks it up itself and hands back a
// wrapper that forwards every call unchanged and records the calls that
// fail (ibv_reg_mr over RLIMIT_MEMLOCK, ibv_open_device, ...), with errno.
//
// Only on x86-64; elsewhere dlopen, dlsym and dlvsym are not interposed.
//
// HOT PATH (every dlopen/dlsym/dlvsym of the process, every wrapped verbs
// call): a lookup of any other name, and every verbs call, allocate nothing,
// take no lock and make no system call once glibc's functions are found
// (the first call finds them in libc's symbol table, walking the module
// list); the wrappers handed out are nccl_hooks.cc's, with its contract.
// Not signal-safe, like the lookups themselves: each dlopen, and each lookup
// of an NCCL name, looks at the modules loaded since the last look
// (core/nccl_visibility.h) and may create the trace file; an NCCL lookup
// takes a spin lock when it fills a library slot; a module rescan runs when a
// library that may be an NCCL plugin looks up a verbs function. None of
// them changes what the caller gets, except that an NCCL entry point comes
// back as the shim's wrapper of exactly it.

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "core/nccl_visibility.h"
#include "core/syscall_records.h"
#include "core/tracer.h"
#include "interpose/cuda_hooks.h"
#include "interpose/nccl_wrappers.h"
#include "ncclwatch/trace_fields.h"
#include "resolve/elf_symbols.h"
#include "resolve/loaded_module.h"
#include "resolve/nccl_exports.h"

#if defined(__x86_64__)

namespace {

using namespace ncclwatch::shim;  // NOLINT: this file is the shim's dlopen/dlsym/dlvsym surface

void* g_real_dlopen = nullptr;
void* g_real_dlvsym = nullptr;
void* g_real_dlsym = nullptr;

// ------------------------------------------------------------ modules

bool Contains(const dl_phdr_info* info, uintptr_t a) { return LoadSegmentAt(info, a) != nullptr; }

// glibc's `name` (dlsym, dlvsym, dlopen), found without dlsym (the shim's
// own dlsym would be asked): the first definition after the shim in the
// module list, as RTLD_NEXT from the shim would find it.
struct NextSearch {
  const char* name;
  uintptr_t self;
  bool past_self = false;
  void* found = nullptr;
};

int NextCallback(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<NextSearch*>(data);
  if (Contains(info, s->self)) {
    s->past_self = true;
    return 0;
  }
  if (!s->past_self) return 0;
  s->found = FindDynamicSymbol(info, s->name);
  return s->found != nullptr;
}

// A slot whose definition was looked for and not found: remembered, not
// looked for again on every call.
void* const kNoDefinition = reinterpret_cast<void*>(uintptr_t{1});

void* NextDefinition(void** slot, const char* name) {
  void* p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (p != nullptr) return p != kNoDefinition ? p : nullptr;
  NextSearch s;
  s.name = name;
  s.self = reinterpret_cast<uintptr_t>(&NextCallback);
  dl_iterate_phdr(NextCallback, &s);
  __atomic_store_n(slot, s.found != nullptr ? s.found : kNoDefinition, __ATOMIC_RELEASE);
  return s.found;
}

// The shim's own address range, to let its own lookups through.
uintptr_t g_self_lo = 0, g_self_hi = 0;

int SelfCallback(dl_phdr_info* info, size_t, void*) {
  if (!Contains(info, reinterpret_cast<uintptr_t>(&SelfCallback))) return 0;
  uintptr_t lo = 0, hi = 0;
  if (!LoadSpan(info, &lo, &hi)) return 1;
  g_self_hi = hi;
  __atomic_store_n(&g_self_lo, lo, __ATOMIC_RELEASE);
  return 1;
}

bool FromShim(const void* caller) {
  if (__atomic_load_n(&g_self_lo, __ATOMIC_ACQUIRE) == 0) dl_iterate_phdr(SelfCallback, nullptr);
  const uintptr_t a = reinterpret_cast<uintptr_t>(caller);
  return a >= g_self_lo && a < g_self_hi;
}

// The address of a byte 0xc3 (`ret`) in executable code of the module that
// holds `caller`, near it; nullptr if there is none (or no such module).
struct GadgetSearch {
  uintptr_t caller;
  const void* found = nullptr;
};

int GadgetCallback(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<GadgetSearch*>(data);
  const ElfW(Phdr)* ph = LoadSegmentAt(info, s->caller);
  if (ph == nullptr) return 0;
  if ((ph->p_flags & (PF_X | PF_R)) != (PF_X | PF_R)) return 1;
  const uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
  const uintptr_t from = s->caller - lo > 4096 ? s->caller - 4096 : lo;
  const uintptr_t to = hi - s->caller > 4096 ? s->caller + 4096 : hi;
  s->found = memchr(reinterpret_cast<const void*>(from), 0xc3, to - from);
  return 1;
}

const void* RetInCallerModule(const void* caller) {
  GadgetSearch s;
  s.caller = reinterpret_cast<uintptr_t>(caller);
  dl_iterate_phdr(GadgetCallback, &s);
  return s.found;
}

bool IsNcclName(const char* name) {
  return name != nullptr && (strncmp(name, "nccl", 4) == 0 || strncmp(name, "pnccl", 5) == 0);
}

bool Enabled() { return __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) != kOff; }

void* FailedDlopen(const char*, int) { return nullptr; }

// ------------------------------------------------------------ verbs wrappers

// The verbs functions NCCL looks up whose failures matter at init, and how a
// failure shows: a NULL pointer (errno set), or a non-zero int (an errno
// value, or -1 with errno set).
struct VerbsFunction {
  const char* name;
  bool returns_pointer;
  void* real;  // set on the first lookup; a later lookup finding another is not wrapped
};

VerbsFunction g_verbs[] = {
    {"ibv_get_device_list", true, nullptr}, {"ibv_open_device", true, nullptr},
    {"ibv_close_device", false, nullptr},   {"ibv_query_device", false, nullptr},
    {"ibv_query_port", false, nullptr},     {"ibv_query_gid", false, nullptr},
    {"ibv_query_qp", false, nullptr},       {"ibv_alloc_pd", true, nullptr},
    {"ibv_dealloc_pd", false, nullptr},     {"ibv_reg_mr", true, nullptr},
    {"ibv_reg_mr_iova2", true, nullptr},    {"ibv_reg_dmabuf_mr", true, nullptr},
    {"ibv_dereg_mr", false, nullptr},       {"ibv_create_cq", true, nullptr},
    {"ibv_destroy_cq", false, nullptr},     {"ibv_create_qp", true, nullptr},
    {"ibv_modify_qp", false, nullptr},      {"ibv_destroy_qp", false, nullptr},
    {"ibv_fork_init", false, nullptr},      {"ibv_query_ece", false, nullptr},
    {"ibv_set_ece", false, nullptr},
};
constexpr int kVerbs = sizeof(g_verbs) / sizeof(g_verbs[0]);

void NoteVerbsCall(int i, uintptr_t ret, const void* caller) {
  const VerbsFunction& fn = g_verbs[i];
  const int as_int = static_cast<int>(ret);
  const bool failed = fn.returns_pointer ? ret == 0 : as_int != 0;
  if (!failed) return;
  const int err = fn.returns_pointer || as_int < 0 ? errno : as_int;
  if (!WantSysCall(caller, true)) return;
  SysCallEvent e;
  e.kind = ncclwatch::fields::sys_call::kVerbs;
  e.path = fn.name;
  e.ret = fn.returns_pointer ? 0 : as_int;
  e.err = err != 0 ? err : -1;
  e.caller = caller;
  RecordSysCall(e);
}

// Verbs functions take at most six integer or pointer arguments, which the
// x86-64 calling convention passes in registers: forwarding six is exact.
// An int result comes back in the low half of the register, untouched.
using SixArgs = uintptr_t (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

template <int I>
uintptr_t VerbsWrapper(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d, uintptr_t e,
                       uintptr_t f) {
  const uintptr_t r = reinterpret_cast<SixArgs>(g_verbs[I].real)(a, b, c, d, e, f);
  const int saved = errno;
  NoteVerbsCall(I, r, __builtin_return_address(0));
  errno = saved;
  return r;
}

#define NCCLWATCH_W(i) reinterpret_cast<void*>(&VerbsWrapper<i>)
void* const kVerbsWrappers[] = {NCCLWATCH_W(0),  NCCLWATCH_W(1),  NCCLWATCH_W(2),  NCCLWATCH_W(3),
                                NCCLWATCH_W(4),  NCCLWATCH_W(5),  NCCLWATCH_W(6),  NCCLWATCH_W(7),
                                NCCLWATCH_W(8),  NCCLWATCH_W(9),  NCCLWATCH_W(10), NCCLWATCH_W(11),
                                NCCLWATCH_W(12), NCCLWATCH_W(13), NCCLWATCH_W(14), NCCLWATCH_W(15),
                                NCCLWATCH_W(16), NCCLWATCH_W(17), NCCLWATCH_W(18), NCCLWATCH_W(19),
                                NCCLWATCH_W(20)};
#undef NCCLWATCH_W
static_assert(sizeof(kVerbsWrappers) / sizeof(kVerbsWrappers[0]) == kVerbs,
              "one wrapper per verbs function");

// The wrapper for `name` found at `real`, or `real` itself when the shim
// does not watch it.
void* WrapVerbs(const char* name, void* real) {
  if (real == nullptr) return nullptr;
  for (int i = 0; i < kVerbs; ++i) {
    if (strcmp(g_verbs[i].name, name) != 0) continue;
    void* expected = nullptr;
    if (__atomic_compare_exchange_n(&g_verbs[i].real, &expected, real, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE) ||
        expected == real) {
      return kVerbsWrappers[i];
    }
    return real;
  }
  return real;
}

// Whether a dlvsym from `caller` is NCCL's looking up a verbs function.
bool WatchVerbsLookup(void* handle, const char* name, const void* caller) {
  if (name == nullptr || strncmp(name, "ibv_", 4) != 0 || handle == RTLD_NEXT ||
      handle == RTLD_DEFAULT)
    return false;
  if (!TracingNow()) return false;
  if (FromNccl(caller) || ThisThread().in_call != 0) return true;
  RecordNewModules();  // a plugin NCCL loaded since the last scan
  return FromNccl(caller);
}

using DlvsymFn = void* (*)(void*, const char*, const char*);
using DlsymFn = void* (*)(void*, const char*);

}  // namespace

// Calls fn(a0, a1, a2) with `ret_at` as its return address, which must be a
// `ret` instruction: fn returns there, and that `ret` returns here.
extern "C" __attribute__((visibility("hidden"))) void* NcclwatchCallAs(void* fn, void* a0,
                                                                       const char* a1,
                                                                       const char* a2,
                                                                       const void* ret_at);

namespace {

// What glibc's `fn` (dlsym or dlvsym, with `version` for dlvsym) answers
// `caller`. Sets *ok to false when it cannot ask as the caller.
void* AskAsCaller(void* fn, bool versioned, void* handle, const char* name, const char* version,
                  const void* caller, bool* ok) {
  *ok = true;
  if (handle != RTLD_NEXT && handle != RTLD_DEFAULT) {
    return versioned ? reinterpret_cast<DlvsymFn>(fn)(handle, name, version)
                     : reinterpret_cast<DlsymFn>(fn)(handle, name);
  }
  const void* ret_at = RetInCallerModule(caller);
  if (ret_at == nullptr) {
    *ok = false;
    return nullptr;
  }
  return NcclwatchCallAs(fn, handle, name, version, ret_at);
}

}  // namespace

// ------------------------------------------------------------ the trampolines' C halves

// A name WrapDriverSymbol may wrap: the first filter, on every dlsym.
static bool IsDriverSharingName(const char* name) {
  if (name == nullptr || name[0] != 'c' || name[1] != 'u') return false;
  static const char* const kPrefixes[] = {
      "cuIpc",           "cuMem", "cuMulticast", "cuCtxEnablePeerAccess", "cuDeviceCanAccessPeer",
      "cuGetProcAddress"};
  for (const char* p : kPrefixes)
    if (strncmp(name, p, strlen(p)) == 0) return true;
  return false;
}

// An entry point no loaded NCCL has is not found in the shim either
// (resolve/nccl_exports.h): before a lookup of an NCCL name, and before a
// load, the exports follow what is loaded, so glibc answers as it would
// without the shim.
static void UpdateExportsKeepingErrno() {
  const int saved = errno;
  UpdateNcclExports();
  errno = saved;
}

// dlvsym's: what to do: jump to `target`, or, when it is null, return `value`.
struct DlvsymStep {
  void* target;
  void* value;
};

// An NCCL entry point looked up by the program: the shim's wrapper for what
// glibc finds for it (see the top of the file).
static DlvsymStep NcclLookup(void* real, bool versioned, void* handle, const char* name,
                             const char* version, const void* caller) {
  const int saved = errno;
  CheckNcclVisibility();
  errno = saved;
  bool ok = true;
  void* found = AskAsCaller(real, versioned, handle, name, version, caller, &ok);
  if (!ok) return {real, nullptr};
  const int after = errno;  // as glibc left it
  void* wrapper = WrapNcclLookup(name, found);
  errno = after;
  return {nullptr, wrapper};
}

// dlsym's: what to do, as for dlvsym.
extern "C" __attribute__((visibility("hidden"), used)) DlvsymStep NcclwatchBeforeDlsym(
    void* handle, const char* name, const void* caller) {
  void* real = NextDefinition(&g_real_dlsym, "dlsym");
  if (real == nullptr) return {nullptr, nullptr};
  if (IsNcclName(name) && !FromShim(caller)) UpdateExportsKeepingErrno();
  if (IsNcclName(name) && Enabled() && !FromShim(caller))
    return NcclLookup(real, false, handle, name, nullptr, caller);
  // The CUDA driver's memory-sharing entry points (and cuGetProcAddress):
  // glibc's answer, as the caller, wrapped (interpose/cuda_hooks.h).
  if (IsDriverSharingName(name) && Enabled() && !FromShim(caller)) {
    bool ok = true;
    void* found = AskAsCaller(real, false, handle, name, nullptr, caller, &ok);
    if (!ok) return {real, nullptr};
    const int after = errno;  // as glibc left it
    void* wrapper = WrapDriverSymbol(name, found);
    errno = after;
    return {nullptr, wrapper};
  }
  return {real, nullptr};
}

extern "C" __attribute__((visibility("hidden"), used)) DlvsymStep NcclwatchBeforeDlvsym(
    void* handle, const char* name, const char* version, const void* caller) {
  void* real = NextDefinition(&g_real_dlvsym, "dlvsym");
  if (real == nullptr) return {nullptr, nullptr};
  if (IsNcclName(name) && !FromShim(caller)) UpdateExportsKeepingErrno();
  if (IsNcclName(name) && Enabled() && !FromShim(caller))
    return NcclLookup(real, true, handle, name, version, caller);
  if (!WatchVerbsLookup(handle, name, caller)) return {real, nullptr};
  // A real handle: the lookup does not depend on who makes it.
  return {nullptr, WrapVerbs(name, reinterpret_cast<DlvsymFn>(real)(handle, name, version))};
}

// dlopen's: notes the call; returns where to jump.
extern "C" __attribute__((visibility("hidden"), used)) void* NcclwatchBeforeDlopen(
    const char* name, int flags, const void* caller) {
  void* real = NextDefinition(&g_real_dlopen, "dlopen");
  if (Enabled() && !FromShim(caller)) {
    // Before this load: what the previous ones brought (NCCL linked into a
    // framework library, a second libnccl.so).
    const int saved = errno;
    CheckNcclVisibility();
    if ((flags & RTLD_DEEPBIND) != 0) NoteDeepBindDlopen(name);
    errno = saved;
  }
  if (!FromShim(caller)) {
    // What the previous loads brought decides which NCCL exports this load
    // binds to (resolve/nccl_exports.h), with the shim on or off.
    UpdateExportsKeepingErrno();
  }
  if (name != nullptr && WantSysCall(caller, false)) {
    SysCallEvent e;
    e.kind = ncclwatch::fields::sys_call::kDlopen;
    e.path = name;
    e.arg = flags;
    e.has_arg = true;
    e.caller = caller;
    RecordSysCall(e);
  }
  return real != nullptr ? real : reinterpret_cast<void*>(&FailedDlopen);
}

// dlopen(name, flags): keep the arguments, note the call, jump to glibc's.
// The stack is 16-byte aligned at the call (entry rsp is 8 mod 16; two
// pushes and 8 more make it 0).
asm(R"(
    .text
    .globl dlopen
    .type dlopen, @function
dlopen:
    .cfi_startproc
    endbr64
    push %rdi
    .cfi_adjust_cfa_offset 8
    push %rsi
    .cfi_adjust_cfa_offset 8
    sub $8, %rsp
    .cfi_adjust_cfa_offset 8
    mov 24(%rsp), %rdx
    call NcclwatchBeforeDlopen
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop %rsi
    .cfi_adjust_cfa_offset -8
    pop %rdi
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size dlopen, .-dlopen

// dlsym(handle, name): keep the arguments, ask what to do, then jump to
// glibc's or return the wrapper. Two pushes and 8 more keep the stack
// 16-byte aligned at the call.
    .globl dlsym
    .type dlsym, @function
dlsym:
    .cfi_startproc
    endbr64
    push %rdi
    .cfi_adjust_cfa_offset 8
    push %rsi
    .cfi_adjust_cfa_offset 8
    sub $8, %rsp
    .cfi_adjust_cfa_offset 8
    mov 24(%rsp), %rdx
    call NcclwatchBeforeDlsym
    test %rax, %rax
    jz 1f
    .cfi_remember_state
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop %rsi
    .cfi_adjust_cfa_offset -8
    pop %rdi
    .cfi_adjust_cfa_offset -8
    jmp *%rax
1:
    .cfi_restore_state
    mov %rdx, %rax
    add $24, %rsp
    .cfi_adjust_cfa_offset -24
    ret
    .cfi_endproc
    .size dlsym, .-dlsym

// NcclwatchCallAs(fn, a0, a1, a2, ret_at): fn(a0, a1, a2) returning to
// ret_at (a `ret` byte in the caller's module), which returns to 2 below.
// At entry the stack is 8 mod 16; the two pushes keep it so for fn.
    .globl NcclwatchCallAs
    .hidden NcclwatchCallAs
    .type NcclwatchCallAs, @function
NcclwatchCallAs:
    .cfi_startproc
    endbr64
    mov %rdi, %rax
    mov %rsi, %rdi
    mov %rdx, %rsi
    mov %rcx, %rdx
    lea 2f(%rip), %r11
    push %r11
    .cfi_adjust_cfa_offset 8
    push %r8
    .cfi_adjust_cfa_offset 8
    jmp *%rax
2:
    .cfi_adjust_cfa_offset -16
    ret
    .cfi_endproc
    .size NcclwatchCallAs, .-NcclwatchCallAs

// dlvsym(handle, name, version): keep the arguments, ask what to do, then
// jump to glibc's or return the wrapper. Three pushes keep the stack
// 16-byte aligned at the call.
    .globl dlvsym
    .type dlvsym, @function
dlvsym:
    .cfi_startproc
    endbr64
    push %rdi
    .cfi_adjust_cfa_offset 8
    push %rsi
    .cfi_adjust_cfa_offset 8
    push %rdx
    .cfi_adjust_cfa_offset 8
    mov 24(%rsp), %rcx
    call NcclwatchBeforeDlvsym
    test %rax, %rax
    jz 1f
    .cfi_remember_state
    pop %rdx
    .cfi_adjust_cfa_offset -8
    pop %rsi
    .cfi_adjust_cfa_offset -8
    pop %rdi
    .cfi_adjust_cfa_offset -8
    jmp *%rax
1:
    .cfi_restore_state
    mov %rdx, %rax
    add $24, %rsp
    .cfi_adjust_cfa_offset -24
    ret
    .cfi_endproc
    .size dlvsym, .-dlvsym
)");

#endif  // __x86_64__

// dlopen and dlvsym, watched without being wrapped. glibc resolves a
// dlopen's search path (the caller's RUNPATH, $ORIGIN) and namespace, and a
// dlvsym(RTLD_NEXT/RTLD_DEFAULT, ...), from the caller's return address, so a
// wrapper that called glibc's would change what gets found. The shim's are
// trampolines instead: they note the call (arguments and caller) and jump to
// glibc's with the caller's return address still on the stack, as if it had
// been called directly. Whether a library loaded shows in the module map,
// which the shim records again when each NCCL init call returns.
//
// One exception, where the caller does not matter: NCCL (or a plugin of its)
// looking up a verbs function (ibv_*) in a library handle with dlvsym, as it
// does for libibverbs. Then the shim looks it up itself and hands back a
// wrapper that forwards every call unchanged and records the calls that
// fail (ibv_reg_mr over RLIMIT_MEMLOCK, ibv_open_device, ...), with errno.
//
// Only on x86-64; elsewhere dlopen and dlvsym are not interposed.
//
// HOT PATH (every dlopen/dlvsym of the process, every wrapped verbs call):
// nothing here allocates, locks or makes a system call once glibc's
// functions are resolved (the first call resolves them with dlsym), except
// a module rescan when a library that may be an NCCL plugin looks up a verbs
// function (not signal-safe, like the lookup itself).

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/syscall_records.h"
#include "core/tracer.h"
#include "ncclwatch/trace_fields.h"

#if defined(__x86_64__)

namespace {

using namespace ncclwatch::shim;  // NOLINT: this file is the shim's dlopen/dlvsym surface

void* g_real_dlopen = nullptr;
void* g_real_dlvsym = nullptr;

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

}  // namespace

// ------------------------------------------------------------ the trampolines' C halves

// dlvsym's: what to do: jump to `target`, or, when it is null, return `value`.
struct DlvsymStep {
  void* target;
  void* value;
};

extern "C" __attribute__((visibility("hidden"), used)) DlvsymStep NcclwatchBeforeDlvsym(
    void* handle, const char* name, const char* version, const void* caller) {
  void* real = __atomic_load_n(&g_real_dlvsym, __ATOMIC_ACQUIRE);
  if (real == nullptr) {
    real = dlsym(RTLD_NEXT, "dlvsym");
    __atomic_store_n(&g_real_dlvsym, real, __ATOMIC_RELEASE);
  }
  if (real == nullptr) return {nullptr, nullptr};
  if (!WatchVerbsLookup(handle, name, caller)) return {real, nullptr};
  // A real handle: the lookup does not depend on who makes it.
  return {nullptr, WrapVerbs(name, reinterpret_cast<DlvsymFn>(real)(handle, name, version))};
}

// dlopen's: notes the call; returns where to jump.
extern "C" __attribute__((visibility("hidden"), used)) void* NcclwatchBeforeDlopen(
    const char* name, int flags, const void* caller) {
  void* real = __atomic_load_n(&g_real_dlopen, __ATOMIC_ACQUIRE);
  if (real == nullptr) {
    real = dlsym(RTLD_NEXT, "dlopen");
    __atomic_store_n(&g_real_dlopen, real, __ATOMIC_RELEASE);
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

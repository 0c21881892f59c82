// dlopen, watched without being wrapped. glibc resolves a dlopen's search
// path (the caller's RUNPATH, $ORIGIN) and namespace from the caller's
// return address, so a wrapper that called glibc's dlopen would change what
// gets loaded. The shim's dlopen is instead a trampoline: it notes the call
// (the name, the flags, the caller) and jumps to glibc's dlopen with the
// caller's return address still on the stack, as if it had been called
// directly. Whether the library loaded shows in the module map, which the
// shim records again when each NCCL init call returns.
//
// Only on x86-64; elsewhere dlopen is not interposed.
//
// HOT PATH (every dlopen of the process): BeforeDlopen allocates nothing,
// takes no lock and makes no system call once glibc's dlopen is resolved
// (the first call resolves it with dlsym).

#include <dlfcn.h>

#include "core/syscall_records.h"
#include "ncclwatch/trace_fields.h"

#if defined(__x86_64__)

namespace {

void* g_real_dlopen = nullptr;

void* FailedDlopen(const char*, int) { return nullptr; }

}  // namespace

// Called by the trampoline below; returns where to jump.
extern "C" __attribute__((visibility("hidden"), used)) void* NcclwatchBeforeDlopen(const char* name, int flags,
                                                                                  const void* caller) {
  using namespace ncclwatch::shim;  // NOLINT: this file is the shim's dlopen surface
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
)");

#endif  // __x86_64__

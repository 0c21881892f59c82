// dlopen_step_probe: a signal handler that runs at every instruction of the
// shim's dlopen hook while the program loads NCCL (a framework's way: the
// program is not linked with it). The dlopen runs single-stepped (x86's
// trap flag, set from a signal handler's context); after each instruction
// that is the shim's, the SIGTRAP handler:
//
//   dlopen_step_probe LIBNCCL              calls ncclGetVersion (the shim's
//                                          export, found before NCCL was
//                                          loaded), as a handler of a
//                                          program that uses NCCL may
//   dlopen_step_probe LIBNCCL --exit-at I  calls exit(7) at the I-th of the
//                                          shim's instructions, as a
//                                          SIGTERM handler that exits does
//
// The hook looks at the modules loaded (core/nccl_visibility.h) and updates
// the shim's exports (resolve/nccl_exports.h) under locks of its own: a
// handler's call that came back to them on the same thread waited there
// forever. stdout: what the program saw (the same with and without the
// shim); stderr: how many instructions were stepped and how many were the
// shim's.

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr greg_t kTrapFlag = 0x100;  // EFLAGS.TF

// The executable segments of the module that exports ncclGetVersion before
// NCCL is loaded: the shim, when preloaded.
constexpr int kMaxSegments = 8;
uintptr_t g_lo[kMaxSegments], g_hi[kMaxSegments];
int g_segments = 0;

using GetVersion = int (*)(int*);
GetVersion g_get_version = nullptr;
long g_exit_at = -1;

volatile sig_atomic_t g_step = 0;
volatile long g_steps = 0, g_inside = 0, g_calls = 0;

bool Inside(uintptr_t pc) {
  for (int i = 0; i < g_segments; ++i)
    if (pc >= g_lo[i] && pc < g_hi[i]) return true;
  return false;
}

void OnStep(int, siginfo_t*, void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  ++g_steps;
  if (!Inside(static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]))) return;
  if (g_inside++ == g_exit_at) exit(7);
  if (g_exit_at >= 0) return;
  const int saved = errno;
  int version = 0;
  g_get_version(&version);  // before NCCL's symbols are there, the shim's answer
  ++g_calls;
  errno = saved;
}

void SetStepping(int, siginfo_t*, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  if (g_step)
    uc->uc_mcontext.gregs[REG_EFL] |= kTrapFlag;
  else
    uc->uc_mcontext.gregs[REG_EFL] &= ~kTrapFlag;
}

void Stepping(bool on) {
  g_step = on;
  raise(SIGUSR2);
}

int FindSegments(dl_phdr_info* info, size_t, void* data) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(data);
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD) continue;
    const uintptr_t lo = info->dlpi_addr + p.p_vaddr;
    holds |= at >= lo && at < lo + p.p_memsz;
  }
  if (!holds) return 0;
  for (int i = 0; i < info->dlpi_phnum && g_segments < kMaxSegments; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD || (p.p_flags & PF_X) == 0) continue;
    g_lo[g_segments] = info->dlpi_addr + p.p_vaddr;
    g_hi[g_segments] = g_lo[g_segments] + p.p_memsz;
    ++g_segments;
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[2], "--exit-at") == 0) {
    g_exit_at = std::strtol(argv[3], nullptr, 10);
  } else if (argc != 2) {
    std::fprintf(stderr, "usage: dlopen_step_probe LIBNCCL [--exit-at I]\n");
    return 2;
  }
  g_get_version = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  if (g_get_version != nullptr)
    dl_iterate_phdr(FindSegments, reinterpret_cast<void*>(g_get_version));

  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_flags = SA_SIGINFO;
  sa.sa_sigaction = OnStep;
  sigaction(SIGTRAP, &sa, nullptr);
  sa.sa_sigaction = SetStepping;
  sigaction(SIGUSR2, &sa, nullptr);

  Stepping(true);
  void* nccl = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  Stepping(false);
  if (nccl == nullptr) {
    std::printf("dlopen_step_probe: %s\n", dlerror());
    return 3;
  }
  auto get_version = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  int version = 0;
  const int r = get_version != nullptr ? get_version(&version) : -1;
  std::printf("dlopen_step_probe: NCCL loaded, ncclGetVersion -> %d\n", r);
  std::fprintf(stderr, "stepped: %ld instructions, %ld in the hooks' module, %ld calls from the handler\n",
               static_cast<long>(g_steps), static_cast<long>(g_inside), static_cast<long>(g_calls));
  return 0;
}

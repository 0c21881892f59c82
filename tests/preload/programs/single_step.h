// Single-stepping a thread from inside itself, for the step probes
// (step_probe.cc, dlopen_step_probe.cc): x86's trap flag, set or cleared in
// the context a signal handler returns to, makes the kernel send the thread
// SIGTRAP after each instruction; the probe's SIGTRAP handler (which runs
// unstepped) then does what a program's handler might, at that instruction.
// Segments says which instructions are whose: a module's executable
// segments, found once before stepping.
//
// Everything a handler calls here is async-signal-safe. A trap while
// SIGTRAP is blocked kills the process (the kernel forces it): what is
// stepped must not block it.

#ifndef NCCLWATCH_TESTS_PRELOAD_PROGRAMS_SINGLE_STEP_H_
#define NCCLWATCH_TESTS_PRELOAD_PROGRAMS_SINGLE_STEP_H_

#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include <cstring>

namespace single_step {

constexpr greg_t kTrapFlag = 0x100;  // EFLAGS.TF

inline volatile sig_atomic_t g_step = 0;  // SIGUSR2 turns stepping on (1) or off (0)

inline void SetStepping(int, siginfo_t*, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  if (g_step)
    uc->uc_mcontext.gregs[REG_EFL] |= kTrapFlag;
  else
    uc->uc_mcontext.gregs[REG_EFL] &= ~kTrapFlag;
}

// `on_step` runs after each stepped instruction (SIGTRAP); Stepping(true)
// and Stepping(false) then start and stop stepping this thread.
inline void Install(void (*on_step)(int, siginfo_t*, void*)) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_flags = SA_SIGINFO;
  sa.sa_sigaction = on_step;
  sigaction(SIGTRAP, &sa, nullptr);
  sa.sa_sigaction = SetStepping;
  sigaction(SIGUSR2, &sa, nullptr);
}

inline void Stepping(bool on) {
  g_step = on;
  raise(SIGUSR2);  // returns to a context with the flag set or cleared
}

// The instruction a handler interrupted.
inline uintptr_t Pc(const void* context) {
  return static_cast<uintptr_t>(
      static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
}

// The executable segments of one module.
struct Segments {
  static constexpr int kMax = 8;
  uintptr_t lo[kMax], hi[kMax];
  int n = 0;

  bool Holds(uintptr_t pc) const {
    for (int i = 0; i < n; ++i)
      if (pc >= lo[i] && pc < hi[i]) return true;
    return false;
  }

  // Of the module mapped at `address` (false: none is).
  bool OfModuleAt(const void* address) {
    struct Search {
      Segments* segments;
      uintptr_t at;
    } search{this, reinterpret_cast<uintptr_t>(address)};
    return dl_iterate_phdr(
               [](dl_phdr_info* info, size_t, void* data) {
                 auto* s = static_cast<Search*>(data);
                 for (int i = 0; i < info->dlpi_phnum; ++i) {
                   const ElfW(Phdr)& p = info->dlpi_phdr[i];
                   const uintptr_t start = info->dlpi_addr + p.p_vaddr;
                   if (p.p_type == PT_LOAD && s->at >= start && s->at < start + p.p_memsz) {
                     s->segments->Take(info);
                     return 1;
                   }
                 }
                 return 0;
               },
               &search) != 0;
  }

  // Of the first module whose path holds `name` (false: none does).
  bool OfModuleNamed(const char* name) {
    struct Search {
      Segments* segments;
      const char* name;
    } search{this, name};
    return dl_iterate_phdr(
               [](dl_phdr_info* info, size_t, void* data) {
                 auto* s = static_cast<Search*>(data);
                 if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, s->name) == nullptr)
                   return 0;
                 s->segments->Take(info);
                 return 1;
               },
               &search) != 0;
  }

 private:
  void Take(const dl_phdr_info* info) {
    for (int i = 0; i < info->dlpi_phnum && n < kMax; ++i) {
      const ElfW(Phdr)& p = info->dlpi_phdr[i];
      if (p.p_type != PT_LOAD || (p.p_flags & PF_X) == 0) continue;
      lo[n] = info->dlpi_addr + p.p_vaddr;
      hi[n] = lo[n] + p.p_memsz;
      ++n;
    }
  }
};

}  // namespace single_step

#endif  // NCCLWATCH_TESTS_PRELOAD_PROGRAMS_SINGLE_STEP_H_

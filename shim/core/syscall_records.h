// What the libc and dl hooks record: the C library calls NCCL makes
// (sockets, /dev/shm files, their sizes and mappings, dlopen) and the verbs
// calls that failed, for init forensics.
//
// HOT PATH: everything here allocates nothing, takes no lock, makes no
// system call, is async-signal-safe and leaves errno as it found it. The
// libc hooks call WantSysCall() on every call the process makes through
// them, so it is a load and a short loop.

#ifndef NCCLWATCH_SHIM_CORE_SYSCALL_RECORDS_H_
#define NCCLWATCH_SHIM_CORE_SYSCALL_RECORDS_H_

#include <stddef.h>
#include <stdint.h>

#include "core/nccl_code.h"
#include "core/nccl_visibility.h"
#include "core/tracer.h"

namespace ncclwatch::shim {

struct SysCallEvent {
  uint32_t kind = 0;  // fields::sys_call::Kind
  int64_t ret = 0;
  int err = 0;  // errno (or the returned error) when it failed; 0 when it succeeded
  int fd = -1;
  const char* path = nullptr;
  int64_t size = -1;
  int64_t offset = -1;
  const void* addr = nullptr;  // struct sockaddr
  uint32_t addr_len = 0;
  int arg = 0;
  bool has_arg = false;
  const void* caller = nullptr;
};

// Whether a call deserves a record: it came from NCCL's code, or it failed
// on a thread that is inside an NCCL init or teardown call and came from
// code NCCL drives (the CUDA driver, verbs, what NCCL loaded:
// core/nccl_code.h). Not a failure of the program's own code on that
// thread, such as a signal handler of the program's that ran during the
// init: only what NCCL did is evidence about NCCL.
// Without a trace file (no NCCL call seen yet), a call from NCCL's code is
// only noted (core/nccl_visibility.h: ACTIVE_UNSEEN).
//
// With a trace file made because NCCL is loaded and no NCCL call seen yet
// (kLoaded), a call from NCCL's code is recorded, and noted as NCCL's code
// at work unseen; the rest of the process's socket calls are counted apart
// (core/rendezvous_sockets.h).
inline bool WantSysCall(const void* caller, bool failed) {
  const int s = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
  if (s == kTracing) {
    if (FromNccl(caller)) return true;
    return failed && ThisThread().in_call != 0 && FromNcclDriven(caller);
  }
  if (s == kLoaded) {
    if (!FromNccl(caller)) return false;
    __atomic_store_n(&g_nccl_code_active, 1, __ATOMIC_RELAXED);
    return true;
  }
  NoteUntracedCall(caller);
  return false;
}

// Writes the record: failures, and the first few hundred successful calls
// (NCCL's set-up), to the pinned region so that a long run does not
// overwrite them; later successes to the ring.
void RecordSysCall(const SysCallEvent& e);

// The path a descriptor was opened with, for the files NCCL opened under
// /dev/shm, so later calls on the descriptor (fallocate, mmap) can name it.
void NoteFdPath(int fd, const char* path);
const char* FdPath(int fd);  // nullptr when not known

// Whether `path` is a file in /dev/shm (where NCCL's shared segments live).
bool InDevShm(const char* path);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_SYSCALL_RECORDS_H_

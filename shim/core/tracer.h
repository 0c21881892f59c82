// The process-wide tracer: whether this process is traced, its trace file,
// and per-thread bookkeeping.
//
// HOT PATH: Tracing(), TracingNow() and ThisThread() allocate nothing, take
// no lock, make no system call and are async-signal-safe once the trace file
// exists. The one exception, stated where it happens: the first NCCL (or
// CUDA-IPC) call of the process creates the file there (EnsureTracing),
// which is not signal-safe.
//
// Only a process that uses NCCL gets a trace. The shim's constructor only
// arms the tracer (ArmTracer: NCCLWATCH=0 turns it off for good); the file
// is made by the first call into an NCCL entry point (Tracing() in every
// NCCL hook), by the CUDA-IPC hooks through EnsureTracing(), or when the
// shim finds NCCL code it cannot see (core/nccl_visibility.h). A launcher,
// a compiler or `true` under LD_PRELOAD leaves no file.
//
// Creating the file (InitTracer, once): reads NCCLWATCH_DIR (by default
// ${TMPDIR:-/tmp}/ncclwatch-<uid>), NCCLWATCH_RING_SIZE, NCCLWATCH_FILE_MODE;
// creates the trace file; writes the process identity, a time anchor and the
// module map. If the file cannot be made, the process runs untraced after
// one line on stderr. The signal, exit and fork hooks are installed by the
// shim's constructor (interpose/process_hooks.cc) whenever the shim is on,
// and record only once the file exists (TracingNow()).

#ifndef NCCLWATCH_SHIM_CORE_TRACER_H_
#define NCCLWATCH_SHIM_CORE_TRACER_H_

#include <stdint.h>

#include "ring/ring_writer.h"

namespace ncclwatch::shim {

// kUninitialized: the constructor has not run; kArmed: it has, no file yet;
// kInitializing: a thread is creating the file; kTracing: the file is open;
// kOff: NCCLWATCH=0, the file could not be made, or a forked child.
enum TracerState : int {
  kUninitialized = 0,
  kInitializing = 1,
  kTracing = 2,
  kOff = 3,
  kArmed = 4
};

extern int g_tracer_state;
extern RingWriter g_ring;
extern uint32_t g_pid;

// From the shim's constructor: kOff when NCCLWATCH=0, else kArmed.
void ArmTracer();

// Creates the trace file if it is not there yet (at most once per process);
// other threads asking meanwhile wait for it. Returns whether the process is
// traced. Not signal-safe when it creates the file.
//
// The CUDA-IPC hooks call this (through Tracing()) before recording, so a
// process whose first traced call is a CUDA-IPC one gets its file then.
bool EnsureTracing();
void InitTracer();  // EnsureTracing's work; call EnsureTracing()

// Whether the process is traced, creating the file on the first call: for
// the NCCL (and CUDA-IPC) hooks.
inline bool Tracing() {
  const int s = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
  if (__builtin_expect(s == kTracing, 1)) return true;
  if (s == kOff) return false;
  return EnsureTracing();  // not signal-safe: the process's first NCCL call
}

// Whether the file exists, without creating it: for what is recorded only
// when the process is traced anyway (signals, exit, libc calls).
inline bool TracingNow() { return __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) == kTracing; }

// In a forked child: a traced parent's file is not the child's to write, so
// the child stops; a child of an untraced parent stays armed and gets its own
// file if it calls NCCL.
void TracerForkChild();

struct ThreadState {
  uint32_t index;        // 1, 2, ... in order of first record
  uint32_t group_depth;  // ncclGroupStart nesting
  uint64_t group_id;     // the current group's id, 0 outside groups
  uint32_t in_call;      // the NCCL init/teardown call (ncclGetUniqueId included) running on this
                         // thread (trace.proto Call), 0 none
};

// Initial-exec TLS: reading it never allocates.
ThreadState& ThisThread();

// Gives this thread a fixed number instead of the next one (the watcher's
// threads, so that the program's threads keep theirs).
void SetThisThreadIndex(uint32_t index);

// A new group id, unique in the process.
uint64_t NextGroupId();

// Writes a TimeAnchor record.
void WriteTimeAnchor(Region region);

// Records the modules loaded since the last call: at start-up, around each
// NCCL init and teardown call, and when code not yet known to be NCCL's
// looks up a verbs function with dlvsym (it may be a plugin NCCL loaded:
// interpose/dl_hooks.cc). Not signal-safe: takes the loader's lock.
void RecordNewModules();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_TRACER_H_

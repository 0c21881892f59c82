// The process-wide tracer: whether this process is traced, its trace file,
// and per-thread bookkeeping.
//
// HOT PATH: Tracing() and ThisThread() allocate nothing, take no lock, make
// no system call and are async-signal-safe once the tracer is initialised.
// The one exception, stated where it happens: a call into the shim before
// its constructor ran (another library's constructor calling NCCL) runs
// InitTracer() there, which is not signal-safe.
//
// Start-up (InitTracer, once): reads NCCLWATCH (0: pure pass-through),
// NCCLWATCH_DIR (by default ${TMPDIR:-/tmp}/ncclwatch-<uid>),
// NCCLWATCH_RING_SIZE, NCCLWATCH_FILE_MODE; creates the trace file; writes
// the process identity, a time anchor and the module map. If the file cannot
// be made, the process runs untraced after one line on stderr. The signal,
// exit and fork hooks are installed afterwards by the shim's constructor
// (interpose/process_hooks.cc), and only when tracing.

#ifndef NCCLWATCH_SHIM_CORE_TRACER_H_
#define NCCLWATCH_SHIM_CORE_TRACER_H_

#include <stdint.h>

#include "ring/ring_writer.h"

namespace ncclwatch::shim {

enum TracerState : int { kUninitialized = 0, kInitializing = 1, kTracing = 2, kOff = 3 };

extern int g_tracer_state;
extern RingWriter g_ring;
extern uint32_t g_pid;

void InitTracer();

inline bool Tracing() {
  int s = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
  if (__builtin_expect(s == kTracing, 1)) return true;
  if (s == kUninitialized) {
    InitTracer();  // not signal-safe: only before the constructor ran
    s = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
  }
  return s == kTracing;
}

// Stops tracing (in a forked child, which must not write its parent's file).
void StopTracing();

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

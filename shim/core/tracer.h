// The process-wide tracer: whether this process is traced, its trace file,
// and per-thread bookkeeping.
//
// HOT PATH: Tracing(), TracingNow() and ThisThread() allocate nothing, take
// no lock, make no system call and are async-signal-safe once the trace file
// exists. The one exception, stated where it happens: the first NCCL (or
// CUDA-IPC) call of the process creates the file there (EnsureTracing),
// which is not signal-safe. While one thread creates the file:
//   - a signal handler that interrupts it on that thread and calls NCCL is
//     forwarded untraced (waiting would wait for the code it interrupted);
//   - other threads' calls wait for the file (sched_yield), so every
//     communicator's creation is seen. A handler on another thread waits
//     too: it could wait forever only if it interrupted its thread inside
//     the dynamic loader (dlopen), whose lock the file's creation takes to
//     list the modules, and NCCL's first call races it.
// The file is made on the shim's own stack (core/startup_stack.h), so a
// first call from a thread with a small stack works as without the shim.
//
// Only a process with NCCL in it gets a trace. The shim's constructor only
// arms the tracer (ArmTracer: NCCLWATCH=0 turns it off for good); the file
// is made when the shim finds NCCL loaded in the process (linked with the
// program, or dlopen'ed: core/nccl_visibility.h looks at start-up, before
// each dlopen, at each dlsym of an NCCL name and at exit: NoteNcclLoaded),
// by the first call into an NCCL entry point (Tracing() in every NCCL hook),
// by the CUDA-IPC hooks through EnsureTracing(), or when the shim finds NCCL
// code it cannot see. A launcher, a compiler or `true` under LD_PRELOAD
// leaves no file; a Python that imports a framework built with NCCL does.
//
// From NCCL's load to the process's first NCCL call (kLoaded) the file holds
// what comes before NCCL: the process, an inventory, heartbeats, and the
// TCP sockets of its rendezvous (core/rendezvous_sockets.h). A forked child
// of a process that had NCCL loaded is traced only from its own first NCCL
// call (DataLoader workers and the like fork by the dozen, and have no
// rendezvous of their own).
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
// kInitializing: a thread is creating the file; kTracing: the file is open
// and the process has made an NCCL call; kLoaded: the file is open because
// NCCL is loaded, and no NCCL call was made yet; kOff: NCCLWATCH=0, or the
// file could not be made.
enum TracerState : int {
  kUninitialized = 0,
  kInitializing = 1,
  kTracing = 2,
  kOff = 3,
  kArmed = 4,
  kLoaded = 5
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
void InitTracer();  // EnsureTracing's work for a first NCCL call; call EnsureTracing()

// Why a file is made (ProcessStart.traced_from).
enum class TracedFrom : uint32_t { kFirstCall = 0, kNcclLoaded = 1, kNotSeen = 2 };

// Creates the trace file if there is none, without counting an NCCL call
// (kLoaded): for what is written about a process before its first NCCL
// call. Returns whether the file exists. Not signal-safe when it creates it.
bool EnsureTraceFile(TracedFrom why);

// From the module scans (core/nccl_visibility.cc), when NCCL is found in the
// process: makes the file (kLoaded), unless the process has one already, or
// inherited NCCL from a parent it was forked from. Returns whether it made
// it (the caller then writes the inventory and starts the heartbeat). Not
// signal-safe.
bool NoteNcclLoaded();

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
inline bool TracingNow() {
  const int s = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
  return s == kTracing || s == kLoaded;
}

// Whether the process has made an NCCL call the shim saw.
inline bool NcclCallsSeen() {
  return __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) == kTracing;
}

// In a forked child (the fork handler; async-signal-safe): a traced
// parent's file is not the child's to write. The child drops it (unmaps it)
// and is armed again, as a process that has made no NCCL call yet: if it
// calls NCCL (a rank forked after its parent's first NCCL call: Python's
// multiprocessing with fork), it gets a trace file of its own, under its
// own pid, with everything a process's file starts with. A child that never
// calls NCCL leaves no file, as any process.
void TracerForkChild();

// Which trace file of this process is being written: 1 for the first, one
// more for each forked child's own (TracerForkChild). What is written once
// per file (the inventory, the version, the process's end) is written once
// per generation: FirstForThisFile.
extern uint32_t g_trace_generation;
inline bool FirstForThisFile(uint32_t* written) {
  const uint32_t generation = __atomic_load_n(&g_trace_generation, __ATOMIC_ACQUIRE);
  return __atomic_exchange_n(written, generation, __ATOMIC_ACQ_REL) != generation;
}

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

// The trace file starts with a small ring (64 KiB: a process that only
// asks NCCL's version or makes ids writes little); the first communicator
// the process makes grows it to NCCLWATCH_RING_SIZE (RingWriter::GrowRing).
// One line on stderr if it cannot (a full disk): the ring stays small. Not
// signal-safe: from the communicator's init call.
void GrowTraceRing();

// The same for communicators the shim did not see made (CommRegistry::
// FindOrAdopt, on the hot path, which may not grow it): grows the ring once
// any was adopted. Called by the heartbeat thread (core/watcher.h), which
// looks every 50 ms while the ring is small (TraceRingIsSmall), so a
// process whose communicators were all adopted keeps at most 50 ms of
// records in the small ring before it grows.
void GrowTraceRingForAdopted();
bool TraceRingIsSmall();

// Records the modules loaded since the last call: at start-up, around each
// NCCL init and teardown call, and when code not yet known to be NCCL's
// looks up a verbs function with dlvsym (it may be a plugin NCCL loaded:
// interpose/dl_hooks.cc). Not signal-safe: takes the loader's lock.
void RecordNewModules();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_TRACER_H_

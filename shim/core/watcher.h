// The watcher: two threads that follow the process's communicators, started
// with the first communicator whose completion is tracked (core/completion.h),
// again in a forked child that makes one. Neither touches the program's
// state; both block every signal, so the program's signals are delivered to
// its own threads as before.
//
//   ncclwatch-poll   every 20 ms, per communicator: queries its completion
//                    markers in order (Progress records; a CudaError record
//                    when the driver reports a sticky error), and asks NCCL
//                    for its asynchronous error (ncclCommGetAsyncError, which
//                    NCCL allows from any thread, as PyTorch's watchdog does),
//                    recording a new one with NCCL's own text.
//   ncclwatch-beat   every NCCLWATCH_HEARTBEAT_MS (default 1000) writes a
//                    Heartbeat, then checks for stalls. It calls neither CUDA
//                    nor NCCL, so it keeps beating when the poller is stuck
//                    in the driver: a trace whose heartbeats stop shows when
//                    its process stopped living (killed or frozen).
//
// A stall: a communicator has work pending and nothing of it completed for
// NCCLWATCH_STALL seconds (default 300; 0 turns the check off). The watcher
// writes a Stall record and one line on stderr, once per stuck operation,
// and does nothing else to the job. Why 300 s: PyTorch's NCCL watchdog
// aborts after 600 s by default (and other launchers' timeouts are longer),
// so the line comes while the processes can still be inspected; and it is
// well above the pauses of a healthy job that a collective waits through
// (a rank saving a checkpoint or evaluating while the others wait in the
// next collective: minutes, not many).
//
// NCCLWATCH_COMPLETION=0 turns completion tracking (and so the poller and
// the stall check) off; heartbeats still run.
//
// Not on the hot path: the threads are the shim's own, and StartWatcher runs
// when a communicator is made.

#ifndef NCCLWATCH_SHIM_CORE_WATCHER_H_
#define NCCLWATCH_SHIM_CORE_WATCHER_H_

namespace ncclwatch::shim {

// Starts the two threads, once per process.
void StartWatcher();

// Starts the heartbeat thread alone, once per process (StartWatcher starts
// it too): for a process traced from NCCL's load, before any communicator
// (core/nccl_visibility.cc, NoteNcclLoaded). Its stall check finds nothing
// to check until a communicator is tracked. Each beat also writes the
// rendezvous counts that changed (core/rendezvous_sockets.h).
void StartHeartbeat();

// NCCLWATCH_COMPLETION is not "0".
bool CompletionTrackingEnabled();

// From the exit() hook: one last round of queries (without blocking), so a
// trace of a clean exit says how much of its work had completed.
void FinalPoll();

// From a fatal signal's handler before the process dies, and from _exit,
// _Exit, quick_exit and the exec family, which a handler may call
// (async-signal-safe: atomics, a futex wake, nanosleep): asks the
// poller for one more round and waits for it, at most a second, so a
// sticky CUDA error the process met just before it ended (an abort after a
// failed CUDA call, as PyTorch's watchdog does) reaches the trace. Only the
// poller calls CUDA: a signal that interrupted a thread inside the driver
// cannot deadlock here; at worst it waits out the second.
void FinalPollFromSignal();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_WATCHER_H_

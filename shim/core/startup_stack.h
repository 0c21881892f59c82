// RunOnStartupStack: runs the shim's own start-up work (creating the trace
// file, the inventory, module scans, completion tracking) on a stack of the
// shim's, not on the calling thread's.
//
// Why: that work keeps buffers on the stack (a whole record of up to 8 KiB,
// paths, the inventory's file reads: ~30 KiB at its deepest), and it runs on
// whichever thread makes the process's first NCCL call. A program may make
// that call from a thread with a small stack (16 KiB is PTHREAD_STACK_MIN,
// and glibc carves static TLS out of it), which the call alone fits in
// without the shim; the shim's buffers on it would overflow it.
//
// The stack: 1 MiB of address space with a guard page below, mapped the
// first time and kept (one spare, taken and given back with an atomic
// exchange; a thread that finds it taken maps its own and unmaps it after).
// Only the pages touched are memory. The switch is glibc's swapcontext, which
// keeps the thread (its TLS, its thread number in the trace) and its signal
// mask; a signal that arrives meanwhile runs its handler on this stack
// (unless the program's handler asked for its alternate stack).
//
// Not on the hot path (mmap, sigprocmask), never from a signal handler.
// Nested calls (start-up work that calls more start-up work) run in place.
// If no stack can be mapped, fn runs on the caller's stack.

#ifndef NCCLWATCH_SHIM_CORE_STARTUP_STACK_H_
#define NCCLWATCH_SHIM_CORE_STARTUP_STACK_H_

namespace ncclwatch::shim {

void RunOnStartupStack(void (*fn)(void*), void* arg);

// The same for a callable: RunOnStartupStack([&] { ... }).
template <typename Fn>
void RunOnStartupStack(Fn&& fn) {
  RunOnStartupStack([](void* p) { (*static_cast<Fn*>(p))(); }, static_cast<void*>(&fn));
}

// Whether this thread is on the start-up stack now.
bool OnStartupStack();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_STARTUP_STACK_H_

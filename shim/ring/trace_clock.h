// The shim's clock for record timestamps.
//
// HOT PATH: TraceNow() allocates nothing, takes no lock, makes no system call
// and is async-signal-safe.
//
// On x86-64 with an invariant TSC (CPUID 8000_0007h EDX bit 8) the clock is
// the TSC itself (about 12 ns a read in a KVM guest, against 31 ns for a vDSO
// clock_gettime there); elsewhere it is CLOCK_MONOTONIC. Which one a trace
// uses is in its header, and TimeAnchor records pair the trace clock with
// CLOCK_MONOTONIC and CLOCK_REALTIME so the decoder can convert.

#ifndef NCCLWATCH_SHIM_RING_TRACE_CLOCK_H_
#define NCCLWATCH_SHIM_RING_TRACE_CLOCK_H_

#include <stdint.h>
#include <time.h>

#include "ncclwatch/ring_format.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace ncclwatch::shim {

// Chosen once at start-up (ChooseTraceClock), read on every record.
extern uint32_t g_trace_clock;

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t TraceNow() {
#if defined(__x86_64__)
  if (g_trace_clock == NCCLWATCH_CLOCK_TSC) return __rdtsc();
#endif
  return MonotonicNs();
}

// NCCLWATCH_CLOCK_TSC where the TSC is invariant, else MONOTONIC_NS.
// NCCLWATCH_CLOCK=monotonic forces the latter.
uint32_t ChooseTraceClock();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_RING_TRACE_CLOCK_H_

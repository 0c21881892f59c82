// Start-up only: chooses the trace clock.

#include "ring/trace_clock.h"

#include <stdlib.h>
#include <string.h>

namespace ncclwatch::shim {

uint32_t g_trace_clock = NCCLWATCH_CLOCK_MONOTONIC_NS;

uint32_t ChooseTraceClock() {
  const char* forced = getenv("NCCLWATCH_CLOCK");
  if (forced != nullptr && strcmp(forced, "monotonic") == 0) return NCCLWATCH_CLOCK_MONOTONIC_NS;
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) && eax >= 0x80000007u &&
      __get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) && (edx & (1u << 8))) {
    return NCCLWATCH_CLOCK_TSC;  // invariant: constant rate, runs in every C-state
  }
#endif
  return NCCLWATCH_CLOCK_MONOTONIC_NS;
}

}  // namespace ncclwatch::shim

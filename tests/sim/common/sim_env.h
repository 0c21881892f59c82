// Reading the simulator's environment knobs (NCCLSIM_*, and the NCCL_* and
// CUDA_* variables the simulated libraries honour like the real ones).
//
// A value that cannot be used is reported once, in one line on stderr, and the
// default is used instead: a simulated job never crashes on a bad knob.

#ifndef NCCLWATCH_TESTS_SIM_COMMON_SIM_ENV_H_
#define NCCLWATCH_TESTS_SIM_COMMON_SIM_ENV_H_

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ncclsim {

// The variable's value, or nullptr when unset.
inline const char* EnvRaw(const char* name) { return std::getenv(name); }

// An integer knob within [lo, hi]; `fallback` when unset, empty or unusable.
inline int64_t EnvInt(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return fallback;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
    std::fprintf(stderr, "ncclsim: %s='%s' is not an integer in [%lld, %lld]; using %lld\n", name,
                 s, static_cast<long long>(lo), static_cast<long long>(hi),
                 static_cast<long long>(fallback));
    return fallback;
  }
  return v;
}

// Parses "2.27.3" or a version code ("22703") into NCCL's version code.
// Returns false when the text is neither.
inline bool ParseNcclVersion(const char* s, int* code) {
  int major = 0, minor = 0, patch = 0;
  char tail = 0;
  if (std::sscanf(s, "%d.%d.%d%c", &major, &minor, &patch, &tail) == 3) {
    if (major < 0 || minor < 0 || patch < 0 || minor > 99 || patch > 99) return false;
    // NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z after.
    *code = (major <= 2 && minor <= 8) ? major * 1000 + minor * 100 + patch
                                       : major * 10000 + minor * 100 + patch;
    return true;
  }
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end != s && *end == '\0' && v >= 1000 && v < 1000000) {
    *code = static_cast<int>(v);
    return true;
  }
  return false;
}

}  // namespace ncclsim

#endif  // NCCLWATCH_TESTS_SIM_COMMON_SIM_ENV_H_

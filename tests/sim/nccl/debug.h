// NCCL_DEBUG logging for the simulated NCCL, in the real library's format,
// so that tools which read NCCL logs (ncclwatch explain) can be tested on
// what the simulator prints:
//
//   host:pid:tid [dev] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>
//   \n[2026-12-02 16:34:13] host:pid:tid [dev] bootstrap.cc:114 NCCL WARN Bootstrap : no socket
//   interface found
//
// Honoured: NCCL_DEBUG (VERSION|WARN|INFO|TRACE), NCCL_DEBUG_SUBSYS (with ^),
// NCCL_DEBUG_FILE (%h host, %p pid), NCCL_DEBUG_TIMESTAMP_LEVELS. Every WARN is
// also kept as the text ncclGetLastError returns, as in NCCL.
//
// Thread-safety: Log() may be called from any thread; lines never interleave.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_DEBUG_H_
#define NCCLWATCH_TESTS_SIM_NCCL_DEBUG_H_

#include <nccl.h>

#include <cstdint>

namespace ncclsim::nccl {

enum LogLevel {
  kLogNone = 0,
  kLogVersion = 1,
  kLogWarn = 2,
  kLogInfo = 3,
  kLogAbort = 4,
  kLogTrace = 5
};

// NCCL's debug subsystems (NCCL_DEBUG_SUBSYS).
enum Subsys : uint64_t {
  kInit = 0x1,
  kColl = 0x2,
  kP2p = 0x4,
  kShm = 0x8,
  kNet = 0x10,
  kGraph = 0x20,
  kTuning = 0x40,
  kEnv = 0x80,
  kAlloc = 0x100,
  kCall = 0x200,
  kProxy = 0x400,
  kNvls = 0x800,
  kBootstrap = 0x1000,
  kReg = 0x2000,
  kProfile = 0x4000,
  kRas = 0x8000,
  kAll = ~0ull,
};

void Log(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// The level NCCL_DEBUG selected (kLogNone when unset).
int DebugLevel();

// The text of the last WARN, what ncclGetLastError returns.
const char* LastError();

// The hostname as NCCL prints it (cut at the first '.').
const char* HostName();

}  // namespace ncclsim::nccl

#define SIM_FILE_NAME \
  (__builtin_strrchr(__FILE__, '/') ? __builtin_strrchr(__FILE__, '/') + 1 : __FILE__)
#define WARN(...)                                                                                 \
  ::ncclsim::nccl::Log(::ncclsim::nccl::kLogWarn, ::ncclsim::nccl::kAll, SIM_FILE_NAME, __LINE__, \
                       __VA_ARGS__)
#define INFO(flags, ...) \
  ::ncclsim::nccl::Log(::ncclsim::nccl::kLogInfo, (flags), SIM_FILE_NAME, __LINE__, __VA_ARGS__)
#define VERSION_LOG(...)                                                                   \
  ::ncclsim::nccl::Log(::ncclsim::nccl::kLogVersion, ::ncclsim::nccl::kAll, SIM_FILE_NAME, \
                       __LINE__, __VA_ARGS__)

// Propagates a failure with NCCL's "file:line -> code" INFO trail.
#define NCCLCHECK(call)                                                             \
  do {                                                                              \
    ncclResult_t sim_res = (call);                                                  \
    if (sim_res != ncclSuccess && sim_res != ncclInProgress) {                      \
      INFO(::ncclsim::nccl::kAll, "%s:%d -> %d", SIM_FILE_NAME, __LINE__, sim_res); \
      return sim_res;                                                               \
    }                                                                               \
  } while (0)

#endif  // NCCLWATCH_TESTS_SIM_NCCL_DEBUG_H_

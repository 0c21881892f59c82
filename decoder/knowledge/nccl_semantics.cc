// NCCL's semantics, as the analyses need them: see nccl_semantics.h.

#include "knowledge/nccl_semantics.h"

#include <csignal>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {

namespace f = ::ncclwatch::fields;

std::string CallName(uint32_t call) {
  if (const char* name = f::CallName(call)) return name;
  return absl::StrCat("call#", call);
}

std::string DatatypeName(int32_t d) {
  static const char* kNames[] = {"int8",    "uint8",    "int32",      "uint32",
                                 "int64",   "uint64",   "float16",    "float32",
                                 "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  if (d >= 0 && d < 12) return kNames[d];
  return absl::StrCat("datatype#", d);
}

size_t DatatypeBytes(int32_t d) {
  static const size_t kBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return (d >= 0 && d < 12) ? kBytes[d] : 0;
}

std::string RedopName(int32_t r) {
  static const char* kNames[] = {"sum", "prod", "max", "min", "avg"};
  if (r >= 0 && r < 5) return kNames[r];
  return absl::StrCat("premulsum#", r);
}

std::string ResultName(int32_t r) {
  static const char* kNames[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
                                 "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
                                 "ncclRemoteError",   "ncclInProgress"};
  if (r >= 0 && r < 8) return kNames[r];
  if (r == 2147483647) return "pending";
  return absl::StrCat("result#", r);
}

std::string ErrnoName(int32_t err) {
  const char* name = err > 0 ? strerrorname_np(err) : nullptr;
  return name ? name : absl::StrCat("errno ", err);
}

std::string ErrnoText(int32_t err) {
  const char* text = err > 0 ? strerrordesc_np(err) : nullptr;
  return text ? text : absl::StrCat("errno ", err);
}

std::string SysCallName(uint32_t kind) {
  switch (kind) {
    case f::sys_call::kSocket:
      return "socket";
    case f::sys_call::kBind:
      return "bind";
    case f::sys_call::kListen:
      return "listen";
    case f::sys_call::kConnect:
      return "connect";
    case f::sys_call::kAccept:
      return "accept";
    case f::sys_call::kGetifaddrs:
      return "getifaddrs";
    case f::sys_call::kSetsockopt:
      return "setsockopt";
    case f::sys_call::kShmOpen:
      return "shm_open";
    case f::sys_call::kOpen:
      return "open";
    case f::sys_call::kMkstemp:
      return "mkstemp";
    case f::sys_call::kFallocate:
      return "fallocate";
    case f::sys_call::kPosixFallocate:
      return "posix_fallocate";
    case f::sys_call::kFtruncate:
      return "ftruncate";
    case f::sys_call::kMmap:
      return "mmap";
    case f::sys_call::kUnlink:
      return "unlink";
    case f::sys_call::kDlopen:
      return "dlopen";
    case f::sys_call::kVerbs:
      return "verbs";
    default:
      return absl::StrCat("syscall#", kind);
  }
}

std::string SignalName(int32_t s) {
  const char* abbrev = sigabbrev_np(s);
  return abbrev ? absl::StrCat("SIG", abbrev) : absl::StrCat("signal ", s);
}

// NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, and
// major*1000 + minor*100 + patch before.
std::string NcclVersionString(int32_t code) {
  if (code <= 0) return "unknown";
  if (code >= 10000) return absl::StrFormat("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  return absl::StrFormat("%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}

std::string CommName(uint64_t comm) { return absl::StrFormat("%016x", comm); }

}  // namespace ncclwatch::decoder

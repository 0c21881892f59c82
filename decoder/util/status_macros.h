// The two status macros Debian's abseil (20220623) lacks.
//
//   NCCLWATCH_RETURN_IF_ERROR(DoThing());
//   NCCLWATCH_ASSIGN_OR_RETURN(TraceFile file, TraceFile::Open(path));

#ifndef NCCLWATCH_DECODER_UTIL_STATUS_MACROS_H_
#define NCCLWATCH_DECODER_UTIL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define NCCLWATCH_RETURN_IF_ERROR(expr)                  \
  do {                                                   \
    ::absl::Status ncclwatch_status = (expr);            \
    if (!ncclwatch_status.ok()) return ncclwatch_status; \
  } while (0)

#define NCCLWATCH_STATUS_CONCAT_INNER(a, b) a##b
#define NCCLWATCH_STATUS_CONCAT(a, b) NCCLWATCH_STATUS_CONCAT_INNER(a, b)

#define NCCLWATCH_ASSIGN_OR_RETURN(lhs, expr)                               \
  auto NCCLWATCH_STATUS_CONCAT(ncclwatch_statusor_, __LINE__) = (expr);     \
  if (!NCCLWATCH_STATUS_CONCAT(ncclwatch_statusor_, __LINE__).ok())         \
    return NCCLWATCH_STATUS_CONCAT(ncclwatch_statusor_, __LINE__).status(); \
  lhs = std::move(NCCLWATCH_STATUS_CONCAT(ncclwatch_statusor_, __LINE__)).value()

#endif  // NCCLWATCH_DECODER_UTIL_STATUS_MACROS_H_

// NCCL's semantics, as the analyses need them: the names of its calls,
// datatypes, reduction operators and result codes, which calls NCCL matches
// with each other, which are rooted or reduce, and the names of the signals,
// errnos and libc calls a trace records.
//
// These are facts about NCCL and the system, not prose: the analyses compare
// and group by them, and the reports (decoder/report/) build sentences from
// them. Pure formatting of ranks, sizes and communicators for a reader lives
// in report/names.h.
//
// Thread-safety: every function is pure and thread-safe.

#ifndef NCCLWATCH_DECODER_KNOWLEDGE_NCCL_SEMANTICS_H_
#define NCCLWATCH_DECODER_KNOWLEDGE_NCCL_SEMANTICS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {

std::string CallName(uint32_t call);          // "AllReduce", "ncclCommSplit", ...
std::string DatatypeName(int32_t datatype);   // "float32"
size_t DatatypeBytes(int32_t datatype);       // 0 when unknown
std::string RedopName(int32_t redop);         // "sum"; "premulsum#5" for user ops
std::string ResultName(int32_t result);       // "ncclSuccess", "pending"
std::string SignalName(int32_t signo);        // "SIGSEGV"
std::string ErrnoName(int32_t err);           // "ECONNREFUSED"; "errno 999" when unknown
std::string ErrnoText(int32_t err);           // "Connection refused"
std::string SysCallName(uint32_t kind);       // "connect", "posix_fallocate"
std::string NcclVersionString(int32_t code);  // 22809 -> "2.28.9"; 2804 -> "2.8.4"
std::string CommName(uint64_t comm);          // a communicator's identity: 16 hex digits

// Calls NCCL matches with each other: ncclBcast is a Broadcast, and a
// collective with a per-call config (ncclAllReduceConfig, 2.31) is the
// collective without one. (Inline: the collective alignment asks for every
// collective.)
inline uint32_t MatchingCall(uint32_t call) {
  namespace f = ::ncclwatch::fields;
  if (__builtin_expect(call < f::kAllReduceConfig, 1))
    return call == f::kBcast ? static_cast<uint32_t>(f::kBroadcast) : call;
  switch (call) {
    case f::kAllReduceConfig:
      return f::kAllReduce;
    case f::kBroadcastConfig:
      return f::kBroadcast;
    case f::kReduceConfig:
      return f::kReduce;
    case f::kAllGatherConfig:
      return f::kAllGather;
    case f::kReduceScatterConfig:
      return f::kReduceScatter;
    case f::kAllToAllConfig:
      return f::kAllToAll;
    case f::kGatherConfig:
      return f::kGather;
    case f::kScatterConfig:
      return f::kScatter;
    default:
      return call;
  }
}
inline bool IsRootedCall(uint32_t call) {
  namespace f = ::ncclwatch::fields;
  call = MatchingCall(call);
  return call == f::kBroadcast || call == f::kReduce || call == f::kGather || call == f::kScatter;
}
inline bool IsReductionCall(uint32_t call) {
  namespace f = ::ncclwatch::fields;
  call = MatchingCall(call);
  return call == f::kAllReduce || call == f::kReduce || call == f::kReduceScatter;
}
// A collective with a per-call config (trace.proto CollConfig).
inline bool IsConfigCall(uint32_t call) {
  namespace f = ::ncclwatch::fields;
  return call >= f::kAllReduceConfig && call <= f::kScatterConfig;
}
// ncclPutSignal, ncclSignal, ncclWaitSignal (trace.proto OneSided).
inline bool IsOneSidedCall(uint32_t call) {
  namespace f = ::ncclwatch::fields;
  return call == f::kPutSignal || call == f::kSignal || call == f::kWaitSignal;
}

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_KNOWLEDGE_NCCL_SEMANTICS_H_

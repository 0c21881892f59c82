// How ncclwatch names what it reports: NCCL calls, datatypes, reduction
// operators, result codes, signals, communicators and sets of ranks.

#ifndef NCCLWATCH_DECODER_REPORT_NAMES_H_
#define NCCLWATCH_DECODER_REPORT_NAMES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ncclwatch::decoder {

std::string CallName(uint32_t call);        // "AllReduce", "ncclCommSplit", ...
std::string DatatypeName(int32_t datatype); // "float32"
size_t DatatypeBytes(int32_t datatype);     // 0 when unknown
std::string RedopName(int32_t redop);       // "sum"; "premulsum#5" for user ops
std::string ResultName(int32_t result);     // "ncclSuccess", "pending"
std::string SignalName(int32_t signo);      // "SIGSEGV"
std::string ErrnoName(int32_t err);         // "ECONNREFUSED"; "errno 999" when unknown
std::string ErrnoText(int32_t err);         // "Connection refused"
std::string SysCallName(uint32_t kind);     // "connect", "posix_fallocate"
std::string Bytes(uint64_t n);              // "64 MiB", "9.2 MiB", "512 B"
std::string NcclVersionString(int32_t code); // 22809 -> "2.28.9"; 2804 -> "2.8.4"
std::string CommName(uint64_t comm);        // 16 hex digits
std::string CommShort(uint64_t comm);       // the first 6 of them
std::string Hex(uint64_t v);                // 0x...
// "0-4,6-7"
std::string RankList(std::vector<int> ranks);
// "rank 3", "ranks 1-3,7": unknown ranks (-1) left out, repeats counted once;
// `none` when no rank is left.
std::string RanksNoun(std::vector<int> ranks, const std::string& none = "no rank");
// Calls NCCL matches with each other: ncclBcast is a Broadcast.
uint32_t MatchingCall(uint32_t call);
bool IsRootedCall(uint32_t call);
bool IsReductionCall(uint32_t call);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_NAMES_H_

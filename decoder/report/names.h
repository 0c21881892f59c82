// How the reports name things for a reader: sizes, communicators and sets of
// ranks. NCCL's own names (calls, datatypes, signals, ...) are facts the
// analyses use too: they live in knowledge/nccl_semantics.h, included here for
// the reports' convenience (report/ may include analysis/, never the reverse).

#ifndef NCCLWATCH_DECODER_REPORT_NAMES_H_
#define NCCLWATCH_DECODER_REPORT_NAMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "findings/collective_signature.h"
#include "knowledge/nccl_semantics.h"
#include "model/last_call.h"

namespace ncclwatch::decoder {

std::string Bytes(uint64_t n);         // "64 MiB", "9.2 MiB", "512 B"
std::string CommShort(uint64_t comm);  // the first 6 hex digits of CommName
std::string Hex(uint64_t v);           // 0x...
// "0-4,6-7"
std::string RankList(std::vector<int> ranks);
// "rank 3", "ranks 1-3,7": unknown ranks (-1) left out, repeats counted once;
// `none` when no rank is left.
std::string RanksNoun(std::vector<int> ranks, const std::string& none = "no rank");

// A call in words: "AllReduce #3 of 3fa9c1", "Send #0 to 5 of 3fa9c1",
// "ncclCommDestroy of 3fa9c1".
std::string DescribeCall(const LastCall& call);

// A collective's signature in words: "AllReduce(count=1024, float32, sum)".
std::string DescribeCollective(const CollectiveSignature& signature);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_NAMES_H_

// CollectiveSignature: what NCCL needs every rank to agree on for one
// collective: the operation (ncclBcast is a Broadcast), count, datatype,
// reduction operator and root. report/names.h words it
// ("AllReduce(count=1024, float32, sum)").

#ifndef NCCLWATCH_DECODER_ANALYSIS_COLLECTIVE_SIGNATURE_H_
#define NCCLWATCH_DECODER_ANALYSIS_COLLECTIVE_SIGNATURE_H_

#include <cstdint>
#include <string>

#include "model/events.h"

namespace ncclwatch::decoder {

struct CollectiveSignature {
  uint32_t call = 0;
  uint64_t count = 0;
  int32_t datatype = 0;
  int32_t redop = -1;
  int32_t root = -1;

  static CollectiveSignature Of(const CollectiveEvent& e);
  bool operator==(const CollectiveSignature& o) const;
  bool operator!=(const CollectiveSignature& o) const { return !(*this == o); }
  // The first field two signatures differ in: "op", "count", "datatype", "redop", "root".
  static std::string DifferingField(const CollectiveSignature& a, const CollectiveSignature& b);
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_COLLECTIVE_SIGNATURE_H_

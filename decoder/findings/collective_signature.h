// CollectiveSignature: what NCCL needs every rank to agree on for one
// collective: the operation (ncclBcast is a Broadcast), count, datatype,
// reduction operator and root. report/names.h words it
// ("AllReduce(count=1024, float32, sum)").

#ifndef NCCLWATCH_DECODER_FINDINGS_COLLECTIVE_SIGNATURE_H_
#define NCCLWATCH_DECODER_FINDINGS_COLLECTIVE_SIGNATURE_H_

#include <cstdint>
#include <string>

#include "findings/mismatch_field.h"
#include "knowledge/nccl_semantics.h"
#include "model/events.h"

namespace ncclwatch::decoder {

struct CollectiveSignature {
  CollectiveSignature() = default;
  CollectiveSignature(uint32_t call_, uint64_t count_, int32_t datatype_, int32_t redop_,
                      int32_t root_)
      : count(count_), call(call_), datatype(datatype_), redop(redop_), root(root_) {}

  // The count first: 24 bytes, no padding (the collective alignment keeps
  // one for every collective of a job; the constructor takes the fields in
  // the order they are read out).
  uint64_t count = 0;
  uint32_t call = 0;
  int32_t datatype = 0;
  int32_t redop = -1;
  int32_t root = -1;

  // (Inline: the collective alignment makes and compares one per collective.)
  static CollectiveSignature Of(const CollectiveEvent& e) {
    CollectiveSignature s;
    s.call = MatchingCall(e.call);
    s.count = e.count;
    s.datatype = e.datatype;
    s.redop = IsReductionCall(e.call) ? e.redop : -1;
    s.root = IsRootedCall(e.call) ? e.root : -1;
    return s;
  }
  bool operator==(const CollectiveSignature& o) const {
    return call == o.call && count == o.count && datatype == o.datatype && redop == o.redop &&
           root == o.root;
  }
  bool operator!=(const CollectiveSignature& o) const { return !(*this == o); }
  // The first field two signatures differ in (op, count, datatype, redop,
  // root), kNone when they are equal.
  static MismatchField DifferingField(const CollectiveSignature& a, const CollectiveSignature& b);
};
static_assert(sizeof(CollectiveSignature) == 24, "a collective's signature has padding again");

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_FINDINGS_COLLECTIVE_SIGNATURE_H_

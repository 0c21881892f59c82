// MismatchField: what ranks disagree on in a mismatch finding, as a fact
// (collective_mismatch: the first field of the collective's signature that
// differs; p2p_mismatch: the datatype or count of a send and its receive, or
// their order). report/finding_text.h names it for the JSON ("op", "count",
// ...) and words its hint.

#ifndef NCCLWATCH_DECODER_FINDINGS_MISMATCH_FIELD_H_
#define NCCLWATCH_DECODER_FINDINGS_MISMATCH_FIELD_H_

#include <cstdint>

namespace ncclwatch::decoder {

enum class MismatchField : uint8_t {
  kNone,  // no field (a finding of another kind, or none differs)
  kOp,
  kCount,
  kDatatype,
  kRedop,
  kRoot,
  kOrder,  // p2p_mismatch: sends and receives matched in another order
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_FINDINGS_MISMATCH_FIELD_H_

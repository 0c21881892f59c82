#include "findings/collective_signature.h"

namespace ncclwatch::decoder {

MismatchField CollectiveSignature::DifferingField(const CollectiveSignature& a,
                                                  const CollectiveSignature& b) {
  if (a.call != b.call) return MismatchField::kOp;
  if (a.count != b.count) return MismatchField::kCount;
  if (a.datatype != b.datatype) return MismatchField::kDatatype;
  if (a.redop != b.redop) return MismatchField::kRedop;
  if (a.root != b.root) return MismatchField::kRoot;
  return MismatchField::kNone;
}

}  // namespace ncclwatch::decoder

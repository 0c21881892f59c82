#include "findings/collective_signature.h"

namespace ncclwatch::decoder {

std::string CollectiveSignature::DifferingField(const CollectiveSignature& a,
                                                const CollectiveSignature& b) {
  if (a.call != b.call) return "op";
  if (a.count != b.count) return "count";
  if (a.datatype != b.datatype) return "datatype";
  if (a.redop != b.redop) return "redop";
  if (a.root != b.root) return "root";
  return "";
}

}  // namespace ncclwatch::decoder

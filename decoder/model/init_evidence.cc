#include "model/init_evidence.h"

#include <algorithm>

namespace ncclwatch::decoder {

int64_t InitEvidence::FirstFailureNs() const {
  int64_t t = INT64_MAX;
  for (const Failure& f : failures) t = std::min(t, f.when_ns);
  for (const SysFailure& s : sys_failures) t = std::min(t, s.when_ns);
  for (const CudaFailure& c : cuda_failures) t = std::min(t, c.when_ns);
  return t;
}

}  // namespace ncclwatch::decoder

// The NCCL release the simulator is: the one whose nccl.h the build used
// (cmake/Dependencies.cmake: the newest release scripts/fetch-nccl.sh
// cached, else the install), as ncclGetVersion and NCCL's banner report it.
// Tests that compare what the simulator reports use these, never a literal,
// so the newest release's headers change no expectation.

#ifndef NCCLWATCH_TESTS_SUPPORT_SIM_RELEASE_H_
#define NCCLWATCH_TESTS_SUPPORT_SIM_RELEASE_H_

#include <string>

namespace jobs {

// NCCL_VERSION_CODE of the simulator's nccl.h, e.g. 23203.
constexpr int SimNcclVersion() { return NCCLWATCH_NCCL_HEADER_VERSION; }

// "2.32.3".
inline std::string SimNcclVersionString() {
  const int v = SimNcclVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

}  // namespace jobs

#endif  // NCCLWATCH_TESTS_SUPPORT_SIM_RELEASE_H_

// Which calls NCCL numbered: the one rule every analysis shares.
//
// NCCL matches the collectives of a communicator's ranks by the order they
// were issued, and the shim numbers them (`seq`) the same way, counting only
// calls NCCL accepted: ncclSuccess, ncclInProgress (a non-blocking
// communicator's call still being enqueued), or a call that had not returned
// when the trace ended (it was entered, so it counts). A call NCCL refused
// (an invalid argument, say) was never enqueued and carries no number.

#ifndef NCCLWATCH_DECODER_MODEL_NUMBERING_H_
#define NCCLWATCH_DECODER_MODEL_NUMBERING_H_

#include <cstdint>

#include "ncclwatch/ring_format.h"

namespace ncclwatch::decoder {

// ncclResult_t values the decoder reasons about (nccl.h).
constexpr int32_t kNcclSuccess = 0;
constexpr int32_t kNcclInProgress = 7;
// A call the trace shows entered but not returned.
constexpr int32_t kResultPending = NCCLWATCH_RESULT_PENDING;

// NCCL accepted the call (or was still inside it).
constexpr bool Accepted(int32_t result) {
  return result == kNcclSuccess || result == kNcclInProgress || result == kResultPending;
}

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_NUMBERING_H_

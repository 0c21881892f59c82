// LastCall: the last NCCL call a process made (or made on one
// communicator), as facts; report/names.h words it ("AllReduce #3 of 3fa9c1").

#ifndef NCCLWATCH_DECODER_MODEL_LAST_CALL_H_
#define NCCLWATCH_DECODER_MODEL_LAST_CALL_H_

#include <cstdint>

namespace ncclwatch::decoder {

// The last NCCL call a process made.
struct LastCall {
  bool valid = false;
  uint32_t call = 0;
  uint64_t comm = 0;
  uint64_t seq = 0;
  bool has_seq = false;
  bool pending = false;  // it had not returned when the trace ended
  int64_t when_ns = 0;
  uint64_t caller = 0;
  bool send = false;  // point-to-point: direction and peer
  int32_t peer = -1;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_LAST_CALL_H_

// Fate: how a process ended, as far as its trace says: an exit (perhaps
// after a signal it handled), a signal it did not survive, or nothing at all
// (SIGKILL, an OOM kill, or still running).
//
// Thread-safety: plain values; FateOf is pure.

#ifndef NCCLWATCH_DECODER_MODEL_FATE_H_
#define NCCLWATCH_DECODER_MODEL_FATE_H_

#include <cstdint>

#include "model/process_trace.h"

namespace ncclwatch::decoder {

struct Fate {
  enum Kind { kExited, kSignal, kNoEnd } kind = kNoEnd;
  int exit_code = -1;
  int signo = 0;
  uint32_t disposition = 0;  // of the signal: 0 default, 1 ignored, 2 the program's handler
  int64_t when_ns = 0;
  // When the recorded signal (signo) came: for a signal it did not survive,
  // when_ns; for one it handled and then exited on, before when_ns.
  int64_t signal_ns = 0;
};

// A signal the process handled and carried on after (an NCCL call came
// later) is not its end.
Fate FateOf(const ProcessTrace& t);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_FATE_H_

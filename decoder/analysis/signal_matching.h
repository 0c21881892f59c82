// SignalMatching: pairs the one-sided signals ranks sent with the waits for
// them (NCCL 2.29's ncclPutSignal, ncclSignal and ncclWaitSignal).
//
// The shim numbers signals per communicator, peer and direction, as NCCL
// counts them: a put or signal from rank s to rank d is signal #k from s at
// d; a wait of d for n signals from s, after it had awaited m before, needs
// signal #(m + n - 1). So a wait whose last needed number is beyond what s
// ever sent d can never finish: the peer never sent it (a skipped put, a
// branch on one rank), and the waiting rank's stream hangs behind it.
//
// What it finds: per (communicator, sender, receiver), the first signal a
// wait needs that the sender never sent, when the sender's trace is there
// to say so. Signals sent and never waited for are no problem (NCCL lets
// them accumulate).
//
// Thread-safety: single-threaded.

#ifndef NCCLWATCH_DECODER_ANALYSIS_SIGNAL_MATCHING_H_
#define NCCLWATCH_DECODER_ANALYSIS_SIGNAL_MATCHING_H_

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "model/process_trace.h"

namespace ncclwatch::decoder {

struct SignalProblem {
  uint64_t comm = 0;
  int32_t sender = -1;  // communicator ranks
  int32_t receiver = -1;
  int sender_process = -1;
  int receiver_process = -1;
  uint64_t seq = 0;      // the first signal number the receiver waits for, never sent
  uint64_t sent = 0;     // signals the sender sent the receiver in all
  uint64_t awaited = 0;  // signals the receiver's waits need in all
  int64_t when_ns = 0;   // when the wait that needs #seq was posted (realtime)
  uint64_t caller = 0;   // its call site
};

class SignalMatching {
 public:
  // Adds one process's puts, signals and waits (all its communicators).
  void AddProcess(int process, const ProcessTrace& trace);
  // After the last process: a sender with no operation in its trace is
  // taken to have sent nothing when `member` says its trace is there whole
  // (giving its process index); a missing trace proves nothing.
  void Finish(const std::function<bool(uint64_t comm, int32_t rank, int* process)>& member);
  const std::vector<SignalProblem>& problems() const { return problems_; }

 private:
  struct Wait {
    uint64_t needed = 0;  // the signals from the peer it needs in all
    int64_t when_ns = 0;
    uint64_t caller = 0;
  };
  struct Pair {
    bool sent_present = false;
    int sender_process = -1;
    uint64_t sent = 0;  // highest signal number + 1
    bool waits_present = false;
    int receiver_process = -1;
    std::vector<Wait> waits;  // in the order posted
  };
  using Key = std::tuple<uint64_t, int32_t, int32_t>;  // comm, sender, receiver

  std::map<Key, Pair> pairs_;
  std::vector<SignalProblem> problems_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_SIGNAL_MATCHING_H_

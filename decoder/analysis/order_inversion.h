// OrderInversion: ranks that issued the collectives of two communicators in
// different orders.
//
// For a pair of communicators (A, B) and each collective B#j, a process's
// order says which A collective it had issued last before B#j (its
// "A before B#j"). If two ranks that belong to both give different answers,
// one issued some A#i before B#j and the other B#j before A#i: if both put the
// two on the same stream, each waits for the other for ever (a certain
// deadlock); on different streams the GPU may still complete both (a warning).
//
// As with collective alignment, ranks are added one at a time against a
// composite reference (per B#j, the answer of the first rank that had it).
// A process with several ranks of one communicator (ncclCommInitAll) has no
// single order, and is skipped. Only communicators with collectives in the
// process's trace take part; pairs are read from the two CommStreams.

#ifndef NCCLWATCH_DECODER_ANALYSIS_ORDER_INVERSION_H_
#define NCCLWATCH_DECODER_ANALYSIS_ORDER_INVERSION_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "model/process_trace.h"
#include "model/sequence_window.h"

namespace ncclwatch::decoder {

struct OrderInversionFinding {
  uint64_t comm_a = 0;
  uint64_t comm_b = 0;
  uint64_t seq_a = 0;  // the A collective the two ranks ordered differently against B#seq_b
  uint64_t seq_b = 0;
  int process = -1;  // the rank that departs from the reference order
  int reference_process = -1;
  bool process_a_first = false;  // whether `process` issued A#seq_a before B#seq_b
  bool same_stream = false;      // both ranks put A#seq_a and B#seq_b on one stream
  int64_t when_ns = 0;
};

class OrderInversion {
 public:
  void AddProcess(int process, const ProcessTrace& trace);
  // The earliest inversion found per pair of communicators.
  std::vector<OrderInversionFinding> Findings() const;

 private:
  // The reference's answer at one B#j: its provider's order around it.
  struct Entry {
    bool set = false;
    int64_t a_before = -1;   // last A seq issued before B#j, -1 none
    bool same_prev = false;  // B#j on the stream of that A collective
    bool same_next = false;  // B#j on the stream of the first A collective after it
    uint64_t same_mask = 0;  // bit i: B#j on the stream of the provider's A#(a_before - i)
    int provider = -1;
    int64_t provider_max_a = -1;  // the provider's last A collective
    int64_t when_ns = 0;
  };
  struct PairState {
    SequenceWindow<Entry> ref;  // by B's sequence number
    bool found = false;
    OrderInversionFinding finding;
  };
  std::map<std::pair<uint64_t, uint64_t>, PairState> pairs_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_ORDER_INVERSION_H_

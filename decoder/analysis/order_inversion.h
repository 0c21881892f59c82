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
//
// Near-linear in communicators. A pair's reference is kept only where it can
// differ between ranks. Where a process issued all its A collectives before
// its first B one (or all its B before its first A: the two are disjoint in
// its order), its answer for every B#j is the same (its last A, or none), and
// two ranks that both had the pair disjoint the same way never disagree. So a
// pair gets its reference (built exactly as it would have been from every
// earlier rank that had it, from a few numbers each kept per rank and
// communicator: CommSummary) only when a rank interleaves the two (found by a
// sweep over the communicators' spans in its order), or orders them the other
// way round from an earlier rank (found by comparing the two ranks' orders of
// their shared communicators, O(n log n)). 10,000 communicators made, used
// and destroyed one after another in one process cost 10,000 summaries, not
// 50 million references (tests/bench/order_inversion_bench.cc). Only the
// time of an inversion (when_ns) may differ from the full reference's, for a
// communicator with more than kSummaryTimes collectives in a rank that had
// the pair disjoint.
//
// Thread-safety: none; one analysis owns it.

#ifndef NCCLWATCH_DECODER_ANALYSIS_ORDER_INVERSION_H_
#define NCCLWATCH_DECODER_ANALYSIS_ORDER_INVERSION_H_

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/comm_stream.h"
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

  // How many pairs of communicators have a reference kept (tests).
  size_t PairsKept() const { return pairs_.size(); }

  // The collectives per rank and communicator whose times a summary keeps.
  static constexpr uint32_t kSummaryTimes = 64;

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
  // What one process did around each B#j (a pair's view of its order).
  struct Around {
    uint64_t seq_b = 0;
    int64_t a_before = -1;   // last A seq issued before B#j
    bool same_prev = false;  // B#j on the stream of that A collective
    bool same_next = false;  // B#j on the stream of the first A collective after it
    uint64_t same_mask = 0;  // bit i: B#j on the stream of A#(a_before - i), for the last 64 A
    int64_t when_ns = 0;
  };
  // One process's collectives on one communicator, in the few numbers a
  // pair's reference needs when the process had the pair disjoint.
  struct CommSummary {
    int process = -1;
    uint64_t comm = 0;
    uint64_t first_order = 0, last_order = 0;  // its span in the process's order
    uint32_t count = 0;
    uint64_t first_seq = 0, last_seq = 0;
    bool holds_start = false;
    std::vector<uint64_t> seqs;  // every number, when they do not run first_seq, +1, ...
    std::vector<std::pair<uint32_t, uint64_t>> stream_runs;  // (first index, stream)
    std::vector<int64_t> when_ns;  // each collective's time, when count <= kSummaryTimes
    int64_t first_when_ns = 0, last_when_ns = 0;
    uint64_t Seq(uint32_t i) const { return seqs.empty() ? first_seq + i : seqs[i]; }
    uint64_t Stream(uint32_t i) const;
  };

  static CommSummary Summarise(int process, const ProcessTrace& trace, const CommStream& s);
  // The pair's view of `trace`'s order, and its last A collective.
  static std::vector<Around> AroundFrom(const ProcessTrace& trace, const CommStream& sa,
                                        const CommStream& sb, int64_t* max_a);
  // The same from two summaries of a process that had the pair disjoint.
  static std::vector<Around> AroundFrom(const CommSummary& a, const CommSummary& b, int64_t* max_a);
  // One process's view of the pair against the reference, which it extends.
  static void Compare(int process, uint64_t comm_a, uint64_t comm_b,
                      const std::vector<Around>& around, int64_t max_a, PairState* st);
  // The pair's state, made from every earlier process that had the pair
  // (each had it disjoint, the same way round) when it has none yet.
  PairState& StateOf(uint64_t comm_a, uint64_t comm_b);

  std::map<std::pair<uint64_t, uint64_t>, PairState> pairs_;
  // Pairs with a state, from each side.
  std::unordered_map<uint64_t, std::vector<uint64_t>> partners_;
  std::vector<CommSummary> summaries_;  // of every process added
  // Communicator -> its summaries, in the order their processes were added.
  std::unordered_map<uint64_t, std::vector<uint32_t>> members_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_ORDER_INVERSION_H_

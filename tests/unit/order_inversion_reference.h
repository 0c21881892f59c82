// The order-inversion analysis as it was before it became near-linear in
// communicators (decoder/analysis/order_inversion.cc before issue 26): a
// reference kept for every pair of communicators of every process. The unit
// test checks that the analysis finds exactly what this one found.

#ifndef NCCLWATCH_TESTS_UNIT_ORDER_INVERSION_REFERENCE_H_
#define NCCLWATCH_TESTS_UNIT_ORDER_INVERSION_REFERENCE_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "analysis/order_inversion.h"
#include "model/process_trace.h"
#include "model/sequence_window.h"

namespace ncclwatch::testing {

using decoder::CollectiveEvent;
using decoder::CommStream;
using decoder::OrderInversionFinding;
using decoder::ProcessTrace;
using decoder::SequenceWindow;

class OrderInversionReference {
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

namespace reference_detail {

// What one process did around each B#j.
struct Around {
  uint64_t seq_b = 0;
  int64_t a_before = -1;   // last A seq issued before B#j
  bool same_prev = false;  // B#j on the stream of that A collective
  bool same_next = false;  // B#j on the stream of the first A collective after it
  uint64_t same_mask = 0;  // bit i: B#j on the stream of A#(a_before - i), for the last 64 A
  int64_t when_ns = 0;
};

// Whether the side that issued A#k before B#j (its last A before B#j being
// A#a_before) put the two on one stream: from its mask when A#k is among its
// last 64, else from its last A (the nearest it knows).
inline bool SameStreamBefore(int64_t a_before, uint64_t mask, bool same_prev, int64_t k) {
  const int64_t back = a_before - k;
  if (back >= 0 && back < 64) return (mask >> back) & 1;
  return same_prev;
}

}  // namespace reference_detail

inline void OrderInversionReference::AddProcess(int process, const ProcessTrace& trace) {
  using reference_detail::Around;
  using reference_detail::SameStreamBefore;
  // One rank per communicator in this process, or no single order to compare.
  std::vector<const CommStream*> streams;
  for (const CommStream& s : trace.streams) {
    if (!s.any()) continue;
    for (const CommStream* o : streams)
      if (o->comm == s.comm) return;
    streams.push_back(&s);
  }
  std::sort(streams.begin(), streams.end(),
            [](const CommStream* x, const CommStream* y) { return x->comm < y->comm; });

  for (size_t ai = 0; ai < streams.size(); ++ai) {
    for (size_t bi = ai + 1; bi < streams.size(); ++bi) {
      const CommStream& sa = *streams[ai];
      const CommStream& sb = *streams[bi];
      // The two streams merged in call order.
      std::vector<Around> around;
      around.reserve(sb.collectives.size());
      int64_t last_a = -1;
      uint64_t last_a_stream = 0;
      uint64_t recent[64];  // the streams of the last 64 A collectives, a circle
      uint64_t seen_a = 0;
      const bool a_complete =
          sa.holds_start;  // the trace holds this process's A collectives from A#0
      size_t ia = 0;
      for (uint32_t b_index : sb.collectives) {
        const CollectiveEvent& b = trace.collectives[b_index];
        for (; ia < sa.collectives.size() && trace.collectives[sa.collectives[ia]].order < b.order;
             ++ia) {
          const CollectiveEvent& a = trace.collectives[sa.collectives[ia]];
          last_a = static_cast<int64_t>(a.seq);
          last_a_stream = a.stream;
          recent[seen_a++ % 64] = a.stream;
        }
        if (last_a < 0 && !a_complete) continue;
        Around x;
        x.seq_b = b.seq;
        x.a_before = last_a;
        x.same_prev = last_a >= 0 && b.stream == last_a_stream;
        for (uint64_t i = 0; i < 64 && i < seen_a; ++i)
          if (recent[(seen_a - 1 - i) % 64] == b.stream) x.same_mask |= uint64_t{1} << i;
        x.when_ns = trace.RealtimeNs(b.t);
        // The first A collective after B#j, for "next A" streams.
        if (ia < sa.collectives.size())
          x.same_next = b.stream == trace.collectives[sa.collectives[ia]].stream;
        around.push_back(x);
      }
      const int64_t max_a =
          static_cast<int64_t>(trace.collectives[sa.collectives.back()].seq);  // its last A
      PairState& st = pairs_[{sa.comm, sb.comm}];
      for (const Around& x : around) {
        Entry& ref = st.ref.At(x.seq_b);
        if (!ref.set) {
          ref.set = true;
          ref.a_before = x.a_before;
          ref.same_prev = x.same_prev;
          ref.same_next = x.same_next;
          ref.same_mask = x.same_mask;
          ref.provider = process;
          ref.provider_max_a = max_a;
          ref.when_ns = x.when_ns;
          continue;
        }
        if (ref.a_before == x.a_before) continue;
        // Both must have issued the A collective in question: one that never
        // did skipped it (another finding), it did not reorder it.
        const int64_t conflicting_a = std::max(ref.a_before, x.a_before);
        if (max_a < conflicting_a || ref.provider_max_a < conflicting_a) continue;
        if (st.found && st.finding.seq_b <= x.seq_b) break;
        // The earliest A the two ordered differently around B#j: one issued
        // it before B#j, the other as its first A after B#j.
        const int64_t first_a = std::min(ref.a_before, x.a_before) + 1;
        OrderInversionFinding f;
        f.comm_a = sa.comm;
        f.comm_b = sb.comm;
        f.seq_b = x.seq_b;
        f.seq_a = static_cast<uint64_t>(first_a);
        f.process = process;
        f.reference_process = ref.provider;
        f.process_a_first = x.a_before > ref.a_before;
        const bool mine_same = f.process_a_first
                                   ? SameStreamBefore(x.a_before, x.same_mask, x.same_prev, first_a)
                                   : x.same_next;
        const bool ref_same = f.process_a_first ? ref.same_next
                                                : SameStreamBefore(ref.a_before, ref.same_mask,
                                                                   ref.same_prev, first_a);
        f.same_stream = mine_same && ref_same;
        f.when_ns = std::max(ref.when_ns, x.when_ns);
        st.found = true;
        st.finding = f;
        break;
      }
    }
  }
}

inline std::vector<OrderInversionFinding> OrderInversionReference::Findings() const {
  std::vector<OrderInversionFinding> out;
  for (const auto& [key, st] : pairs_)
    if (st.found) out.push_back(st.finding);
  return out;
}

}  // namespace ncclwatch::testing

#endif  // NCCLWATCH_TESTS_UNIT_ORDER_INVERSION_REFERENCE_H_

#include "analysis/order_inversion.h"

#include <algorithm>
#include <set>

namespace ncclwatch::decoder {
namespace {

// What one process did around each B#j.
struct Around {
  uint64_t seq_b = 0;
  int64_t a_before = -1;    // last A seq issued before B#j
  bool same_prev = false;   // B#j on the stream of that A collective
  bool same_next = false;   // B#j on the stream of the first A collective after it
  int64_t when_ns = 0;
};

bool Numbered(const CollectiveEvent& e) { return e.result == 0 || e.result == 7 || e.result == kResultPending; }

}  // namespace

void OrderInversion::AddProcess(int process, const ProcessTrace& trace) {
  // One rank per communicator in this process, or no single order to compare.
  std::map<uint64_t, int32_t> rank_in;
  for (const CollectiveEvent& e : trace.collectives) {
    if (e.comm == 0) continue;
    auto [it, added] = rank_in.emplace(e.comm, e.rank);
    if (!added && it->second != e.rank) return;
  }
  std::vector<uint64_t> comms;
  for (const auto& [comm, rank] : rank_in) comms.push_back(comm);
  std::vector<const CollectiveEvent*> events;
  for (const CollectiveEvent& e : trace.collectives)
    if (e.comm != 0 && Numbered(e)) events.push_back(&e);
  auto by_order = [](const CollectiveEvent* x, const CollectiveEvent* y) { return x->order < y->order; };
  if (!std::is_sorted(events.begin(), events.end(), by_order)) std::sort(events.begin(), events.end(), by_order);

  for (size_t ai = 0; ai < comms.size(); ++ai) {
    for (size_t bi = ai + 1; bi < comms.size(); ++bi) {
      const uint64_t a = comms[ai], b = comms[bi];
      std::vector<Around> around;
      int64_t last_a = -1;
      uint64_t last_a_stream = 0;
      bool a_complete = false;  // the trace holds this process's A collectives from A#0
      bool seen_a = false;
      for (const CollectiveEvent* e : events) {
        if (e->comm == a) {
          if (!seen_a) a_complete = e->seq == 0;
          seen_a = true;
          last_a = static_cast<int64_t>(e->seq);
          last_a_stream = e->stream;
        } else if (e->comm == b) {
          if (last_a < 0 && !a_complete && seen_a) continue;
          Around x;
          x.seq_b = e->seq;
          x.a_before = last_a;
          x.same_prev = last_a >= 0 && e->stream == last_a_stream;
          x.when_ns = trace.RealtimeNs(e->t);
          around.push_back(x);
        }
      }
      // "Next A" streams: a second pass from the end.
      {
        uint64_t next_stream = 0;
        bool have_next = false;
        size_t k = around.size();
        for (auto it = events.rbegin(); it != events.rend(); ++it) {
          const CollectiveEvent* e = *it;
          if (e->comm == a) {
            next_stream = e->stream;
            have_next = true;
          } else if (e->comm == b && k > 0 && around[k - 1].seq_b == e->seq) {
            --k;
            around[k].same_next = have_next && e->stream == next_stream;
          }
        }
      }
      // A process whose A ring wrapped knows nothing before its first A.
      const bool usable_without_a = a_complete || !seen_a;
      const int64_t max_a = last_a;  // its last A collective
      PairState& st = pairs_[{a, b}];
      for (const Around& x : around) {
        if (x.a_before < 0 && !usable_without_a) continue;
        if (st.ref.empty()) st.base = x.seq_b;
        if (x.seq_b < st.base) {
          const size_t grow = st.base - x.seq_b;
          st.ref.insert(st.ref.begin(), grow, Entry{});
          st.base = x.seq_b;
        }
        const size_t at = x.seq_b - st.base;
        if (at >= st.ref.size()) st.ref.resize(at + 1);
        Entry& ref = st.ref[at];
        if (!ref.set) {
          ref.set = true;
          ref.a_before = x.a_before;
          ref.same_prev = x.same_prev;
          ref.same_next = x.same_next;
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
        OrderInversionFinding f;
        f.comm_a = a;
        f.comm_b = b;
        f.seq_b = x.seq_b;
        f.seq_a = static_cast<uint64_t>(std::max(ref.a_before, x.a_before));
        f.process = process;
        f.reference_process = ref.provider;
        f.process_a_first = x.a_before > ref.a_before;
        const bool mine_same = f.process_a_first ? x.same_prev : x.same_next;
        const bool ref_same = f.process_a_first ? ref.same_next : ref.same_prev;
        f.same_stream = mine_same && ref_same;
        f.when_ns = std::max(ref.when_ns, x.when_ns);
        st.found = true;
        st.finding = f;
        break;
      }
    }
  }
}

std::vector<OrderInversionFinding> OrderInversion::Findings() const {
  std::vector<OrderInversionFinding> out;
  for (const auto& [key, st] : pairs_)
    if (st.found) out.push_back(st.finding);
  return out;
}

}  // namespace ncclwatch::decoder

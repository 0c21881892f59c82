#include "analysis/signal_matching.h"

#include <algorithm>

#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {

namespace f = ::ncclwatch::fields;

void SignalMatching::AddProcess(int process, const ProcessTrace& trace) {
  for (const OneSidedEvent& e : trace.one_sided) {
    if (e.result != 0 || e.rank < 0) continue;  // refused, or still in the call: not counted
    if (e.call == f::kPutSignal || e.call == f::kSignal) {
      Pair& p = pairs_[Key{e.comm, e.rank, e.peer}];
      p.sent_present = true;
      p.sender_process = process;
      p.sent = std::max(p.sent, e.seq + 1);
    } else if (e.call == f::kWaitSignal) {
      for (const OneSidedEvent::Wait& w : e.waits) {
        if (w.op_cnt <= 0 || w.peer < 0) continue;
        Pair& p = pairs_[Key{e.comm, w.peer, e.rank}];
        p.waits_present = true;
        p.receiver_process = process;
        p.waits.push_back(
            {w.seq + static_cast<uint64_t>(w.op_cnt), trace.RealtimeNs(e.t), e.caller});
      }
    }
  }
}

void SignalMatching::Finish(
    const std::function<bool(uint64_t comm, int32_t rank, int* process)>& member) {
  for (auto& [key, p] : pairs_) {
    if (!p.waits_present) continue;
    if (!p.sent_present) {
      int process = -1;
      if (!member(std::get<0>(key), std::get<1>(key), &process)) continue;
      p.sender_process = process;
      p.sent = 0;
    }
    uint64_t awaited = 0;
    const Wait* first = nullptr;
    for (const Wait& w : p.waits) {
      awaited = std::max(awaited, w.needed);
      if (first == nullptr && w.needed > p.sent) first = &w;
    }
    if (first == nullptr) continue;
    SignalProblem pr;
    pr.comm = std::get<0>(key);
    pr.sender = std::get<1>(key);
    pr.receiver = std::get<2>(key);
    pr.sender_process = p.sender_process;
    pr.receiver_process = p.receiver_process;
    pr.seq = p.sent;
    pr.sent = p.sent;
    pr.awaited = awaited;
    pr.when_ns = first->when_ns;
    pr.caller = first->caller;
    problems_.push_back(pr);
  }
}

}  // namespace ncclwatch::decoder

#include "model/process_completion.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "model/numbering.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;

// Chooses `c`'s pending operation again from what is left unfinished.
void Derive(CommCompletion* c) {
  c->pending = false;
  c->in_call = false;
  c->oldest = LastCall{};
  uint64_t oldest_order = UINT64_MAX;
  auto consider = [&](uint64_t order, const LastCall& call) {
    c->pending = true;
    c->in_call |= call.pending;
    if (order < oldest_order) {
      oldest_order = order;
      c->oldest = call;
    }
  };
  for (const auto& [order, call] : c->unfinished_collectives) consider(order, call);
  if (c->unfinished_p2p.second.valid) consider(c->unfinished_p2p.first, c->unfinished_p2p.second);
  c->in_call |= c->p2p_in_call;
}

}  // namespace

void RaiseCompleted(uint64_t floor, CommCompletion* c) {
  floor = std::min(floor, c->issued);
  if (floor <= c->completed) return;
  c->completed = floor;
  auto& u = c->unfinished_collectives;
  u.erase(std::remove_if(u.begin(), u.end(),
                         [&](const auto& e) { return !e.second.pending && e.second.seq < floor; }),
          u.end());
  Derive(c);
}

bool ProcessCompletion::AllTracked() const {
  if (comms.empty()) return false;
  for (const CommCompletion& c : comms)
    if (!c.tracked) return false;
  return true;
}

bool ProcessCompletion::AnyPending() const {
  for (const CommCompletion& c : comms)
    if (c.pending) return true;
  return false;
}

ProcessCompletion SummariseCompletion(const ProcessTrace& t) {
  ProcessCompletion out;
  const Liveness& live = t.liveness;
  out.beats = live.beats;
  out.interval_ms = live.interval_ms;
  if (live.beats > 0) {
    out.first_beat_ns = t.RealtimeNs(live.first_t);
    out.last_beat_ns = t.RealtimeNs(live.last_t);
  }
  // Operations whose completion is not followed (issued during graph capture,
  // or not yet enqueued by a non-blocking communicator).
  std::set<std::tuple<uint64_t, uint32_t, uint64_t>> untracked;
  for (const UntrackedEvent& u : t.untracked) untracked.insert({u.comm, u.call, u.seq});

  for (const CommStream& s : t.streams) {
    CommCompletion c;
    c.comm = s.comm;
    c.rank = s.rank;
    if (const CompletionTrackingEvent* how = t.Tracking(s.comm)) {
      c.tracked = how->Tracked();
      c.why_not = how->why_not;
    }
    uint64_t reached_t = 0;
    const ProgressEvent* progress = t.LastProgress(s.comm, &reached_t);
    uint64_t done_through_t = 0;
    uint64_t progress_t = 0;
    if (progress != nullptr) {
      c.completed = progress->collectives;
      c.has_progress = true;
      c.progress_ns = t.RealtimeNs(progress->t);
      c.completed_ns = t.RealtimeNs(reached_t);
      done_through_t = progress->enqueued_t;
      progress_t = progress->t;
    }
    if (s.any()) {
      const uint64_t last = t.collectives[s.collectives.back()].seq;
      c.issued = last == UINT64_MAX ? last : last + 1;
    }
    // A collective whose completion is not followed (captured in a CUDA
    // graph) at or after the count completed: the count may never pass it,
    // so nothing from it on is judged.
    uint64_t judged_below = UINT64_MAX;
    for (const UntrackedEvent& u : t.untracked)
      if (u.comm == s.comm && u.call != f::kSend && u.call != f::kRecv && u.seq >= c.completed)
        judged_below = std::min(judged_below, u.seq);
    // Collectives from the newest back to the first one not completed.
    // Untracked, only calls that never returned count: the stream lists
    // those, so the walk is over them alone, not over every collective.
    const std::vector<uint32_t>& candidates = c.tracked ? s.collectives : s.pending_collectives;
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      const CollectiveEvent& e = t.collectives[*it];
      const bool returned = e.result != kResultPending;
      if (c.tracked && returned && e.seq < c.completed) break;
      if (!Accepted(e.result)) continue;
      if (returned && (!c.tracked || e.seq >= judged_below)) continue;
      c.unfinished_collectives.push_back(
          {e.order,
           LastCall{true, e.call, e.comm, e.seq, true, !returned, t.RealtimeNs(e.t), e.caller}});
    }
    // Sends and receives recorded after the last time known complete.
    for (auto it = s.p2p.rbegin(); it != s.p2p.rend(); ++it) {
      const P2pEvent& e = t.p2p[*it];
      const bool returned = e.result != kResultPending;
      if (c.tracked && returned && e.t <= done_through_t) break;
      if (!Accepted(e.result)) continue;
      const uint32_t call = e.send ? f::kSend : f::kRecv;
      if (returned && (!c.tracked || untracked.count({e.comm, call, e.seq}))) continue;
      c.p2p_in_call |= !returned;
      if (e.order < c.unfinished_p2p.first)
        c.unfinished_p2p = {e.order, LastCall{true, call, e.comm, e.seq, true, !returned,
                                              t.RealtimeNs(e.t), e.caller, e.send, e.peer}};
    }
    Derive(&c);
    for (const StallEvent& st : t.stalls) {
      if (st.comm != s.comm || st.t < progress_t) continue;
      c.stalled = true;
      c.stall_waited_ms = std::max(c.stall_waited_ms, st.waited_ms);
    }
    out.comms.push_back(std::move(c));
  }

  for (const CudaErrorEvent& e : t.cuda_errors) {
    DeviceError d;
    d.when_ns = t.RealtimeNs(e.t);
    d.comm = e.comm;
    d.result = e.result;
    d.name = e.name;
    d.text = e.text;
    d.device = e.device;
    d.completed = e.seq;
    if (const CommMembership* m = t.Membership(e.comm)) d.bus_id = m->bus_id;
    out.device_errors.push_back(std::move(d));
  }
  for (const NcclErrorEvent& e : t.errors) {
    if (!e.async) continue;
    out.async_errors.push_back({t.RealtimeNs(e.t), e.comm, e.result, e.text});
  }
  auto by_time = [](const auto& a, const auto& b) { return a.when_ns < b.when_ns; };
  std::stable_sort(out.device_errors.begin(), out.device_errors.end(), by_time);
  std::stable_sort(out.async_errors.begin(), out.async_errors.end(), by_time);
  return out;
}

}  // namespace ncclwatch::decoder

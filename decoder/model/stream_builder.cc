#include "model/stream_builder.h"

#include <algorithm>

#include "model/process_trace.h"

namespace ncclwatch::decoder {

StreamBuilder::Calls& StreamBuilder::Find(uint64_t comm, int32_t rank) {
  auto [it, fresh] = index_.emplace(std::make_pair(comm, rank), calls_.size());
  if (fresh) {
    Calls& c = calls_.emplace_back();
    c.comm = comm;
    c.rank = rank;
    if (!spare_.empty()) {
      CommStream& s = spare_.back();
      c.collectives = std::move(s.collectives);
      c.pending = std::move(s.pending_collectives);
      c.p2p = std::move(s.p2p);
      c.collectives_before_p2p = std::move(s.collectives_before_p2p);
      spare_.pop_back();
      c.collectives.clear();
      c.pending.clear();
      c.p2p.clear();
      c.collectives_before_p2p.clear();
    }
  }
  last_ = it->second;
  return calls_[last_];
}

void StreamBuilder::Recycle(std::vector<CommStream>&& old) {
  spare_ = std::move(old);
  // The largest last, taken first: the busiest communicator comes first.
  std::sort(spare_.begin(), spare_.end(), [](const CommStream& a, const CommStream& b) {
    return a.collectives.capacity() < b.collectives.capacity();
  });
}

void StreamBuilder::AddP2p(size_t index, const P2pEvent& e) {
  if (e.comm == 0 || e.rank < 0 || e.peer < 0 || !Accepted(e.result)) return;
  Calls& s = Of(e.comm, e.rank);
  // No collective yet: none before it, unless the trace lost them (Finish).
  s.p2p.push_back(static_cast<uint32_t>(index));
  s.collectives_before_p2p.push_back(s.issued);
}

bool StreamBuilder::LostRecords(const ProcessTrace& p) {
  return p.stats.ring_overwritten != 0 || p.stats.lapped_slots != 0;
}

bool StreamBuilder::LostInside(const ProcessTrace& p) {
  return p.stats.torn_slots != 0 || p.stats.lapped_slots != 0;
}

void StreamBuilder::Finish(ProcessTrace* p) {
  p->streams.clear();
  std::map<std::pair<uint64_t, int32_t>, size_t> stream_of;
  auto find = [&](uint64_t comm, int32_t rank) -> CommStream& {
    auto [it, fresh] = stream_of.emplace(std::make_pair(comm, rank), p->streams.size());
    if (fresh) {
      CommStream& s = p->streams.emplace_back();
      s.comm = comm;
      s.rank = rank;
    }
    return p->streams[it->second];
  };
  // Members that formed count even with no call: they were expected to call.
  for (size_t i = 0; i < p->comms.size(); ++i) {
    const CommMembership& m = p->comms[i];
    if (m.comm != 0 && m.rank >= 0 && m.Formed())
      find(m.comm, m.rank).membership = static_cast<int>(i);
  }
  const bool lost = LostRecords(*p);
  const bool lost_inside = LostInside(*p);
  for (Calls& c : calls_) {
    CommStream& s = find(c.comm, c.rank);
    for (int64_t& before : c.collectives_before_p2p)
      before = lost_inside ? -1 : Settled(before, lost);
    s.collectives = std::move(c.collectives);
    s.pending_collectives = std::move(c.pending);
    s.p2p = std::move(c.p2p);
    s.collectives_before_p2p = std::move(c.collectives_before_p2p);
  }
  for (CommStream& s : p->streams) {
    s.holds_start = s.collectives.empty() ? !lost : p->collectives[s.collectives.front()].seq == 0;
  }
  calls_.clear();
  index_.clear();
  spare_.clear();
  last_ = SIZE_MAX;
}

}  // namespace ncclwatch::decoder

#include "model/grown_communicators.h"

#include <algorithm>
#include <set>

#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;

bool IsGainedMembership(const CommMembership& m) {
  return m.init_call == f::kCommGrow && m.parent == 0 && m.grow_id != 0 && m.comm == m.grow_id;
}

bool Derived(const CommMembership& m) {
  return m.parent != 0 && m.comm != 0 &&
         (m.init_call == f::kCommSplit || m.init_call == f::kCommShrink ||
          m.init_call == f::kCommGrow);
}

template <typename Table>
void Rename(Table* rows, const std::map<uint64_t, uint64_t>& renames) {
  for (auto& row : *rows) {
    auto it = renames.find(row.comm);
    if (it != renames.end()) row.comm = it->second;
  }
}

}  // namespace

void GrowJoin::Learn(const ProcessTrace& trace) {
  // The first identity seen for a link or derivation stands: a crafted trace
  // that claims another cannot move ranks a second time.
  for (const CommMembership& m : trace.comms) {
    if (!Derived(m)) continue;
    if (m.init_call == f::kCommGrow && m.grow_id != 0 && m.grow_id != m.comm)
      links_.emplace(m.grow_id, m.comm);
    derivations_.emplace(Derivation{m.parent, m.init_call, m.split_index, m.color, m.excluded},
                         m.comm);
  }
}

bool GrowJoin::Gained(const ProcessTrace& trace) {
  for (const CommMembership& m : trace.comms)
    if (IsGainedMembership(m)) return true;
  return false;
}

bool GrowJoin::Join(ProcessTrace* trace) const {
  std::map<uint64_t, uint64_t> renames;
  std::set<uint64_t> held;  // the identities the trace holds
  for (const CommMembership& m : trace->comms) held.insert(m.comm);
  for (const CommMembership& m : trace->comms) {
    if (!IsGainedMembership(m)) continue;
    auto it = links_.find(m.grow_id);
    // A crafted trace that already holds the identity it would be renamed
    // to keeps its communicators apart (and what derives from them).
    if (it != links_.end() && !held.count(it->second)) renames.emplace(m.comm, it->second);
  }
  // Down the derivations, in one pass: the memberships are in timeline
  // order, and a communicator is made after its parent (a crafted trace
  // out of order only keeps its identities).
  for (const CommMembership& m : trace->comms) {
    if (!Derived(m) || renames.count(m.comm)) continue;
    auto parent = renames.find(m.parent);
    if (parent == renames.end()) continue;
    auto it = derivations_.find(
        Derivation{parent->second, m.init_call, m.split_index, m.color, m.excluded});
    if (it == derivations_.end() || held.count(it->second)) continue;
    renames.emplace(m.comm, it->second);
  }
  if (renames.empty()) return false;
  RenameCommunicators(trace, renames);
  return true;
}

void RenameCommunicators(ProcessTrace* t, const std::map<uint64_t, uint64_t>& renames) {
  Rename(&t->comms, renames);
  for (CommMembership& m : t->comms) {
    auto it = renames.find(m.parent);
    if (it != renames.end()) m.parent = it->second;
  }
  Rename(&t->collectives, renames);
  Rename(&t->p2p, renames);
  Rename(&t->one_sided, renames);
  Rename(&t->apis, renames);
  Rename(&t->not_seen, renames);
  Rename(&t->errors, renames);
  Rename(&t->tracking, renames);
  Rename(&t->progress, renames);
  Rename(&t->stalls, renames);
  Rename(&t->cuda_errors, renames);
  Rename(&t->untracked, renames);
  Rename(&t->held, renames);
  Rename(&t->gpu_times, renames);
  Rename(&t->streams, renames);
  Rename(&t->left_out, renames);
  Rename(&t->left_out_p2p, renames);
  Rename(&t->left_out_gpu_times, renames);
  // Listed by communicator, as a summary's reader lists them.
  std::sort(t->left_out_gpu_times.begin(), t->left_out_gpu_times.end(),
            [](const ProcessTrace::LeftOutGpuTimes& a, const ProcessTrace::LeftOutGpuTimes& b) {
              return a.comm < b.comm;
            });
}

}  // namespace ncclwatch::decoder

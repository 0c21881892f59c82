#include "analysis/collective_alignment.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "knowledge/nccl_semantics.h"

namespace ncclwatch::decoder {

namespace {
constexpr size_t kRowsAhead = 8;
}  // namespace

void CollectiveAlignment::AddMember(int process, const CommStream& stream,
                                    const ProcessTrace& trace) {
  AlignedMember m;
  m.process = process;
  m.comm_rank = stream.rank;
  m.holds_start = stream.holds_start;
  for (const LeftOutCalls& l : trace.left_out)
    if (l.comm == stream.comm && l.rank == stream.rank && !l.digests.empty())
      m.left_out.emplace_back(l.FirstSeq(), l.EndSeq());
  const int me = static_cast<int>(members_.size());
  RealtimeClock realtime(trace);
  // The first member with collectives gives the reference its numbers, in
  // a row: room for them at once.
  ref_.Reserve(stream.collectives.size());
  const std::vector<uint32_t>& calls = stream.collectives;
  for (size_t k = 0; k < calls.size(); ++k) {
    // The rows are far larger than the cache and read once: ask for the
    // row eight calls ahead (both lines a 96-byte row may touch).
    if (k + kRowsAhead < calls.size()) {
      const char* ahead = reinterpret_cast<const char*>(&trace.collectives[calls[k + kRowsAhead]]);
      __builtin_prefetch(ahead);
      __builtin_prefetch(ahead + sizeof(CollectiveEvent) - 1);
    }
    const CollectiveEvent& e = trace.collectives[calls[k]];
    // And the reference that far on (numbers come in a row), which the
    // cache does not hold either once a job has more than ~40,000
    // collectives.
    ref_.Prefetch(e.seq + kRowsAhead);
    const CollectiveSignature sig = CollectiveSignature::Of(e);
    if (!m.any) {
      m.any = true;
      m.lo = e.seq;
    }
    if (e.seq >= m.hi || m.hi == 0) m.hi = e.seq;
    Reference& ref = ref_.At(e.seq);
    if (ref.provider < 0) {
      ref.time_ns = realtime(e.t);
      ref.kind = KindOf(Kind{sig, e.caller});
      ref.provider = me;
    } else if (!m.diverges && kinds_[ref.kind - 1].sig != sig) {
      m.diverges = true;
      m.first_divergence = e.seq;
      m.at_divergence = e;
    }
  }
  if (m.any) m.last = trace.collectives[stream.collectives.back()];
  members_.push_back(m);
}

uint32_t CollectiveAlignment::KindOf(const Kind& k) {
  if (last_kind_ != 0 && kinds_[last_kind_ - 1] == k) return last_kind_;
  auto it = interned_.find(k);
  if (it != interned_.end()) return last_kind_ = it->second;
  kinds_.push_back(k);
  const uint32_t id = static_cast<uint32_t>(kinds_.size());
  if (interned_.size() < std::max(kInternedFloor, ref_.size() / 8)) interned_.emplace(k, id);
  return last_kind_ = id;
}

std::optional<uint64_t> CollectiveAlignment::FirstDivergence() const {
  std::optional<uint64_t> first;
  for (const AlignedMember& m : members_)
    if (m.diverges && (!first || m.first_divergence < *first)) first = m.first_divergence;
  return first;
}

bool CollectiveAlignment::ReferenceAt(uint64_t seq, CollectiveSignature* sig, int64_t* entered_ns,
                                      int* provider, uint64_t* caller) const {
  const Reference* ref = ref_.Find(seq);
  if (ref == nullptr || ref->provider < 0) return false;
  const Kind& kind = kinds_[ref->kind - 1];
  if (sig) *sig = kind.sig;
  if (entered_ns) *entered_ns = ref->time_ns;
  if (provider) *provider = ref->provider;
  if (caller) *caller = kind.caller;
  return true;
}

std::optional<uint64_t> CollectiveAlignment::Frontier() const {
  std::optional<uint64_t> f;
  for (const AlignedMember& m : members_)
    if (m.any && (!f || m.hi > *f)) f = m.hi;
  return f;
}

}  // namespace ncclwatch::decoder

#include "analysis/collective_alignment.h"

#include "absl/strings/str_cat.h"
#include "analysis/nccl_semantics.h"

namespace ncclwatch::decoder {

CollectiveSignature CollectiveSignature::Of(const CollectiveEvent& e) {
  CollectiveSignature s;
  s.call = MatchingCall(e.call);
  s.count = e.count;
  s.datatype = e.datatype;
  s.redop = IsReductionCall(e.call) ? e.redop : -1;
  s.root = IsRootedCall(e.call) ? e.root : -1;
  return s;
}

bool CollectiveSignature::operator==(const CollectiveSignature& o) const {
  return call == o.call && count == o.count && datatype == o.datatype && redop == o.redop && root == o.root;
}

std::string CollectiveSignature::DifferingField(const CollectiveSignature& a, const CollectiveSignature& b) {
  if (a.call != b.call) return "op";
  if (a.count != b.count) return "count";
  if (a.datatype != b.datatype) return "datatype";
  if (a.redop != b.redop) return "redop";
  if (a.root != b.root) return "root";
  return "";
}

std::string CollectiveSignature::Describe() const {
  std::string s = absl::StrCat(CallName(call), "(count=", count, ", ", DatatypeName(datatype));
  if (redop >= 0) absl::StrAppend(&s, ", ", RedopName(redop));
  if (root >= 0) absl::StrAppend(&s, ", root=", root);
  return s + ")";
}

void CollectiveAlignment::AddMember(int process, int32_t comm_rank, const std::vector<const CollectiveEvent*>& events,
                                    const ProcessTrace& trace) {
  AlignedMember m;
  m.process = process;
  m.comm_rank = comm_rank;
  const int me = static_cast<int>(members_.size());
  for (const CollectiveEvent* e : events) {
    // Calls NCCL refused were not numbered; a pending call counts as entered.
    if (e->result != 0 && e->result != 7 && e->result != kResultPending) continue;
    const CollectiveSignature sig = CollectiveSignature::Of(*e);
    if (!m.any) {
      m.any = true;
      m.lo = e->seq;
    }
    if (e->seq >= m.hi || m.hi == 0) m.hi = e->seq;
    m.last = *e;
    if (ref_.empty()) base_ = e->seq;
    if (e->seq < base_) {
      // Earlier than anything seen so far: grow the reference downwards.
      const size_t grow = base_ - e->seq;
      ref_.insert(ref_.begin(), grow, CollectiveSignature{});
      ref_time_.insert(ref_time_.begin(), grow, 0);
      ref_provider_.insert(ref_provider_.begin(), grow, -1);
      ref_caller_.insert(ref_caller_.begin(), grow, 0);
      ref_set_.insert(ref_set_.begin(), grow, false);
      base_ = e->seq;
    }
    const size_t at = e->seq - base_;
    if (at >= ref_.size()) {
      ref_.resize(at + 1);
      ref_time_.resize(at + 1, 0);
      ref_provider_.resize(at + 1, -1);
      ref_caller_.resize(at + 1, 0);
      ref_set_.resize(at + 1, false);
    }
    if (!ref_set_[at]) {
      ref_[at] = sig;
      ref_time_[at] = trace.RealtimeNs(e->t);
      ref_provider_[at] = me;
      ref_caller_[at] = e->caller;
      ref_set_[at] = true;
    } else if (!m.diverges && ref_[at] != sig) {
      m.diverges = true;
      m.first_divergence = e->seq;
      m.at_divergence = *e;
    }
  }
  members_.push_back(m);
}

std::optional<uint64_t> CollectiveAlignment::FirstDivergence() const {
  std::optional<uint64_t> first;
  for (const AlignedMember& m : members_)
    if (m.diverges && (!first || m.first_divergence < *first)) first = m.first_divergence;
  return first;
}

bool CollectiveAlignment::ReferenceAt(uint64_t seq, CollectiveSignature* sig, int64_t* entered_ns, int* provider,
                                      uint64_t* caller) const {
  if (seq < base_ || seq - base_ >= ref_.size() || !ref_set_[seq - base_]) return false;
  if (sig) *sig = ref_[seq - base_];
  if (entered_ns) *entered_ns = ref_time_[seq - base_];
  if (provider) *provider = ref_provider_[seq - base_];
  if (caller) *caller = ref_caller_[seq - base_];
  return true;
}

std::optional<uint64_t> CollectiveAlignment::Frontier() const {
  std::optional<uint64_t> f;
  for (const AlignedMember& m : members_)
    if (m.any && (!f || m.hi > *f)) f = m.hi;
  return f;
}

}  // namespace ncclwatch::decoder

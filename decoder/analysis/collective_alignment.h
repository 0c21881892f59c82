// CollectiveAlignment: lines up the collectives of one communicator's ranks
// by sequence number and finds the first one they disagree on.
//
// Ranks are added one at a time (a rank's events can be dropped once added),
// so memory stays at about one rank's worth per communicator whatever the
// number of ranks. For each sequence number the alignment keeps the
// signature of the first rank added that reached it (the composite
// reference); every rank is compared with it over the numbers it has. Two
// ranks that disagree at a number disagree with the reference there, or one
// of them is the reference; so the smallest number at which any rank departs
// from the reference is the first disagreement of all. Rings that wrapped at
// different points are compared only where both hold the number.
//
// The reference lives in a SequenceWindow, so a crafted sequence number can
// not make it allocate more than the traces hold. It is 16 bytes a number:
// when its provider (the first member added that reached it) entered it,
// and what it was called with, interned: a job repeats a few signatures
// from a few call sites, so each distinct (signature, call site) is kept
// once. Only so many are interned (kInternedFloor, or an eighth of the
// numbers held, whichever is more); the rest are kept once per number, so
// numbers that are all different (a crafted trace) cost 50-100 bytes each
// (48 before the interning), never more than the numbers held allow.
//
// Signatures compare what NCCL needs to match: the operation (ncclBcast is a
// Broadcast), count, datatype, reduction operator and root.

#ifndef NCCLWATCH_DECODER_ANALYSIS_COLLECTIVE_ALIGNMENT_H_
#define NCCLWATCH_DECODER_ANALYSIS_COLLECTIVE_ALIGNMENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "findings/collective_signature.h"
#include "model/process_trace.h"
#include "model/sequence_window.h"

namespace ncclwatch::decoder {

// One rank of the communicator, as the alignment saw it.
struct AlignedMember {
  int process = -1;  // index of the process in the job
  int32_t comm_rank = -1;
  bool any = false;          // has at least one collective
  bool holds_start = false;  // its trace holds the communicator's #0 (or nothing was lost)
  uint64_t lo = 0;           // first sequence number in its trace
  uint64_t hi = 0;           // last sequence number it entered
  CollectiveEvent last;      // its last collective
  bool diverges = false;
  uint64_t first_divergence = 0;
  CollectiveEvent at_divergence;
  // The numbers [first, end) its node's summary left out (model/
  // left_out_calls.h): its trace held them, but they are not here.
  std::vector<std::pair<uint64_t, uint64_t>> left_out;
  bool LeftOut(uint64_t seq) const {
    for (const auto& [first, end] : left_out)
      if (seq >= first && seq < end) return true;
    return false;
  }
};

class CollectiveAlignment {
 public:
  // One member: its stream of numbered collectives on this communicator.
  void AddMember(int process, const CommStream& stream, const ProcessTrace& trace);

  const std::vector<AlignedMember>& members() const { return members_; }

  // The first sequence number any member departs from the reference, if any.
  std::optional<uint64_t> FirstDivergence() const;
  // The reference's signature at `seq`, when (realtime ns) its provider
  // entered it, which member provided it (index into members()), and from where.
  bool ReferenceAt(uint64_t seq, CollectiveSignature* sig, int64_t* entered_ns, int* provider,
                   uint64_t* caller = nullptr) const;
  // The highest sequence number any member entered.
  std::optional<uint64_t> Frontier() const;

 private:
  // What a collective was called with: its signature and call site.
  struct Kind {
    CollectiveSignature sig;
    uint64_t caller = 0;
    bool operator==(const Kind& o) const { return sig == o.sig && caller == o.caller; }
    template <typename H>
    friend H AbslHashValue(H h, const Kind& k) {
      return H::combine(std::move(h), k.sig.count, k.sig.call, k.sig.datatype, k.sig.redop,
                        k.sig.root, k.caller);
    }
  };
  struct Reference {        // 16 bytes, one for each collective
    int64_t time_ns = 0;    // when the provider entered it (realtime)
    uint32_t kind = 0;      // kinds_[kind - 1]
    int32_t provider = -1;  // index into members_, -1: no member has the number yet
  };
  static_assert(sizeof(Reference) == 16, "a reference has grown");
  static constexpr size_t kInternedFloor = 1024;
  // The index (from 1) into kinds_ of `k`: found among those interned, or
  // appended, and interned while fewer than kInternedFloor or an eighth of
  // the numbers held are.
  uint32_t KindOf(const Kind& k);

  SequenceWindow<Reference> ref_;
  std::vector<Kind> kinds_;
  absl::flat_hash_map<Kind, uint32_t> interned_;
  uint32_t last_kind_ = 0;  // the last kind KindOf returned: most calls repeat one
  std::vector<AlignedMember> members_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_COLLECTIVE_ALIGNMENT_H_

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
// not make it allocate more than the traces hold.
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
  struct Reference {  // 48 bytes, one for each collective
    CollectiveSignature sig;
    int64_t time_ns = 0;
    uint64_t caller = 0;
    int provider = -1;  // index into members_
  };
  SequenceWindow<Reference> ref_;
  std::vector<AlignedMember> members_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_COLLECTIVE_ALIGNMENT_H_

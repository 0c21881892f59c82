// StragglerEvidence: what a straggler warning rests on, whichever skew
// analysis found it (arrival: its host enqueued last; GPU: its GPU reached
// the collective last; link: its communicators' collectives took longer once
// every member had arrived). Each analysis's straggler is one of these plus
// what only it knows, and the finding's StragglerFacts is one plus the
// diagnosis's verdict on it (findings/finding.h): the evidence is copied
// whole from one to the other, never field by field.
//
// For a slow link "last" reads "slow": times_last counts the collectives
// that were slow, median_late_ns is how much longer than usual they took.
//
// Thread-safety: a plain struct.

#ifndef NCCLWATCH_DECODER_FINDINGS_STRAGGLER_EVIDENCE_H_
#define NCCLWATCH_DECODER_FINDINGS_STRAGGLER_EVIDENCE_H_

#include <cstdint>

namespace ncclwatch::decoder {

struct StragglerEvidence {
  int members = 0;        // members compared
  uint64_t compared = 0;  // collectives every member issued (within the window)
  uint64_t window = 0;    // collectives kept per member (4,096; fewer past 8,192 members)
  // > 0: node summaries kept only this many of a member's last collectives
  // (the fewest of any member they cut: host enqueues where the summaries'
  // window was narrower than `window`, GPU times past a communicator's last
  // kSummaryGpuTimes), and the figures are over those: the traces hold more.
  uint64_t summary_kept = 0;
  uint64_t gapped = 0;  // ... where one member came last by 1 ms or more
  uint64_t times_last = 0;
  uint32_t call = 0;               // the collective it was most often last in
  uint64_t call_times_last = 0;    // ... how often
  uint64_t call_compared = 0;      // ... of how many of that call compared
  int64_t median_late_ns = 0;      // its gap when last, median
  int64_t p90_late_ns = 0;         // ... and 90th percentile
  int64_t median_interval_ns = 0;  // between its consecutive collectives (0 unknown)
  uint64_t first_seq = 0;          // the first and last collective compared
  uint64_t last_seq = 0;
  bool window_start = false;  // the window began after the communicator's first collective
  // When it began: the first collective of its straggling (first_seq when it
  // straggled from the first one compared), and when (realtime; 0 unknown).
  uint64_t began_seq = 0;
  int64_t began_ns = 0;
  bool began_later = false;  // it began after first_seq (a change point)
  // Its median gap in the first and second half of its straggling.
  int64_t early_late_ns = 0;
  int64_t recent_late_ns = 0;
  bool worsening = false;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_FINDINGS_STRAGGLER_EVIDENCE_H_

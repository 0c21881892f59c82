// The diagnosis's finding families (analysis/diagnosis.h), one file each:
// each reads the context (jobs, lives, completion) and adds candidates for
// the root cause, warnings or notes, with typed facts and no prose.
// diagnosis.cc runs them in this order and ranks what they found.

#ifndef NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_FAMILIES_H_
#define NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_FAMILIES_H_

#include <cstddef>
#include <vector>

#include "analysis/diagnosis/context.h"

namespace ncclwatch::decoder::diagnosis {

// ---- diagnosis/collectives.cc

// Per communicator: members whose traces are missing (a note), the first
// collective its ranks disagree on, and the ranks that never entered a
// collective the others entered (before that divergence), grouped by what
// they did instead.
void FindCollectiveProblems(DiagnosisContext& cx);

// ---- diagnosis/point_to_point.cc

// Sends and receives that disagree on size, datatype or order, or lack the
// other side (analysis/p2p_matching.h). A rank that posted one side of such
// a disagreement waits behind it on its stream: what it then failed to post
// or enter (a later send or receive the other side waits for, a collective
// the others entered) follows from the disagreement, which comes first
// however the ranks' clocks fell (tier 3, as a rank waiting for its own
// GPU).
void FindP2pMismatches(DiagnosisContext& cx);

// One-sided waits for signals a peer never sent (analysis/signal_matching.h).
// The waiting rank's stream hangs behind the wait, so its absence from
// the collectives after it follows from this (tier 3, as a rank waiting
// for its own GPU).
void FindUnsentSignals(DiagnosisContext& cx);

// Two communicators whose collectives ranks ordered differently
// (analysis/order_inversion.h): a candidate on one stream (a certain
// deadlock), a warning on different streams.
void FindOrderInversions(DiagnosisContext& cx);

// ---- diagnosis/stragglers.cc

// Ranks whose host enqueued a communicator's collectives last, far more
// often than chance allows (analysis/arrival_skew.h): a warning each (the
// job may be healthy and slow), one per rank, in the widest communicator
// it straggles in; the others listed. Lateness is compared only before
// where FindCollectiveProblems found a communicator stopped: past it
// nothing completed, so a host that came last held no one back.
void FindStragglers(DiagnosisContext& cx);

// ---- diagnosis/startup.cc

// Members of a communicator that never called a split (or shrink) of it
// which the other members entered and still wait in: NCCL's split is
// collective over the parent, so the rank that went elsewhere is the
// cause, with what it did instead; the waiting ranks are not (their wait
// is neither an init failure nor a rank missing from the parent's next
// collective).
void FindSkippedCreations(DiagnosisContext& cx);

// Init forensics, job by job: each job's ranks' initialisation evidence
// (analysis/init_failure.h), less the ranks that only wait in a split
// another member never called (FindSkippedCreations runs first).
void FindInitFailures(DiagnosisContext& cx);

// A job that never got past its rendezvous (analysis/rendezvous.h).
void FindRendezvousFailures(DiagnosisContext& cx);

// ---- diagnosis/device_errors.cc

// A CUDA error (tier 0) or an NCCL asynchronous error (tier 1): the first
// each process reported.
void FindDeviceErrors(DiagnosisContext& cx);

// ---- diagnosis/stopped_ranks.cc

// Processes that stopped living before the others (their heartbeat ended
// more than two intervals earlier, a crash, or stopped now), where no
// collective the others entered without them already named them.
void FindStoppedRanks(DiagnosisContext& cx);

// ---- diagnosis/never_completed.cc

// Operations every member of a communicator entered that did not complete
// on the GPUs (tier 2), where completion was tracked on every member.
void FindNeverCompleted(DiagnosisContext& cx);

// ---- diagnosis/notes.cc

// Files and folders that could not be read or searched.
void NoteUnreadable(DiagnosisContext& cx);

// Where node summaries left out calls the analyses needed, or that
// differ: one note per job, with the nodes whose traces to read in full.
void NoteSummaryGaps(DiagnosisContext& cx);

// Traces given twice (one process's trace under two paths).
void NoteDuplicates(DiagnosisContext& cx);

// Notes on how each job's ranks were set up (analysis/setup_notes.h).
void NoteSetup(DiagnosisContext& cx);

// One note per job whose processes had NCCL code the shim could not see.
void NoteNotVisible(DiagnosisContext& cx);

// ---- diagnosis/health.cc

// Blind spots, per job: processes whose records were overwritten before
// they could be read, and launcher ranks that loaded NCCL and made no call
// the shim saw.
void FindBlindSpots(DiagnosisContext& cx);

// Whether job `j` is made only of processes traced from NCCL's load that
// made no NCCL call and have no launcher rank.
bool Bystanders(const DiagnosisContext& cx, size_t j);

// Job `j`, where no family found a cause: HEALTHY only when it is.
// Otherwise the findings that say what is known (tier 4), added to `kept`.
void CheckHealth(DiagnosisContext& cx, size_t j, std::vector<Candidate>* kept);

}  // namespace ncclwatch::decoder::diagnosis

#endif  // NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_FAMILIES_H_

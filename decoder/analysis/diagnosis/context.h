// What every finding family of the diagnosis shares (analysis/diagnosis.h):
// the jobs the processes form, how each process stands (its life, read from
// its end, its heartbeat and what the machine sees of it now), its
// communicator ranks' completion reconciled with the other members', and
// the candidates, warnings and notes the families add.
//
// The families (diagnosis/families.h) each read the context and add what
// they find; diagnosis.cc ranks the candidates into findings.

#ifndef NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_CONTEXT_H_
#define NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_CONTEXT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "analysis/job_analysis.h"
#include "findings/finding.h"
#include "model/process_liveness.h"

namespace ncclwatch::decoder::diagnosis {

// A finding that may become the root cause, with the process it is about.
// The lowest tier wins, then the earliest: tier 0 a CUDA error, tier 1 what
// a rank did or suffered (mismatches, deaths, asynchronous errors), tier 2
// an operation that never completed, tier 3 a rank missing from a collective
// because its GPU never finished the one before, tier 4 what is said when
// nothing else is.
struct Candidate {
  Finding finding;
  int process = -1;
  int tier = 1;
};

// A process without an end record whose heartbeat is at most this many
// intervals old is live.
inline constexpr int64_t kFreshIntervals = 3;
// A process whose life ended more than this many intervals before the
// others' stopped living first: heartbeats are discrete, so a gap of two
// intervals (two beats missed) measures as 2 +- jitter.
inline constexpr double kFirstDeathIntervals = 1.5;
// Live: an operation pending this long with nothing completed since is stuck
// (unless the shim's watchdog said so sooner, with a Stall).
inline constexpr int64_t kLiveStuckNs = 10'000'000'000;
// Post-mortem, in a job its launcher or scheduler ended with a signal (a
// walltime, a cancel, the teardown after one rank died): what had waited less
// than this when the signal came was in flight, not stuck, and a rank that
// far behind was merely behind (as it is, live). A hang caught this early
// cannot be told from a running job: it is reported as killed while
// running, which says so.
inline constexpr int64_t kTeardownRaceNs = 1'000'000'000;

// How a process stands at the end of its trace, or now.
enum class Life {
  kCleanExit,  // exited with code 0
  kErrorExit,  // exited with another code
  kSignal,     // a signal ended it
  kLive,       // no end; alive now (fresh heartbeat, or running on this host)
  kFrozen,     // no end; exists and is stopped, or its heartbeat went stale while it exists
  kStale,      // no end; its heartbeat is stale and it cannot be looked at (another host)
  kGone,       // no end; post-mortem, or its process is gone
};

// Where a call waits, as the DDP hang checklist puts it.
HangPhase PhaseOfCall(const LastCall& c);

// Whether `signo` is a crash (SIGSEGV, SIGABRT, ...), not a launcher's or
// scheduler's request to stop.
bool CrashSignal(int signo);

// Where a call was made, for the report to name.
inline CallSiteRef Site(int process, uint64_t caller) { return {process, caller}; }

class DiagnosisContext {
 public:
  // Clusters the processes into jobs, reads each one's life, and reconciles
  // the completion counts of those that stopped short.
  DiagnosisContext(const JobAnalysis& job, const LivenessObservation& observed);
  DiagnosisContext(const DiagnosisContext&) = delete;
  DiagnosisContext& operator=(const DiagnosisContext&) = delete;

  const JobAnalysis& job;
  const std::vector<ProcessRecord>& procs;
  const LivenessObservation& observed;

  // ------------------------------------------------------------ the jobs
  std::vector<std::vector<int>> jobs;  // process indices of each job
  std::vector<int> job_of;             // per process
  int64_t end_ns = 0;                  // the last record of any process
  bool live = false;                   // some process was seen alive
  bool tracked = false;                // every process tracked its GPU completion

  // ------------------------------------------------------------ liveness
  std::vector<Life> lives;       // per process
  std::vector<char> proc_state;  // per process: /proc's state letter, where seen
  std::vector<bool> job_live;    // per job: some process live or frozen now

  // ------------------------------------------- what the families found
  std::vector<Candidate> candidates;
  std::vector<Finding> warnings;
  std::vector<Finding> notes;
  // (parent communicator, process) that never called a split the others
  // wait in, and the processes waiting in such a split (FindSkippedCreations).
  std::set<std::pair<uint64_t, int>> skipped_creation;
  std::set<int> waiting_in_creation;
  // The log processes of ranks with no trace whose init evidence a job's
  // init forensics judged (JobAnalysis::untraced_init; FindInitFailures).
  std::set<int> untraced_judged;
  // (communicator, number) where the collective alignment found ranks that
  // differ, left unsaid as a node's summary left the call out of some rank
  // (its summary_gap note says it), and the job: its summary gaps are never
  // a note alone, though a ring begins inside them (FindCollectiveProblems,
  // NoteSummaryGaps).
  std::map<std::pair<uint64_t, uint64_t>, int> unsaid_divergences;
  // Per job: processes whose ring lost its start, and launcher ranks that
  // loaded NCCL and made no call the shim saw (FindBlindSpots).
  std::vector<std::vector<int>> overwritten, unseen;

  // ------------------------------------------------------------ queries
  // When `q` stopped living (realtime): its signal, else its last sign of life.
  int64_t StoppedNs(int q) const;

  // The latest sign of life of the other processes of `q`'s job with
  // heartbeats (now, if one of them is alive), 0 when none has any.
  int64_t OthersAliveUntil(int q) const;

  // How long before the others `q` stopped living, when that is more than
  // two heartbeat intervals (and both sides have heartbeats); else 0.
  int64_t StoppedFirstBy(int q) const;

  // Whether `q`'s communicator rank `c` waits on work that does not move:
  // post-mortem, anything pending when a process that did not exit cleanly
  // ended (or at a clean exit); live, pending with nothing completed for a
  // while, or a Stall since the last completion. Post-mortem, where the
  // launcher ended the job and `q`'s completion and heartbeat were
  // followed, work that had waited less than kTeardownRaceNs when the
  // signal came is in flight: it waits from its call or the rank's last GPU
  // progress, and a collective also from when another member's watcher
  // first counted it done (CollectiveFinishedNs), whichever came last.
  bool Stuck(int q, const CommCompletion& c) const;

  // The latest time a member of `comm` in job `j` first counted collective
  // #seq done, as its own watcher saw it (its count passed #seq); 0 when
  // none did. A collective completes on no member unless every member's
  // GPU ran it: one another member's GPU finished shortly before the
  // launcher's signal may still have been finishing on the rank whose
  // watcher had not yet seen it, so that rank was racing the signal, not
  // stuck.
  int64_t CollectiveFinishedNs(int j, uint64_t comm, uint64_t seq) const;

  // Live: the time `q` was seen at, for its heartbeat's freshness and how
  // long its work has waited: when its trace was read (reading the others
  // may take long on a busy machine, and its records stop at that moment),
  // at most the observation's time.
  int64_t SeenNs(int q) const;

  // `q`'s oldest pending operation (any communicator), or its last call.
  LastCall Doing(int q) const;

  // Whether `q`'s GPU reported a sticky CUDA error: every query of its
  // markers fails from then on, so its own completion count stopped short.
  bool Blind(int q) const;

  // Whether `q` stopped living before the others of its job: a crash, an
  // end (a signal, gone, frozen) more than two heartbeat intervals before
  // theirs, or a death with nothing recorded before the launcher's teardown.
  bool DiedFirst(int q) const;

  // Whether a signal that is not a crash (the launcher's SIGTERM, a
  // scheduler's SIGINT) ended `q`, recorded: it did not survive it, or it
  // exited on it.
  bool TornDown(int q) const;

  // When the launcher (or scheduler) ended job `j` with a signal: the first
  // such signal recorded, where every process of the job that did not exit
  // cleanly recorded one, or died with nothing recorded before them. 0 when
  // the job was not ended so (all SIGKILLed, a crash, still running).
  int64_t TeardownNs(int j) const;

  // When `q` ended with nothing recorded (no end, no signal: SIGKILL, the
  // OOM killer) while every other process of its job that did not exit
  // cleanly recorded the signal that ended it, at or after `q`'s last sign
  // of life: the signal and how long after. Launchers tear a job down when
  // one worker dies (torchrun, srun and mpirun SIGTERM the rest), so the one
  // without a recorded signal died first, however short the gap. {0, 0}
  // otherwise.
  // (Only where `q` has heartbeats: its watcher ran, and its trace is one
  // that records the signals that end it.)
  std::pair<int, int64_t> TeardownAfter(int q) const;

  // `q`'s communicator ranks' completion, as the constructor reconciled it.
  const std::vector<CommCompletion>& Comms(int q) const { return comms_[q]; }

  // Whether `q` waits on NCCL work: a pending operation or call.
  bool Waiting(int q) const;

  // The global rank of `process`'s rank `rank` on `comm`.
  int Global(int process, uint64_t comm, int32_t rank) const;

  // The global rank of process `q` on `comm` (its display rank when the
  // communicator is unknown).
  int RankOf(int q, uint64_t comm) const;

  // The ranks of `q`'s job, other than `q`, that wait on NCCL work.
  std::vector<int> WaitingOthers(int q) const;

  // A finding about process `q` on `comm`: its rank, the communicator's
  // size, the operation it had not completed there (or anywhere), and where.
  void Locate(int q, uint64_t comm, Finding* x, std::optional<uint64_t>* completed) const;

 private:
  // The jobs: processes joined by the communicators they share, the unique
  // ids they made, their launcher's job id, or their rank, program and
  // world size at the same time.
  void ClusterJobs();
  // Each process's life, and each job's.
  void Lives();
  Life LifeOf(const ProcessRecord& p);
  // A process whose own completion counts stopped short of the truth: what
  // its watcher had not yet seen complete (up to a poll interval of work,
  // many collectives on a fast GPU) when its GPU faulted (Blind) or it
  // stopped living before the others stays uncounted. The other members'
  // counts bound its own from below, since a collective completes on none
  // of them unless every member's GPU ran it: its counts are raised to
  // theirs. (A live rank whose count lags stays as it is: its GPU may truly
  // wait there, as behind a dead receive path.)
  void Reconcile();

  // Per (job, communicator), for CollectiveFinishedNs: each member's count
  // and when it first read it, by count, each with the latest such time
  // among the counts from it on.
  void IndexFinished();
  struct Finished {
    uint64_t completed = 0;
    int64_t latest_ns = 0;
  };
  std::map<std::pair<int, uint64_t>, std::vector<Finished>> finished_;

  std::vector<std::vector<CommCompletion>> comms_;  // per process (Reconcile)
};

}  // namespace ncclwatch::decoder::diagnosis

#endif  // NCCLWATCH_DECODER_ANALYSIS_DIAGNOSIS_CONTEXT_H_

// The live state of a job, from its traces: what `ncclwatch status` shows.
//
// JobStatusOf reads each process's model (its collectives, the watcher's
// Progress, Heartbeat and Stall records, its asynchronous and CUDA errors)
// and, per communicator, says for each rank how far it got: the last
// collective it entered and the last its GPU completed, how long since its
// communicator last made progress and since its watcher last beat, and
// whether it is stuck. WriteStatus renders that as a table, the headline
// first.
//
// A rank is stuck when it has work pending and
//   - the shim reported a stall for it (NCCLWATCH_STALL), or
//   - nothing of it completed for `stuck_after_ns`, or
//   - it reported an asynchronous NCCL error or a CUDA error;
// and a live process whose heartbeats stopped (for three intervals and at
// least 5 s) is frozen or was killed. What this host sees of its own traced
// processes now (model/process_liveness.h) says it at once: one gone (or a
// zombie) with no end in its trace was killed (SIGKILL, the OOM killer), and
// one stopped (state T) is frozen; the heartbeat rule is for the others
// (another host's, a summary's). A rank gone while others run leaves the job
// STUCK; a stop counts once the stopped rank's watcher has missed two beats
// (a profiler's or a debugger's brief stop is no frozen rank). A rank lags
// when it entered fewer collectives than the communicator's furthest rank.
// Processes that ended are shown as ended, not stuck; a job whose every
// process ended is ENDED, or ENDED BADLY when one ended by a signal or with
// work pending, or is a process with no communicator that exited with an
// error or was killed (a job that failed in its rendezvous, before NCCL). Logs given beside the
// traces are judged with them by the one diagnosis (the caller's), and a
// problem they show is said under the headline.
//
// Thread-safety: plain values.

#ifndef NCCLWATCH_DECODER_REPORT_STATUS_REPORT_H_
#define NCCLWATCH_DECODER_REPORT_STATUS_REPORT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/arrival_skew.h"
#include "analysis/gpu_skew.h"
#include "analysis/host_clocks.h"
#include "analysis/link_skew.h"
#include "model/process_liveness.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

// The collectives a rank's recent lateness is judged over.
constexpr size_t kRecentCollectives = 200;

struct RankStatus {
  int32_t comm_rank = -1;
  int32_t global_rank = -1;
  std::string host;
  uint32_t pid = 0;
  size_t process = 0;      // its process, in the order added (JobStatusBuilder::processes)
  int64_t entered = -1;    // the last collective entered, -1 none
  int64_t completed = -1;  // the last completed on the GPU, -1 none (or not tracked)
  bool tracked = false;    // completion was tracked
  std::string pending;     // "AllReduce #5" when work is pending
  uint64_t pending_ops = 0;
  int64_t since_progress_ns = -1;  // -1 unknown
  int64_t since_beat_ns = -1;      // -1 no heartbeat
  bool stalled = false;            // the shim reported a stall for the pending work
  uint64_t stall_waited_ms = 0;
  std::string error;  // an asynchronous NCCL error or a CUDA error
  // Counts for the metrics (report/status_metrics.h): stall reports of this
  // communicator, asynchronous NCCL errors and CUDA errors of this
  // communicator (or of none named), and the ring slots the process's trace
  // no longer holds (it wrapped).
  uint64_t stalls = 0;
  uint64_t async_errors = 0;
  uint64_t overwritten_slots = 0;
  std::string job;    // the launcher's job id (SLURM_JOB_ID, ...), "" when none
  std::string ended;  // "exited (code 0)", "died of SIGSEGV"; "" while alive
  bool gone = false;  // this host saw its process gone with no end in its trace (killed):
                      // stuck while the others run, as a rank that stopped beating is
  bool not_beating = false;
  bool frozen = false;  // this host saw its process stopped (state T or t)
  char state = 0;       // the process's /proc state letter, 0 when not seen
  bool stuck = false;
  bool lagging = false;
  int64_t behind = 0;  // collectives entered fewer than the communicator's furthest rank
  // Arrival (analysis/arrival_skew.h), over the communicator's last
  // kRecentCollectives collectives every member issued: how often this rank
  // enqueued last by 1 ms or more, its median gap then, and whether it is a
  // straggler by the whole window's evidence.
  uint64_t arrivals_compared = 0;
  uint64_t times_last = 0;
  int64_t late_median_ns = 0;
  bool straggler = false;
};

struct CommStatus {
  uint64_t comm = 0;
  int32_t nranks = -1;
  std::vector<RankStatus> ranks;  // by communicator rank
};

struct JobStatus {
  int64_t now_ns = 0;  // CLOCK_REALTIME
  size_t processes = 0;
  std::vector<CommStatus> comms;
  std::vector<std::string> unreadable;  // "path: why"
  // Folders not searched and links not followed (here, or on a node whose
  // summary lists them): they may hold a rank's trace. "path: why".
  std::vector<std::string> not_searched;
  std::vector<std::string> stragglers;  // "rank 5 of communicator 22ef4b: ..."
  // A straggler above was judged on fewer calls than its analysis reads,
  // summaries having kept fewer of some member's (StragglerEvidence::
  // summary_kept): traces read through summaries made in memory are then
  // read again whole, as diagnose does.
  bool stragglers_on_fewer_calls = false;
  bool stuck = false;
  bool live = false;         // some rank's process has not ended
  bool ended_badly = false;  // a rank ended by a signal, or with work pending (see above)
  // The logs given beside the traces (the job's output, NCCL's log, a
  // node's kernel log), and, where the diagnosis of the traces with them
  // finds a problem, its headline ("PROBLEM: init_failure (bootstrap,
  // ECONNREFUSED) (rank 1)"): what the logs show that the table cannot.
  std::vector<std::string> logs;
  std::vector<std::string> logs_unreadable;  // "path: why"
  std::string logs_problem;
  // What `ncclwatch status` exits with: 1 stuck, ended badly, or a problem
  // the logs show; else 0.
  int ExitCode() const { return stuck || (!live && ended_badly) || !logs_problem.empty() ? 1 : 0; }
};

// A process the builder was given: who it is, and what its trace said of
// its end when read.
struct StatusProcess {
  TracedProcessId id;
  std::string path;           // its trace
  bool from_summary = false;  // read from a node's summary, made some time before
  bool has_streams = false;
  bool exit_ok = false;  // exited with code 0
  std::string ended;     // as RankStatus::ended; "" when its trace holds no exit or fatal signal
  bool not_beating = false;
  bool beats_stale = false;  // no beat for two intervals, or no heartbeat at all
};

// Collects the job's status one process at a time.
class JobStatusBuilder {
 public:
  JobStatusBuilder(int64_t now_ns, int64_t stuck_after_ns);
  void AddProcess(const ProcessTrace& trace);
  void AddUnreadable(const std::string& path, const std::string& why);
  // What may hold a rank's trace and was not read: `why`, the path first.
  void AddNotSearched(const std::string& why);
  // The processes added, in order: what the caller observes (ObserveLiveness).
  const std::vector<StatusProcess>& processes() const { return processes_; }
  // `seen`: what this host sees of the processes now. The caller leaves out
  // of it a process whose end may have come after its trace was read (gone
  // now, its trace read again holding an end), and a summary's: the
  // heartbeat rule judges those. Empty: none seen (a test, post mortem).
  JobStatus Finish(const LivenessObservation& seen = {});

 private:
  JobStatus status_;
  std::vector<StatusProcess> processes_;
  int64_t stuck_after_ns_;
  ArrivalSkew arrivals_;
  GpuSkew gpu_arrivals_;  // slow GPUs (their ranks are not also named host stragglers)
  HostClocks clocks_;     // the hosts' clocks aligned before either compares
  LinkSkew links_;        // slow links (their ranks are not named host or GPU stragglers)
};

void WriteStatus(const JobStatus& status, std::ostream& out);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_STATUS_REPORT_H_

// JobAnalysis: reads a job's processes one at a time and keeps what the
// diagnosis needs.
//
// AddProcess takes a decoded process, feeds its events to the analyses
// (collective alignment per communicator, point-to-point matching, order
// inversion, arrival skew) and keeps only a summary of it (ProcessFacts).
// Memory therefore grows with the number of processes, plus about one
// process's worth of events per communicator and a window of enqueue times
// per member, not with the total number of records.
//
// Thread-safety: single-threaded.

#ifndef NCCLWATCH_DECODER_ANALYSIS_JOB_ANALYSIS_H_
#define NCCLWATCH_DECODER_ANALYSIS_JOB_ANALYSIS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/arrival_skew.h"
#include "analysis/collective_alignment.h"
#include "analysis/completion.h"
#include "analysis/gpu_skew.h"
#include "analysis/host_clocks.h"
#include "analysis/link_skew.h"
#include "analysis/order_inversion.h"
#include "analysis/p2p_matching.h"
#include "analysis/rendezvous.h"
#include "analysis/signal_matching.h"
#include "analysis/summary_gaps.h"
#include "findings/last_call.h"
#include "model/init_evidence.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

// How a process ended, as far as its trace says.
struct Fate {
  enum Kind { kExited, kSignal, kNoEnd } kind = kNoEnd;
  int exit_code = -1;
  int signo = 0;
  uint32_t disposition = 0;  // of the signal: 0 default, 1 ignored, 2 the program's handler
  int64_t when_ns = 0;
  // When the recorded signal (signo) came: for a signal it did not survive,
  // when_ns; for one it handled and then exited on, before when_ns.
  int64_t signal_ns = 0;
};

struct ProcessFacts {
  int index = -1;
  std::string path;
  std::string host;
  uint32_t pid = 0;
  int rank = -1;  // display rank
  std::string rank_source;
  int world_size = -1;
  std::string job_id;
  std::string exe;
  int32_t nccl_version = 0;  // as ncclGetVersion reported it; 0 unknown
  std::vector<ModuleInfo> modules;
  std::vector<CommMembership> comms;
  std::vector<int64_t> comm_init_ns;  // when comms[i]'s init began (realtime)
  int64_t read_ns = 0;                // when its trace was read (ProcessTrace::read_ns)
  Fate fate;
  LastCall last;
  std::map<uint64_t, CollectiveEvent> last_collective;  // per communicator
  std::map<uint64_t, int64_t> last_collective_ns;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  TraceFileStats stats;
  uint64_t unparsed = 0;
  uint64_t records = 0;
  InitEvidence init;                       // what its NCCL initialisation left behind
  std::vector<NcclNotSeenEvent> not_seen;  // NCCL code the shim could not see into
  uint64_t created_ns = 0;       // when the shim created its trace (realtime): with host and pid,
                                 // its identity
  uint64_t pid_namespace = 0;    // which pid namespace `pid` is a number in (0 unknown)
  ProcessCompletion completion;  // its GPU completion, heartbeats and asynchronous errors
  bool nccl_loaded = false;      // libnccl was in its module map
  std::string nccl_path;
  bool nccl_calls = false;        // any NCCL call of it was recorded
  bool lost_start = false;        // a stream lost its start, or slots were lapped while read
  RendezvousEvidence rendezvous;  // its settings and sockets before NCCL (analysis/rendezvous.h)
  // Read from a node's summary (ncclwatch summarize): the file and the host
  // that made it; both "" for a trace read whole.
  std::string summary;
  std::string summary_host;

  // Its last sign of life (realtime): the last heartbeat or record.
  int64_t AliveUntilNs() const { return std::max(completion.last_beat_ns, last_ns); }

  const ModuleInfo* ModuleAt(uint64_t address) const;
  // Whether it did anything on another communicator after its last
  // collective on `comm`, and what.
  std::optional<LastCall> ActivityAfter(uint64_t comm) const;
  std::vector<LastCall> activity;  // last NCCL call per communicator
  // Per communicator: its ncclCommSuspend that no ncclCommResume followed
  // (NCCL 2.29), where the trace ends.
  std::map<uint64_t, LastCall> suspended;
};

struct UnreadableTrace {
  std::string path;
  std::string error;
  // A folder that could not be searched, or a link not followed: it may hold
  // a rank's trace, so the job cannot be called healthy without it.
  bool may_hold_traces = false;
};

class JobAnalysis {
 public:
  // Before the first process: the job mixes traces and node summaries, so
  // the traces' calls are digested to be compared with what the summaries
  // left out (analysis/summary_gaps.h).
  void MixesSummaries() { gaps_.DigestWholeTraces(true); }
  void AddProcess(const ProcessTrace& trace);
  void AddUnreadable(const std::string& path, const std::string& error,
                     bool may_hold_traces = false);
  // Files that hold a process already added (the same host, pid and
  // creation time): (the file, the one read), in the order met.
  const std::vector<std::pair<std::string, std::string>>& duplicates() const { return duplicates_; }
  // After the last process.
  void Finish();

  // A rank that left a log and no trace: its log's init evidence, for the
  // job's init forensics beside the traced ranks'.
  struct UntracedInit {
    std::vector<int> log_processes;  // its indices among the log's processes
    InitEvidence evidence;           // the first's; `process` -1: no trace
  };
  // The init evidence of the job's logs (analysis/log_diagnosis.h
  // LogInitEvidence) in the same model as the traces': a traced process's
  // own log (the same host and pid, which NCCL prints as the process sees
  // them, as the shim records them; in a container's pid namespace, where
  // two processes of a host may share a pid, the same rank too) adds to its
  // trace's evidence (InitEvidence::AddFromLog), and each rank with a log
  // and no trace is kept (untraced_init) for the diagnosis to judge with
  // its job; none is where a traced process has no rank. `timed`: the log's
  // times are clock times (NcclLog::timestamps()); without them an untraced
  // rank's times are 0, unknown. After Finish. Returns the log's processes
  // whose init evidence the traces' now holds: a process whose log shows
  // failures its trace does not is not among them (its log's own forensics
  // still say what they say).
  std::set<int> JoinLogEvidence(const std::vector<InitEvidence>& logs, bool timed);
  const std::vector<UntracedInit>& untraced_init() const { return untraced_init_; }

  const std::vector<ProcessFacts>& processes() const { return processes_; }
  const std::vector<UnreadableTrace>& unreadable() const { return unreadable_; }
  const std::map<uint64_t, CollectiveAlignment>& alignments() const { return alignments_; }
  const P2pMatching& p2p() const { return p2p_; }
  const SignalMatching& signals() const { return signals_; }
  const OrderInversion& order() const { return order_; }
  const ArrivalSkew& arrivals() const { return arrivals_; }
  const GpuSkew& gpu_arrivals() const { return gpu_arrivals_; }
  const HostClocks& clocks() const { return clocks_; }
  const LinkSkew& links() const { return links_; }
  const SummaryGaps& summary_gaps() const { return gaps_; }

  // The global rank to name member `comm_rank` of `comm` in `process` by.
  int GlobalRank(int process, uint64_t comm, int32_t comm_rank) const;
  // The size of `comm` as its members reported it (-1 unknown).
  int CommSize(uint64_t comm) const;
  // The process holding rank `comm_rank` of `comm`, or -1.
  int ProcessOf(uint64_t comm, int32_t comm_rank) const;

 private:
  std::vector<ProcessFacts> processes_;
  std::vector<UnreadableTrace> unreadable_;
  std::vector<UntracedInit> untraced_init_;
  std::vector<std::pair<std::string, std::string>> duplicates_;
  std::map<std::tuple<std::string, uint32_t, uint64_t>, std::string>
      seen_;                                                    // identity -> first file
  std::map<std::pair<uint64_t, int32_t>, int> member_process_;  // (comm, rank) -> its first process
  std::map<uint64_t, int> comm_size_;                           // comm -> nranks, -1 unknown
  std::map<uint64_t, CollectiveAlignment> alignments_;
  P2pMatching p2p_;
  SignalMatching signals_;  // one-sided signals and their waits (NCCL 2.29)
  OrderInversion order_;
  ArrivalSkew arrivals_;
  GpuSkew gpu_arrivals_;
  HostClocks clocks_;  // each host's clock offset, by the job's collectives
  LinkSkew links_;
  SummaryGaps gaps_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_JOB_ANALYSIS_H_

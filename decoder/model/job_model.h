// The job model: what a job's traces showed of each process, kept once its
// trace is let go, and the job's memberships indexed across processes.
//
//   ProcessRecord  one process: who it was (host, pid, rank, modules), the
//                  communicators it held, how it ended (Fate), its last
//                  calls, its GPU completion and heartbeats, its init and
//                  rendezvous evidence, what its trace could not show
//   JobModel       the records in the order added (duplicates left out and
//                  listed), which process holds each (communicator, rank),
//                  each communicator's size, and the init evidence of the
//                  job's logs joined to it (a process's own log to its
//                  record; a rank with a log and no trace kept beside)
//
// The analyses (analysis/job_analysis.h) read the records; nothing here
// keeps a trace's events, so memory grows with the number of processes,
// not with the number of records.
//
// Thread-safety: single-threaded.

#ifndef NCCLWATCH_DECODER_MODEL_JOB_MODEL_H_
#define NCCLWATCH_DECODER_MODEL_JOB_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/fate.h"
#include "model/init_evidence.h"
#include "model/last_call.h"
#include "model/process_completion.h"
#include "model/process_trace.h"
#include "model/rendezvous_evidence.h"

namespace ncclwatch::decoder {

// One process of the job, as its trace showed it: who it was and what it
// held, copied from the trace, and what is derived from the trace once
// (how it ended, its last calls, its completion, its init and rendezvous
// evidence), so that nothing reads the trace again.
struct ProcessRecord {
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
  RendezvousEvidence rendezvous;  // its settings and sockets before NCCL
  // Read from a node's summary (ncclwatch summarize): the file and the host
  // that made it; both "" for a trace read whole. `summarized_here`: through
  // its summary made in memory here (ProcessTrace::summarized_here).
  std::string summary;
  std::string summary_host;
  bool summarized_here = false;

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

// The process's record, as the job model keeps it; `index` is its place
// among the job's processes.
ProcessRecord RecordOf(const ProcessTrace& t, int index);

class JobModel {
 public:
  // Adds a process, and returns its index; nullopt when a process with the
  // same host, pid and creation time was added already (the same folder
  // given twice, a copy), listed in duplicates().
  std::optional<int> Add(const ProcessTrace& t);

  const std::vector<ProcessRecord>& processes() const { return processes_; }
  // Files that hold a process already added: (the file, the one read), in
  // the order met.
  const std::vector<std::pair<std::string, std::string>>& duplicates() const { return duplicates_; }

  // The global rank to name member `comm_rank` of `comm` in `process` by.
  int GlobalRank(int process, uint64_t comm, int32_t comm_rank) const;
  // The size of `comm` as its members reported it (-1 unknown).
  int CommSize(uint64_t comm) const;
  // The process holding rank `comm_rank` of `comm`, or -1.
  int ProcessOf(uint64_t comm, int32_t comm_rank) const;

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
  // rank's times are 0, unknown. After the last process. Returns the log's processes
  // whose init evidence the traces' now holds: a process whose log shows
  // failures its trace does not is not among them (its log's own forensics
  // still say what they say).
  std::set<int> JoinLogEvidence(const std::vector<InitEvidence>& logs, bool timed);
  const std::vector<UntracedInit>& untraced_init() const { return untraced_init_; }

 private:
  std::vector<ProcessRecord> processes_;
  std::vector<UntracedInit> untraced_init_;
  std::vector<std::pair<std::string, std::string>> duplicates_;
  std::map<std::tuple<std::string, uint32_t, uint64_t>, std::string>
      seen_;                                                    // identity -> first file
  std::map<std::pair<uint64_t, int32_t>, int> member_process_;  // (comm, rank) -> its first process
  std::map<uint64_t, int> comm_size_;                           // comm -> nranks, -1 unknown
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_JOB_MODEL_H_

// The merged timeline: every process of a job on one Perfetto trace.
//
// `ncclwatch timeline DIR -o job.pftrace` writes a Perfetto trace (protobuf
// `Trace` of `TracePacket`s, proto/perfetto/perfetto_trace.proto), which
// ui.perfetto.dev opens as it is. It is a report like the others: built from
// the model (one ProcessTrace at a time) and the diagnosis, never from the
// trace files' bytes.
//
//   arrival skew   "arrival skew comm c06c50"   (one per communicator, first)
//          slices   a collective every member issued, from the first
//                   member's enqueue to the last's, named by who came last
//                   and by how much ("STRAGGLER" where the diagnosis named
//                   that rank a straggler); a slice begins no earlier than
//                   the one before it ends (collectives enqueued ahead)
//   process track  "rank 3  host:pid"   (one per traced process)
//     ├─ instants   init steps (ncclGetUniqueId, the init call begun, a
//     │             communicator ended), failing system calls with their errno,
//     │             NCCL's errors, CUDA errors, the shim's stall reports, a
//     │             fatal signal, the process's exit
//     └─ comm track "comm c06c50 rank 3/8"   (one per communicator rank)
//          slices   a collective or a send/receive, from its enqueue to its
//                   completion on the GPU (the shim's Progress records); one
//                   that never completed runs to the trace's end. Where
//                   completion was not tracked, to the call's return: the
//                   trace does not time returns, so a call that returned is
//                   drawn 1 µs long, and one still pending runs to the end
//          flows    one per collective sequence number of a communicator,
//                   through every rank's slice of it; one per send and its
//                   receive
// Slices that overlap on one communicator (collectives in flight on the
// GPU together) go to lanes, child tracks of the communicator's track, so
// that every track's slices nest as Perfetto requires (at most 16 lanes;
// beyond, a slice is drawn 1 ns long and says so).
//
// The diagnosis's root cause is marked: the operations it names (the
// collective #seq on the deviating ranks, the sends and receives of a
// point-to-point mismatch) are named "ROOT CAUSE: ..." in the category
// `root_cause`, and an instant with the finding's words sits on each named
// rank's process track. A straggler warning puts a "STRAGGLER: rank R"
// instant on its process track (category `straggler`).
//
// A process that never called NCCL (the launcher, a shell) is left out.
//
// Times are CLOCK_REALTIME nanoseconds from each trace's clock anchors, so
// that the processes of several hosts line up as well as their clocks do.
//
// Thread-safety: one writer per output; single-threaded.

#ifndef NCCLWATCH_DECODER_REPORT_TIMELINE_H_
#define NCCLWATCH_DECODER_REPORT_TIMELINE_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/job_analysis.h"
#include "model/process_trace.h"

namespace ncclwatch::perfetto {
class TracePacket;
}

namespace ncclwatch::decoder {

// What a timeline holds, for the command's summary and the tests.
struct TimelineStats {
  uint64_t processes = 0;
  uint64_t comm_tracks = 0;  // communicator tracks, lanes not counted
  uint64_t lanes = 0;        // extra lanes of overlapping slices
  uint64_t slices = 0;
  uint64_t instants = 0;
  uint64_t flow_events = 0;  // events that carry a flow id
  uint64_t root_cause_marks = 0;
  uint64_t arrival_slices = 0;   // on the arrival-skew tracks
  uint64_t straggler_marks = 0;  // instants and arrival slices marked STRAGGLER
  uint64_t gpu_slices = 0;       // on the GPU tracks: from the GPU reaching an operation to done
};

class TimelineWriter {
 public:
  // Packets are written to `out` as they are made (no whole-trace buffer).
  explicit TimelineWriter(std::ostream& out);

  // What to mark: the root causes and stragglers of `d`, with `job`'s
  // processes (by index) to tell which process each names; and the job's
  // arrival skew, written at once. Call before the processes.
  void MarkRootCauses(const JobAnalysis& job, const Diagnosis& d);

  // One process: `process` is its index in the JobAnalysis the diagnosis
  // came from (-1 when none).
  void AddProcess(const ProcessTrace& trace, int process);

  const TimelineStats& stats() const { return stats_; }

 private:
  // The hosts' clock offsets of the job MarkRootCauses was given (it
  // outlives the writer), or nullptr: each process drawn on its own clock.
  const HostClocks* clocks_ = nullptr;
  struct Mark {
    std::string title;   // "ROOT CAUSE: collective_mismatch"
    std::string detail;  // the finding's words
    int64_t when_ns = 0;
    const char* category = "root_cause";  // or "straggler"
  };
  // One track per communicator, "arrival skew comm c06c50", a slice per
  // collective every member issued (analysis/arrival_skew.h) from the first
  // member's enqueue to the last's, named by who came last; those of a
  // straggler (`stragglers`: communicator, member rank) marked STRAGGLER.
  void WritePacket(const perfetto::TracePacket& packet);
  void WriteArrivalSkew(const JobAnalysis& job,
                        const std::set<std::pair<uint64_t, int32_t>>& stragglers);
  // (process index) -> what marks it; (process, comm, seq) -> a marked
  // collective; (process, comm, send, peer, seq) -> a marked send or receive.
  std::map<int, std::vector<size_t>> process_marks_;
  // Values index marks_.
  std::map<std::tuple<int, uint64_t, uint64_t>, size_t> collective_marks_;
  std::map<std::tuple<int, uint64_t, bool, int32_t, uint64_t>, size_t> p2p_marks_;
  std::vector<Mark> marks_;

  std::ostream& out_;
  std::set<int32_t> pids_used_;
  uint32_t next_sequence_ = 1;
  int64_t next_free_pid_ = 0;
  TimelineStats stats_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_TIMELINE_H_

// StreamBuilder: a process's CommStreams (model/comm_stream.h), built from
// its collectives and point-to-point calls handed over one at a time in
// timeline order.
//
// RecordImporter hands each call over as it adds the row, while the row is
// still in the cache, so loading a trace never walks its tables a second
// time; BuildStreams hands over the rows of tables filled some other way
// (tests), merged by `order`. Both give the same streams: Finish lays them
// out as BuildStreams always has, the formed memberships' streams first (in
// the order of ProcessTrace::comms), then the others in the order their
// first call came.
//
//   StreamBuilder b;
//   b.AddCollective(i, trace.collectives[i]);  // every call, in timeline order
//   b.AddP2p(j, trace.p2p[j]);
//   b.Finish(&trace);  // after the last record: memberships and stats are known
//
// Thread-safety: one builder per ProcessTrace, on one thread.

#ifndef NCCLWATCH_DECODER_MODEL_STREAM_BUILDER_H_
#define NCCLWATCH_DECODER_MODEL_STREAM_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "model/comm_stream.h"
#include "model/events.h"

namespace ncclwatch::decoder {

struct ProcessTrace;

// How many collectives a rank has issued on a communicator once it issued
// collective #seq (the shim numbers them per communicator from 0): seq + 1,
// whether or not the trace holds the ones before (a ring that wrapped lost
// them, but not their number). A crafted number near 2^63 must not
// overflow the count.
inline int64_t CollectivesIssued(uint64_t seq) {
  return seq < static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(seq) + 1 : INT64_MAX;
}

class StreamBuilder {
 public:
  // A send's or receive's collectives before it where none of its
  // communicator's had come yet: Finish makes it 0, or -1 where the trace
  // lost records (those may have held some).
  static constexpr int64_t kNoneYet = INT64_MIN;
  // A send's or receive's count as Finish leaves it, in a trace whose ring
  // lost records or not.
  static int64_t Settled(int64_t before, bool lost_records) {
    return before != kNoneYet ? before : (lost_records ? -1 : 0);
  }
  static bool LostRecords(const ProcessTrace& trace);
  // Whether its ring lost slots among those it holds (torn, or lapped by a
  // live writer while read): a collective lost there would leave the sends
  // after it counting one too few, so no send's count is known (-1).
  static bool LostInside(const ProcessTrace& trace);

  // The collective at `index` of ProcessTrace::collectives, the process's
  // next call into NCCL. Inlined: the importer calls it for every row.
  void AddCollective(size_t index, const CollectiveEvent& e) {
    if (e.comm == 0 || e.rank < 0 || !Accepted(e.result)) return;
    Calls& s = Of(e.comm, e.rank);
    s.issued = CollectivesIssued(e.seq);
    s.collectives.push_back(static_cast<uint32_t>(index));
    if (e.result == kResultPending) s.pending.push_back(static_cast<uint32_t>(index));
  }
  // Streams of an earlier trace, whose vectors' memory the new streams
  // reuse (cleared first): loading many traces one after another then
  // allocates, and faults in, their index vectors once, not once a trace.
  void Recycle(std::vector<CommStream>&& old);
  // The send or receive at `index` of ProcessTrace::p2p, likewise.
  void AddP2p(size_t index, const P2pEvent& e);
  // Replaces `trace->streams` with the streams built. Reads the trace's
  // memberships and stats (whether its ring lost records), which are only
  // known once every record is in. The builder is empty afterwards.
  void Finish(ProcessTrace* trace);

 private:
  // What one (communicator, rank) did, as the calls came.
  struct Calls {
    uint64_t comm = 0;
    int32_t rank = -1;
    int64_t issued = kNoneYet;  // after the last collective (CollectivesIssued)
    std::vector<uint32_t> collectives;
    std::vector<uint32_t> pending;
    std::vector<uint32_t> p2p;
    // Collectives issued before each send or receive; kNoneYet when none
    // had come, which Finish resolves once it knows whether any were lost.
    std::vector<int64_t> collectives_before_p2p;
  };

  // The entry of (comm, rank), made on first use. Consecutive calls are
  // almost always on the same communicator: the last one found is tried first.
  Calls& Of(uint64_t comm, int32_t rank) {
    if (last_ < calls_.size() && calls_[last_].comm == comm && calls_[last_].rank == rank)
      return calls_[last_];
    return Find(comm, rank);
  }
  Calls& Find(uint64_t comm, int32_t rank);

  std::vector<Calls> calls_;       // in the order of their first call
  std::vector<CommStream> spare_;  // Recycle's, taken from the back
  std::map<std::pair<uint64_t, int32_t>, size_t> index_;
  size_t last_ = SIZE_MAX;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_STREAM_BUILDER_H_

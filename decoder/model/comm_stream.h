// CommStream: what one rank of one communicator did, in order, built once
// per (communicator, rank) when a process trace is loaded.
//
// It holds the rank's numbered calls (model/numbering.h): its collectives by
// sequence number and its sends and receives, as indices into the process's
// tables. Because NCCL forbids using one communicator from two threads at
// once, a rank's collective numbers are consecutive; a ring that wrapped
// keeps only a suffix of them, so `holds_start` says whether the stream
// still begins at the communicator's beginning (#0, or no collective yet
// and nothing overwritten).
//
// Thread-safety: immutable after ProcessTrace is loaded.

#ifndef NCCLWATCH_DECODER_MODEL_COMM_STREAM_H_
#define NCCLWATCH_DECODER_MODEL_COMM_STREAM_H_

#include <cstdint>
#include <vector>

namespace ncclwatch::decoder {

struct CommStream {
  uint64_t comm = 0;
  int32_t rank = -1;
  int membership = -1;  // index into ProcessTrace::comms, -1 when no init record survives

  // Numbered collectives, in call order: indices into ProcessTrace::collectives.
  std::vector<uint32_t> collectives;
  // Those of them whose call had not returned when the trace was read
  // (result pending), in call order: indices into ProcessTrace::collectives.
  std::vector<uint32_t> pending_collectives;
  // Numbered sends and receives, in call order: indices into ProcessTrace::p2p,
  // and for each, how many collectives of this communicator the rank had
  // issued before it: the number after the last collective's before it
  // (model/stream_builder.h CollectivesIssued), 0 where none came and the
  // trace lost nothing, -1 where none came but the trace lost records, and
  // -1 for all where it lost slots among those it holds (LostInside).
  std::vector<uint32_t> p2p;
  std::vector<int64_t> collectives_before_p2p;

  // The trace holds this rank's calls on the communicator from its start.
  bool holds_start = false;
  bool any() const { return !collectives.empty(); }
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_COMM_STREAM_H_

// GrowJoin: one communicator ncclCommGrow made, under one identity in every
// trace.
//
// NCCL 2.32's ncclCommGrow gives the new communicator's ranks nothing in
// common the shim can see: the ranks it gains pass the grow id (a unique id
// the existing root made with ncclCommGetUniqueId) and record the
// communicator under that id's identity; the existing ranks pass their old
// communicator (only the root passes the id too) and record an identity
// derived from their parent (shim: CommIdForGrow). The existing root's
// membership holds both, the link. GrowJoin learns the links from each trace
// and renames the gained ranks' communicator to the existing ranks'
// identity, so every analysis sees one communicator.
//
//   existing rank   CommInitBegin call=ncclCommGrow parent=P  comm=D           -- kept
//   existing root   CommInitBegin call=ncclCommGrow parent=P  comm=D grow_id=G -- the link G->D
//   gained rank     CommInitBegin call=ncclCommGrow parent=0  comm=G grow_id=G -- renamed G->D
//
// What the ranks make from the grown communicator afterwards (splits,
// shrinks, grows) has identities derived from it, so from D on one side and
// G on the other: a gained rank's child is renamed to the child the existing
// ranks made with the same call, split index (the parent's count of them,
// the same on every rank as NCCL requires them in one order) and color or
// excluded ranks, learned from any existing rank's trace; and so on down.
//
// The gained ranks' traces are therefore joined after every other input
// (LoadJobInputs keeps a copy of each until then: memory for the gained
// ranks, which are few in a job). One whose root never comes keeps the grow
// id: its communicator is diagnosed apart and says why (findings:
// MissingTracesFacts::grow_unjoined).
//
// Thread-safety: single-threaded.

#ifndef NCCLWATCH_DECODER_MODEL_GROWN_COMMUNICATORS_H_
#define NCCLWATCH_DECODER_MODEL_GROWN_COMMUNICATORS_H_

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "model/process_trace.h"

namespace ncclwatch::decoder {

class GrowJoin {
 public:
  // Learns what `trace` (not a gained rank's) holds: an existing root's
  // link, and the identities of communicators derived from others.
  void Learn(const ProcessTrace& trace);
  // Whether `trace` is a gained rank of some grow: it has a membership made
  // by ncclCommGrow without a parent, under its grow id.
  static bool Gained(const ProcessTrace& trace);
  // Renames the gained communicators of `trace` whose link is known, and
  // the communicators derived from them that an existing rank made too;
  // false when it renamed nothing.
  bool Join(ProcessTrace* trace) const;

 private:
  // How a communicator was derived from its parent: (parent, init call,
  // split index, color, excluded ranks).
  using Derivation = std::tuple<uint64_t, uint32_t, uint32_t, int32_t, std::vector<int32_t>>;
  std::map<uint64_t, uint64_t> links_;          // grow id -> the existing ranks' identity
  std::map<Derivation, uint64_t> derivations_;  // -> the identity derived
};

// Every event, stream and membership of a communicator `renames` names
// becomes the communicator it maps to, and so does every membership's
// parent (a membership keeps its grow_id).
void RenameCommunicators(ProcessTrace* trace, const std::map<uint64_t, uint64_t>& renames);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_GROWN_COMMUNICATORS_H_

// Importers by record family: each turns the bodies of one family of
// trace.proto records into rows of a ProcessTrace's tables, and registers
// for the body numbers it handles (as Perfetto's trace_processor modules
// register for the packet fields they parse):
//
//   CallImporters          collective, p2p, group, api,         calls.cc
//                          one_sided, coll_config
//   ProcessImporters       process_start, process_end,          process.cc
//                          time_anchor, module, inventory,
//                          fatal_signal
//   CommunicatorImporters  comm_init_begin, comm_init_end,      communicators.cc
//                          comm_end
//   ForensicsImporters     sys_call, nccl_error, cuda_call,     forensics.cc
//                          nccl_not_seen
//   CompletionImporters    completion_tracking, progress,       completion.cc
//                          heartbeat, stall, cuda_error,
//                          untracked
//   RendezvousImporters    socket_activity                      rendezvous.cc
//
// RecordImporter (model/record_importer.h) reads a record's envelope (its
// time, thread and body) and hands the body to the importer registered for
// its number; a body no family registers is skipped, as the schema's
// append-only rule allows. Each importer reads its body with WireReader,
// skips fields it does not know, and returns false for a body that is not
// well-formed protobuf (the record is then counted as unparsed; a row it
// began is taken back). tests/unit/importers_test.cc checks that every body
// of trace.proto has exactly one importer, and each family against
// libprotobuf.
//
// Adding a record kind: its message in trace.proto, a row (model/events.h)
// and a table (model/process_trace.h), and one importer in the family it
// belongs to.
//
// Thread-safety: importers are pure functions of their context; one
// ProcessTrace is imported on one thread.

#ifndef NCCLWATCH_DECODER_MODEL_IMPORT_BODY_IMPORTER_H_
#define NCCLWATCH_DECODER_MODEL_IMPORT_BODY_IMPORTER_H_

#include <cstdint>

#include "absl/types/span.h"
#include "model/process_trace.h"
#include "model/stream_builder.h"

namespace ncclwatch::decoder::importing {

// One record being imported: where its rows go, and its envelope.
struct ImportContext {
  ProcessTrace* trace = nullptr;
  StreamBuilder* streams = nullptr;  // collectives and point-to-point calls, as they are added
  uint64_t order = 0;                // its place in the process's timeline
  uint64_t t = 0;                    // Record.t, the trace clock
  uint32_t thread = 0;               // Record.thread
};

// Decodes one body into the trace's tables; false if it is malformed.
using BodyImportFn = bool (*)(ImportContext& context, absl::Span<const uint8_t> body);

// An importer and the body it registers for (a trace.proto Record field).
struct BodyImporter {
  uint32_t body;
  BodyImportFn import;
};

absl::Span<const BodyImporter> CallImporters();
absl::Span<const BodyImporter> ProcessImporters();
absl::Span<const BodyImporter> CommunicatorImporters();
absl::Span<const BodyImporter> ForensicsImporters();
absl::Span<const BodyImporter> CompletionImporters();
absl::Span<const BodyImporter> RendezvousImporters();

// A GpuTime body's fields into `row` (its order and t are the caller's;
// fields the body lacks keep what `row` held); false if it is malformed.
// ImportGpuTime's reading.
bool ReadGpuTime(absl::Span<const uint8_t> body, GpuTimeEvent* row);
// Its communicator alone (the last comm field; 0 where none), the other
// fields passed over: false exactly where ReadGpuTime finds the body
// malformed. What a reading that counts GPU times needs of one.
bool ReadGpuTimeComm(absl::Span<const uint8_t> body, uint64_t* comm);

// Every family, for the dispatch table and the tests.
inline constexpr absl::Span<const BodyImporter> (*kFamilies[])() = {
    CallImporters,      ProcessImporters,    CommunicatorImporters,
    ForensicsImporters, CompletionImporters, RendezvousImporters};

}  // namespace ncclwatch::decoder::importing

#endif  // NCCLWATCH_DECODER_MODEL_IMPORT_BODY_IMPORTER_H_

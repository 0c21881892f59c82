// RecordImporter: trace.proto records, as bytes, into a ProcessTrace's tables.
//
// Each record is decoded straight from its bytes with WireReader
// (trace/wire_reader.h): the per-call records (collectives, sends and
// receives, groups, other API calls) become table rows without any
// allocation beyond the table's own growth; the rare records (identity,
// modules, inventory, system calls, errors) copy their strings. Fields this
// version does not know are skipped, as the schema's append-only rule
// allows; a record that is not well-formed protobuf is counted in
// ProcessTrace::unparsed_records and otherwise ignored.
//
// Records must be imported in timeline order (TraceFile::ForEachRecord's).
//
// Thread-safety: one importer per ProcessTrace, on one thread.

#ifndef NCCLWATCH_DECODER_MODEL_RECORD_IMPORTER_H_
#define NCCLWATCH_DECODER_MODEL_RECORD_IMPORTER_H_

#include <cstdint>

#include "absl/types/span.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

class RecordImporter {
 public:
  explicit RecordImporter(ProcessTrace* trace) : p_(trace) {}

  // Decodes one record and adds it to the trace; false if it is malformed.
  bool Import(absl::Span<const uint8_t> bytes);

 private:
  ProcessTrace* p_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_RECORD_IMPORTER_H_

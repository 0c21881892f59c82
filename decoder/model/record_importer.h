// RecordImporter: trace.proto records, as bytes, into a ProcessTrace's tables.
//
// It reads a record's envelope (its time, thread and body) and hands the
// body to the importer its family registered for the body's number
// (model/import/body_importer.h: calls, the process, communicators,
// forensics, completion); call slots (format 2's fixed-layout collectives,
// sends and receives and groups) are copied field by field
// (model/import/call_slot_import.h), and so are GPU-time slots (format
// 4). The per-call records become table rows without any allocation beyond
// the table's own growth; the rare records (identity, modules, inventory,
// system calls, errors) copy their strings.
// Fields this version does not know are skipped, and so are bodies no
// family registers, as the schema's append-only rule allows; a record that
// is not well-formed protobuf is counted in ProcessTrace::unparsed_records
// and otherwise ignored.
//
// Records must be imported in timeline order (TraceFile::ForEachRecord's).
// Each collective, send and receive is handed to a StreamBuilder as its row
// is added, so Finish builds the trace's streams without walking its tables
// again (model/stream_builder.h).
//
// Thread-safety: one importer per ProcessTrace, on one thread.

#ifndef NCCLWATCH_DECODER_MODEL_RECORD_IMPORTER_H_
#define NCCLWATCH_DECODER_MODEL_RECORD_IMPORTER_H_

#include <cstdint>

#include "absl/types/span.h"
#include "model/process_trace.h"
#include "model/stream_builder.h"

namespace ncclwatch::decoder {

class RecordImporter {
 public:
  explicit RecordImporter(ProcessTrace* trace) : p_(trace) {}

  // Decodes one record and adds it to the trace; false if it is malformed.
  bool Import(absl::Span<const uint8_t> bytes);
  // The same, but a GPU time (a GpuTime record: one per operation, most of
  // a GPU rank's records) is not made a row: `*gpu_time` is set and its
  // communicator put in `*gpu_comm`, for a reading that only counts them
  // (LightReading::count_gpu_times). It still takes its place in the
  // timeline, and is malformed where Import finds it so.
  bool Import(absl::Span<const uint8_t> bytes, bool* gpu_time, uint64_t* gpu_comm);

  // A call slot (TraceFile::ForEachEntry's kind and its 112-byte payload),
  // read straight from its fixed layout into the table its kind names:
  // the same row Import makes of the Record the slot stands for
  // (trace/call_slot.h). False for a kind that is not a call slot's or a
  // payload of the wrong size.
  bool ImportCallSlot(uint8_t kind, absl::Span<const uint8_t> payload);

  // A GPU-time slot (ForEachEntry's NCCLWATCH_SLOT_GPU_TIME and its 112-byte
  // payload, format 4) read straight from its fixed layout: the row Import
  // makes of the Record it stands for (trace/gpu_time_slot.h). With
  // `counted_comm`, not made a row but its communicator put there, as
  // Import's counting form does. False for a payload of the wrong size.
  bool ImportGpuTimeSlot(absl::Span<const uint8_t> payload, uint64_t* counted_comm = nullptr);

  // The streams of a trace loaded before, whose memory the new streams
  // reuse (StreamBuilder::Recycle).
  void Recycle(std::vector<CommStream>&& old) { streams_.Recycle(std::move(old)); }

  // After the last record: what FinishProcessTrace does (the clock anchors
  // sorted, the streams built), from the calls this importer added. Only for
  // a trace whose every collective and point-to-point row it added.
  // `restore_held`: false for a reading that keeps no collective rows
  // (LightReading), whose caller restores the holds itself
  // (RestoreHeldProgress).
  void Finish(bool restore_held = true);

 private:
  // Import's body; `gpu_comm` null: a GPU time becomes a row.
  bool ImportRecord(absl::Span<const uint8_t> bytes, bool* gpu_time, uint64_t* gpu_comm);

  ProcessTrace* p_;
  StreamBuilder streams_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_RECORD_IMPORTER_H_

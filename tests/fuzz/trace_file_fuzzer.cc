// Fuzzes the trace file reader (decoder/trace/trace_file.h) with arbitrary
// bytes: TraceFile::Open must refuse what is not a trace with a reason, and
// ForEachRecord must yield only slots within the file, never read outside it.
//
// The bytes go to a file in a scratch folder under $TMPDIR (fuzz.sh keeps
// it on the fuzz build's own folder), opened by its path as a user's file
// would be. Not a memfd's /proc/self/fd path: traces are opened without
// following a final link (trace_file.cc), and that path is one, so every
// input was refused at open and nothing past it was fuzzed.
// Seeds: traces written by the shim's own writer (make_trace_seeds).

#include <stddef.h>
#include <stdint.h>

#include <cstdlib>
#include <string>

#include "fuzz_support.h"
#include "trace/trace_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ncclwatch::fuzz::ScratchDir scratch;  // removed at exit
  const std::string path = scratch.Write("input.trace", data, size);
  {
    absl::StatusOr<std::unique_ptr<ncclwatch::decoder::TraceFile>> file =
        ncclwatch::decoder::TraceFile::Open(path);
    if (file.ok()) {
      ncclwatch::decoder::TraceFileStats stats;
      uint64_t bytes_seen = 0;
      (*file)->ForEachRecord(
          [&](bool, uint64_t, absl::Span<const uint8_t> bytes) {
            // Touch every byte, so that a span pointing outside the mapping is caught.
            for (uint8_t b : bytes) bytes_seen += b;
          },
          &stats);
      if (stats.records > (*file)->SlotsInUse()) abort();  // more records than slots: a reader bug
      (void)bytes_seen;
    } else if (file.status().message().empty()) {
      abort();  // a refusal must say why
    }
  }
  return 0;
}

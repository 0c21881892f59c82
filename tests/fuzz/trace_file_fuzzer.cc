// Fuzzes the trace file reader (decoder/trace/trace_file.h) with arbitrary
// bytes: TraceFile::Open must refuse what is not a trace with a reason, and
// ForEachRecord must yield only slots within the file, never read outside it.
//
// The bytes go to an anonymous memory file (memfd), opened by its
// /proc/self/fd path as a user's file would be: nothing touches the disk.
// Seeds: traces written by the shim's own writer (make_trace_seeds).

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "trace/trace_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("ncclwatch-fuzz-trace", MFD_CLOEXEC);
  if (fd < 0) abort();
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) abort();
    done += static_cast<size_t>(n);
  }
  {
    absl::StatusOr<std::unique_ptr<ncclwatch::decoder::TraceFile>> file =
        ncclwatch::decoder::TraceFile::Open("/proc/self/fd/" + std::to_string(fd));
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
  close(fd);
  return 0;
}

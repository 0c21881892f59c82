// Fuzzes the node summary reader (decoder/summary/summary_reader.h) with
// arbitrary bytes: SummaryReader::Open must refuse what is not a whole
// summary with a reason, and Next must rebuild each trace it holds, or
// refuse it with a reason, never reading outside the file nor allocating
// more than its bytes justify.
//
// The first byte picks the mode: odd, the rest is the file as it is (the
// header's checks: magic, version, length, checksum); even, the rest is a
// summary's body, given a well-formed header and checksum here, so that the
// fuzzer explores the body's parser rather than the checksum. The bytes go
// to an anonymous memory file (memfd), opened by its /proc/self/fd path as a
// user's file would be: nothing touches the disk.

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "model/process_trace.h"
#include "summary/byte_cursor.h"
#include "summary/summary_format.h"
#include "summary/summary_reader.h"

namespace {

using namespace ncclwatch::decoder;

std::string Wrapped(const uint8_t* body, size_t n) {
  std::string file;
  ByteSink h(&file);
  h.Raw(kSummaryMagic, sizeof(kSummaryMagic));
  h.U32(kSummaryVersion);
  h.U32(kSummaryHeaderBytes);
  h.U64(kSummaryHeaderBytes + n);
  h.U64(SummaryChecksum(body, n));
  h.Raw(body, n);
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string bytes = (data[0] & 1)
                                ? std::string(reinterpret_cast<const char*>(data + 1), size - 1)
                                : Wrapped(data + 1, size - 1);
  const int fd = memfd_create("ncclwatch-fuzz-summary", MFD_CLOEXEC);
  if (fd < 0) abort();
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) abort();
    done += static_cast<size_t>(n);
  }
  {
    absl::StatusOr<std::unique_ptr<SummaryReader>> r =
        SummaryReader::Open("/proc/self/fd/" + std::to_string(fd));
    if (r.ok()) {
      ProcessTrace trace;
      for (size_t i = 0; i <= (*r)->traces(); ++i) {
        absl::StatusOr<bool> more = (*r)->Next(&trace);
        if (!more.ok()) {
          if (more.status().message().empty()) abort();  // a refusal must say why
          break;
        }
        if (!*more) break;
        // Touch what was rebuilt: a row pointing outside a table is caught.
        uint64_t sum = 0;
        for (const CommStream& s : trace.streams)
          for (uint32_t c : s.collectives) sum += trace.collectives.at(c).seq;
        for (const LeftOutCalls& l : trace.left_out) sum += l.EndSeq();
        (void)sum;
      }
    } else if (r.status().message().empty()) {
      abort();
    }
  }
  close(fd);
  return 0;
}

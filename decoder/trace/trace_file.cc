#include "trace/trace_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ncclwatch/trace_fields.h"
#include "trace/wire_reader.h"

namespace ncclwatch::decoder {
namespace {

bool PowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

absl::Status Invalid(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", why));
}

}  // namespace

TraceFile::~TraceFile() {
  if (fd_ >= 0) close(fd_);
}

bool TraceFile::ReadAt(uint64_t offset, void* out, size_t n) const {
  if (map_ != nullptr) {
    if (offset > map_->size() || n > map_->size() - offset) return false;
    std::memcpy(out, map_->data() + offset, n);
    return !map_->shrank();  // zeros from past a shrunk file's end are no bytes of it
  }
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    const ssize_t got = pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

uint64_t TraceFile::LiveCursor(bool pinned) const {
  uint64_t v = 0;
  const size_t at = pinned ? offsetof(ncclwatch_ring_header, pinned_next)
                           : offsetof(ncclwatch_ring_header, ring_next);
  return ReadAt(at, &v, sizeof(v)) ? v : kNoCursor;
}

bool TraceFile::LiveClaimBlocksUsed() const {
  uint32_t v = 0;
  return ReadAt(offsetof(ncclwatch_ring_header, claim_blocks_used), &v, sizeof(v)) && v != 0;
}

uint64_t TraceFile::LiveOverflow() const {
  uint64_t v = 0;
  return ReadAt(offsetof(ncclwatch_ring_header, pinned_overflow), &v, sizeof(v)) ? v : 0;
}

absl::StatusOr<std::unique_ptr<TraceFile>> TraceFile::Open(const std::string& path, ReadMode mode) {
  // Non-blocking, so that a FIFO given as a trace cannot hang the open; not
  // through a symbolic link (the commands resolve a link they may follow
  // first: commands/input_files.h), so that a trace replaced by a link after
  // it was found is not read through it.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0 && errno == ELOOP) return Invalid(path, "a symbolic link, not followed");
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", strerror(errno)));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Invalid(path, "not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < NCCLWATCH_HEADER_REGION_BYTES) {
    char magic[8];
    const bool has_magic = size >= 8 && pread(fd, magic, 8, 0) == 8 &&
                           std::memcmp(magic, NCCLWATCH_RING_MAGIC, 8) == 0;
    close(fd);
    if (has_magic) {
      return Invalid(path, absl::StrFormat("truncated trace: %u bytes, not even the %u-byte header",
                                           size, NCCLWATCH_HEADER_REGION_BYTES));
    }
    return Invalid(path, "not an ncclwatch trace (too short)");
  }
  std::unique_ptr<TraceFile> f(new TraceFile());
  f->path_ = path;
  f->fd_ = fd;  // closed by the destructor from here on
  if (!f->ReadAt(0, &f->header_, sizeof(f->header_)))
    return Invalid(path, "cannot read the header");
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  const ncclwatch_ring_header& h = f->header_;

  if (std::memcmp(h.magic, NCCLWATCH_RING_MAGIC, 8) != 0)
    return Invalid(path, "not an ncclwatch trace (bad magic)");
  if (h.endian_check != NCCLWATCH_ENDIAN_CHECK) {
    return Invalid(path, "written on a machine of the other byte order");
  }
  if (h.format_version < NCCLWATCH_RING_FORMAT_OLDEST_READ ||
      h.format_version > NCCLWATCH_RING_FORMAT_VERSION) {
    return Invalid(path,
                   absl::StrFormat("trace file format %u; this ncclwatch reads formats %u to %u",
                                   h.format_version, NCCLWATCH_RING_FORMAT_OLDEST_READ,
                                   NCCLWATCH_RING_FORMAT_VERSION));
  }
  if (h.schema_version != NCCLWATCH_SCHEMA_VERSION) {
    return Invalid(path,
                   absl::StrFormat("records of schema version %u; this ncclwatch reads version %u",
                                   h.schema_version, NCCLWATCH_SCHEMA_VERSION));
  }
  if (h.header_bytes != sizeof(ncclwatch_ring_header) || h.slot_bytes != NCCLWATCH_SLOT_BYTES ||
      h.pointer_bytes != 8) {
    return Invalid(path, "header describes a layout this ncclwatch does not know");
  }
  if (h.clock != NCCLWATCH_CLOCK_MONOTONIC_NS && h.clock != NCCLWATCH_CLOCK_TSC) {
    return Invalid(path, absl::StrFormat("unknown clock %u", h.clock));
  }
  // Every offset and length is checked without wrapping: a crafted header
  // may hold any 64-bit values.
  const uint64_t slot = NCCLWATCH_SLOT_BYTES;
  constexpr uint64_t kMaxSlots = uint64_t{1}
                                 << 36;  // 8 TiB a region: far beyond any ring, far from wrapping
  constexpr uint64_t kMaxOffset = uint64_t{1} << 50;  // likewise
  if (!PowerOfTwo(h.pinned_slots) || !PowerOfTwo(h.ring_slots) || h.pinned_slots > kMaxSlots ||
      h.ring_slots > kMaxSlots || h.pinned_offset < NCCLWATCH_HEADER_REGION_BYTES ||
      h.pinned_offset > kMaxOffset || h.ring_offset > kMaxOffset || h.pinned_offset % slot != 0 ||
      h.ring_offset % slot != 0) {
    return Invalid(path, "header has impossible region sizes");
  }
  const uint64_t pinned_end =
      h.pinned_offset + h.pinned_slots * slot;  // < 2^50 + 2^43: cannot wrap
  const uint64_t expected = h.ring_offset + h.ring_slots * slot;
  if (h.ring_offset < pinned_end) return Invalid(path, "header has overlapping regions");
  if (h.file_bytes != expected)
    return Invalid(path, "header's file size does not match its regions");
  if (size < expected) {
    return Invalid(
        path, absl::StrFormat("truncated trace: %u bytes, its header says %u", size, expected));
  }
  f->header_.host[sizeof(f->header_.host) - 1] = '\0';
  // Read where it lies from here on (the header's size is the file's, or
  // less); copied out with pread when it cannot be mapped.
  if (mode == ReadMode::kMapped) f->map_ = MappedFile::Map(fd, expected);

  return f;
}

uint64_t TraceFile::SlotsInUse() const {
  const uint64_t pinned = LiveCursor(true), ring = LiveCursor(false);
  return (pinned == kNoCursor ? 0 : std::min(pinned, header_.pinned_slots)) +
         (ring == kNoCursor ? 0 : std::min(ring, header_.ring_slots));
}

bool IsProcessEnd(absl::Span<const uint8_t> record) {
  WireReader r(record);
  WireField f;
  while (r.Next(&f))
    if (f.number == fields::record::kProcessEnd && f.wire_type == 2) return true;
  return false;
}

uint64_t RecordTime(absl::Span<const uint8_t> record) {
  // The shim writes the time stamp first.
  const uint8_t* p = record.data();
  uint64_t t;
  if (!record.empty() && *p == 0x08 && ReadVarint(++p, record.data() + record.size(), &t)) return t;
  WireReader r(record);
  WireField f;
  while (r.Next(&f))
    if (f.number == 1 && f.wire_type == 0) return f.value;
  return 0;
}

}  // namespace ncclwatch::decoder

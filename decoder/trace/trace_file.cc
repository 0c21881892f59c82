#include "trace/trace_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trace/wire_reader.h"

namespace ncclwatch::decoder {
namespace {

bool PowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t Load64(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

absl::Status Invalid(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", why));
}

}  // namespace

TraceFile::~TraceFile() {
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

absl::StatusOr<std::unique_ptr<TraceFile>> TraceFile::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", strerror(errno)));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Invalid(path, "not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < NCCLWATCH_HEADER_REGION_BYTES) {
    char magic[8];
    const bool has_magic = size >= 8 && pread(fd, magic, 8, 0) == 8 && std::memcmp(magic, NCCLWATCH_RING_MAGIC, 8) == 0;
    close(fd);
    if (has_magic) {
      return Invalid(path, absl::StrFormat("truncated trace: %u bytes, not even the %u-byte header", size,
                                           NCCLWATCH_HEADER_REGION_BYTES));
    }
    return Invalid(path, "not an ncclwatch trace (too short)");
  }
  // Read once, front to back: a file of ordinary size is faulted in with one
  // call; a huge ring is read ahead as it goes.
  constexpr size_t kPopulateLimit = size_t{1} << 30;
  void* m = mmap(nullptr, size, PROT_READ, MAP_SHARED | (size <= kPopulateLimit ? MAP_POPULATE : 0), fd, 0);
  close(fd);
  if (m == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": cannot map: ", strerror(errno)));
  if (size > kPopulateLimit) madvise(m, size, MADV_SEQUENTIAL);
  std::unique_ptr<TraceFile> f(new TraceFile());
  f->path_ = path;
  f->data_ = static_cast<const uint8_t*>(m);
  f->size_ = size;
  std::memcpy(&f->header_, m, sizeof(f->header_));
  const ncclwatch_ring_header& h = f->header_;

  if (std::memcmp(h.magic, NCCLWATCH_RING_MAGIC, 8) != 0) return Invalid(path, "not an ncclwatch trace (bad magic)");
  if (h.endian_check != NCCLWATCH_ENDIAN_CHECK) {
    return Invalid(path, "written on a machine of the other byte order");
  }
  if (h.format_version != NCCLWATCH_RING_FORMAT_VERSION) {
    return Invalid(path, absl::StrFormat("trace file format %u; this ncclwatch reads format %u", h.format_version,
                                         NCCLWATCH_RING_FORMAT_VERSION));
  }
  if (h.schema_version != NCCLWATCH_SCHEMA_VERSION) {
    return Invalid(path, absl::StrFormat("records of schema version %u; this ncclwatch reads version %u",
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
  constexpr uint64_t kMaxSlots = uint64_t{1} << 36;   // 8 TiB a region: far beyond any ring, far from wrapping
  constexpr uint64_t kMaxOffset = uint64_t{1} << 50;  // likewise
  if (!PowerOfTwo(h.pinned_slots) || !PowerOfTwo(h.ring_slots) || h.pinned_slots > kMaxSlots ||
      h.ring_slots > kMaxSlots || h.pinned_offset < NCCLWATCH_HEADER_REGION_BYTES || h.pinned_offset > kMaxOffset ||
      h.ring_offset > kMaxOffset || h.pinned_offset % slot != 0 || h.ring_offset % slot != 0) {
    return Invalid(path, "header has impossible region sizes");
  }
  const uint64_t pinned_end = h.pinned_offset + h.pinned_slots * slot;  // < 2^50 + 2^43: cannot wrap
  const uint64_t expected = h.ring_offset + h.ring_slots * slot;
  if (h.ring_offset < pinned_end) return Invalid(path, "header has overlapping regions");
  if (h.file_bytes != expected) return Invalid(path, "header's file size does not match its regions");
  if (size < expected) {
    return Invalid(path, absl::StrFormat("truncated trace: %u bytes, its header says %u", size, expected));
  }
  f->header_.host[sizeof(f->header_.host) - 1] = '\0';
  return f;
}

void TraceFile::ReadRegion(bool pinned, uint64_t offset, uint64_t slots, uint64_t cursor, const RecordFn& fn,
                           TraceFileStats* stats) const {
  const uint64_t mask = slots - 1;
  const uint64_t first = pinned ? 0 : (cursor > slots ? cursor - slots : 0);
  const uint64_t last = pinned ? (cursor < slots ? cursor : slots) : cursor;
  if (!pinned) {
    stats->ring_claimed = cursor;
    stats->ring_overwritten = first;
  }
  // One record at a time, copied out of the mapping (the writer may be
  // overwriting it) into a buffer that holds the largest record.
  std::unique_ptr<uint8_t[]> record(new uint8_t[NCCLWATCH_MAX_RECORD_BYTES]);
  auto slot_at = [&](uint64_t idx) {
    return reinterpret_cast<const ncclwatch_slot_header*>(data_ + offset + (idx & mask) * NCCLWATCH_SLOT_BYTES);
  };
  uint64_t i = first;
  while (i < last) {
    const uint64_t start = i;
    const ncclwatch_slot_header* sh = slot_at(i);
    const uint64_t stamp = Load64(&sh->stamp);
    ncclwatch_slot_header copy;
    std::memcpy(&copy, sh, sizeof(copy));
    if (stamp != i + 1 || copy.length > NCCLWATCH_SLOT_PAYLOAD_BYTES) {
      ++stats->torn_slots;
      ++i;
      continue;
    }
    size_t length = 0;
    if (copy.kind == NCCLWATCH_SLOT_PADDING) {
      ++stats->padding_slots;
      ++i;
      continue;
    }
    if (copy.kind == NCCLWATCH_SLOT_SINGLE) {
      std::memcpy(record.get(), reinterpret_cast<const uint8_t*>(sh) + NCCLWATCH_SLOT_HEADER_BYTES, copy.length);
      length = copy.length;
      const bool still = Load64(&sh->stamp) == i + 1;
      ++i;
      if (!still) {
        ++stats->torn_slots;
        continue;
      }
    } else if (copy.kind == NCCLWATCH_SLOT_FIRST) {
      // Gather the record's slots; any gap or inconsistency discards all of them.
      const uint32_t total = copy.record_bytes;
      const uint64_t nslots = (uint64_t{total} + NCCLWATCH_SLOT_PAYLOAD_BYTES - 1) / NCCLWATCH_SLOT_PAYLOAD_BYTES;
      bool whole = total > NCCLWATCH_SLOT_PAYLOAD_BYTES && total <= NCCLWATCH_MAX_RECORD_BYTES &&
                   nslots <= NCCLWATCH_MAX_RECORD_SLOTS && nslots <= last - i;
      for (uint64_t j = 0; whole && j < nslots; ++j) {
        const ncclwatch_slot_header* part = slot_at(i + j);
        ncclwatch_slot_header pc;
        std::memcpy(&pc, part, sizeof(pc));
        const uint8_t want = j == 0               ? NCCLWATCH_SLOT_FIRST
                             : j + 1 == nslots    ? NCCLWATCH_SLOT_LAST
                                                  : NCCLWATCH_SLOT_MIDDLE;
        const uint64_t expect_len =
            j + 1 == nslots ? total - j * NCCLWATCH_SLOT_PAYLOAD_BYTES : NCCLWATCH_SLOT_PAYLOAD_BYTES;
        if (Load64(&part->stamp) != i + j + 1 || pc.kind != want || pc.length != expect_len ||
            pc.record_bytes != total) {
          whole = false;
          break;
        }
        std::memcpy(record.get() + length, reinterpret_cast<const uint8_t*>(part) + NCCLWATCH_SLOT_HEADER_BYTES,
                    pc.length);
        length += pc.length;
        if (Load64(&part->stamp) != i + j + 1) whole = false;
      }
      if (!whole) {
        ++stats->torn_slots;
        ++i;
        continue;
      }
      i += nslots;
    } else {
      // A MIDDLE/LAST whose FIRST is gone (overwritten across the ring's
      // oldest edge), or an unknown kind.
      ++stats->torn_slots;
      ++i;
      continue;
    }
    if (length == 0) continue;
    ++stats->records;
    fn(pinned, start, absl::MakeConstSpan(record.get(), length));
  }
}

uint64_t TraceFile::SlotsInUse() const {
  const auto* live = reinterpret_cast<const ncclwatch_ring_header*>(data_);
  return std::min(Load64(&live->pinned_next), header_.pinned_slots) +
         std::min(Load64(&live->ring_next), header_.ring_slots);
}

uint64_t RecordTime(absl::Span<const uint8_t> record) {
  WireReader r(record);
  WireField f;
  while (r.Next(&f))
    if (f.number == 1 && f.wire_type == 0) return f.value;
  return 0;
}

void TraceFile::ForEachRecord(const RecordFn& fn, TraceFileStats* stats) const {
  const auto* live = reinterpret_cast<const ncclwatch_ring_header*>(data_);
  // Cursors are read once: records written after this point are not seen.
  const uint64_t pinned_next = Load64(&live->pinned_next);
  const uint64_t ring_next = Load64(&live->ring_next);
  stats->pinned_overflow = Load64(&live->pinned_overflow);
  // The pinned region is small (process identity, modules, communicator
  // creation and end): hold its records, and hand each out just before the
  // first ring record that is later, so both regions come out in the order
  // they were written.
  struct Held {
    uint64_t t;
    uint64_t index;
    std::vector<uint8_t> bytes;
  };
  std::vector<Held> pinned;
  ReadRegion(
      true, header_.pinned_offset, header_.pinned_slots, pinned_next,
      [&](bool, uint64_t index, absl::Span<const uint8_t> bytes) {
        pinned.push_back({RecordTime(bytes), index, std::vector<uint8_t>(bytes.begin(), bytes.end())});
      },
      stats);
  // Pinned records are claimed in order, but threads can take their time
  // stamps in a different order than they claim: sort by time, stably.
  std::stable_sort(pinned.begin(), pinned.end(), [](const Held& a, const Held& b) { return a.t < b.t; });
  size_t next = 0;
  ReadRegion(
      false, header_.ring_offset, header_.ring_slots, ring_next,
      [&](bool, uint64_t index, absl::Span<const uint8_t> bytes) {
        if (next < pinned.size()) {
          const uint64_t t = RecordTime(bytes);
          for (; next < pinned.size() && pinned[next].t <= t; ++next)
            fn(true, pinned[next].index, absl::MakeConstSpan(pinned[next].bytes));
        }
        fn(false, index, bytes);
      },
      stats);
  for (; next < pinned.size(); ++next) fn(true, pinned[next].index, absl::MakeConstSpan(pinned[next].bytes));
}

}  // namespace ncclwatch::decoder

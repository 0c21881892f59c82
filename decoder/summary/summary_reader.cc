#include "summary/summary_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "model/record_importer.h"
#include "summary/byte_cursor.h"
#include "summary/call_digest.h"
#include "summary/summary_format.h"
#include "trace/call_slot.h"

namespace ncclwatch::decoder {
namespace {

constexpr int kGranules = NCCLWATCH_SLOT_PAYLOAD_BYTES / 8;

// A file descriptor closed on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

int OpenRegular(const std::string& path, struct stat* st) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

// Each kept send's and receive's count of the collectives its rank had
// issued before it, as the writer counted them over the whole trace
// (summary_format.h, version 8; `counted`: (its P2pEvent, its count)), in
// place of the reader's own, which cannot see the collectives left out.
// Where none were written (a trace whose calls are not all call slots),
// the writer kept whole the collectives of every stream with sends: the
// reader's own count is the trace's.
void CarryCounts(const std::vector<std::pair<size_t, int64_t>>& counted, ProcessTrace* p) {
  if (counted.empty()) return;
  constexpr int64_t kNone = INT64_MIN;
  std::vector<int64_t> of_event(p->p2p.size(), kNone);
  for (const auto& [event, n] : counted) of_event[event] = n;
  for (CommStream& s : p->streams)
    for (size_t k = 0; k < s.p2p.size(); ++k)
      if (of_event[s.p2p[k]] != kNone) s.collectives_before_p2p[k] = of_event[s.p2p[k]];
}

// Each stream's kept collectives digested by block (model/left_out_calls.h
// KeptBlocks), as the gap analysis would digest them.
void DigestKeptBlocks(ProcessTrace* p) {
  p->kept_blocks.clear();
  for (const CommStream& s : p->streams) p->kept_blocks.push_back(DigestKeptCalls(*p, s));
}

}  // namespace

bool IsSummaryFile(const std::string& path) {
  struct stat st;
  Fd f{OpenRegular(path, &st)};
  if (f.fd < 0 || st.st_size < static_cast<off_t>(sizeof(kSummaryMagic))) return false;
  char magic[sizeof(kSummaryMagic)];
  return pread(f.fd, magic, sizeof(magic), 0) == static_cast<ssize_t>(sizeof(magic)) &&
         std::memcmp(magic, kSummaryMagic, sizeof(magic)) == 0;
}

absl::StatusOr<std::unique_ptr<SummaryReader>> SummaryReader::Open(const std::string& path) {
  struct stat st;
  Fd f{OpenRegular(path, &st)};
  if (f.fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot be read as a summary: ", std::strerror(errno)));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kSummaryHeaderBytes)
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a summary (", size, " bytes)"));
  if (size > kMaxSummaryBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", size,
                                                   " bytes, more than a summary (",
                                                   kMaxSummaryBytes >> 20, " MiB) may hold"));
  }
  std::unique_ptr<SummaryReader> r(new SummaryReader());
  r->path_ = path;
  r->bytes_.resize(size);
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = pread(f.fd, r->bytes_.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": summary cut short while read (", done, " of ", size, " bytes)"));
    }
    done += static_cast<uint64_t>(n);
  }
  if (absl::Status s = r->Parse(); !s.ok()) return s;
  return r;
}

absl::StatusOr<std::unique_ptr<SummaryReader>> SummaryReader::FromBytes(const std::string& bytes,
                                                                        const std::string& name) {
  if (bytes.size() < kSummaryHeaderBytes || bytes.size() > kMaxSummaryBytes)
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not a summary (", bytes.size(), " bytes)"));
  std::unique_ptr<SummaryReader> r(new SummaryReader());
  r->path_ = name;
  r->bytes_.assign(bytes.begin(), bytes.end());
  if (absl::Status s = r->Parse(); !s.ok()) return s;
  return r;
}

absl::Status SummaryReader::Parse() {
  ByteCursor h(bytes_.data(), bytes_.size());
  char magic[sizeof(kSummaryMagic)];
  h.Raw(magic, sizeof(magic));
  if (std::memcmp(magic, kSummaryMagic, sizeof(magic)) != 0)
    return absl::InvalidArgumentError(absl::StrCat(path_, ": not a summary (wrong magic)"));
  const uint32_t version = h.U32();
  if (version != kSummaryVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": summary version ", version, ", this ncclwatch reads version ", kSummaryVersion));
  }
  const uint32_t header_bytes = h.U32();
  const uint64_t file_bytes = h.U64();
  const uint64_t checksum = h.U64();
  if (header_bytes != kSummaryHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": summary header of ", header_bytes,
                                                   " bytes, not ", kSummaryHeaderBytes));
  }
  if (file_bytes != bytes_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": torn or cut summary: its header says ",
                                                   file_bytes, " bytes, the file holds ",
                                                   bytes_.size()));
  }
  const uint8_t* body = bytes_.data() + kSummaryHeaderBytes;
  const size_t body_bytes = bytes_.size() - kSummaryHeaderBytes;
  if (SummaryChecksum(body, body_bytes) != checksum) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": torn or altered summary: its checksum does not match"));
  }
  ByteCursor c(body, body_bytes);
  host_ = std::string(c.String(kMaxSummaryString));
  window_ = c.Varint();
  const uint64_t block = c.Varint();
  const std::string_view inventory = c.String(NCCLWATCH_MAX_RECORD_BYTES);
  const uint64_t traces = c.Varint();
  if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat(path_, ": malformed summary header"));
  if (block != kLeftOutBlock) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": summary of blocks of ", block,
                                                   " calls, this ncclwatch reads blocks of ",
                                                   kLeftOutBlock, ": summarize the node again"));
  }
  if (!inventory.empty()) {
    node_inventory_.emplace();
    if (!node_inventory_->Parse(absl::MakeConstSpan(
            reinterpret_cast<const uint8_t*>(inventory.data()), inventory.size()))) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": malformed summary: the node's inventory is not a record"));
    }
  }
  if (traces > kMaxSummaryTraces) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": summary claims ", traces, " traces, more than ", kMaxSummaryTraces));
  }
  for (uint64_t i = 0; i < traces; ++i) {
    const uint64_t n = c.Varint();
    const size_t offset = static_cast<size_t>(c.here() - bytes_.data());
    c.Section(n);
    if (!c.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": malformed summary: trace ", i, "'s section runs past the end"));
    }
    sections_.emplace_back(offset, static_cast<size_t>(n));
  }
  const uint64_t unreadable = c.Varint();
  for (uint64_t i = 0; c.ok() && i < unreadable && i < kMaxSummaryTraces; ++i) {
    const std::string_view p = c.String(kMaxSummaryString);
    const std::string_view why = c.String(kMaxSummaryString);
    const uint8_t flags = c.U8();
    if ((flags & ~kSummaryMayHoldTraces) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": malformed summary: an unreadable trace's flags are ", flags));
    }
    unreadable_.push_back({absl::StrCat(host_, ":", std::string(p)), std::string(why),
                           (flags & kSummaryMayHoldTraces) != 0});
  }
  if (!c.ok() || unreadable > kMaxSummaryTraces || c.left() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": malformed summary: its list of unreadable traces does not add up"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> SummaryReader::Next(ProcessTrace* trace) {
  if (next_ >= sections_.size()) return false;
  const size_t i = next_++;
  if (absl::Status s = ReadTrace(i, trace); !s.ok()) return s;
  return true;
}

absl::Status SummaryReader::ReadTrace(size_t index, ProcessTrace* trace) const {
  auto malformed = [&](const char* what) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": malformed summary: trace ", index, ": ", what));
  };
  ProcessTrace& p = *trace;
  std::vector<CommStream> old_streams = std::move(p.streams);
  p.Reset();
  ByteCursor c(bytes_.data() + sections_[index].first, sections_[index].second);
  const std::string_view path = c.String(kMaxSummaryString);
  p.path = absl::StrCat(host_, ":", std::string(path));
  p.summary = path_;
  p.summary_host = host_;
  p.clock = c.U32();
  p.pid = c.U32();
  p.created_realtime_ns = c.U64();
  p.host = std::string(c.String(kMaxSummaryString));
  p.read_ns = static_cast<int64_t>(c.U64());
  TraceFileStats stats;
  for (uint64_t* v :
       {&stats.ring_claimed, &stats.ring_overwritten, &stats.torn_slots, &stats.unwritten_slots,
        &stats.pinned_overflow, &stats.padding_slots, &stats.records, &stats.lapped_slots})
    *v = c.Varint();
  const uint8_t flags = c.U8();
  stats.truncated = (flags & 1) != 0;
  stats.read_again = (flags & 2) != 0;
  const uint64_t records = c.Varint();
  const uint64_t unparsed = c.Varint();
  p.left_out_groups = c.Varint();
  const uint64_t gpu_comms = c.Varint();
  // Two bytes at least each: bounded by the section before it is allocated.
  if (!c.ok() || gpu_comms > c.left() / 2) return malformed("more GPU-time counts than bytes");
  p.left_out_gpu_times.resize(gpu_comms);
  for (size_t k = 0; k < p.left_out_gpu_times.size(); ++k) {
    ProcessTrace::LeftOutGpuTimes& l = p.left_out_gpu_times[k];
    l.comm = c.Varint();
    l.count = c.Varint();
    if (!c.ok()) return malformed("its GPU-time counts are cut short");
    // As the writer lists them: by communicator, each once, none of 0.
    if (l.count == 0 || (k > 0 && l.comm <= p.left_out_gpu_times[k - 1].comm))
      return malformed("its GPU-time counts are out of order");
  }
  const uint64_t streams = c.Varint();
  if (!c.ok()) return malformed("its identity is cut short");
  // Each left-out stream takes at least 5 bytes, each digest 8: bounded by
  // the section's length before anything is allocated.
  if (streams > c.left() / 5) return malformed("more left-out streams than bytes");
  p.left_out.resize(streams);
  for (LeftOutCalls& l : p.left_out) {
    l.comm = c.Varint();
    l.rank = static_cast<int32_t>(c.Zigzag());
    l.first_block = c.Varint();
    const uint64_t blocks = c.Varint();
    if (!c.ok() || blocks > c.left() / 8) return malformed("more digests than bytes");
    if (l.first_block > UINT64_MAX / kLeftOutBlock - blocks - 1)
      return malformed("left-out blocks past the largest number");
    l.digests.resize(blocks);
    for (uint64_t& d : l.digests) d = c.U64();
    l.calls = c.Varint();
  }
  const uint64_t p2p_runs = c.Varint();
  // At least 16 bytes each (a block's digest at least): bounded by the section;
  // each run is allocated as it is read.
  if (!c.ok() || p2p_runs > c.left() / 16) return malformed("more left-out sends than bytes");
  for (uint64_t k = 0; k < p2p_runs; ++k) {
    LeftOutP2p l;
    l.comm = c.Varint();
    const int64_t rank = c.Zigzag();
    const int64_t peer = c.Zigzag();
    const uint8_t send = c.U8();
    l.send = send == 1;
    l.first_block = c.Varint();
    const uint64_t blocks = c.Varint();
    if (!c.ok() || blocks > c.left() / 9) return malformed("more send digests than bytes");
    if (send > 1) return malformed("a left-out send is neither a send nor a receive");
    // As the writer writes them: a rank's own, to a peer, of a block or more.
    if (l.comm == 0 || rank < 0 || rank > INT32_MAX || peer < 0 || peer > INT32_MAX || blocks == 0)
      return malformed("a left-out run of sends names no communicator, rank, peer or block");
    if (l.first_block > UINT64_MAX / kLeftOutBlock - blocks - 1)
      return malformed("left-out blocks past the largest number");
    l.rank = static_cast<int32_t>(rank);
    l.peer = static_cast<int32_t>(peer);
    l.blocks.resize(blocks);
    for (P2pBlockDigest& b : l.blocks) {
      b.digest = c.U64();
      const uint64_t known = c.Varint();  // version 9: (unknown << 1) | signature follows
      if (!c.ok() || (known >> 1) > kLeftOutBlock)
        return malformed("a left-out block of sends with more counts not known than calls");
      b.unknown = static_cast<uint32_t>(known >> 1);
      b.signature = (known & 1) != 0 ? c.U64() : b.digest;
    }
    l.calls = c.Varint();
    p.left_out_p2p.push_back(std::move(l));
  }
  // Each kept send's and receive's count of the collectives before it
  // (version 8), one byte at least each: passed over here, and read one
  // by one as the sends' entries come (what is kept of them grows with the
  // entries, two bytes at least each, not with a crafted number).
  const uint64_t carried = c.Varint();
  if (!c.ok() || carried > c.left()) return malformed("more sends' counts than bytes");
  ByteCursor counts(c.here(), c.left());
  for (uint64_t k = 0; k < carried && c.ok(); ++k) c.Zigzag();
  int64_t count = 0;
  std::vector<std::pair<size_t, int64_t>> counted;  // (the P2pEvent, its count)
  const uint64_t entries = c.Varint();
  if (!c.ok()) return malformed("its left-out calls are cut short");
  if (entries > c.left() / 2) return malformed("more records than bytes");
  p.collectives.reserve(std::min<uint64_t>(entries, uint64_t{1} << 20));
  RecordImporter importer(&p);
  importer.Recycle(std::move(old_streams));
  // Each kind's previous payload and mask per context, and the previous
  // call slot's time (summary/summary_format.h).
  std::vector<uint8_t> previous(3 * kSummaryContexts * NCCLWATCH_SLOT_PAYLOAD_BYTES, 0);
  uint64_t last_mask[3][kSummaryContexts] = {};
  SlotPredictor predictor;
  // The records before each record's, by context (record_delta.h).
  RecordContexts contexts(node_inventory_.has_value() ? &*node_inventory_ : nullptr);
  RebuiltBudget rebuilt;
  const uint8_t* const entries_at = c.here();
  FlatRecord flat;
  for (uint64_t k = 0; k < entries; ++k) {
    const uint8_t kind = c.U8();
    if (kind == NCCLWATCH_SLOT_SINGLE) {
      const std::string_view record = c.String(NCCLWATCH_MAX_RECORD_BYTES);
      if (!c.ok()) return malformed("a record runs past its section");
      const absl::Span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(record.data()),
                                            record.size());
      importer.Import(bytes);
      if (flat.Parse(bytes)) contexts.Remember(std::move(flat));
      continue;
    }
    if (kind == kSummaryRecordDelta) {
      const uint64_t context = c.Varint();
      const FlatRecord* prev = contexts.At(context);
      if (!c.ok() || prev == nullptr) return malformed("a record's context is unknown");
      if (!ReadRecordDelta(*prev, &c, &flat))
        return malformed("a record's difference is malformed");
      const std::string record = flat.Serialize();
      if (record.size() > NCCLWATCH_MAX_RECORD_BYTES) return malformed("a record is too long");
      if (!rebuilt.Spend(record.size(), static_cast<uint64_t>(c.here() - entries_at)))
        return malformed("its differences rebuild more records than its bytes allow");
      importer.Import(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(record.data()),
                                                record.size()));
      contexts.Remember(std::move(flat));
      continue;
    }
    // A call slot's entry: its kind, whether its mask is the one before,
    // and its context in this byte.
    const uint32_t kind_index = (kind >> 5) & 3;
    if ((kind & kSummaryCallEntry) == 0 || kind_index >= 3)
      return malformed("a record of an unknown kind");
    const uint8_t slot_kind = static_cast<uint8_t>(NCCLWATCH_SLOT_COLLECTIVE + kind_index);
    const uint32_t context = kind & (kSummaryContexts - 1);
    uint8_t* prev =
        previous.data() + (kind_index * kSummaryContexts + context) * NCCLWATCH_SLOT_PAYLOAD_BYTES;
    uint64_t& mask = last_mask[kind_index][context];
    if ((kind & kSummarySameMask) == 0) mask = c.Varint();
    if ((mask >> kGranules) != 0) return malformed("a call's granule mask is out of range");
    // A granule predicted as the one before and given no difference stays
    // as it is: only the time (0), the number (3) and the mask's granules
    // are written, in order (the number's prediction reads the
    // communicator, granule 2).
    for (uint64_t todo = mask | 1 | 8; todo != 0; todo &= todo - 1) {
      const int i = __builtin_ctzll(todo);
      uint64_t granule = predictor.Predict(slot_kind, i, prev, prev);
      if ((mask & (uint64_t{1} << i)) != 0) granule += static_cast<uint64_t>(c.Zigzag());
      std::memcpy(prev + 8 * i, &granule, 8);
    }
    predictor.Update(slot_kind, prev);
    if (!c.ok()) return malformed("a call runs past its section");
    importer.ImportCallSlot(slot_kind,
                            absl::Span<const uint8_t>(prev, NCCLWATCH_SLOT_PAYLOAD_BYTES));
    if (slot_kind == NCCLWATCH_SLOT_P2P && carried != 0) {
      if (counted.size() == carried) return malformed("more sends than counts");
      count = static_cast<int64_t>(static_cast<uint64_t>(count) +
                                   static_cast<uint64_t>(counts.Zigzag()));
      counted.emplace_back(p.p2p.size() - 1, count);
    }
  }
  if (c.left() != 0) return malformed("bytes after its last record");
  if (counted.size() != carried) return malformed("more counts than sends");
  // The stats first: the streams' "holds the start" reads whether the ring
  // lost records.
  p.stats = stats;
  importer.Finish();
  CarryCounts(counted, &p);
  DigestKeptBlocks(&p);
  p.records = records;
  p.unparsed_records = unparsed;
  return absl::OkStatus();
}

}  // namespace ncclwatch::decoder

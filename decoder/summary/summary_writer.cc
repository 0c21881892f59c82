#include "summary/summary_writer.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "findings/collective_signature.h"
#include "model/numbering.h"
#include "model/process_trace.h"
#include "ncclwatch/trace_fields.h"
#include "summary/byte_cursor.h"
#include "summary/call_digest.h"
#include "summary/record_delta.h"
#include "trace/call_slot.h"
#include "trace/trace_file.h"
#include "trace/wire_reader.h"

namespace ncclwatch::decoder {
namespace {

// Progress records kept at each end of a communicator's.
constexpr uint64_t kProgressHead = 64;
constexpr uint64_t kProgressTail = 256;

constexpr int kSlotKinds = 3;  // COLLECTIVE, P2P, GROUP: their previous payloads
int SlotIndex(uint8_t kind) { return kind - NCCLWATCH_SLOT_COLLECTIVE; }

// The context a call's payload is diffed against: one per communicator and
// call of its kind (a step's AllReduce is diffed against the last
// AllReduce, its Broadcast against the last Broadcast), the first
// kSummaryContexts - 1 met; the rest share the last.
class Contexts {
 public:
  uint8_t Of(int kind, uint64_t comm, uint32_t call) {
    std::vector<std::pair<uint64_t, uint32_t>>& seen = seen_[kind];
    for (size_t i = 0; i < seen.size(); ++i)
      if (seen[i].first == comm && seen[i].second == call) return static_cast<uint8_t>(i);
    if (seen.size() + 1 < kSummaryContexts) {
      seen.emplace_back(comm, call);
      return static_cast<uint8_t>(seen.size() - 1);
    }
    return static_cast<uint8_t>(kSummaryContexts - 1);
  }

 private:
  std::vector<std::pair<uint64_t, uint32_t>> seen_[kSlotKinds];
};
constexpr int kGranules = NCCLWATCH_SLOT_PAYLOAD_BYTES / 8;
static_assert(kGranules * 8 == NCCLWATCH_SLOT_PAYLOAD_BYTES && kGranules <= 16,
              "a call slot is 14 granules of 8 bytes, its mask 16 bits");

// Which collectives of one (communicator, rank) are left out: those in
// [begin, end) but for the blocks in `kept` (sorted).
struct Window {
  uint64_t begin = 0;
  uint64_t end = 0;
  std::vector<uint64_t> kept;  // blocks kept whole: where the stream stops
  bool LeftOut(uint64_t seq) const {
    return seq >= begin && seq < end &&
           !std::binary_search(kept.begin(), kept.end(), seq / kLeftOutBlock);
  }
};

namespace f = ::ncclwatch::fields;

// The communicator of a Progress record (the watcher's GPU completion
// counts, every 20 ms) or of a GpuTime record (one per operation; its
// communicator field has the same number), with which of the two it is in
// `body`, or false for any other record.
bool WatcherComm(absl::Span<const uint8_t> record, uint64_t* comm, uint32_t* body_number) {
  static_assert(f::progress::kComm == f::gpu_time::kComm, "both read as one");
  WireReader r(record);
  WireField x;
  while (r.Next(&x)) {
    if ((x.number != f::record::kProgress && x.number != f::record::kGpuTime) || x.wire_type != 2)
      continue;
    *body_number = static_cast<uint32_t>(x.number);
    WireReader body(x.bytes);
    WireField y;
    *comm = 0;
    while (body.Next(&y))
      if (y.number == f::progress::kComm && y.wire_type == 1) *comm = y.value;
    return true;
  }
  return false;
}

// A call slot's entry's first byte: its kind and context (summary_format.h).
uint8_t CallEntryByte(uint8_t kind, uint8_t context) {
  return static_cast<uint8_t>(kSummaryCallEntry | (SlotIndex(kind) << 5) | context);
}

std::string ThisHost() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// The middle of a stream of `calls` calls numbered `lo`..`hi` past `window`
// at each end, on the block grid, and below `end_cap`: [w->begin, w->end),
// nothing kept yet. False when there is none, or the numbers are not a run
// (a crafted or torn trace keeps all).
bool MiddleBlocks(uint64_t lo, uint64_t hi, uint64_t calls, uint64_t window, uint64_t end_cap,
                  Window* w) {
  if (hi - lo < 2 * window || hi > UINT64_MAX - kLeftOutBlock) return false;
  const uint64_t begin = (lo + window + kLeftOutBlock - 1) / kLeftOutBlock * kLeftOutBlock;
  const uint64_t end = std::min((hi + 1 - window) / kLeftOutBlock * kLeftOutBlock,
                                end_cap / kLeftOutBlock * kLeftOutBlock);
  if (end <= begin) return false;
  if ((end - begin) / kLeftOutBlock > calls / kLeftOutBlock + 1) return false;  // not a run
  w->begin = begin;
  w->end = end;
  w->kept.clear();
  return true;
}

// The digests of the calls in a window's middle, and how many calls there
// are, block by block ([begin, end) on the grid): summed in the one pass
// over a stream's calls, before it is known which blocks stay whole.
struct BlockSums {
  explicit BlockSums(const Window& w)
      : digests((w.end - w.begin) / kLeftOutBlock, 0), counts(digests.size(), 0) {}
  // Adds call #seq's digest (`digest()`, asked only for a call of the middle).
  template <typename Digest>
  void Add(const Window& w, uint64_t seq, const Digest& digest) {
    if (seq < w.begin || seq >= w.end) return;
    const size_t b = (seq - w.begin) / kLeftOutBlock;
    digests[b] += digest();
    if (counts[b] != UINT32_MAX) ++counts[b];
  }
  std::vector<uint64_t> digests;
  std::vector<uint32_t> counts;
};

// Keeps whole each block of `w` whose calls the trace does not hold all of,
// once each (`counts`, BlockSums'): a ring that wrapped inside it, or a hold
// that kept one call of it. Its digest would sum other calls than a peer's
// digest of the same block, and the merge would call ranks different that
// are not; kept, the calls it has are read as they are.
void KeepPartialBlocks(const std::vector<uint32_t>& counts, Window* w) {
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] != kLeftOutBlock) w->kept.push_back(w->begin / kLeftOutBlock + i);
  std::sort(w->kept.begin(), w->kept.end());
  w->kept.erase(std::unique(w->kept.begin(), w->kept.end()), w->kept.end());
}

// Appends to `out` the runs of `w`'s blocks not kept whole, each a copy of
// `proto` from its first block, with the blocks' digests from `sums`;
// whether any.
template <typename Run>
bool AppendRuns(const Window& w, const BlockSums& sums, const Run& proto, std::vector<Run>* out) {
  const size_t first = out->size();
  const uint64_t begin = w.begin / kLeftOutBlock;
  for (uint64_t b = begin; b < w.end / kLeftOutBlock; ++b) {
    if (std::binary_search(w.kept.begin(), w.kept.end(), b)) continue;
    if (out->size() == first || out->back().first_block + out->back().digests.size() != b) {
      out->push_back(proto);
      out->back().first_block = b;
    }
    out->back().digests.push_back(sums.digests[b - begin]);
    out->back().calls += sums.counts[b - begin];
  }
  return out->size() > first;
}

// The blocks of `s`'s collectives left out, as runs of blocks (none when
// the stream is short, or its numbers are not a run: a crafted or torn
// trace keeps all). The blocks where the stream stops stay whole: the one
// its GPU was working on (the first collective its last Progress does not
// count) and those the watcher held an operation of, so the operation a
// hang is about is described from the summary as from the trace.
bool LeftOut(const ProcessTrace& p, const CommStream& s, uint64_t window,
             std::vector<LeftOutCalls>* out, Window* w) {
  if (s.collectives.empty()) return false;
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  for (uint32_t i : s.collectives) {
    lo = std::min(lo, p.collectives[i].seq);
    hi = std::max(hi, p.collectives[i].seq);
  }
  if (!MiddleBlocks(lo, hi, s.collectives.size(), window, UINT64_MAX, w)) return false;
  if (const ProgressEvent* e = p.LastProgress(s.comm))
    w->kept.push_back(e->collectives / kLeftOutBlock);
  for (const HeldOperationEvent& h : p.held)
    if (h.comm == s.comm && h.rank == s.rank) w->kept.push_back(h.seq / kLeftOutBlock);
  for (uint32_t i : s.pending_collectives) {
    w->kept.push_back(p.collectives[i].seq / kLeftOutBlock);
    break;  // the first: the others queue behind it
  }
  BlockSums sums(*w);
  for (uint32_t i : s.collectives) {
    const CollectiveEvent& e = p.collectives[i];
    sums.Add(*w, e.seq, [&] { return CallDigest(e.seq, CollectiveSignature::Of(e)); });
  }
  KeepPartialBlocks(sums.counts, w);
  // The runs of blocks left out, each with its digests.
  LeftOutCalls proto;
  proto.comm = s.comm;
  proto.rank = s.rank;
  return AppendRuns(*w, sums, proto, out);
}

// A send or receive stream: (communicator, the rank that posted, its peer,
// whether it sends).
using P2pKey = std::tuple<uint64_t, int32_t, int32_t, bool>;

// Whether a send or receive counts as the streams count them (a rank's own
// on a communicator, to a peer, not refused).
bool Counted(uint64_t comm, int32_t rank, int32_t peer, int32_t result) {
  return comm != 0 && rank >= 0 && peer >= 0 && Accepted(result);
}

// The blocks of each send or receive stream's calls left out, as LeftOut
// does a stream's collectives: the middle past `window` at each end, on the
// same grid; each block digested (P2pDigest) so the sender's and the
// receiver's still compare. Kept whole from the block of its first call the
// GPU is not known to have finished (recorded after its communicator's last
// Progress said it had finished what was enqueued): where a job stops, the
// analyses read those (a send its peer never received, the oldest
// unfinished call); a communicator with no Progress keeps its sends whole.
void LeftOutP2pOf(const ProcessTrace& p, uint64_t window, std::vector<LeftOutP2p>* out,
                  std::map<P2pKey, Window>* windows) {
  struct Span {
    uint64_t lo = UINT64_MAX, hi = 0, calls = 0;
    uint64_t first_unfinished = UINT64_MAX;
  };
  std::map<P2pKey, Span> spans;
  std::map<uint64_t, const ProgressEvent*> progress;  // per communicator, its last
  for (const P2pEvent& e : p.p2p) {
    if (!Counted(e.comm, e.rank, e.peer, e.result)) continue;
    auto [at, fresh] = progress.try_emplace(e.comm, nullptr);
    if (fresh) at->second = p.LastProgress(e.comm);
    Span& s = spans[{e.comm, e.rank, e.peer, e.send}];
    s.lo = std::min(s.lo, e.seq);
    s.hi = std::max(s.hi, e.seq);
    ++s.calls;
    if (at->second == nullptr || e.t > at->second->enqueued_t || e.result == kResultPending)
      s.first_unfinished = std::min(s.first_unfinished, e.seq);
  }
  std::map<P2pKey, BlockSums> sums;  // of each stream's window's blocks
  for (const auto& [key, s] : spans) {
    Window w;
    if (!MiddleBlocks(s.lo, s.hi, s.calls, window, s.first_unfinished, &w)) continue;
    sums.emplace(key, BlockSums(w));
    (*windows)[key] = std::move(w);
  }
  for (const P2pEvent& e : p.p2p) {
    if (!Counted(e.comm, e.rank, e.peer, e.result)) continue;
    const P2pKey key{e.comm, e.rank, e.peer, e.send};
    if (auto w = windows->find(key); w != windows->end())
      sums.at(key).Add(w->second, e.seq, [&] { return P2pDigest(e.seq, e.count, e.datatype); });
  }
  for (auto it = windows->begin(); it != windows->end();) {
    const P2pKey& key = it->first;
    Window& w = it->second;
    const BlockSums& block_sums = sums.at(key);
    KeepPartialBlocks(block_sums.counts, &w);
    LeftOutP2p proto;
    std::tie(proto.comm, proto.rank, proto.peer, proto.send) = key;
    if (!AppendRuns(w, block_sums, proto, out)) {
      it = windows->erase(it);
      continue;
    }
    ++it;
  }
}

// One trace's section (without its length), or an error saying why the
// trace cannot be read.
// `node_inventory`: the node's inventory (record_delta.h), null while none
// was met; set to this trace's first where it is null and the trace has one.
absl::Status SummarizeTrace(const std::string& path, uint64_t window, ProcessTrace* p,
                            std::string* section, SummaryStats* stats,
                            std::optional<FlatRecord>* node_inventory) {
  if (absl::Status s = LoadProcessTraceInto(path, p); !s.ok()) return s;
  std::map<std::pair<uint64_t, int32_t>, Window> windows;
  std::vector<LeftOutCalls> left_out;
  for (const CommStream& s : p->streams) {
    Window w;
    const CommMembership* m = p->Membership(s.comm, s.rank);
    const uint64_t comm_window = CommWindow(window, m != nullptr ? m->nranks : -1);
    if (LeftOut(*p, s, comm_window, &left_out, &w)) windows[{s.comm, s.rank}] = std::move(w);
  }
  std::map<P2pKey, Window> p2p_windows;
  std::vector<LeftOutP2p> left_out_p2p;
  // Sends, receives and group calls keep fewer at each end than the
  // collectives (kMaxCallWindow): their analyses read where a job stops,
  // kept whole, not a window of history as the straggler's does.
  const uint64_t call_window = std::min<uint64_t>(window, kMaxCallWindow);
  LeftOutP2pOf(*p, call_window, &left_out_p2p, &p2p_windows);
  const uint64_t groups = p->groups.size();
  const bool groups_cut = groups > 2 * call_window;
  // Progress records per communicator, as read (not those a hold restored:
  // they share their HeldOperation's order).
  std::map<uint64_t, uint64_t> progress_total, progress_seen;
  for (const ProgressEvent& e : p->progress) {
    bool restored = false;
    for (const HeldOperationEvent& h : p->held) restored |= h.order == e.order;
    if (!restored) ++progress_total[e.comm];
  }
  uint64_t left_progress = 0;
  std::map<uint64_t, uint64_t> gpu_total, gpu_seen;
  for (const GpuTimeEvent& g : p->gpu_times) ++gpu_total[g.comm];

  // The records again, each kept or left out.
  std::string entries;
  ByteSink e(&entries);
  uint64_t kept = 0;
  uint64_t left_collectives = 0;
  uint64_t left_p2p = 0;
  uint64_t left_groups = 0;
  std::map<uint64_t, uint64_t> left_gpu;      // per communicator
  std::optional<FlatRecord> first_inventory;  // the node's, where this trace is the first with one
  uint64_t differences = 0;                   // records kept as differences
  auto write_entries = [&](ReadMode mode) -> absl::Status {
    entries.clear();
    first_inventory.reset();
    RecordContexts record_contexts(node_inventory->has_value() ? &**node_inventory : nullptr);
    RebuiltBudget rebuilt;
    differences = 0;
    kept = left_collectives = left_p2p = left_groups = left_progress = 0;
    progress_seen.clear();
    gpu_seen.clear();
    left_gpu.clear();
    absl::StatusOr<std::unique_ptr<TraceFile>> file = TraceFile::Open(path, mode);
    if (!file.ok()) return file.status();
    uint8_t previous[kSlotKinds][kSummaryContexts][NCCLWATCH_SLOT_PAYLOAD_BYTES] = {};
    uint16_t last_mask[kSlotKinds][kSummaryContexts] = {};
    SlotPredictor predictor;
    Contexts contexts;
    uint64_t group = 0;
    TraceFileStats read_stats;
    (*file)->ForEachEntry(
        [&](bool, uint64_t, uint8_t kind, absl::Span<const uint8_t> bytes) {
          if (kind == NCCLWATCH_SLOT_SINGLE) {
            // Progress: the first and the last of each communicator's
            // (the analyses read its latest; the timeline ends the kept
            // calls' slices by those around them).
            uint64_t comm = 0;
            uint32_t body = 0;
            if (WatcherComm(bytes, &comm, &body) && body == f::record::kGpuTime) {
              if (gpu_seen[comm]++ + kSummaryGpuTimes < gpu_total[comm]) {
                ++left_gpu[comm];
                return;
              }
            } else if (body == f::record::kProgress) {
              const uint64_t k = progress_seen[comm]++;
              const uint64_t total = progress_total[comm];
              if (total > kProgressHead + kProgressTail && k >= kProgressHead &&
                  k + kProgressTail < total) {
                ++left_progress;
                return;
              }
            }
            ++kept;
            // As its difference from the record before it of its context
            // (record_delta.h), or whole.
            FlatRecord flat;
            const bool is_flat = flat.Parse(bytes);
            const int context = is_flat ? record_contexts.Find(flat) : -1;
            if (context == 0 && record_contexts.At(0) == nullptr) {
              first_inventory = flat;  // the node's first: diffed against itself
              record_contexts.Remember(flat);
            }
            bool as_difference = false;
            if (context >= 0) {
              const size_t before = entries.size();
              e.U8(kSummaryRecordDelta);
              e.Varint(static_cast<uint64_t>(context));
              WriteRecordDelta(*record_contexts.At(static_cast<size_t>(context)), flat, &e);
              as_difference = rebuilt.Spend(bytes.size(), entries.size());
              if (!as_difference) entries.resize(before);
            }
            if (as_difference) {
              ++differences;
            } else {
              e.U8(kind);
              e.String(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
            }
            if (is_flat) record_contexts.Remember(std::move(flat));
            return;
          }
          if (!IsCallSlotKind(kind) || bytes.size() != NCCLWATCH_SLOT_PAYLOAD_BYTES) return;
          const ncclwatch_call_slot slot = ReadCallSlot(bytes);
          if (kind == NCCLWATCH_SLOT_COLLECTIVE && slot.comm != 0 && slot.rank >= 0 &&
              Accepted(slot.result)) {
            auto it = windows.find({slot.comm, slot.rank});
            if (it != windows.end() && it->second.LeftOut(slot.seq)) {
              ++left_collectives;
              return;
            }
          }
          if (kind == NCCLWATCH_SLOT_P2P && Counted(slot.comm, slot.rank, slot.peer, slot.result)) {
            auto it = p2p_windows.find({slot.comm, slot.rank, slot.peer, slot.call == f::kSend});
            if (it != p2p_windows.end() && it->second.LeftOut(slot.seq)) {
              ++left_p2p;
              return;
            }
          }
          if (kind == NCCLWATCH_SLOT_GROUP) {
            const uint64_t g = group++;
            if (groups_cut && g >= call_window && g < groups - call_window) {
              ++left_groups;
              return;
            }
          }
          // The payload as its difference from what the previous one of
          // its kind, communicator and call predicts (summary_format.h), 8
          // bytes at a time: a mask of the granules not as predicted (or
          // a bit saying it is the mask before), then each one's miss as
          // a zigzag varint (a collective made like the one before it
          // takes its time's step: 3-4 bytes in all).
          const int k = SlotIndex(kind);
          const uint8_t context = contexts.Of(k, slot.comm, slot.call);
          uint8_t* prev = previous[k][context];
          uint16_t mask = 0;
          uint64_t deltas[kGranules];
          int n = 0;
          for (int i = 0; i < kGranules; ++i) {
            uint64_t now;
            std::memcpy(&now, bytes.data() + 8 * i, 8);
            const uint64_t predicted = predictor.Predict(kind, i, prev, bytes.data());
            if (now != predicted) {
              mask = static_cast<uint16_t>(mask | (1u << i));
              deltas[n++] = now - predicted;
            }
          }
          std::memcpy(prev, bytes.data(), NCCLWATCH_SLOT_PAYLOAD_BYTES);
          predictor.Update(kind, bytes.data());
          if (mask == last_mask[k][context]) {
            e.U8(static_cast<uint8_t>(CallEntryByte(kind, context) | kSummarySameMask));
          } else {
            e.U8(CallEntryByte(kind, context));
            e.Varint(mask);
            last_mask[k][context] = mask;
          }
          for (int i = 0; i < n; ++i) e.Zigzag(static_cast<int64_t>(deltas[i]));
          ++kept;
        },
        &read_stats);
    if (read_stats.read_again && mode == ReadMode::kMapped) return absl::AbortedError("read again");
    return absl::OkStatus();
  };
  absl::Status written = write_entries(ReadMode::kMapped);
  if (absl::IsAborted(written)) written = write_entries(ReadMode::kCopied);
  if (!written.ok()) return written;
  if (first_inventory.has_value()) *node_inventory = std::move(first_inventory);

  ByteSink out(section);
  // Where the trace lies on this node, whatever folder the command was given.
  std::error_code ec;
  const std::string where = std::filesystem::absolute(path, ec).lexically_normal().string();
  out.String(ec || where.size() > kMaxSummaryString ? path : where);
  out.U32(p->clock);
  out.U32(p->pid);
  out.U64(p->created_realtime_ns);
  out.String(p->host);
  out.U64(static_cast<uint64_t>(p->read_ns));
  const TraceFileStats& s = p->stats;
  for (uint64_t v : {s.ring_claimed, s.ring_overwritten, s.torn_slots, s.unwritten_slots,
                     s.pinned_overflow, s.padding_slots, s.records, s.lapped_slots})
    out.Varint(v);
  out.U8(static_cast<uint8_t>((s.truncated ? 1 : 0) | (s.read_again ? 2 : 0)));
  out.Varint(p->records);
  out.Varint(p->unparsed_records);
  out.Varint(left_groups);
  out.Varint(left_gpu.size());
  for (const auto& [comm, count] : left_gpu) {
    out.Varint(comm);
    out.Varint(count);
  }
  out.Varint(left_out.size());
  for (const LeftOutCalls& l : left_out) {
    out.Varint(l.comm);
    out.Zigzag(l.rank);
    out.Varint(l.first_block);
    out.Varint(l.digests.size());
    for (uint64_t d : l.digests) out.U64(d);
    out.Varint(l.calls);
  }
  out.Varint(left_out_p2p.size());
  for (const LeftOutP2p& l : left_out_p2p) {
    out.Varint(l.comm);
    out.Zigzag(l.rank);
    out.Zigzag(l.peer);
    out.U8(l.send ? 1 : 0);
    out.Varint(l.first_block);
    out.Varint(l.digests.size());
    for (uint64_t d : l.digests) out.U64(d);
    out.Varint(l.calls);
  }
  out.Varint(kept);
  section->append(entries);
  if (stats != nullptr) {
    stats->records += p->records;
    stats->entries_kept += kept;
    stats->records_as_differences += differences;
    stats->collectives_left_out += left_collectives;
    stats->p2p_left_out += left_p2p;
    stats->groups_left_out += left_groups;
    stats->progress_left_out += left_progress;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> BuildSummary(const std::vector<std::string>& trace_files,
                                         const SummaryOptions& options, SummaryStats* stats) {
  if (trace_files.size() > kMaxSummaryTraces) {
    return absl::InvalidArgumentError(
        absl::StrCat(trace_files.size(), " traces: a summary holds at most ", kMaxSummaryTraces,
                     " (summarize fewer folders)"));
  }
  SummaryStats own;
  if (stats == nullptr) stats = &own;
  const uint64_t window = std::max<uint32_t>(1, options.window);
  std::string body;
  ByteSink b(&body);
  std::string host = options.host.empty() ? ThisHost() : options.host;
  if (host.size() > kMaxSummaryString) host.resize(kMaxSummaryString);
  b.String(host);
  b.Varint(window);
  b.Varint(kLeftOutBlock);
  std::string sections;
  size_t traces = 0;
  ProcessTrace p;
  std::string section;
  std::optional<FlatRecord> node_inventory;
  for (const std::string& path : trace_files) {
    section.clear();
    if (path.size() > kMaxSummaryString) {
      stats->unreadable.push_back({path.substr(0, kMaxSummaryString), "its path is too long"});
      continue;
    }
    absl::Status s = SummarizeTrace(path, window, &p, &section, stats, &node_inventory);
    if (!s.ok()) {
      std::string why(s.message());
      if (why.size() > kMaxSummaryString) why.resize(kMaxSummaryString);
      stats->unreadable.push_back({path, why});
      continue;
    }
    ByteSink(&sections).Varint(section.size());
    sections.append(section);
    ++traces;
    if (sections.size() > kMaxSummaryBytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the summary would pass ", kMaxSummaryBytes >> 20,
                       " MiB: summarize with a smaller --window, or fewer traces at once"));
    }
  }
  for (const auto& [path, why] : options.not_read) {
    if (stats->unreadable.size() >= kMaxSummaryTraces) break;
    stats->unreadable.push_back(
        {path.substr(0, kMaxSummaryString), why.substr(0, kMaxSummaryString), true});
  }
  if (stats->unreadable.size() > kMaxSummaryTraces) stats->unreadable.resize(kMaxSummaryTraces);
  b.String(node_inventory.has_value() ? node_inventory->Serialize() : std::string());
  b.Varint(traces);
  body.append(sections);
  b.Varint(stats->unreadable.size());
  for (const SummaryUnreadable& u : stats->unreadable) {
    b.String(u.path);
    b.String(u.why);
    b.U8(u.may_hold_traces ? kSummaryMayHoldTraces : 0);
  }
  stats->traces = traces;
  std::string file;
  ByteSink h(&file);
  h.Raw(kSummaryMagic, sizeof(kSummaryMagic));
  h.U32(kSummaryVersion);
  h.U32(kSummaryHeaderBytes);
  h.U64(kSummaryHeaderBytes + body.size());
  h.U64(SummaryChecksum(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  file.append(body);
  if (file.size() > kMaxSummaryBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the summary would pass ", kMaxSummaryBytes >> 20,
                     " MiB: summarize with a smaller --window, or fewer traces at once"));
  }
  return file;
}

}  // namespace ncclwatch::decoder

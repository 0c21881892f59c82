#include "summary/summary_writer.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "findings/collective_signature.h"
#include "model/numbering.h"
#include "model/process_trace.h"
#include "model/stream_builder.h"
#include "ncclwatch/trace_fields.h"
#include "summary/byte_cursor.h"
#include "summary/call_digest.h"
#include "summary/chunk_ledger.h"
#include "summary/record_delta.h"
#include "trace/call_slot.h"
#include "trace/gpu_time_slot.h"
#include "trace/time_order.h"
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
// `body`, or false for any other record. As the model reads a record
// (model/record_importer.cc): its last body is the one, and the body's last
// communicator field.
bool WatcherComm(absl::Span<const uint8_t> record, uint64_t* comm, uint32_t* body_number) {
  static_assert(f::progress::kComm == f::gpu_time::kComm, "both read as one");
  WireReader r(record);
  WireField x;
  uint32_t number = 0;
  absl::Span<const uint8_t> bytes;
  while (r.Next(&x)) {
    if (!f::record::IsBody(x.number) || x.wire_type != 2) continue;
    number = static_cast<uint32_t>(x.number);
    bytes = x.bytes;
  }
  if (number != f::record::kProgress && number != f::record::kGpuTime) return false;
  *body_number = number;
  WireReader body(bytes);
  WireField y;
  *comm = 0;
  while (body.Next(&y))
    if (y.number == f::progress::kComm && y.wire_type == 1) *comm = y.value;
  return true;
}

// The row a collective's call slot would become, as far as its signature
// reads it (CollectiveSignature::Of).
CollectiveEvent SignatureRow(const ncclwatch_call_slot& slot) {
  CollectiveEvent row;
  row.call = slot.call;
  row.count = slot.count;
  row.datatype = slot.datatype;
  row.redop = slot.redop >= 0 ? slot.redop : -1;  // as the model's row
  row.root = slot.root >= 0 ? slot.root : -1;
  return row;
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
// are, block by block ([begin, end) on the grid): the counts from the first
// reading's survey (GridSurvey::Cut), the digests summed as the second
// leaves the calls out (a collective's block: `digest` alone; one of sends
// and receives, as LeftOutP2p keeps it).
struct BlockSums {
  BlockSums() = default;
  explicit BlockSums(const Window& w)
      : digests((w.end - w.begin) / kLeftOutBlock), counts(digests.size(), 0) {}
  std::vector<P2pBlockDigest> digests;
  std::vector<uint32_t> counts;
};

// Block `i` of `sums` added to a run of left-out calls.
void AddBlock(const BlockSums& sums, size_t i, LeftOutCalls* run) {
  run->digests.push_back(sums.digests[i].digest);
}
void AddBlock(const BlockSums& sums, size_t i, LeftOutP2p* run) {
  run->blocks.push_back(sums.digests[i]);
}

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
    if (out->size() == first || out->back().first_block + out->back().Blocks() != b) {
      out->push_back(proto);
      out->back().first_block = b;
    }
    AddBlock(sums, b - begin, &out->back());
    out->back().calls += sums.counts[b - begin];
  }
  return out->size() > first;
}

// The first reading's account of one stream's numbers (a (communicator,
// rank)'s collectives, or its sends or receives to one peer), kept instead
// of its rows, whose memory a big ring would cost: how many calls, their
// lowest and highest numbers, and for each block of the grid a `Block`
// (its calls, and what the caller notes of them). Numbers that stray far
// from a run (a crafted or torn trace) stop the account: `irregular`, and
// the stream is kept whole (summarized, a run's middle is left out only
// where the trace holds a run: MiddleBlocks).
template <typename Block>
class GridSurvey {
 public:
  GridSurvey() = default;
  // Not copied or moved: it points into its own blocks (Surveys keeps its
  // surveys where they are made).
  GridSurvey(const GridSurvey&) = delete;
  GridSurvey& operator=(const GridSurvey&) = delete;

  // Counts call #seq: its block, or null once the account stopped. New
  // blocks are taken from `*budget` (the trace's surveys' together).
  Block* Add(uint64_t seq, uint64_t* budget) {
    ++calls;
    lo = std::min(lo, seq);
    hi = std::max(hi, seq);
    if (irregular) return nullptr;
    const uint64_t block = seq / kLeftOutBlock;
    if (block == last_block_) {  // most calls: the block of the one before
      if (last_->calls != UINT32_MAX) ++last_->calls;
      return last_;
    }
    if (blocks_.empty()) base_ = block;
    if (block < base_) {
      const uint64_t more = base_ - block;
      if (!Fits(blocks_.size() + more) || more > *budget) return Stop();
      *budget -= more;
      blocks_.insert(blocks_.begin(), more, Block());
      base_ = block;
    }
    const uint64_t at = block - base_;
    if (at >= blocks_.size()) {
      const uint64_t more = at + 1 - blocks_.size();
      if (!Fits(at + 1) || more > *budget) return Stop();
      *budget -= more;
      blocks_.resize(at + 1);
    }
    Block& b = blocks_[at];
    if (b.calls != UINT32_MAX) ++b.calls;
    last_block_ = block;
    last_ = &b;  // a deque grown at either end keeps its elements where they are
    return &b;
  }
  // Block `block`'s account, or null (none counted, or the account stopped).
  const Block* At(uint64_t block) const {
    if (irregular || block < base_ || block - base_ >= blocks_.size()) return nullptr;
    return &blocks_[block - base_];
  }
  uint64_t FirstBlock() const { return base_; }
  uint64_t Blocks() const { return blocks_.size(); }

  // The middle of the stream past `window` at each end, below `end_cap`,
  // but for the blocks `w->kept` names already and those the trace holds
  // in part (KeepPartialBlocks); `sums` gets the blocks' calls (their
  // digests are summed as the calls left out are read again). False when
  // nothing would be left out.
  bool Cut(uint64_t window, uint64_t end_cap, Window* w, BlockSums* sums) const {
    if (calls == 0 || irregular) return false;
    std::vector<uint64_t> kept = std::move(w->kept);
    if (!MiddleBlocks(lo, hi, calls, window, end_cap, w)) return false;
    w->kept = std::move(kept);
    *sums = BlockSums(*w);
    for (size_t b = 0; b < sums->counts.size(); ++b) {
      const Block* at = At(w->begin / kLeftOutBlock + b);
      sums->counts[b] = at != nullptr ? at->calls : 0;
    }
    KeepPartialBlocks(sums->counts, w);
    for (uint64_t b = w->begin / kLeftOutBlock; b < w->end / kLeftOutBlock; ++b)
      if (!std::binary_search(w->kept.begin(), w->kept.end(), b)) return true;
    return false;
  }

  uint64_t calls = 0;
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  bool irregular = false;

 private:
  // A run's numbers span as many blocks as its calls fill, and one more.
  // (Twice that, and 64 blocks; all streams' blocks together are bounded
  // by the trace's slots: Surveys' budget.)
  bool Fits(uint64_t blocks) const { return blocks <= 2 * (calls / kLeftOutBlock) + 64; }
  Block* Stop() {
    irregular = true;
    blocks_ = {};
    last_block_ = UINT64_MAX;
    last_ = nullptr;
    return nullptr;
  }
  uint64_t base_ = 0;         // the first block counted
  std::deque<Block> blocks_;  // grows at either end (numbers that fall, crafted)
  // The block the last call fell in, and where it is.
  uint64_t last_block_ = UINT64_MAX;
  Block* last_ = nullptr;
};

// A block of collectives: its calls, and which numbers came (a bit each:
// a held operation is restored where the ring lost it, as the model
// restores it).
struct CollectiveBlock {
  uint32_t calls = 0;
  uint64_t seen[kLeftOutBlock / 64] = {};
};

// A block of sends or receives: its calls, the latest time of any, and
// whether any is still pending (where the GPU is not known to have
// finished them: LeftOutP2p's windows end there).
struct P2pBlock {
  uint32_t calls = 0;
  bool pending = false;
  uint64_t max_t = 0;
};

struct CollectiveSurvey {
  CollectiveSurvey(uint64_t comm_, int32_t rank_, uint64_t first_order_)
      : comm(comm_), rank(rank_), first_order(first_order_) {}
  void Add(uint64_t seq, uint64_t* budget) {
    if (CollectiveBlock* b = grid.Add(seq, budget)) {
      const uint64_t bit = seq % kLeftOutBlock;
      b->seen[bit / 64] |= uint64_t{1} << (bit % 64);
    }
  }
  bool Has(uint64_t seq) const {
    const CollectiveBlock* b = grid.At(seq / kLeftOutBlock);
    const uint64_t bit = seq % kLeftOutBlock;
    return b != nullptr && (b->seen[bit / 64] >> (bit % 64) & 1) != 0;
  }

  uint64_t comm;
  int32_t rank;
  uint64_t first_order;  // where its first call lies in the timeline
  GridSurvey<CollectiveBlock> grid;
  int64_t issued = StreamBuilder::kNoneYet;  // after its latest call read (CollectivesIssued)
  bool any_pending = false;
  uint64_t first_pending = 0;  // the number of its first call pending
};

// A send or receive stream: (communicator, the rank that posted, its peer,
// whether it sends).
using P2pKey = std::tuple<uint64_t, int32_t, int32_t, bool>;

struct P2pSurvey {
  GridSurvey<P2pBlock> grid;
  size_t id = 0;  // in the order met
};

// Whether a send or receive counts as the streams count them (a rank's own
// on a communicator, to a peer, not refused).
bool Counted(uint64_t comm, int32_t rank, int32_t peer, int32_t result) {
  return comm != 0 && rank >= 0 && peer >= 0 && Accepted(result);
}

// Every stream's calls surveyed from a trace read with its collectives and
// sends and receives handed over (ReadProcessTrace's LightReading).
class Surveys {
 public:
  static constexpr size_t kNotCounted = SIZE_MAX;

  // A collective's call slot, in timeline order (`order`: its place): the
  // index of the survey it was counted in, or kNotCounted (not a rank's
  // own on a communicator, or refused: kept as it is).
  size_t AddCollective(const ncclwatch_call_slot& slot, uint64_t order) {
    if (slot.comm == 0 || slot.rank < 0 || !Accepted(slot.result)) return kNotCounted;
    CollectiveSurvey& s = Of(slot.comm, slot.rank, order);
    s.Add(slot.seq, &budget_);
    s.issued = CollectivesIssued(slot.seq);
    if (slot.result == kResultPending && !s.any_pending) {
      s.any_pending = true;
      s.first_pending = slot.seq;
    }
    return last_;
  }
  // A send's or receive's call slot, likewise (its survey's id).
  size_t AddP2p(const ncclwatch_call_slot& slot, uint64_t order) {
    if (!Counted(slot.comm, slot.rank, slot.peer, slot.result)) return kNotCounted;
    const P2pKey key{slot.comm, slot.rank, slot.peer, slot.call == f::kSend};
    if (last_p2p_ == p2p_.end() || last_p2p_->first != key) {
      first_p2p_.try_emplace({slot.comm, slot.rank}, order);
      auto [it, fresh] = p2p_.try_emplace(key);
      if (fresh) it->second.id = p2p_.size() - 1;
      last_p2p_ = it;
    }
    if (P2pBlock* b = last_p2p_->second.grid.Add(slot.seq, &budget_)) {
      b->max_t = std::max(b->max_t, slot.t);
      b->pending |= slot.result == kResultPending;
    }
    return last_p2p_->second.id;
  }
  // The collectives' survey `index` (AddCollective's), and how many.
  const CollectiveSurvey& Collective(size_t index) const { return collectives_[index]; }
  size_t Collectives() const { return collectives_.size(); }

  // After the reading: the held operations, restored as the model restores
  // them (process_trace.cc RestoreHeldOperations): a held collective the
  // ring lost is counted into a stream the trace holds, and the GPU's count
  // at a hold (RestoreHeldProgress) is taken where the call was lost, or is
  // a send or receive.
  void RestoreHeld(ProcessTrace* p) {
    for (const HeldOperationEvent& h : p->held) {
      if (h.comm == 0 || h.rank < 0) continue;
      if (h.call != f::kSend && h.call != f::kRecv) {
        auto it = index_.find({h.comm, h.rank});
        if (it == index_.end()) {
          bool held_stream = first_p2p_.count({h.comm, h.rank}) > 0;
          for (const CommStream& s : p->streams)
            held_stream |= s.comm == h.comm && s.rank == h.rank;
          if (!held_stream) continue;
          it = index_.emplace(std::make_pair(h.comm, h.rank), collectives_.size()).first;
          collectives_.emplace_back(h.comm, h.rank, UINT64_MAX);
        }
        CollectiveSurvey& s = collectives_[it->second];
        if (s.Has(h.seq)) continue;
        s.Add(h.seq, &budget_);
      }
      RestoreHeldProgress(p, h);
    }
  }

  // The collectives' surveys in the order of the trace's streams
  // (model/stream_builder.h: the formed memberships' first, then the others
  // by their first call, collective or send and receive).
  std::vector<const CollectiveSurvey*> InStreamOrder(const ProcessTrace& p) const {
    std::vector<const CollectiveSurvey*> ordered;
    std::set<std::pair<uint64_t, int32_t>> formed;
    for (const CommStream& s : p.streams) {
      if (s.membership < 0) continue;
      formed.insert({s.comm, s.rank});
      auto it = index_.find({s.comm, s.rank});
      if (it != index_.end()) ordered.push_back(&collectives_[it->second]);
    }
    std::vector<std::pair<uint64_t, const CollectiveSurvey*>> others;
    for (const CollectiveSurvey& c : collectives_) {
      if (formed.count({c.comm, c.rank}) > 0) continue;
      uint64_t first = c.first_order;
      if (auto p2p = first_p2p_.find({c.comm, c.rank}); p2p != first_p2p_.end())
        first = std::min(first, p2p->second);
      others.emplace_back(first, &c);
    }
    std::stable_sort(others.begin(), others.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [order, c] : others) ordered.push_back(c);
    return ordered;
  }

  // How many collectives (comm, rank) had issued as read so far, as the
  // model counts them before a send or receive (model/stream_builder.h):
  // counted by AddCollective in the first reading; in the second, from
  // none again (ResetIssued), by Issue.
  int64_t IssuedBefore(uint64_t comm, int32_t rank) {
    return Find(comm, rank) == kNotCounted ? StreamBuilder::kNoneYet : last_survey_->issued;
  }
  void ResetIssued() {
    for (CollectiveSurvey& s : collectives_) s.issued = StreamBuilder::kNoneYet;
  }
  // Collective #seq of survey `index` (or of (comm, rank): a stream the
  // first reading did not meet, a live writer's since, is not counted).
  void Issue(size_t index, uint64_t seq) { collectives_[index].issued = CollectivesIssued(seq); }
  void Issue(uint64_t comm, int32_t rank, uint64_t seq) {
    const size_t i = Find(comm, rank);
    if (i != kNotCounted) Issue(i, seq);
  }
  // Whether (comm, rank) sent or received.
  bool Sends(uint64_t comm, int32_t rank) const { return first_p2p_.count({comm, rank}) > 0; }

  // The sends' and receives' surveys, in key order.
  const std::map<P2pKey, P2pSurvey>& P2p() const { return p2p_; }

  // Before a reading of a trace of `slots` slots: its blocks, two for each
  // block's worth of slots and 4,096 more (a run of calls fills its
  // blocks; a crafted trace's scattered numbers stop the account instead).
  void Clear(uint64_t slots) {
    budget_ = 2 * (slots / kLeftOutBlock) + 4096;
    collectives_.clear();
    index_.clear();
    last_ = SIZE_MAX;
    last_survey_ = nullptr;
    p2p_.clear();
    last_p2p_ = p2p_.end();
    first_p2p_.clear();
  }

 private:
  // The survey of (comm, rank), or kNotCounted: the last one found first
  // (`last_survey_` is then the one found).
  size_t Find(uint64_t comm, int32_t rank) {
    if (last_survey_ != nullptr && last_survey_->comm == comm && last_survey_->rank == rank)
      return last_;
    auto it = index_.find({comm, rank});
    if (it == index_.end()) return kNotCounted;
    last_ = it->second;
    last_survey_ = &collectives_[last_];
    return last_;
  }
  // The survey of (comm, rank), made on first use (its first call at `order`).
  CollectiveSurvey& Of(uint64_t comm, int32_t rank, uint64_t order) {
    if (Find(comm, rank) == kNotCounted) {
      last_ = collectives_.size();
      index_.emplace(std::make_pair(comm, rank), last_);
      last_survey_ = &collectives_.emplace_back(comm, rank, order);
    }
    return *last_survey_;
  }

  uint64_t budget_ = 0;                       // blocks the surveys may still add
  std::deque<CollectiveSurvey> collectives_;  // where they are made (GridSurvey)
  std::map<std::pair<uint64_t, int32_t>, size_t> index_;
  size_t last_ = SIZE_MAX;
  CollectiveSurvey* last_survey_ = nullptr;  // collectives_[last_] (a deque keeps it there)
  std::map<P2pKey, P2pSurvey> p2p_;
  std::map<P2pKey, P2pSurvey>::iterator last_p2p_ = p2p_.end();
  // Where each (communicator, rank)'s first send or receive lies.
  std::map<std::pair<uint64_t, int32_t>, uint64_t> first_p2p_;
};

// The collectives' window of survey `s` (GridSurvey::Cut), but for the
// blocks where the stream stops, kept whole: the one its GPU was working
// on (the first collective its last Progress does not count), those the
// watcher held an operation of, and its first call pending, so the
// operation a hang is about is described from the summary as from the
// trace; and the blocks `keep` names of its communicator.
bool CollectiveWindow(const ProcessTrace& p, const CollectiveSurvey& s, uint64_t window,
                      const KeepWhole& keep, Window* w, BlockSums* sums) {
  w->kept.clear();
  if (auto k = keep.collectives.find(s.comm); k != keep.collectives.end()) w->kept = k->second;
  if (const ProgressEvent* e = p.LastProgress(s.comm))
    w->kept.push_back(e->collectives / kLeftOutBlock);
  for (const HeldOperationEvent& h : p.held)
    if (h.comm == s.comm && h.rank == s.rank) w->kept.push_back(h.seq / kLeftOutBlock);
  if (s.any_pending) w->kept.push_back(s.first_pending / kLeftOutBlock);  // the others queue behind
  return s.grid.Cut(window, UINT64_MAX, w, sums);
}

// The window of a send or receive stream: the middle past `window` at each
// end, as a stream's collectives', each block digested (P2pDigest) so the
// sender's and the receiver's still compare; but ending at the block of
// its first call the GPU is not known to have finished (recorded after its
// communicator's last Progress said it had finished what was enqueued, or
// still pending): where a job stops, the analyses read those (a send its
// peer never received, the oldest unfinished call); a communicator with no
// Progress keeps its sends whole. The blocks `keep` names of its pair
// (`key`: this stream's) are kept whole too.
bool P2pWindow(const GridSurvey<P2pBlock>& s, const P2pKey& key, const ProgressEvent* last,
               uint64_t window, const KeepWhole& keep, Window* w, BlockSums* sums) {
  if (s.calls == 0 || s.irregular) return false;
  uint64_t end_cap = UINT64_MAX;
  for (uint64_t b = s.FirstBlock(); b < s.FirstBlock() + s.Blocks(); ++b) {
    const P2pBlock* at = s.At(b);
    if (at->calls > 0 && (last == nullptr || at->max_t > last->enqueued_t || at->pending)) {
      end_cap = b * kLeftOutBlock;
      break;
    }
  }
  w->kept.clear();
  const auto [comm, rank, peer, send] = key;
  const auto k =
      keep.sends.find(send ? std::make_tuple(comm, rank, peer) : std::make_tuple(comm, peer, rank));
  if (k != keep.sends.end()) w->kept = k->second;
  return s.Cut(window, end_cap, w, sums);
}

// One trace's section (without its length), or an error saying why the
// trace cannot be read.
// `node_inventory`: the node's inventory (record_delta.h), null while none
// was met; set to this trace's first where it is null and the trace has one.
absl::Status SummarizeTrace(const std::string& path, uint64_t window, uint64_t gpu_times,
                            bool pass_over_chunks, const KeepWhole& keep, ProcessTrace* p,
                            std::string* section, SummaryStats* stats,
                            std::optional<FlatRecord>* node_inventory) {
  // The first reading: the model but for the rows of the collectives, the
  // sends and receives and the GPU times, each call counted into its
  // stream's survey instead.
  ReadMode file_mode = ReadMode::kMapped;
  absl::StatusOr<std::unique_ptr<TraceFile>> file = TraceFile::Open(path, file_mode);
  if (!file.ok()) return file.status();
  Surveys surveys;
  // What each chunk of the ring held, for the second reading to pass over
  // the chunks it would leave out whole (chunk_ledger.h).
  ChunkLedger ledger;
  // Where the GPU times, Progress records and group calls lie that the
  // second reading keeps: the latest `gpu_times` GPU times of each
  // communicator; its Progress records (first and last kept, and the one
  // its GPU count was first reached by: below); the first and last
  // `call_window` group calls.
  const uint64_t call_window = std::min<uint64_t>(window, kMaxCallWindow);
  std::map<uint64_t, HeadTail> gpu_slots;
  std::map<uint64_t, std::vector<std::pair<uint64_t, bool>>> progress_slots;
  HeadTail group_slots(call_window, call_window);
  auto survey = [&] {
    surveys.Clear((*file)->SlotsInUse());
    ledger.Clear();
    gpu_slots.clear();
    progress_slots.clear();
    group_slots = HeadTail(call_window, call_window);
    HeadTail* last_gpu = nullptr;  // the last GPU time's communicator's (most are one's)
    uint64_t last_gpu_comm = 0;
    auto collective = [&](bool pinned, uint64_t at, absl::Span<const uint8_t> c) {
      const ncclwatch_call_slot slot = ReadCallSlot(c);
      const size_t index = surveys.AddCollective(slot, p->last_order);
      if (pinned) return ledger.Pinned();  // read in both readings
      if (index == Surveys::kNotCounted) return ledger.Spoil(at);
      ledger.Note(at, LedgerItemKind::kCollective, index, slot.seq / kLeftOutBlock,
                  CallDigest(slot.seq, CollectiveSignature::Of(SignatureRow(slot))), slot.seq);
    };
    auto p2p = [&](bool pinned, uint64_t at, absl::Span<const uint8_t> c) {
      const ncclwatch_call_slot slot = ReadCallSlot(c);
      const size_t id = surveys.AddP2p(slot, p->last_order);
      if (pinned) return ledger.Pinned();
      if (id == Surveys::kNotCounted) return ledger.Spoil(at);
      // Its count of collectives before, where none came yet: not known
      // where the ring lost records (settled as the pass-over adds it).
      const int64_t before = surveys.IssuedBefore(slot.comm, slot.rank);
      const uint64_t signature = P2pSignatureDigest(slot.seq, slot.count, slot.datatype);
      ledger.Note(at, LedgerItemKind::kP2p, id, slot.seq / kLeftOutBlock,
                  P2pDigestOf(signature, before), 0, signature, before < 0 ? 1 : 0);
    };
    auto other = [&](bool pinned, uint64_t at, EntryRead read_as, uint64_t comm) {
      LedgerItemKind kind;
      switch (read_as) {
        case EntryRead::kGpuTime:
          if (last_gpu == nullptr || last_gpu_comm != comm) {
            last_gpu = &gpu_slots.try_emplace(comm, 0, gpu_times).first->second;
            last_gpu_comm = comm;
          }
          last_gpu->Add(pinned, at);
          kind = LedgerItemKind::kGpuTime;
          break;
        case EntryRead::kProgress:
          progress_slots[comm].push_back({at, pinned});
          kind = LedgerItemKind::kProgress;
          break;
        case EntryRead::kGroup:
          group_slots.Add(pinned, at);
          kind = LedgerItemKind::kGroup;
          comm = 0;
          break;
        default:
          if (pinned) return ledger.Pinned();
          return ledger.Spoil(at);
      }
      if (pinned) return ledger.Pinned();
      ledger.Note(at, kind, comm, 0, 0);
    };
    auto chunk = [&](uint64_t first, uint64_t slots, uint64_t cursor,
                     const TimeOrder::State& order) {
      ledger.BeginChunk(first, slots, cursor, order);
    };
    const CallSlotFn collective_fn = collective;
    const CallSlotFn p2p_fn = p2p;
    const EntryFn other_fn = other;
    const ChunkFn chunk_fn = chunk;
    LightReading light;
    light.collective = &collective_fn;
    light.p2p = &p2p_fn;
    light.other = &other_fn;
    light.chunk = &chunk_fn;
    light.count_gpu_times = true;
    ReadProcessTrace(**file, p, light);
  };
  survey();
  if (p->stats.read_again) {  // as LoadProcessTraceInto: read again, copied
    file_mode = ReadMode::kCopied;
    file = TraceFile::Open(path, file_mode);
    if (!file.ok()) return file.status();
    survey();
  }
  surveys.RestoreHeld(p);
  // A trace whose calls are not all call slots (format 1's Collective and
  // P2p records: rows of the first reading) has collectives the second
  // reading does not count: its sends' counts of the collectives before
  // them are not written (the summary's reader counts them itself), and
  // the collectives of its streams with sends are kept whole, so that the
  // reader counts right.
  const bool carry_counts = p->collectives.empty() && p->p2p.empty();
  std::set<std::pair<uint64_t, int32_t>> sending;
  if (!carry_counts) {
    for (const P2pEvent& e : p->p2p) sending.insert({e.comm, e.rank});
    for (const auto& [key, unused] : surveys.P2p())
      sending.insert({std::get<0>(key), std::get<1>(key)});
  }
  // Each stream's window; the digests of the blocks left out are summed as
  // the second reading leaves their calls out.
  struct Cut {
    Window w;
    BlockSums sums;              // the first reading's calls per block
    std::vector<uint32_t> read;  // the second's, of the blocks left out
    // Whether the two readings counted the same calls in every block left
    // out: a live writer that lapped the ring between them leaves a block's
    // digest summing fewer calls than its count says.
    void Reset() {
      std::fill(sums.digests.begin(), sums.digests.end(), P2pBlockDigest{});
      read.assign(sums.counts.size(), 0);
    }
    // `calls` of block `block` (one the window leaves out) left out, their
    // digests summing to `digest`: read one by one, or passed over together
    // (sends and receives: their digests without counts summing to
    // `signature`, `unknown` of them with a count not known).
    void LeaveOut(uint64_t block, uint64_t digest, uint32_t calls, uint64_t signature = 0,
                  uint32_t unknown = 0) {
      const uint64_t b = block - w.begin / kLeftOutBlock;
      P2pBlockDigest& d = sums.digests[b];
      d.digest += digest;
      d.signature += signature;
      d.unknown += unknown;
      read[b] += calls;
    }
    bool Agrees() const {
      for (size_t i = 0; i < read.size(); ++i) {
        const uint64_t block = w.begin / kLeftOutBlock + i;
        if (!std::binary_search(w.kept.begin(), w.kept.end(), block) && read[i] != sums.counts[i])
          return false;
      }
      return true;
    }
  };
  std::vector<std::pair<std::pair<uint64_t, int32_t>, Cut>> cuts;  // in stream order
  std::map<std::pair<uint64_t, int32_t>, size_t> cut_of;
  for (const CollectiveSurvey* c : surveys.InStreamOrder(*p)) {
    if (sending.count({c->comm, c->rank}) > 0) continue;
    Cut cut;
    const CommMembership* m = p->Membership(c->comm, c->rank);
    const uint64_t comm_window = CommWindow(window, m != nullptr ? m->nranks : -1);
    if (!CollectiveWindow(*p, *c, comm_window, keep, &cut.w, &cut.sums)) continue;
    cut_of[{c->comm, c->rank}] = cuts.size();
    cuts.push_back({{c->comm, c->rank}, std::move(cut)});
  }
  size_t last_cut = SIZE_MAX;
  auto cut_at = [&](uint64_t comm, int32_t rank) -> Cut* {
    const std::pair<uint64_t, int32_t> key{comm, rank};
    if (last_cut < cuts.size() && cuts[last_cut].first == key) return &cuts[last_cut].second;
    auto it = cut_of.find(key);
    if (it == cut_of.end()) return nullptr;
    last_cut = it->second;
    return &cuts[last_cut].second;
  };
  // Sends, receives and group calls keep fewer at each end than the
  // collectives (kMaxCallWindow): their analyses read where a job stops,
  // kept whole, not a window of history as the straggler's does.
  std::map<P2pKey, Cut> p2p_cuts;
  {
    std::map<uint64_t, const ProgressEvent*> progress;  // per communicator, its last
    for (const auto& [key, s] : surveys.P2p()) {
      auto [at, fresh] = progress.try_emplace(std::get<0>(key), nullptr);
      if (fresh) at->second = p->LastProgress(std::get<0>(key));
      Cut cut;
      if (P2pWindow(s.grid, key, at->second, call_window, keep, &cut.w, &cut.sums))
        p2p_cuts.emplace(key, std::move(cut));
    }
  }
  auto p2p_cut = p2p_cuts.end();
  const uint64_t groups = p->groups.size();
  const bool groups_cut = groups > 2 * call_window;
  // Progress records per communicator, as read (not those a hold restored:
  // they share their HeldOperation's order).
  // Of each communicator's, the one its GPU count was first reached by
  // (ProcessTrace::LastProgress's reached_t: when its GPU finished what it
  // finished, which the liveness analyses date a rank's stop by) is kept
  // too, wherever it lies: a count that stays put (a hang, or sends and
  // receives that do not move it) may have been reached in the middle.
  std::map<uint64_t, uint64_t> progress_total;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> progress_reached;  // (k, t) of the first
  std::map<uint64_t, const ProgressEvent*> last_progress;
  for (const ProgressEvent& e : p->progress) {
    bool restored = false;
    for (const HeldOperationEvent& h : p->held) restored |= h.order == e.order;
    if (restored) continue;
    const uint64_t k = progress_total[e.comm]++;
    auto [last, fresh_comm] = last_progress.try_emplace(e.comm, nullptr);
    if (fresh_comm) last->second = p->LastProgress(e.comm);
    if (last->second == nullptr || e.collectives != last->second->collectives) continue;
    auto [at, fresh] = progress_reached.try_emplace(e.comm, k, e.t);
    if (!fresh && e.t < at->second.second) at->second = {k, e.t};
  }
  KeptSlots kept_slots;
  for (const auto& [comm, slots] : gpu_slots) slots.KeepAll(&kept_slots);
  for (const auto& [comm, slots] : progress_slots) {
    // The first and the last of each communicator's (the analyses read its
    // latest; the timeline ends the kept calls' slices by those around
    // them), and the one its count was first reached by.
    const uint64_t n = slots.size();
    auto reached = progress_reached.find(comm);
    for (uint64_t k = 0; k < n; ++k) {
      if (k == kProgressHead && n > kProgressHead + kProgressTail) k = n - kProgressTail;
      kept_slots.Add(slots[k].second, slots[k].first);
    }
    if (reached != progress_reached.end() && reached->second.first < n) {
      const auto& at = slots[reached->second.first];
      kept_slots.Add(at.second, at.first);
    }
  }
  if (groups_cut) group_slots.KeepAll(&kept_slots);
  kept_slots.Seal();
  // What a live writer added to the ring after the first reading is newer
  // than every record it kept: kept too.
  const uint64_t first_cursor = p->stats.ring_claimed;
  // Where the first reading let records out before their turn (too many
  // held for their time), a chunk passed over could move others' turns.
  // Where the ring lost slots among those it holds, no send's count of
  // the collectives before it is known (StreamBuilder::LostInside): the
  // first reading's digests, which fold the counts, are not the ones.
  const bool counts_known = !StreamBuilder::LostInside(*p);
  const bool may_pass_over = pass_over_chunks && p->stats.out_of_turn == 0 && counts_known;
  uint64_t left_progress = 0;

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
  uint64_t passed_over = 0;                   // slots the second reading passed over
  // Each kept send's or receive's count of the collectives before it, as
  // the model settles it (model/stream_builder.h): in the order kept.
  std::vector<int64_t> counts;
  const bool lost_records = StreamBuilder::LostRecords(*p);
  auto write_entries = [&](ReadMode mode) -> absl::Status {
    entries.clear();
    first_inventory.reset();
    RecordContexts record_contexts(node_inventory->has_value() ? &**node_inventory : nullptr);
    RebuiltBudget rebuilt;
    differences = 0;
    kept = left_collectives = left_p2p = left_groups = left_progress = 0;
    left_gpu.clear();
    surveys.ResetIssued();
    counts.clear();
    for (auto& [key, c] : cuts) c.Reset();
    for (auto& [key, c] : p2p_cuts) c.Reset();
    if (file_mode != mode) {  // the second reading asks for a copy
      file_mode = mode;
      file = TraceFile::Open(path, mode);
      if (!file.ok()) return file.status();
    }
    uint8_t previous[kSlotKinds][kSummaryContexts][NCCLWATCH_SLOT_PAYLOAD_BYTES] = {};
    uint16_t last_mask[kSlotKinds][kSummaryContexts] = {};
    SlotPredictor predictor;
    Contexts contexts;
    // The chunks the first reading saw left out whole, passed over: what
    // their entries would have added, added from the ledger.
    std::vector<Cut*> collective_cut(surveys.Collectives(), nullptr);
    for (size_t i = 0; i < collective_cut.size(); ++i)
      collective_cut[i] = cut_at(surveys.Collective(i).comm, surveys.Collective(i).rank);
    std::vector<Cut*> p2p_cut_of(surveys.P2p().size(), nullptr);
    for (const auto& [key, s] : surveys.P2p()) {
      auto it = p2p_cuts.find(key);
      if (it != p2p_cuts.end() && s.id < p2p_cut_of.size()) p2p_cut_of[s.id] = &it->second;
    }
    auto cut_of_item = [&](const LedgerItem& it) -> Cut* {
      const std::vector<Cut*>& of =
          it.kind == LedgerItemKind::kCollective ? collective_cut : p2p_cut_of;
      return it.stream < of.size() ? of[it.stream] : nullptr;
    };
    // Whether a chunk's item is left out whole (its watcher records and group
    // calls: where no slot of the chunk is kept, KeptSlots).
    auto left_out = [&](const LedgerItem& it) {
      switch (it.kind) {
        case LedgerItemKind::kCollective:
        case LedgerItemKind::kP2p: {
          const Cut* c = cut_of_item(it);
          return c != nullptr && it.block < UINT64_MAX / kLeftOutBlock &&
                 c->w.LeftOut(it.block * kLeftOutBlock);
        }
        case LedgerItemKind::kGroup:
          return groups_cut;
        case LedgerItemKind::kGpuTime:
        case LedgerItemKind::kProgress:
          return true;
      }
      return false;
    };
    auto pass_over = [&](const LedgerItem& it) {
      switch (it.kind) {
        case LedgerItemKind::kCollective:
        case LedgerItemKind::kP2p: {
          Cut* c = cut_of_item(it);
          c->LeaveOut(it.block, it.digest, it.count, it.signature, lost_records ? it.unknown : 0);
          (it.kind == LedgerItemKind::kCollective ? left_collectives : left_p2p) += it.count;
          break;
        }
        case LedgerItemKind::kGroup:
          left_groups += it.count;
          break;
        case LedgerItemKind::kGpuTime:
          left_gpu[it.stream] += it.count;
          break;
        case LedgerItemKind::kProgress:
          left_progress += it.count;
          break;
      }
    };
    ledger.Rewind();
    passed_over = 0;
    auto skip_chunk = [&](uint64_t first, uint64_t slots, uint64_t cursor,
                          TimeOrder::State* order) {
      const ChunkLedger::Chunk* c = ledger.Find(first, slots, cursor, *order);
      if (!may_pass_over || c == nullptr || kept_slots.AnyInRing(first, slots)) return false;
      const absl::Span<const LedgerItem> items = ChunkLedger::Items(*c);
      for (const LedgerItem& it : items)
        if (!left_out(it)) return false;
      // Records put back in time order: a send or receive let out after
      // the chunk was passed over may have come before some of its
      // collectives, and counts only those (read, the chunk counts them
      // as they come).
      if (!(c->start == TimeOrder::State{}) || !(c->end == TimeOrder::State{})) {
        for (const LedgerItem& it : items) {
          if (it.kind != LedgerItemKind::kCollective) continue;
          const CollectiveSurvey& stream = surveys.Collective(it.stream);
          if (surveys.Sends(stream.comm, stream.rank)) return false;
        }
      }
      for (const LedgerItem& it : items) pass_over(it);
      // Each stream's count of collectives where the chunk leaves it: its
      // latest number there (of its items, the one noted last).
      for (const LedgerItem& it : items) {
        if (it.kind != LedgerItemKind::kCollective) continue;
        bool latest = true;
        for (const LedgerItem& other : items)
          latest &= !(other.kind == it.kind && other.stream == it.stream &&
                      other.last_entry > it.last_entry);
        if (latest) surveys.Issue(it.stream, it.last);
      }
      passed_over += slots;
      *order = c->end;
      return true;
    };
    TraceFileStats read_stats;
    (*file)->ForEachEntry(
        [&](bool pinned, uint64_t at, uint8_t kind, absl::Span<const uint8_t> bytes) {
          uint8_t converted[kGpuTimeSlotRecordMax];
          if (kind == NCCLWATCH_SLOT_GPU_TIME) {
            // A GPU time's fixed slot (format 4): counted where none is
            // kept, as below; else kept as the Record it stands for (a
            // summary holds protobuf records, whatever the ring's format).
            if (bytes.size() != NCCLWATCH_SLOT_PAYLOAD_BYTES) return;
            if (!kept_slots.Has(pinned, at) && (pinned || at < first_cursor)) {
              ++left_gpu[GpuTimeSlotComm(bytes)];
              return;
            }
            const size_t n = GpuTimeSlotToRecord(ReadGpuTimeSlot(bytes), converted);
            if (n == 0) return;
            kind = NCCLWATCH_SLOT_SINGLE;
            bytes = absl::MakeConstSpan(converted, n);
          }
          if (kind == NCCLWATCH_SLOT_SINGLE) {
            // A GPU time or a Progress record where none is kept
            // (kept_slots).
            uint64_t comm = 0;
            uint32_t body = 0;
            if (WatcherComm(bytes, &comm, &body) && !kept_slots.Has(pinned, at) &&
                (pinned || at < first_cursor)) {
              if (body == f::record::kGpuTime)
                ++left_gpu[comm];
              else
                ++left_progress;
              return;
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
          int64_t before = StreamBuilder::kNoneYet;  // a send's or receive's
          if (kind == NCCLWATCH_SLOT_COLLECTIVE && slot.comm != 0 && slot.rank >= 0 &&
              Accepted(slot.result)) {
            surveys.Issue(slot.comm, slot.rank, slot.seq);
            Cut* c = cut_at(slot.comm, slot.rank);
            if (c != nullptr && c->w.LeftOut(slot.seq)) {
              c->LeaveOut(slot.seq / kLeftOutBlock,
                          CallDigest(slot.seq, CollectiveSignature::Of(SignatureRow(slot))), 1);
              ++left_collectives;
              return;
            }
          }
          if (kind == NCCLWATCH_SLOT_P2P && Counted(slot.comm, slot.rank, slot.peer, slot.result)) {
            before = counts_known ? surveys.IssuedBefore(slot.comm, slot.rank) : -1;
            const P2pKey key{slot.comm, slot.rank, slot.peer, slot.call == f::kSend};
            if (p2p_cut == p2p_cuts.end() || p2p_cut->first != key) p2p_cut = p2p_cuts.find(key);
            if (p2p_cut != p2p_cuts.end() && p2p_cut->second.w.LeftOut(slot.seq)) {
              const uint64_t signature = P2pSignatureDigest(slot.seq, slot.count, slot.datatype);
              p2p_cut->second.LeaveOut(slot.seq / kLeftOutBlock, P2pDigestOf(signature, before), 1,
                                       signature,
                                       StreamBuilder::Settled(before, lost_records) < 0 ? 1 : 0);
              ++left_p2p;
              return;
            }
          }
          if (kind == NCCLWATCH_SLOT_GROUP && groups_cut && !kept_slots.Has(pinned, at) &&
              (pinned || at < first_cursor)) {
            ++left_groups;
            return;
          }
          if (kind == NCCLWATCH_SLOT_P2P && carry_counts)
            counts.push_back(StreamBuilder::Settled(before, lost_records));
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
        &read_stats, skip_chunk);
    if (read_stats.read_again && mode == ReadMode::kMapped) return absl::AbortedError("read again");
    return absl::OkStatus();
  };
  // Read again until both readings agree on every block left out: a stream
  // whose blocks a live writer lapped between them is kept whole (all of
  // them after three readings that did not agree).
  for (int reading = 0;; ++reading) {
    absl::Status written = write_entries(ReadMode::kMapped);
    if (absl::IsAborted(written)) written = write_entries(ReadMode::kCopied);
    if (!written.ok()) return written;
    const size_t before = cuts.size() + p2p_cuts.size();
    const bool give_up = reading >= 2;
    cuts.erase(std::remove_if(cuts.begin(), cuts.end(),
                              [&](const auto& c) { return give_up || !c.second.Agrees(); }),
               cuts.end());
    for (auto it = p2p_cuts.begin(); it != p2p_cuts.end();)
      it = give_up || !it->second.Agrees() ? p2p_cuts.erase(it) : std::next(it);
    if (cuts.size() + p2p_cuts.size() == before) break;
    cut_of.clear();
    for (size_t i = 0; i < cuts.size(); ++i) cut_of[cuts[i].first] = i;
    last_cut = SIZE_MAX;
    p2p_cut = p2p_cuts.end();
  }
  std::vector<LeftOutCalls> left_out;
  for (const auto& [key, c] : cuts) {
    LeftOutCalls proto;
    std::tie(proto.comm, proto.rank) = key;
    AppendRuns(c.w, c.sums, proto, &left_out);
  }
  std::vector<LeftOutP2p> left_out_p2p;
  for (const auto& [key, c] : p2p_cuts) {
    LeftOutP2p proto;
    std::tie(proto.comm, proto.rank, proto.peer, proto.send) = key;
    AppendRuns(c.w, c.sums, proto, &left_out_p2p);
  }
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
    out.Varint(l.Blocks());
    // Version 9: each block's digest, then how many of its counts are not
    // known and whether its digest without them differs (then it).
    for (const P2pBlockDigest& b : l.blocks) {
      out.U64(b.digest);
      const bool signature = b.signature != b.digest;
      out.Varint(uint64_t{b.unknown} << 1 | (signature ? 1 : 0));
      if (signature) out.U64(b.signature);
    }
    out.Varint(l.calls);
  }
  // Version 8: the kept sends' and receives' counts (none where not
  // carried), each as its difference from the one before.
  out.Varint(counts.size());
  int64_t previous_count = 0;
  for (int64_t n : counts) {
    out.Zigzag(
        static_cast<int64_t>(static_cast<uint64_t>(n) - static_cast<uint64_t>(previous_count)));
    previous_count = n;
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
    stats->slots_passed_over += passed_over;
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
    absl::Status s = SummarizeTrace(path, window, std::max<uint64_t>(1, options.gpu_times),
                                    options.pass_over_chunks, options.keep, &p, &section, stats,
                                    &node_inventory);
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

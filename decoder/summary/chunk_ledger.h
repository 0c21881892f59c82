// ChunkLedger: what the first of a summary's two readings of a trace saw in
// each chunk of its ring (TraceFile::ForEachEntry's chunks, 2,048 slots),
// so that the second reading passes over a chunk whose every entry it would
// leave out, and counts what it leaves out from the ledger instead (most of
// a big ring: the middle of every stream).
//
// A chunk is "plain" while every slot of it held a whole one-slot entry the
// writer leaves out or keeps by where it lies alone: a collective or a send
// or receive its survey counted (by its block), a group call, a GPU time or
// a Progress record (by its slot: KeptSlots). Those are noted as items, an
// item for each stream's block, or for each communicator's GPU times or
// Progress records, with how many entries and the calls' digests summed.
// Anything else in the chunk (another record, a slot torn, unwritten or
// padding, a record of several slots, more than kMaxItems items) spoils it:
// the second reading reads it. So does a ring whose cursor moved between
// the readings (a live writer): its chunks are not found again.
//
// Passing over a chunk must not move any other entry: so a chunk is spoiled
// too where a pinned record was handed out (among the ring's, by its time)
// while it was read. In a ring read back in time order, its records may
// come out while later chunks are read, and a chunk's records may let out
// those of earlier chunks held for their time: a chunk passed over leaves
// the time order as the first reading found it after the chunk
// (Chunk::end), and lets out what its records did (ForEachEntry,
// TimeOrder::RestoreAndRelease).
//
// Memory: one Chunk (under 800 bytes) per 2,048 slots (256 KiB) of ring,
// for at most kMaxChunks chunks (a 16 GiB ring's; past them, chunks are
// read).
//
// Thread-safety: none (one trace's readings).

#ifndef NCCLWATCH_DECODER_SUMMARY_CHUNK_LEDGER_H_
#define NCCLWATCH_DECODER_SUMMARY_CHUNK_LEDGER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "trace/time_order.h"

namespace ncclwatch::decoder {

enum class LedgerItemKind : uint8_t { kCollective, kP2p, kGroup, kGpuTime, kProgress };
constexpr size_t kLedgerItemKinds = 5;

struct LedgerItem {
  LedgerItemKind kind = LedgerItemKind::kCollective;
  uint32_t count = 0;  // entries
  // The survey's index (calls), the communicator (watcher records), 0 (groups).
  uint64_t stream = 0;
  uint64_t block = 0;   // calls: their block
  uint64_t digest = 0;  // calls: their digests, summed
  // Sends and receives: their digests without their counts of collectives
  // before, summed, and how many came before any collective.
  uint64_t signature = 0;
  uint32_t unknown = 0;
  // Collectives: where the last noted came among the chunk's entries, and
  // its number (a stream's latest is its item's of the highest: a send
  // after the chunk counts the collectives before it from there).
  uint32_t last_entry = 0;
  uint64_t last = 0;
};

class ChunkLedger {
 public:
  static constexpr size_t kMaxItems = 12;
  static constexpr size_t kMaxChunks = size_t{1} << 15;

  struct Chunk {
    uint64_t first = 0;      // its first slot
    uint64_t slots = 0;      // how many
    uint64_t cursor = 0;     // the ring's cursor as the reading took it
    TimeOrder::State start;  // the time order's state before it, and after
    TimeOrder::State end;
    bool ended = false;  // `end` known (the next chunk began)
    uint64_t entries = 0;
    uint32_t items = 0;
    bool plain = true;
    LedgerItem item[kMaxItems];
    // The item each kind's latest entry went to, plus one (0: none yet).
    uint32_t last_of[kLedgerItemKinds] = {};
  };

  // Before a first reading: nothing seen.
  void Clear() {
    chunks_.clear();
    open_ = false;
    next_ = 0;
  }

  // The first reading: a chunk begins (ForEachEntry's `chunk`; in slot
  // order), the time order in state `order`.
  void BeginChunk(uint64_t first, uint64_t slots, uint64_t cursor, const TimeOrder::State& order) {
    if (open_) {
      chunks_.back().end = order;
      chunks_.back().ended = true;
    }
    open_ = chunks_.size() < kMaxChunks;
    if (!open_) return;
    Chunk c;
    c.first = first;
    c.slots = slots;
    c.cursor = cursor;
    c.start = order;
    chunks_.push_back(c);
  }
  // An entry at ring slot `slot`, noted (`block` and `digest` for calls;
  // `seq`, a collective's number; `signature` and `unknown`, a send's or
  // receive's: LedgerItem).
  void Note(uint64_t slot, LedgerItemKind kind, uint64_t stream, uint64_t block, uint64_t digest,
            uint64_t seq = 0, uint64_t signature = 0, uint32_t unknown = 0) {
    Chunk* c = At(slot);
    if (c == nullptr || !c->plain) return;
    const uint64_t entry = c->entries++;
    const bool by_block = kind == LedgerItemKind::kCollective || kind == LedgerItemKind::kP2p;
    LedgerItem* it = nullptr;
    // Most entries are of the item the last of their kind went to.
    if (const uint32_t last = c->last_of[static_cast<size_t>(kind)]; last != 0) {
      LedgerItem& at = c->item[last - 1];
      if (at.stream == stream && (!by_block || at.block == block)) it = &at;
    }
    for (uint32_t i = c->items; it == nullptr && i-- > 0;) {
      LedgerItem& at = c->item[i];
      if (at.kind == kind && at.stream == stream && (!by_block || at.block == block)) {
        it = &at;
        break;
      }
    }
    if (it == nullptr) {
      if (c->items == kMaxItems) {
        c->plain = false;
        return;
      }
      it = &c->item[c->items++];
      it->kind = kind;
      it->stream = stream;
      it->block = block;
    }
    c->last_of[static_cast<size_t>(kind)] = static_cast<uint32_t>(it - c->item) + 1;
    ++it->count;
    it->digest += digest;
    it->signature += signature;
    it->unknown += unknown;
    it->last = seq;
    it->last_entry = static_cast<uint32_t>(entry);
  }
  // An entry at ring slot `slot` the second reading must read.
  void Spoil(uint64_t slot) {
    if (Chunk* c = At(slot)) c->plain = false;
  }
  // An entry of the pinned region came out: not where the chunk being read
  // is passed over.
  void Pinned() {
    if (open_) chunks_.back().plain = false;
  }

  // The second reading: the chunk the first saw at (first, slots, cursor),
  // the time order as then, as this one's next, where it was plain and
  // every slot held an entry; else null. Called for each chunk in turn.
  const Chunk* Find(uint64_t first, uint64_t slots, uint64_t cursor,
                    const TimeOrder::State& order) {
    const size_t at = next_++;
    if (at >= chunks_.size()) return nullptr;
    const Chunk& c = chunks_[at];
    if (c.first != first || c.slots != slots || c.cursor != cursor || !(c.start == order) ||
        !c.ended || !c.plain || c.entries != c.slots)
      return nullptr;
    return &c;
  }
  static absl::Span<const LedgerItem> Items(const Chunk& c) {
    return absl::MakeConstSpan(c.item, c.items);
  }
  // Before a second reading: its chunks from the first.
  void Rewind() { next_ = 0; }

 private:
  // The chunk `slot` lies in, or null: most often the latest begun.
  Chunk* At(uint64_t slot) {
    if (chunks_.empty()) return nullptr;
    Chunk& last = chunks_.back();
    if (slot >= last.first) return slot - last.first < last.slots ? &last : nullptr;
    auto it = std::upper_bound(chunks_.begin(), chunks_.end(), slot,
                               [](uint64_t s, const Chunk& c) { return s < c.first; });
    if (it == chunks_.begin()) return nullptr;
    --it;
    return slot - it->first < it->slots ? &*it : nullptr;
  }

  std::vector<Chunk> chunks_;
  bool open_ = false;  // chunks_.back() is the chunk being read
  size_t next_ = 0;
};

// The slots of the records the second reading keeps though they are GPU
// times, Progress records or group calls (the latest GPU times of each
// communicator, a communicator's first and last Progress records, the first
// and last group calls): those left out are the others, wherever they lie.
class KeptSlots {
 public:
  void Clear() { keys_.clear(); }
  void Add(bool pinned, uint64_t slot) { keys_.push_back({slot, pinned}); }
  // Once all are added.
  void Seal() {
    std::sort(keys_.begin(), keys_.end());
    keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
  }
  bool Has(bool pinned, uint64_t slot) const {
    return std::binary_search(keys_.begin(), keys_.end(), Key{slot, pinned});
  }
  // Whether any of the ring's slots [first, first + n) is kept.
  bool AnyInRing(uint64_t first, uint64_t n) const {
    auto it = std::lower_bound(keys_.begin(), keys_.end(), Key{first, false});
    for (; it != keys_.end() && it->first - first < n; ++it)
      if (!it->second) return true;
    return false;
  }

 private:
  using Key = std::pair<uint64_t, bool>;  // (slot, pinned)
  std::vector<Key> keys_;
};

// The first `head` and the last `tail` of the entries met one by one (their
// pinned flag and slot).
class HeadTail {
 public:
  using Key = std::pair<uint64_t, bool>;  // (slot, pinned)
  HeadTail(size_t head, size_t tail) : head_(head), tail_(tail) {}
  void Add(bool pinned, uint64_t slot) {
    const Key key{slot, pinned};
    ++count_;
    if (head_keys_.size() < head_) {
      head_keys_.push_back(key);
      return;
    }
    if (tail_ == 0) return;
    if (tail_keys_.size() < tail_) {
      tail_keys_.push_back(key);
    } else {
      tail_keys_[next_] = key;
      next_ = (next_ + 1) % tail_;
    }
  }
  uint64_t count() const { return count_; }
  // Adds them to `kept`.
  void KeepAll(KeptSlots* kept) const {
    for (const Key& k : head_keys_) kept->Add(k.second, k.first);
    for (const Key& k : tail_keys_) kept->Add(k.second, k.first);
  }

 private:
  size_t head_;
  size_t tail_;
  uint64_t count_ = 0;
  std::vector<Key> head_keys_;
  std::vector<Key> tail_keys_;
  size_t next_ = 0;  // the oldest of tail_keys_, once full
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_SUMMARY_CHUNK_LEDGER_H_

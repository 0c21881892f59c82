// TimeOrder: puts a format-3 (or later) ring's records, read in logical order, back in
// time order, holding as few as it can.
//
// With claim blocks (proto/ncclwatch/ring_format.h), a thread's block may
// still be written while other threads claim later blocks, so a record may
// come before records that are earlier in time. What the writer promises,
// and this uses:
//   - a record whose slot carries NCCLWATCH_SLOT_CLAIMED (an anchor) is not
//     later than any record after it: once an anchor at time A is read,
//     every record held with t <= A can go out;
//   - no record is more than claim_block_ticks later than one after it:
//     once a record at time N is read, every record held with t <= N - ticks
//     can go out (this bounds what is held when anchors are missing: torn,
//     lapped, or given up as padding).
// An anchor goes out at once (nothing held is earlier), so a ring written
// without blocks holds nothing and copies nothing; a held record is kept as
// a pointer into the reader's chunk, and copied only when the chunk is about
// to be overwritten (Keep) or when it is a multi-slot record (always
// copied: its bytes live only during the call). At most kMaxHeld records are
// held; beyond that (a hostile file) the earliest goes out. A record later
// than the writer promised (a thread preempted between its clock read and
// its claim) goes out as soon as it is read, never dropped.
//
// Thread-safety: one thread at a time, like the TraceFile that uses it.

#ifndef NCCLWATCH_DECODER_TRACE_TIME_ORDER_H_
#define NCCLWATCH_DECODER_TRACE_TIME_ORDER_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "absl/types/span.h"
#include "ncclwatch/ring_format.h"

namespace ncclwatch::decoder {

class TimeOrder {
 public:
  static constexpr size_t kMaxHeld = size_t{1} << 16;

  // `window_ticks`: the header's claim_block_ticks (0: no time bound).
  explicit TimeOrder(uint64_t window_ticks) : window_(window_ticks) {}

  // One record, in logical order, at time `t`; `anchor`: its slot has
  // NCCLWATCH_SLOT_CLAIMED. Calls out(t, index, kind, bytes) for every
  // record now known to be in time order (this one too, maybe). `bytes`
  // must stay valid until the next Keep() when it is one slot's payload or
  // less; a longer one (a multi-slot record) only during the call.
  template <typename Out>
  void Add(uint64_t t, bool anchor, uint64_t index, uint8_t kind, absl::Span<const uint8_t> bytes,
           Out& out) {
    if (anchor && t > floor_) floor_ = t;
    if (t > newest_) {
      newest_ = t;
      if (window_ != 0 && t > window_ && t - window_ > floor_) floor_ = t - window_;
    }
    if (head_ == held_.size()) {  // nothing held: the common case
      if (t <= floor_) {
        out(t, index, kind, bytes);
        return;
      }
    } else {
      ReleaseUpTo(floor_, out);
      if (t <= floor_) {
        out(t, index, kind, bytes);
        return;
      }
    }
    Hold(t, index, kind, bytes);
    if (held_.size() - head_ > kMaxHeld) {
      Pop(out);
      ++forced_;
    }
  }

  // The chunk the held records point into is about to be overwritten.
  void Keep() {
    for (size_t k = head_; k < held_.size(); ++k) {
      Held& h = held_[k];
      if (h.cell >= 0) continue;
      h.cell = Own(h.data, h.len);
      h.data = CellData(h.cell);
    }
  }

  // The region is read: everything held, in time order.
  template <typename Out>
  void Flush(Out& out) {
    while (head_ < held_.size()) Pop(out);
  }

  // Records held now (tests).
  size_t held() const { return held_.size() - head_; }

  // Records let out early because too many were held (kMaxHeld).
  uint64_t forced() const { return forced_; }

  // What decides when records go out: for a reader that passes over a
  // chunk of records (TraceFile::ForEachEntry's `chunk`) and puts the
  // order where reading them had put it. RestoreAndRelease lets out what
  // the chunk's records would have let out (those held before it that
  // they passed); the chunk's own records are not there to hold, and
  // whether they were held changes no other record's turn (but where too
  // many were held: forced(), which a reader that passes over chunks
  // must find 0).
  struct State {
    uint64_t floor = 0;
    uint64_t newest = 0;
    bool operator==(const State& o) const { return floor == o.floor && newest == o.newest; }
  };
  State state() const { return {floor_, newest_}; }
  template <typename Out>
  void RestoreAndRelease(const State& s, Out& out) {
    floor_ = s.floor;
    newest_ = s.newest;
    ReleaseUpTo(floor_, out);
  }

 private:
  static constexpr int32_t kBig = int32_t{1} << 30;  // a cell index with this is in big_
  struct Held {
    uint64_t t;
    uint64_t index;
    const uint8_t* data;
    uint32_t len;
    uint8_t kind;
    int32_t cell;  // -1: data points into the reader's chunk
  };

  void Hold(uint64_t t, uint64_t index, uint8_t kind, absl::Span<const uint8_t> bytes) {
    Held h{t, index, bytes.data(), static_cast<uint32_t>(bytes.size()), kind, -1};
    if (bytes.size() > NCCLWATCH_SLOT_PAYLOAD_BYTES) {
      h.cell = Own(bytes.data(), h.len);
      h.data = CellData(h.cell);
    }
    // Sorted by t, ties in logical order: from the back, where a record
    // usually belongs (each thread's records come in its time order).
    held_.push_back(h);
    size_t k = held_.size() - 1;
    while (k > head_ && held_[k - 1].t > t) {
      held_[k] = held_[k - 1];
      --k;
    }
    held_[k] = h;
  }

  template <typename Out>
  void ReleaseUpTo(uint64_t limit, Out& out) {
    while (head_ < held_.size() && held_[head_].t <= limit) Pop(out);
  }

  template <typename Out>
  void Pop(Out& out) {
    const Held h = held_[head_++];
    out(h.t, h.index, h.kind, absl::MakeConstSpan(h.data, h.len));
    if (h.cell >= 0) Free(h.cell);
    if (head_ == held_.size()) {
      held_.clear();
      head_ = 0;
    } else if (head_ >= 4096 && head_ * 2 >= held_.size()) {
      held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  int32_t Own(const uint8_t* data, uint32_t len) {
    if (len <= NCCLWATCH_SLOT_PAYLOAD_BYTES) {
      int32_t cell;
      if (!free_small_.empty()) {
        cell = free_small_.back();
        free_small_.pop_back();
      } else {
        cell = static_cast<int32_t>(small_.size());
        small_.emplace_back();
      }
      std::memcpy(small_[static_cast<size_t>(cell)].data(), data, len);
      return cell;
    }
    int32_t cell;
    if (!free_big_.empty()) {
      cell = free_big_.back();
      free_big_.pop_back();
    } else {
      cell = static_cast<int32_t>(big_.size());
      big_.emplace_back();
    }
    big_[static_cast<size_t>(cell)].assign(data, data + len);
    return cell | kBig;
  }
  const uint8_t* CellData(int32_t cell) const {
    return cell & kBig ? big_[static_cast<size_t>(cell & ~kBig)].data()
                       : small_[static_cast<size_t>(cell)].data();
  }
  void Free(int32_t cell) {
    if (cell & kBig)
      free_big_.push_back(cell & ~kBig);
    else
      free_small_.push_back(cell);
  }

  const uint64_t window_;
  uint64_t floor_ = 0;   // records with t <= floor_ may go out
  uint64_t newest_ = 0;  // the latest t read
  uint64_t forced_ = 0;
  std::vector<Held> held_;
  size_t head_ = 0;  // held_[head_, end) are held, sorted by t
  // Copies of held records (deques: a cell never moves while it is used).
  std::deque<std::array<uint8_t, NCCLWATCH_SLOT_PAYLOAD_BYTES>> small_;
  std::deque<std::vector<uint8_t>> big_;
  std::vector<int32_t> free_small_, free_big_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_TIME_ORDER_H_

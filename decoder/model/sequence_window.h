// SequenceWindow<T>: one value per sequence number, for the numbers a job's
// traces actually hold, in memory bounded by what the traces could hold.
//
// The analyses line ranks up by sequence number (collective #k of a
// communicator, B#j against A). Honest traces hold a contiguous run of
// numbers per rank, so the window is a dense vector over [base, base+size).
// A crafted or corrupt trace can claim any 64-bit number: #0 next to #2^40,
// or numbers near 2^64. The dense part therefore only grows while its size
// stays within kSlack + 4 x the values stored; a number beyond that is kept
// in a sparse map. Memory is O(values stored) whatever the numbers, and no
// arithmetic on them can wrap.
//
//   SequenceWindow<Entry> w;
//   Entry& e = w.At(seq);        // created on first use (value-initialised)
//   const Entry* x = w.Find(seq);  // nullptr when never set
//   w.ForEach([](uint64_t seq, const Entry& e) { ... });  // ascending
//
// Thread-safety: none; one analysis owns it.

#ifndef NCCLWATCH_DECODER_MODEL_SEQUENCE_WINDOW_H_
#define NCCLWATCH_DECODER_MODEL_SEQUENCE_WINDOW_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace ncclwatch::decoder {

template <typename T>
class SequenceWindow {
 public:
  static constexpr uint64_t kSlack = 4096;

  // The value at `seq`, created if absent.
  T& At(uint64_t seq) {
    // The common case inline: a number the dense run already holds (seq
    // below base_ wraps to a huge offset, past the run).
    const uint64_t i = seq - base_;
    if (i < dense_.size() && set_[i]) return dense_[i];
    // The next number after the run (the first rank's numbers, in order),
    // unless it wrapped past 2^64 (then below base_: the slow path's).
    if (i == dense_.size() && seq > base_ && sparse_.empty()) {
      T& v = dense_.emplace_back();
      set_.push_back(1);
      ++stored_;
      return v;
    }
    return AtSlow(seq);
  }

  // The value at `seq`, or nullptr.
  const T* Find(uint64_t seq) const {
    if (seq >= base_ && seq - base_ < dense_.size())
      return set_[seq - base_] ? &dense_[seq - base_] : nullptr;
    auto it = sparse_.find(seq);
    return it == sparse_.end() ? nullptr : &it->second;
  }
  T* Find(uint64_t seq) {
    return const_cast<T*>(static_cast<const SequenceWindow*>(this)->Find(seq));
  }

  // Room for `n` numbers in a row before the dense run moves, when nothing
  // is stored yet: a caller that knows how many it will store first saves
  // the run's growth by doubling (each step a copy into memory faulted in
  // afresh). Capacity only: what is stored, and where, is unchanged.
  void Reserve(size_t n) {
    if (!empty()) return;
    dense_.reserve(n);
    set_.reserve(n);
  }

  // Asks the cache for `seq`'s value, where the dense run holds it (a
  // hint: it changes nothing, and costs nothing for a number outside).
  void Prefetch(uint64_t seq) const {
    const uint64_t i = seq - base_;
    if (i < dense_.size()) {
      const char* at = reinterpret_cast<const char*>(&dense_[i]);
      __builtin_prefetch(at);
      __builtin_prefetch(at + sizeof(T) - 1);
    }
  }

  bool empty() const { return stored_ == 0; }
  size_t size() const { return stored_; }

  // Every stored value, by ascending sequence number.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    auto s = sparse_.begin();
    for (size_t i = 0; i < dense_.size(); ++i) {
      if (!set_[i]) continue;
      const uint64_t seq = base_ + i;
      for (; s != sparse_.end() && s->first < seq; ++s) fn(s->first, s->second);
      fn(seq, dense_[i]);
    }
    for (; s != sparse_.end(); ++s) fn(s->first, s->second);
  }

 private:
  // At, for a number not yet stored or outside the dense run.
  T& AtSlow(uint64_t seq) {
    if (T* d = Dense(seq)) return *d;
    auto it = sparse_.find(seq);
    if (it != sparse_.end()) return it->second;
    ++stored_;
    if (dense_.empty() && sparse_.empty()) {
      base_ = seq;
      dense_.emplace_back();
      set_.push_back(1);
      return dense_.back();
    }
    if (!dense_.empty()) {
      const uint64_t limit = kSlack + 4 * stored_;
      if (seq >= base_) {
        if (seq - base_ < limit) {  // no wrap: seq >= base_, and the +1 comes after the bound
          const uint64_t need = seq - base_ + 1;
          dense_.resize(need);
          set_.resize(need, 0);
          set_[need - 1] = 1;
          Absorb();
          return dense_[need - 1];
        }
      } else {
        const uint64_t grow = base_ - seq;
        if (grow <= limit && dense_.size() + grow <= limit) {
          // Grown downwards by at least the run's size (within the bound),
          // so that numbers arriving in descending order cost O(1) each on
          // average instead of moving the whole run every time.
          uint64_t room = std::max<uint64_t>(grow, dense_.size());
          room = std::min<uint64_t>({room, limit - dense_.size(), base_});
          dense_.insert(dense_.begin(), room, T{});
          set_.insert(set_.begin(), room, uint8_t{0});
          base_ -= room;
          set_[seq - base_] = 1;
          Absorb();
          return dense_[seq - base_];
        }
      }
    }
    return sparse_[seq];
  }

  // Moves sparse values that the dense range now covers into it.
  void Absorb() {
    for (auto it = sparse_.lower_bound(base_);
         it != sparse_.end() && it->first - base_ < dense_.size();) {
      dense_[it->first - base_] = std::move(it->second);
      set_[it->first - base_] = 1;
      it = sparse_.erase(it);
    }
  }

  T* Dense(uint64_t seq) {
    if (seq < base_ || seq - base_ >= dense_.size() || !set_[seq - base_]) {
      if (seq >= base_ && seq - base_ < dense_.size()) {  // inside, not yet set
        ++stored_;
        set_[seq - base_] = 1;
        return &dense_[seq - base_];
      }
      return nullptr;
    }
    return &dense_[seq - base_];
  }

  uint64_t base_ = 0;
  std::vector<T> dense_;
  std::vector<uint8_t> set_;  // one byte a number, not a bit: At's test is one load
  std::map<uint64_t, T> sparse_;
  size_t stored_ = 0;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_SEQUENCE_WINDOW_H_

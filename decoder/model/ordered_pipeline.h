// LoadInOrder: `items` things loaded on several cores, each into a slot of a
// small ring, and handed to the caller one at a time, in order.
//
// The workers (threads - 1 of them, and the calling thread while it waits
// for the next item) each take the next item as soon as the slot it reuses
// (that of the item `slots` before it) has been handed out, and load it
// there with `load(i, &slot)`. The calling thread hands item i to
// `fn(i, slot)` while the workers load the next ones, so what the caller
// sees never depends on scheduling, and at most threads + 1 slots are in
// memory at once. `fn` returning false stops the loading (after the items
// being loaded).
//
// The trace loader (model/trace_loader.h) loads a job's traces this way,
// and a job's node summaries (summary/job_inputs.h) each of its summaries.
//
//   LoadInOrder<Slot>(n, threads,
//       [&](size_t i, Slot* s) { ... fill *s from item i ... },   // on any thread
//       [&](size_t i, Slot& s) { ... use it ...; return true; }); // in order, here
//
// Thread-safety: call from one thread; `fn` runs on that thread, `load` on
// any, several at once (each on its own slot).

#ifndef NCCLWATCH_DECODER_MODEL_ORDERED_PIPELINE_H_
#define NCCLWATCH_DECODER_MODEL_ORDERED_PIPELINE_H_

#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace ncclwatch::decoder {

// The cores this process may run on (its affinity), at least 1.
inline unsigned AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

template <typename Slot>
class OrderedPipeline {
 public:
  using Load = std::function<void(size_t, Slot*)>;

  OrderedPipeline(size_t items, unsigned slots, Load load)
      : items_(items), ring_(std::max(1u, slots)), load_(std::move(load)) {}

  // Starts up to `workers` workers; how many could be started (a limit on
  // threads can refuse some, or all: the calling thread then loads the rest).
  size_t Start(unsigned workers) {
    for (unsigned i = 0; i < workers; ++i) {
      try {
        workers_.emplace_back([this] { Work(); });
      } catch (const std::system_error&) {
        break;
      }
    }
    return workers_.size();
  }

  // Stops the workers (after the item each is loading) and waits for them.
  ~OrderedPipeline() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  // Hands the items to `fn` in order, until it returns false. While the
  // next one is not loaded yet, the calling thread loads one itself if any
  // is free to take.
  template <typename Fn>
  void HandOut(Fn& fn) {
    for (size_t i = 0; i < items_; ++i) {
      Entry& entry = ring_[i % ring_.size()];
      {
        std::unique_lock<std::mutex> lock(mu_);
        while (!entry.ready) {
          if (CanTake()) {
            LoadNext(lock);
          } else {
            changed_.wait(lock);
          }
        }
      }
      const bool more = fn(i, entry.slot);
      {
        std::lock_guard<std::mutex> lock(mu_);
        entry.ready = false;
        ++handed_out_;
        if (!more) stop_ = true;
      }
      changed_.notify_all();
      if (!more) return;
    }
  }

 private:
  struct Entry {
    Slot slot;
    bool ready = false;  // loaded, not yet handed out
  };

  // Whether an item is left to load and the slot it reuses has been handed
  // out. Under mu_.
  bool CanTake() const { return !stop_ && next_ < items_ && next_ < handed_out_ + ring_.size(); }

  // Loads the next item, with mu_ held on entry and on return (not while loading).
  void LoadNext(std::unique_lock<std::mutex>& lock) {
    const size_t i = next_++;
    Entry& entry = ring_[i % ring_.size()];
    lock.unlock();
    load_(i, &entry.slot);
    lock.lock();
    entry.ready = true;
    changed_.notify_all();
  }

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      changed_.wait(lock, [&] { return stop_ || next_ >= items_ || CanTake(); });
      if (stop_ || next_ >= items_) return;
      LoadNext(lock);
    }
  }

  const size_t items_;
  std::vector<Entry> ring_;
  Load load_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable changed_;
  size_t next_ = 0;        // the next item a thread takes
  size_t handed_out_ = 0;  // items given to fn so far
  bool stop_ = false;
};

// `threads` 0: one per available core (at most 64). `fn(i, slot)` returns
// whether to go on.
template <typename Slot, typename LoadFn, typename Fn>
void LoadInOrder(size_t items, unsigned threads, LoadFn load, Fn fn) {
  if (threads == 0) threads = AvailableCores();
  threads = std::max(1u, std::min<unsigned>(threads, 64));
  if (threads > 1 && items > 1) {
    // The calling thread loads too: `threads` - 1 workers beside it.
    const unsigned workers = static_cast<unsigned>(std::min<size_t>(threads, items)) - 1;
    OrderedPipeline<Slot> pipeline(items, workers + 1, load);
    pipeline.Start(workers);
    pipeline.HandOut(fn);
    return;
  }
  Slot slot;
  for (size_t i = 0; i < items; ++i) {
    load(i, &slot);
    if (!fn(i, slot)) return;
  }
}

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_ORDERED_PIPELINE_H_

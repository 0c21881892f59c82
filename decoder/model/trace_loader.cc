#include "model/trace_loader.h"

#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

namespace ncclwatch::decoder {
namespace {

unsigned AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// The files in order, each loaded by whichever thread is free (the workers,
// and the calling thread while it waits), into a ring of `slots` traces:
// while the calling thread hands file i to `fn`, the workers load the next
// ones (up to i + slots - 1), each as soon as the trace it reuses has been
// handed out. Workers live for the whole call, so each keeps its copy
// buffers (TraceFile's, per thread) from file to file.
class Pipeline {
 public:
  Pipeline(const std::vector<std::string>& files, unsigned slots) : files_(files), ring_(slots) {}

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

  // Stops the workers (after the file each is loading) and waits for them.
  ~Pipeline() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  // Hands the files to `fn` in order. While the next one is not loaded yet,
  // the calling thread loads one itself if any is free to take.
  template <typename Fn>
  void HandOut(Fn& fn) {
    for (size_t i = 0; i < files_.size(); ++i) {
      Slot& slot = ring_[i % ring_.size()];
      {
        std::unique_lock<std::mutex> lock(mu_);
        while (!slot.ready) {
          if (CanTake()) {
            LoadNext(lock);
          } else {
            changed_.wait(lock);
          }
        }
      }
      fn(files_[i], slot.status, slot.trace);
      {
        std::lock_guard<std::mutex> lock(mu_);
        slot.ready = false;
        ++handed_out_;
      }
      changed_.notify_all();
    }
  }

 private:
  struct Slot {
    ProcessTrace trace;
    absl::Status status;
    bool ready = false;  // loaded, not yet handed out
  };

  // Whether a file is left to load and the trace it reuses (that of the
  // file ring_.size() before it) has been handed out. Under mu_.
  bool CanTake() const { return next_ < files_.size() && next_ < handed_out_ + ring_.size(); }

  // Loads the next file, with mu_ held on entry and on return (not while loading).
  void LoadNext(std::unique_lock<std::mutex>& lock) {
    const size_t i = next_++;
    Slot& slot = ring_[i % ring_.size()];
    lock.unlock();
    slot.status = LoadProcessTraceInto(files_[i], &slot.trace);
    lock.lock();
    slot.ready = true;
    changed_.notify_all();
  }

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      changed_.wait(lock, [&] { return stop_ || next_ >= files_.size() || CanTake(); });
      if (stop_ || next_ >= files_.size()) return;
      LoadNext(lock);
    }
  }

  const std::vector<std::string>& files_;
  std::vector<Slot> ring_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable changed_;
  size_t next_ = 0;        // the next file a worker takes
  size_t handed_out_ = 0;  // files given to fn so far
  bool stop_ = false;
};

}  // namespace

void LoadProcessTraces(const std::vector<std::string>& files, unsigned threads,
                       const std::function<void(const std::string& file, const absl::Status& status,
                                                const ProcessTrace& trace)>& fn) {
  if (threads == 0) threads = AvailableCores();
  threads = std::max(1u, std::min<unsigned>({threads, 64}));
  if (threads > 1 && files.size() > 1) {
    // The calling thread loads too: `threads` - 1 workers beside it.
    const unsigned workers = std::min<unsigned>(threads, static_cast<unsigned>(files.size())) - 1;
    Pipeline pipeline(files, workers + 1);
    pipeline.Start(workers);
    pipeline.HandOut(fn);
    return;
  }
  ProcessTrace trace;
  for (const std::string& file : files) {
    const absl::Status status = LoadProcessTraceInto(file, &trace);
    fn(file, status, trace);
  }
}

}  // namespace ncclwatch::decoder

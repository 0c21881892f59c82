// A communicator's progress thread: what plays the GPU kernels' part.
//
// A call (or a group) becomes a Batch of Ops. The caller posts the batch here,
// which fixes its place in line on every connection it uses, and enqueues a
// host task on the CUDA stream; when the stream reaches that task, the task
// activates the batch and waits for it, so the stream is busy for as long as
// the collective runs, as with a kernel. The progress thread moves data for
// active ops that are first in line, backing off while nothing can move.
//
//   caller:   Post(batch) --------> [ line-up per connection ]
//   stream:   ... Activate(batch); wait ...          ^
//   progress: loop { for active ops: op.Progress() } |
//
// Abort fails every op at once and releases the waiting streams. A batch
// with a hold (NCCLSIM_SLOW_LINK) moves nothing until it has passed.
//
// One-sided puts and signals are not lined up: whatever is at the head of a
// connection from a peer and belongs to one is taken in by the thread as it
// comes (into the window, the signal counted), with no op of this rank's.
//
// Thread-safety: Post, Activate, Abort, WaitIdle and Stop may be called from
// any thread; the line-up and the ops are touched only by the progress thread.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_PROGRESS_H_
#define NCCLWATCH_TESTS_SIM_NCCL_PROGRESS_H_

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "nccl/ops.h"

namespace ncclsim::nccl {

class Transport;

struct Batch {
  std::vector<std::unique_ptr<Op>> ops;
  // Set when the stream reaches the batch (Activate).
  std::atomic<bool> active{false};
  // Called on the progress thread when the batch becomes active; returns false
  // to fail the batch instead of running it (an injected GPU fault).
  std::function<bool(Batch&)> on_start;
  // NCCLSIM_SLOW_LINK: once active, it moves no data for this long (a slow
  // link: its peers wait for its data, it for theirs).
  int64_t hold_ns = 0;
  std::chrono::steady_clock::time_point hold_until;

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  ncclResult_t result = ncclSuccess;

  void Finish(ncclResult_t r);
  ncclResult_t Wait();
};

class ProgressEngine {
 public:
  ProgressEngine() = default;
  ~ProgressEngine() { Stop(); }

  void Start(Transport* transport, int nranks);
  void Post(std::shared_ptr<Batch> batch);
  void Activate(const std::shared_ptr<Batch>& batch);
  // Fails every posted batch with `why`.
  void Abort(ncclResult_t why);
  // Waits until every posted batch is done.
  void WaitIdle();
  void Stop();

  // One-sided traffic to this rank (ops.h): its windows and the signals in.
  OneSidedState& one_sided() { return one_sided_; }
  // Once the rank has a window: the thread also wakes when idle (every 2 ms)
  // to take puts and signals in, which arrive without any call of this rank's.
  void ServeOneSidedWhenIdle();

 private:
  void Loop();
  // Takes the puts and signals at the head of each incoming connection.
  bool ServeOneSided();

  Transport* transport_ = nullptr;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Batch>> incoming_;  // posted, not yet seen by the thread
  std::deque<std::shared_ptr<Batch>> pending_;   // owned by the thread
  LineUp line_;
  bool stop_ = false;
  ncclResult_t abort_ = ncclSuccess;
  uint64_t posted_ = 0;
  uint64_t finished_ = 0;
  std::condition_variable idle_cv_;
  OneSidedState one_sided_;
  std::atomic<bool> serve_idle_{false};
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_PROGRESS_H_

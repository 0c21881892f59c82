#include "nccl/progress.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>

#include "nccl/params.h"
#include "nccl/transport.h"

namespace ncclsim::nccl {
namespace {

// Idle backoff while ops are active but nothing can move: yield a few times,
// then sleep 20 us doubling to 1 ms, so a hung job costs little CPU.
void Backoff(int idle) {
  if (idle < 8) {
    sched_yield();
    return;
  }
  const long us = std::min(20L << std::min(idle - 8, 6), 1000L);
  timespec ts{0, us * 1000};
  nanosleep(&ts, nullptr);
}

}  // namespace

void Batch::Finish(ncclResult_t r) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (done) return;
    done = true;
    result = r;
  }
  cv.notify_all();
}

ncclResult_t Batch::Wait() {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [this] { return done; });
  return result;
}

void ProgressEngine::Start(Transport* transport, int nranks) {
  transport_ = transport;
  one_sided_.Reset(nranks);
  line_.send.assign(nranks, {});
  line_.recv.assign(nranks, {});
  thread_ = std::thread([this] { Loop(); });
}

void ProgressEngine::Post(std::shared_ptr<Batch> batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming_.push_back(std::move(batch));
    ++posted_;
  }
  cv_.notify_all();
}

void ProgressEngine::Activate(const std::shared_ptr<Batch>& batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch->active.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

void ProgressEngine::Abort(ncclResult_t why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abort_ == ncclSuccess) abort_ = why;
  }
  cv_.notify_all();
}

void ProgressEngine::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return finished_ == posted_; });
}

void ProgressEngine::ServeOneSidedWhenIdle() {
  serve_idle_.store(true);
  cv_.notify_all();
}

bool ProgressEngine::ServeOneSided() {
  if (NetReceiveDead()) return false;  // NCCLSIM_NET_STALL: nothing comes in
  bool moved = false;
  for (int p = 0; p < one_sided_.nranks; ++p) {
    Fifo& f = transport_->RecvFrom(p);
    if (!f.valid()) continue;
    const StepMeta* meta = nullptr;
    const char* data = nullptr;
    while (f.Peek(&meta, &data) && IsOneSided(static_cast<Func>(meta->sig.func))) {
      const StepMeta m = *meta;
      if (m.bytes > 0)
        one_sided_.Place(m.sig.root, m.sig.count + m.offset, data, static_cast<size_t>(m.bytes));
      f.Pop();
      if (m.offset + m.bytes >= m.message_bytes) one_sided_.Count(p);
      moved = true;
    }
  }
  return moved;
}

void ProgressEngine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressEngine::Loop() {
  int idle = 0;
  for (;;) {
    ncclResult_t abort = ncclSuccess;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto any_active = [this] {
        return std::any_of(pending_.begin(), pending_.end(), [](const std::shared_ptr<Batch>& b) {
          return b->active.load(std::memory_order_acquire);
        });
      };
      auto wake = [&] {
        return stop_ || abort_ != ncclSuccess || !incoming_.empty() || any_active();
      };
      if (serve_idle_.load())
        cv_.wait_for(lock, std::chrono::milliseconds(2), wake);
      else
        cv_.wait(lock, wake);
      if (stop_) return;
      abort = abort_;
      while (!incoming_.empty()) {
        std::shared_ptr<Batch> b = std::move(incoming_.front());
        incoming_.pop_front();
        for (auto& op : b->ops) {
          for (size_t p = 0; p < line_.send.size(); ++p) {
            if (op->SendsTo(static_cast<int>(p))) line_.send[p].push_back(op.get());
            if (op->ReceivesFrom(static_cast<int>(p))) line_.recv[p].push_back(op.get());
          }
        }
        pending_.push_back(std::move(b));
      }
    }

    if (abort != ncclSuccess) {
      for (auto& b : pending_) b->Finish(abort);
      for (auto& q : line_.send) q.clear();
      for (auto& q : line_.recv) q.clear();
      {
        std::lock_guard<std::mutex> lock(mu_);
        finished_ += pending_.size();
      }
      pending_.clear();
      idle_cv_.notify_all();
      continue;
    }

    bool moved = ServeOneSided();
    for (auto& b : pending_) {
      if (!b->active.load(std::memory_order_acquire) || b->done) continue;
      // First sight of an active batch: its local part, or its injected fault.
      if (b->on_start) {
        auto start = std::move(b->on_start);
        b->on_start = nullptr;
        if (!start(*b)) continue;  // the hook finished the batch with an error
        for (auto& op : b->ops) op->Start();
        b->hold_until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(b->hold_ns);
        moved = true;
      }
      if (b->hold_ns > 0 && std::chrono::steady_clock::now() < b->hold_until) continue;
      for (auto& op : b->ops) {
        if (!op->Done()) moved |= op->Progress(*transport_, line_);
      }
    }

    // Release connections the first op in line is done with (or whose batch
    // failed), and complete finished batches in any order.
    auto batch_over = [this](const Op* op) {
      for (auto& b : pending_) {
        if (!b->done) continue;
        for (auto& o : b->ops)
          if (o.get() == op) return true;
      }
      return false;
    };
    for (size_t p = 0; p < line_.send.size(); ++p) {
      auto& sq = line_.send[p];
      while (!sq.empty() && (sq.front()->SendDone(static_cast<int>(p)) || batch_over(sq.front())))
        sq.pop_front();
      auto& rq = line_.recv[p];
      while (!rq.empty() && (rq.front()->RecvDone(static_cast<int>(p)) || batch_over(rq.front())))
        rq.pop_front();
    }
    size_t finished = 0;
    for (auto it = pending_.begin(); it != pending_.end();) {
      Batch& b = **it;
      bool all_done = b.done;
      if (!all_done && b.active.load(std::memory_order_acquire) && !b.on_start) {
        all_done = std::all_of(b.ops.begin(), b.ops.end(),
                               [](const std::unique_ptr<Op>& o) { return o->Done(); });
        if (all_done) b.Finish(ncclSuccess);
      }
      // A failed batch stays until no connection still lists its ops.
      bool listed = false;
      if (all_done && b.result != ncclSuccess) {
        for (auto& op : b.ops) {
          for (auto& q : line_.send) listed |= std::find(q.begin(), q.end(), op.get()) != q.end();
          for (auto& q : line_.recv) listed |= std::find(q.begin(), q.end(), op.get()) != q.end();
        }
      }
      if (all_done && !listed) {
        it = pending_.erase(it);
        ++finished;
      } else {
        ++it;
      }
    }
    if (finished > 0) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        finished_ += finished;
      }
      idle_cv_.notify_all();
      moved = true;
    }
    if (moved) {
      idle = 0;
    } else {
      Backoff(idle++);
    }
  }
}

}  // namespace ncclsim::nccl

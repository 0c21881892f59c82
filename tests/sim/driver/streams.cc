// Streams and events.
//
// A stream is a FIFO of host tasks and one worker thread that runs them in
// order, so a call that enqueues work returns at once and the work happens
// later, as on a GPU. An event is a pair of counters (records issued, records
// completed); recording enqueues a task that advances `completed`. Waiting on
// an event waits for the records issued before the wait, as CUDA specifies.
//
// Stream and event objects are never freed: a destroyed stream's worker
// drains its queue and exits, and tasks still queued elsewhere may point at
// an event the program has already destroyed. The cost is a few hundred bytes
// per object, which a simulator run can afford.

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "driver/driver_state.h"

namespace ncclsim::driver {
namespace {

constexpr uint32_t kEventIpcMagic = 0x5645534eu;  // "NSEV"

struct IpcEventPayload {
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  uint32_t reserved;
};
static_assert(sizeof(IpcEventPayload) <= sizeof(CUipcEventHandle), "payload must fit the handle");

struct Registry {
  std::mutex mu;
  std::vector<CUstream_st*> streams;
  std::map<int, CUstream_st*> default_streams;
  uint64_t next_id = 1;
};

Registry& TheRegistry() {
  static auto* r = new Registry();
  return *r;
}

// Every event completion notifies this; waiters re-check their own counters.
// Waits are bounded so that an interprocess event, completed by another
// process that cannot notify us, is still seen.
std::mutex& EventMutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::condition_variable& EventCv() {
  static auto* cv = new std::condition_variable();
  return *cv;
}

void WorkerLoop(CUstream_st* s) {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(s->mu);
      s->cv.wait(lock, [s] { return !s->queue.empty() || s->destroyed; });
      if (s->queue.empty()) return;  // destroyed and drained
      task = std::move(s->queue.front());
      s->queue.pop_front();
    }
    task();
    {
      std::lock_guard<std::mutex> lock(s->mu);
      ++s->completed;
    }
    s->cv.notify_all();
  }
}

void WaitCounters(EventCounters* c, uint64_t target) {
  std::unique_lock<std::mutex> lock(EventMutex());
  while (c->completed.load(std::memory_order_acquire) < target) {
    EventCv().wait_for(lock, std::chrono::milliseconds(1));
  }
}

}  // namespace

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

CUstream_st* CreateStream(int device, unsigned flags, int priority) {
  auto* s = new CUstream_st();
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  Registry& r = TheRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    s->id = r.next_id++;
    r.streams.push_back(s);
  }
  std::thread(WorkerLoop, s).detach();
  return s;
}

void DestroyStream(CUstream_st* s) {
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->destroyed = true;
  }
  s->cv.notify_all();
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.streams.erase(std::remove(r.streams.begin(), r.streams.end(), s), r.streams.end());
}

CUresult ResolveStream(CUstream handle, CUstream_st** out) {
  if (handle != nullptr && handle != CU_STREAM_LEGACY && handle != CU_STREAM_PER_THREAD) {
    *out = handle;
    return CUDA_SUCCESS;
  }
  int dev = 0;
  CUresult rc = CurrentDevice(&dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (handle == CU_STREAM_PER_THREAD) {
    thread_local std::map<int, CUstream_st*> per_thread;
    auto it = per_thread.find(dev);
    if (it == per_thread.end()) it = per_thread.emplace(dev, CreateStream(dev, 0, 0)).first;
    *out = it->second;
    return CUDA_SUCCESS;
  }
  Registry& r = TheRegistry();
  CUstream_st* s = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.default_streams.find(dev);
    if (it != r.default_streams.end()) s = it->second;
  }
  if (s == nullptr) {
    CUstream_st* created = CreateStream(dev, 0, 0);
    std::lock_guard<std::mutex> lock(r.mu);
    auto ins = r.default_streams.emplace(dev, created);
    s = ins.first->second;  // another thread may have won; its stream is used
  }
  *out = s;
  return CUDA_SUCCESS;
}

void Enqueue(CUstream_st* s, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->queue.push_back(std::move(task));
    ++s->enqueued;
  }
  s->cv.notify_all();
}

CUresult SynchronizeStream(CUstream_st* s) {
  {
    std::unique_lock<std::mutex> lock(s->mu);
    const uint64_t target = s->enqueued;
    s->cv.wait(lock, [s, target] { return s->completed >= target; });
  }
  Device* dev = DeviceAt(s->device);
  return dev ? static_cast<CUresult>(dev->sticky_error.load()) : CUDA_SUCCESS;
}

bool StreamIdle(CUstream_st* s) {
  std::lock_guard<std::mutex> lock(s->mu);
  return s->completed == s->enqueued;
}

CUresult SynchronizeDevice(int device) {
  std::vector<CUstream_st*> streams;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (CUstream_st* s : r.streams)
      if (s->device == device) streams.push_back(s);
  }
  for (CUstream_st* s : streams) (void)SynchronizeStream(s);
  Device* dev = DeviceAt(device);
  return dev ? static_cast<CUresult>(dev->sticky_error.load()) : CUDA_ERROR_INVALID_DEVICE;
}

CUevent_st* CreateEvent(unsigned flags, CUresult* status) {
  auto* e = new CUevent_st();
  e->flags = flags;
  if (flags & CU_EVENT_INTERPROCESS) {
    if (!(flags & CU_EVENT_DISABLE_TIMING)) {
      delete e;
      *status = CUDA_ERROR_INVALID_VALUE;
      return nullptr;
    }
    int fd = memfd_create("ncclsim-ipc-event", MFD_CLOEXEC);
    void* p = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(sysconf(_SC_PAGESIZE))) == 0) {
      p = mmap(nullptr, sizeof(EventCounters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (p == MAP_FAILED) {
      if (fd >= 0) close(fd);
      delete e;
      *status = CUDA_ERROR_OUT_OF_MEMORY;
      return nullptr;
    }
    e->counters = new (p) EventCounters();
    e->shared_fd = fd;
  } else {
    e->counters = new EventCounters();
  }
  *status = CUDA_SUCCESS;
  return e;
}

void DestroyEvent(CUevent_st* e) {
  // Records may still be queued on a stream: the object stays (see above).
  (void)e;
}

void RecordEvent(CUevent_st* e, CUstream_st* s) {
  EventCounters* c = e->counters;
  const uint64_t gen = c->recorded.fetch_add(1, std::memory_order_acq_rel) + 1;
  Enqueue(s, [c, gen] {
    uint64_t cur = c->completed.load(std::memory_order_acquire);
    while (cur < gen && !c->completed.compare_exchange_weak(cur, gen, std::memory_order_acq_rel)) {
    }
    c->completed_at_ns.store(NowNs(), std::memory_order_release);
    { std::lock_guard<std::mutex> lock(EventMutex()); }
    EventCv().notify_all();
  });
}

bool EventDone(CUevent_st* e) {
  return e->counters->completed.load(std::memory_order_acquire) >=
         e->counters->recorded.load(std::memory_order_acquire);
}

void WaitEvent(CUevent_st* e) {
  WaitCounters(e->counters, e->counters->recorded.load(std::memory_order_acquire));
}

void StreamWaitOnEvent(CUstream_st* s, CUevent_st* e) {
  EventCounters* c = e->counters;
  const uint64_t target = c->recorded.load(std::memory_order_acquire);
  Enqueue(s, [c, target] { WaitCounters(c, target); });
}

CUresult IpcExportEvent(CUevent_st* e, CUipcEventHandle* handle) {
  if (handle == nullptr || e == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (e->shared_fd < 0) return CUDA_ERROR_INVALID_VALUE;  // not CU_EVENT_INTERPROCESS
  IpcEventPayload pl{kEventIpcMagic, static_cast<int32_t>(getpid()), e->shared_fd, 0};
  std::memset(handle, 0, sizeof(*handle));
  std::memcpy(handle->reserved, &pl, sizeof(pl));
  return CUDA_SUCCESS;
}

CUresult IpcImportEvent(const CUipcEventHandle& handle, CUevent_st** out) {
  IpcEventPayload pl;
  std::memcpy(&pl, handle.reserved, sizeof(pl));
  if (pl.magic != kEventIpcMagic || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (pl.pid == static_cast<int32_t>(getpid())) return CUDA_ERROR_INVALID_CONTEXT;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", pl.pid, pl.fd);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
  void* p = mmap(nullptr, sizeof(EventCounters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return CUDA_ERROR_MAP_FAILED;
  auto* e = new CUevent_st();
  e->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
  e->counters = static_cast<EventCounters*>(p);
  e->imported = true;
  *out = e;
  return CUDA_SUCCESS;
}

}  // namespace ncclsim::driver

// The simulated CUDA driver's state: devices, contexts, device memory,
// streams and events.
//
// This is libcuda.so.1 of the CPU simulator (see tests/sim/README.md). A
// "GPU" is a record with a PCI bus id; device memory is host memory carved
// out of one memfd-backed arena per process, so that another process can map
// it for CUDA IPC; a stream is an in-order queue of host tasks run by its own
// worker thread, so work really is asynchronous to the caller.
//
// Threads: everything here may be called from any thread. Each object keeps
// its own mutex; no function holds two of them at once, except Stream::
// Enqueue, which takes the stream's lock only. Nothing here is async-signal-
// safe, and none of it needs to be: the simulator is not on ncclwatch's hot
// path, it is what that path is tested against.
//
// Lifetime: process-wide objects (devices, the arena, default streams) are
// created on first use and deliberately never destroyed, so that a worker
// thread still blocked in a hung collective cannot touch a destroyed object
// while the process exits.

#ifndef NCCLWATCH_TESTS_SIM_DRIVER_DRIVER_STATE_H_
#define NCCLWATCH_TESTS_SIM_DRIVER_DRIVER_STATE_H_

#include <cuda.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ncclsim::driver {

// The driver version this simulator reports: CUDA 13.0, unless the knob
// NCCLSIM_DRIVER_VERSION (e.g. "12040") says otherwise.
int DriverVersion();

// ---------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------

struct Device {
  int ordinal = 0;   // CUDA ordinal, after CUDA_VISIBLE_DEVICES
  int physical = 0;  // index among the host's simulated GPUs
  int pci_domain = 0;
  int pci_bus = 0;
  int pci_device = 0;
  uint64_t total_memory = 0;
  CUuuid uuid{};
  std::string name;
  // A sticky error (a CUresult), set when a fault is injected; once set, every
  // synchronising call on this device returns it, as after a real Xid.
  std::atomic<int> sticky_error{CUDA_SUCCESS};
};

// The devices visible to this process. NCCLSIM_GPUS sets how many the host
// has (default 8); CUDA_VISIBLE_DEVICES selects among them by index.
std::vector<Device*>& VisibleDevices();
Device* DeviceAt(int ordinal);  // nullptr when out of range

// The PCI bus id string of a device, "0000:07:00.0" style.
std::string PciBusIdString(const Device& dev);

// ---------------------------------------------------------------------------
// Contexts: one primary context per device; the current one is per thread.
// ---------------------------------------------------------------------------

}  // namespace ncclsim::driver

struct CUctx_st {
  int device = 0;
  std::atomic<int> retain_count{0};
  unsigned flags = 0;
};

namespace ncclsim::driver {

CUctx_st* PrimaryContext(int ordinal);
CUctx_st*& CurrentContext();  // thread-local
// The device of the current context, or CUDA_ERROR_INVALID_CONTEXT.
CUresult CurrentDevice(int* ordinal);

// ---------------------------------------------------------------------------
// Device memory
// ---------------------------------------------------------------------------

// What a pointer is, as cuPointerGetAttribute reports it.
struct PointerInfo {
  bool is_device = false;  // inside the arena or an imported IPC mapping
  int device = -1;
  uintptr_t base = 0;
  size_t size = 0;
  uint64_t alloc_id = 0;
};

CUresult AllocDevice(int device, size_t bytes, bool managed, CUdeviceptr* out);
CUresult FreeDevice(CUdeviceptr ptr);
bool LookupPointer(uintptr_t ptr, PointerInfo* info);
void DeviceMemoryUsage(int device, size_t* used);

CUresult IpcExportMemory(CUdeviceptr ptr, CUipcMemHandle* handle);
CUresult IpcImportMemory(const CUipcMemHandle& handle, CUdeviceptr* out);
CUresult IpcCloseMemory(CUdeviceptr ptr);

// ---------------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------------

// What an event's state is: counts of records issued and completed. For an
// interprocess event this lives in a shared page that another process maps.
struct EventCounters {
  std::atomic<uint64_t> recorded{0};
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> completed_at_ns{0};
};

}  // namespace ncclsim::driver

struct CUevent_st {
  unsigned flags = 0;
  std::atomic<int> device{-1};  // the device of the stream it was last recorded on
  ncclsim::driver::EventCounters* counters = nullptr;
  int shared_fd = -1;  // memfd holding `counters` for an interprocess event
  bool imported = false;
};

struct CUstream_st {
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  uint64_t id = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  uint64_t enqueued = 0;   // tasks ever queued
  uint64_t completed = 0;  // tasks finished
  bool destroyed = false;
};

namespace ncclsim::driver {

// Resolves a CUstream handle: NULL and CU_STREAM_LEGACY mean the current
// device's default stream, CU_STREAM_PER_THREAD this thread's.
CUresult ResolveStream(CUstream handle, CUstream_st** out);
CUstream_st* CreateStream(int device, unsigned flags, int priority);
void DestroyStream(CUstream_st* s);
void Enqueue(CUstream_st* s, std::function<void()> task);
CUresult SynchronizeStream(CUstream_st* s);
bool StreamIdle(CUstream_st* s);
CUresult SynchronizeDevice(int device);

CUevent_st* CreateEvent(unsigned flags, CUresult* status);
void DestroyEvent(CUevent_st* e);
void RecordEvent(CUevent_st* e, CUstream_st* s);
bool EventDone(CUevent_st* e);
void WaitEvent(CUevent_st* e);  // blocks until every record so far is done
// Makes `s` wait, in stream order, for the records of `e` issued so far.
void StreamWaitOnEvent(CUstream_st* s, CUevent_st* e);
CUresult IpcExportEvent(CUevent_st* e, CUipcEventHandle* handle);
CUresult IpcImportEvent(const CUipcEventHandle& handle, CUevent_st** out);

// Monotonic nanoseconds.
uint64_t NowNs();

}  // namespace ncclsim::driver

// The entry points libcuda.so.1 of the simulator adds to the driver API:
// the simulated NCCL calls the first when NCCLSIM_GPU_FAULT fires, to make
// the GPU fail the way a real one does after an Xid, and the second to learn
// which of the host's GPUs an ordinal is (its index before
// CUDA_VISIBLE_DEVICES; -1 when out of range), for NCCLSIM_SLOW_LINK (see
// tests/sim/README.md).
extern "C" CUresult ncclsimInjectDeviceFault(int ordinal, CUresult error);
extern "C" int ncclsimPhysicalDevice(int ordinal);

#endif  // NCCLWATCH_TESTS_SIM_DRIVER_DRIVER_STATE_H_

// Device memory: one arena per process, and CUDA IPC across processes.
//
// The arena is a memfd (NCCLSIM_ARENA_GIB, default 64 GiB of address space,
// sparse: only touched pages cost memory) mapped MAP_SHARED once. Allocations
// are first-fit, 512-byte aligned, from an address-ordered free list. Because
// the arena is a file, an IPC handle can name it: {pid, fd, offset, size}; the
// importing process opens /proc/<pid>/fd/<fd> and maps the pages that hold the
// allocation, so both processes see the same bytes, as with real CUDA IPC.
//
//   arena (memfd, one per process)
//   +--------+-------------+------+------------------+---------------
//   | alloc0 | free        | a1   | alloc2 (exported) |   ...
//   +--------+-------------+------+------------------+---------------
//                                  ^ offset, size in the IPC handle

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>

#include "common/sim_env.h"
#include "driver/driver_state.h"

namespace ncclsim::driver {
namespace {

constexpr uint32_t kIpcMagic = 0x4d49534eu;  // "NSIM"
constexpr uint32_t kIpcVersion = 1;
constexpr size_t kAlign = 512;
constexpr size_t kPunchThreshold = 1u << 20;

// The layout of CUipcMemHandle's 64 opaque bytes in the simulator.
struct IpcMemPayload {
  uint32_t magic;
  uint32_t version;
  int32_t pid;
  int32_t fd;
  uint64_t offset;
  uint64_t size;
  uint64_t alloc_id;
  int32_t device;
  int32_t reserved;
};
static_assert(sizeof(IpcMemPayload) <= sizeof(CUipcMemHandle), "IPC payload must fit the handle");

struct Allocation {
  uint64_t size = 0;
  int device = 0;
  uint64_t id = 0;
};

struct Imported {
  uintptr_t map_base = 0;  // page-aligned start of the mapping
  size_t map_len = 0;
  uintptr_t ptr = 0;  // what the caller got
  size_t size = 0;
  int device = 0;
  uint64_t key_alloc = 0;
  int32_t key_pid = 0;
  int refs = 0;
};

struct Arena {
  std::mutex mu;
  int fd = -1;
  char* base = nullptr;
  uint64_t size = 0;
  std::map<uint64_t, uint64_t> free_list;  // offset -> size, address order
  std::map<uint64_t, Allocation> used;     // offset -> allocation
  std::map<uintptr_t, Imported> imported;  // ptr -> mapping
  uint64_t next_id = 1;
  uint64_t used_by_device[64] = {};
  bool ok = false;
};

Arena& TheArena() {
  static Arena* arena = [] {
    auto* a = new Arena();
    const uint64_t gib = static_cast<uint64_t>(EnvInt("NCCLSIM_ARENA_GIB", 64, 1, 4096));
    a->size = gib << 30;
    a->fd = memfd_create("ncclsim-device-memory", MFD_CLOEXEC);
    if (a->fd >= 0 && ftruncate(a->fd, static_cast<off_t>(a->size)) == 0) {
      void* p =
          mmap(nullptr, a->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, a->fd, 0);
      if (p != MAP_FAILED) {
        a->base = static_cast<char*>(p);
        a->free_list[0] = a->size;
        a->ok = true;
      }
    }
    if (!a->ok)
      std::fprintf(stderr, "ncclsim: cannot create the device memory arena: %s\n", strerror(errno));
    return a;
  }();
  return *arena;
}

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

CUresult AllocDevice(int device, size_t bytes, bool /*managed*/, CUdeviceptr* out) {
  if (bytes == 0 || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Device* dev = DeviceAt(device);
  if (dev == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  Arena& a = TheArena();
  std::lock_guard<std::mutex> lock(a.mu);
  if (!a.ok) return CUDA_ERROR_OUT_OF_MEMORY;
  const uint64_t need = RoundUp(bytes, kAlign);
  if (a.used_by_device[dev->physical % 64] + need > dev->total_memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (auto it = a.free_list.begin(); it != a.free_list.end(); ++it) {
    if (it->second < need) continue;
    const uint64_t off = it->first;
    const uint64_t rest = it->second - need;
    a.free_list.erase(it);
    if (rest > 0) a.free_list[off + need] = rest;
    a.used[off] = Allocation{need, device, a.next_id++};
    a.used_by_device[dev->physical % 64] += need;
    *out = reinterpret_cast<CUdeviceptr>(a.base + off);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult FreeDevice(CUdeviceptr ptr) {
  if (ptr == 0) return CUDA_SUCCESS;
  Arena& a = TheArena();
  std::lock_guard<std::mutex> lock(a.mu);
  const uintptr_t p = static_cast<uintptr_t>(ptr);
  const uintptr_t base = reinterpret_cast<uintptr_t>(a.base);
  if (!a.ok || p < base || p >= base + a.size) return CUDA_ERROR_INVALID_VALUE;
  auto it = a.used.find(p - base);
  if (it == a.used.end()) return CUDA_ERROR_INVALID_VALUE;
  uint64_t off = it->first;
  uint64_t size = it->second.size;
  Device* dev = DeviceAt(it->second.device);
  if (dev != nullptr) a.used_by_device[dev->physical % 64] -= size;
  a.used.erase(it);
  // Coalesce with the free neighbours.
  auto next = a.free_list.lower_bound(off);
  if (next != a.free_list.end() && next->first == off + size) {
    size += next->second;
    next = a.free_list.erase(next);
  }
  if (next != a.free_list.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      off = prev->first;
      size += prev->second;
      a.free_list.erase(prev);
    }
  }
  a.free_list[off] = size;
  if (size >= kPunchThreshold) {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t lo = RoundUp(off, page);
    const uint64_t hi = (off + size) / page * page;
    if (hi > lo) {
      (void)fallocate(a.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(lo),
                      static_cast<off_t>(hi - lo));
    }
  }
  return CUDA_SUCCESS;
}

bool LookupPointer(uintptr_t p, PointerInfo* info) {
  Arena& a = TheArena();
  std::lock_guard<std::mutex> lock(a.mu);
  const uintptr_t base = reinterpret_cast<uintptr_t>(a.base);
  if (a.ok && p >= base && p < base + a.size) {
    auto it = a.used.upper_bound(p - base);
    if (it == a.used.begin()) return false;
    --it;
    if (p - base >= it->first + it->second.size) return false;
    info->is_device = true;
    info->device = it->second.device;
    info->base = base + it->first;
    info->size = it->second.size;
    info->alloc_id = it->second.id;
    return true;
  }
  auto it = a.imported.upper_bound(p);
  if (it == a.imported.begin()) return false;
  --it;
  if (p >= it->second.ptr + it->second.size) return false;
  info->is_device = true;
  info->device = it->second.device;
  info->base = it->second.ptr;
  info->size = it->second.size;
  info->alloc_id = it->second.key_alloc;
  return true;
}

void DeviceMemoryUsage(int device, size_t* used) {
  Arena& a = TheArena();
  std::lock_guard<std::mutex> lock(a.mu);
  Device* dev = DeviceAt(device);
  *used = dev ? a.used_by_device[dev->physical % 64] : 0;
}

CUresult IpcExportMemory(CUdeviceptr ptr, CUipcMemHandle* handle) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  PointerInfo info;
  if (!LookupPointer(static_cast<uintptr_t>(ptr), &info)) return CUDA_ERROR_INVALID_VALUE;
  Arena& a = TheArena();
  const uintptr_t base = reinterpret_cast<uintptr_t>(a.base);
  if (info.base < base || info.base >= base + a.size) {
    return CUDA_ERROR_INVALID_VALUE;  // an imported mapping cannot be re-exported
  }
  IpcMemPayload pl{};
  pl.magic = kIpcMagic;
  pl.version = kIpcVersion;
  pl.pid = static_cast<int32_t>(getpid());
  pl.fd = a.fd;
  pl.offset = info.base - base;
  pl.size = info.size;
  pl.alloc_id = info.alloc_id;
  pl.device = info.device;
  std::memset(handle, 0, sizeof(*handle));
  std::memcpy(handle->reserved, &pl, sizeof(pl));
  return CUDA_SUCCESS;
}

CUresult IpcImportMemory(const CUipcMemHandle& handle, CUdeviceptr* out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  IpcMemPayload pl;
  std::memcpy(&pl, handle.reserved, sizeof(pl));
  if (pl.magic != kIpcMagic || pl.version != kIpcVersion || pl.size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (pl.pid == static_cast<int32_t>(getpid())) return CUDA_ERROR_INVALID_CONTEXT;
  Arena& a = TheArena();
  std::lock_guard<std::mutex> lock(a.mu);
  for (auto& kv : a.imported) {
    if (kv.second.key_pid == pl.pid && kv.second.key_alloc == pl.alloc_id) {
      ++kv.second.refs;
      *out = static_cast<CUdeviceptr>(kv.second.ptr);
      return CUDA_SUCCESS;
    }
  }
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", pl.pid, pl.fd);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t lo = pl.offset / page * page;
  const uint64_t hi = RoundUp(pl.offset + pl.size, page);
  void* m = mmap(nullptr, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(lo));
  close(fd);
  if (m == MAP_FAILED) return CUDA_ERROR_MAP_FAILED;
  Imported imp;
  imp.map_base = reinterpret_cast<uintptr_t>(m);
  imp.map_len = hi - lo;
  imp.ptr = imp.map_base + (pl.offset - lo);
  imp.size = pl.size;
  imp.device = pl.device;
  imp.key_alloc = pl.alloc_id;
  imp.key_pid = pl.pid;
  imp.refs = 1;
  a.imported[imp.ptr] = imp;
  *out = static_cast<CUdeviceptr>(imp.ptr);
  return CUDA_SUCCESS;
}

CUresult IpcCloseMemory(CUdeviceptr ptr) {
  Arena& a = TheArena();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.imported.find(static_cast<uintptr_t>(ptr));
  if (it == a.imported.end()) return CUDA_ERROR_INVALID_VALUE;
  if (--it->second.refs == 0) {
    munmap(reinterpret_cast<void*>(it->second.map_base), it->second.map_len);
    a.imported.erase(it);
  }
  return CUDA_SUCCESS;
}

}  // namespace ncclsim::driver

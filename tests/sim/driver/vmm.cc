// Virtual memory management, multicast objects and peer access of the
// simulated driver (vmm.h).

#include "driver/vmm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "common/sim_env.h"
#include "driver/driver_state.h"

using namespace ncclsim::driver;  // NOLINT: this file is the API surface of that namespace

namespace {

// What cuMemGetAllocationGranularity and cuMulticastGetGranularity report:
// 2 MiB, as on NVIDIA GPUs.
constexpr size_t kGranularity = 2u << 20;

// A physical allocation or a multicast object: a memfd.
struct MemObject {
  int fd = -1;
  size_t size = 0;
  int device = -1;
  unsigned handle_types = 0;  // CUmemAllocationHandleType bits it may be exported as
  bool multicast = false;
  // What it counts against its device's memory: a stand-in allocation of the
  // same size in the device arena (never touched), so cuMemCreate runs out
  // of memory where cudaMalloc would. 0 for imports and multicast objects.
  CUdeviceptr budget = 0;
};

MemObject* ObjectOf(CUmemGenericAllocationHandle h) {
  return reinterpret_cast<MemObject*>(static_cast<uintptr_t>(h));
}

CUmemGenericAllocationHandle HandleOf(MemObject* o) {
  return static_cast<CUmemGenericAllocationHandle>(reinterpret_cast<uintptr_t>(o));
}

std::string Knob(const char* name) {
  const char* v = ncclsim::EnvRaw(name);
  return v ? v : "";
}

enum class Multicast { kNone, kOk, kNoFabricManager, kUnsupported };

Multicast MulticastMode() {
  static const Multicast mode = [] {
    const std::string v = Knob("NCCLSIM_MULTICAST");
    if (v.empty()) return Multicast::kNone;
    if (v == "ok") return Multicast::kOk;
    if (v == "nofm") return Multicast::kNoFabricManager;
    if (v == "unsupported") return Multicast::kUnsupported;
    std::fprintf(stderr,
                 "ncclsim: NCCLSIM_MULTICAST='%s' is not ok, nofm or unsupported; using unset\n",
                 v.c_str());
    return Multicast::kNone;
  }();
  return mode;
}

struct PeerState {
  std::mutex mu;
  std::set<std::pair<int, int>> enabled;  // (device, peer)
};
PeerState& Peers() {
  static auto* p = new PeerState();
  return *p;
}

size_t RoundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

CUresult NewObject(size_t size, int device, unsigned types, bool multicast,
                   CUmemGenericAllocationHandle* out) {
  const int fd = memfd_create(multicast ? "ncclsim-multicast" : "ncclsim-cumem", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto* o = new MemObject{fd, size, device, types, multicast, 0};
  *out = HandleOf(o);
  return CUDA_SUCCESS;
}

}  // namespace

namespace ncclsim::driver {

CUresult IpcImportRefusal() {
  static const CUresult refusal = [] {
    const std::string v = Knob("NCCLSIM_IPC_IMPORT");
    if (v.empty()) return CUDA_SUCCESS;
    if (v == "eperm") return CUDA_ERROR_NOT_PERMITTED;
    if (v == "invalid") return CUDA_ERROR_INVALID_VALUE;
    std::fprintf(stderr, "ncclsim: NCCLSIM_IPC_IMPORT='%s' is not eperm or invalid; using unset\n",
                 v.c_str());
    return CUDA_SUCCESS;
  }();
  if (refusal == CUDA_ERROR_NOT_PERMITTED) errno = EPERM;
  return refusal;
}

bool MulticastSupported() { return MulticastMode() != Multicast::kNone; }

namespace {
enum class PeerMode { kOk, kNone, kFail };
PeerMode PeerAccessMode() {
  static const PeerMode mode = [] {
    const std::string v = Knob("NCCLSIM_PEER_ACCESS");
    if (v.empty() || v == "1") return PeerMode::kOk;
    if (v == "0") return PeerMode::kNone;
    if (v == "fail") return PeerMode::kFail;
    std::fprintf(stderr, "ncclsim: NCCLSIM_PEER_ACCESS='%s' is not 0, 1 or fail; using 1\n",
                 v.c_str());
    return PeerMode::kOk;
  }();
  return mode;
}
}  // namespace

bool PeerAccessReported() { return PeerAccessMode() != PeerMode::kNone; }
bool PeerAccessSupported() { return PeerAccessMode() == PeerMode::kOk; }

}  // namespace ncclsim::driver

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  (void)option;
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  if (handle == nullptr || prop == nullptr || flags != 0 || size == 0 || size % kGranularity != 0 ||
      prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
    return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && DeviceAt(prop->location.id) == nullptr)
    return CUDA_ERROR_INVALID_DEVICE;
  if (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
  CUdeviceptr budget = 0;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    if (CUresult rc = AllocDevice(prop->location.id, size, false, &budget)) return rc;
  }
  CUresult rc = NewObject(size, prop->location.id, prop->requestedHandleTypes, false, handle);
  if (rc != CUDA_SUCCESS) {
    if (budget != 0) FreeDevice(budget);
    return rc;
  }
  ObjectOf(*handle)->budget = budget;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  MemObject* o = ObjectOf(handle);
  if (o == nullptr) return CUDA_ERROR_INVALID_VALUE;
  close(o->fd);  // a mapping keeps the memory until it is unmapped
  if (o->budget != 0) FreeDevice(o->budget);
  delete o;
  return CUDA_SUCCESS;
}

CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags) {
  MemObject* o = ObjectOf(handle);
  if (shareableHandle == nullptr || o == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  if (!(o->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_INVALID_VALUE;
  const int fd = fcntl(o->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareableHandle) = fd;
  return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                        CUmemAllocationHandleType shHandleType) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  if (CUresult rc = IpcImportRefusal()) return rc;
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return CUDA_ERROR_INVALID_VALUE;
  const int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  // A multicast object stays one in the importer: its memfd says so by name.
  char link[64], name[128] = {0};
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", mine);
  const bool multicast = readlink(link, name, sizeof(name) - 1) > 0 &&
                         std::strstr(name, "ncclsim-multicast") != nullptr;
  auto* o = new MemObject{mine,      static_cast<size_t>(st.st_size),
                          -1,        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                          multicast, 0};
  *handle = HandleOf(o);
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  (void)addr;
  if (ptr == nullptr || size == 0 || size % kGranularity != 0 || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const size_t align = alignment > kGranularity ? alignment : kGranularity;
  // Over-reserve, then trim to the alignment.
  void* p =
      mmap(nullptr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = RoundUp(base, align);
  if (start > base) munmap(p, start - base);
  const uintptr_t end = base + size + align;
  if (end > start + size) munmap(reinterpret_cast<void*>(start + size), end - (start + size));
  *ptr = static_cast<CUdeviceptr>(start);
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  if (ptr == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  munmap(reinterpret_cast<void*>(static_cast<uintptr_t>(ptr)), size);
  return CUDA_SUCCESS;
}

// Mapped without access, as on a GPU: cuMemSetAccess grants it.
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  MemObject* o = ObjectOf(handle);
  if (ptr == 0 || o == nullptr || flags != 0 || size == 0 || offset + size > o->size)
    return CUDA_ERROR_INVALID_VALUE;
  void* p = mmap(reinterpret_cast<void*>(static_cast<uintptr_t>(ptr)), size, PROT_NONE,
                 MAP_SHARED | MAP_FIXED, o->fd, static_cast<off_t>(offset));
  return p == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (ptr == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = mmap(reinterpret_cast<void*>(static_cast<uintptr_t>(ptr)), size, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  return p == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (ptr == 0 || size == 0 || desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
        DeviceAt(desc[i].location.id) == nullptr)
      return CUDA_ERROR_INVALID_DEVICE;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) prot = PROT_READ | PROT_WRITE;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE) prot = PROT_READ;
  }
  return mprotect(reinterpret_cast<void*>(static_cast<uintptr_t>(ptr)), size, prot) == 0
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

// ------------------------------------------------------------ multicast

CUresult cuMulticastGetGranularity(size_t* granularity, const CUmulticastObjectProp* prop,
                                   CUmulticastGranularity_flags option) {
  (void)option;
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!MulticastSupported()) return CUDA_ERROR_NOT_SUPPORTED;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMulticastCreate(CUmemGenericAllocationHandle* mcHandle,
                           const CUmulticastObjectProp* prop) {
  if (mcHandle == nullptr || prop == nullptr || prop->numDevices == 0 || prop->size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  switch (MulticastMode()) {
    case Multicast::kNone:
    case Multicast::kUnsupported:
      return CUDA_ERROR_NOT_SUPPORTED;
    case Multicast::kNoFabricManager:
      return CUDA_ERROR_SYSTEM_NOT_READY;
    case Multicast::kOk:
      break;
  }
  return NewObject(RoundUp(prop->size, kGranularity), -1, static_cast<unsigned>(prop->handleTypes),
                   true, mcHandle);
}

CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev) {
  MemObject* o = ObjectOf(mcHandle);
  if (o == nullptr || !o->multicast) return CUDA_ERROR_INVALID_VALUE;
  return DeviceAt(dev) == nullptr ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                            CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                            unsigned long long flags) {
  MemObject* mc = ObjectOf(mcHandle);
  MemObject* mem = ObjectOf(memHandle);
  if (mc == nullptr || !mc->multicast || mem == nullptr || flags != 0 ||
      mcOffset + size > mc->size || memOffset + size > mem->size)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset,
                           size_t size) {
  (void)dev;
  (void)mcOffset;
  (void)size;
  MemObject* mc = ObjectOf(mcHandle);
  return mc != nullptr && mc->multicast ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ------------------------------------------------------------ peer access

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  if (peerContext == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  int self = 0;
  if (CUresult rc = CurrentDevice(&self)) return rc;
  const int peer = peerContext->device;
  if (peer == self) return CUDA_ERROR_INVALID_DEVICE;
  if (!PeerAccessSupported()) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  std::lock_guard<std::mutex> lock(Peers().mu);
  if (!Peers().enabled.emplace(self, peer).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  if (peerContext == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  int self = 0;
  if (CUresult rc = CurrentDevice(&self)) return rc;
  std::lock_guard<std::mutex> lock(Peers().mu);
  if (Peers().enabled.erase({self, peerContext->device}) == 0)
    return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  return CUDA_SUCCESS;
}

}  // extern "C"

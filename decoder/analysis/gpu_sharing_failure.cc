#include "analysis/gpu_sharing_failure.h"

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "knowledge/cuda_names.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;

// CUmemAllocationHandleType (cuda.h).
constexpr uint32_t kPosixFd = 1;
constexpr uint32_t kFabricHandle = 8;

bool Multicast(uint32_t fn) {
  return fn == f::kCuMulticastCreate || fn == f::kCuMulticastAddDevice ||
         fn == f::kCuMulticastBindMem;
}

bool Import(uint32_t fn) {
  return fn == f::kCuIpcOpenMemHandle || fn == f::kCudaIpcOpenMemHandle ||
         fn == f::kCuMemImportFromShareableHandle || fn == f::kCuIpcOpenEventHandle ||
         fn == f::kCudaIpcOpenEventHandle;
}

// The results that say the importing process may not have the memory: a
// permission, a handle that does not name anything it can reach (another
// namespace), a mapping refused.
bool Refused(const InitEvidence::CudaFailure& c) {
  return c.result == 800 || c.result == 1 || c.result == 400 || c.result == 205 ||
         c.result == 201 || c.result == 999 || c.err == EPERM || c.err == EACCES;
}

std::string HandleKind(const InitEvidence::CudaFailure& c) {
  if (c.function == f::kCuMemImportFromShareableHandle ||
      c.function == f::kCuMemExportToShareableHandle || c.function == f::kCuMulticastCreate) {
    if (c.handle_type == kFabricHandle) return "fabric";
    if (c.handle_type & kPosixFd) return "POSIX file descriptor";
    return "";
  }
  if (Import(c.function) || c.function == f::kCuIpcGetMemHandle ||
      c.function == f::kCudaIpcGetMemHandle)
    return "legacy CUDA IPC";
  return "";
}

GpuSharingFacts FactsOf(const InitEvidence& r, const InitEvidence::CudaFailure& c) {
  GpuSharingFacts s;
  s.function = CudaFunctionName(c.function);
  s.result = c.result;
  s.handle = HandleKind(c);
  s.container = r.container;
  s.in_container = !r.container.empty();
  s.device = c.device;
  s.peer = c.peer;
  return s;
}

InitFailureFacts Of(InitCause cause, Area subsystem, const GpuSharingFacts& s, int err) {
  InitFailureFacts x;
  x.cause = cause;
  x.subsystem = subsystem;
  x.err = err;
  x.sharing = s;
  x.call = s.function;
  return x;
}

}  // namespace

std::vector<std::string> AcsRedirectBridges(const std::vector<GpuPathInfo>& gpus) {
  std::vector<std::string> out;
  for (const GpuPathInfo& g : gpus)
    for (const GpuPathInfo::Bridge& b : g.bridges)
      if (b.acs_ctrl >= 0 && (b.acs_ctrl & 0x0c) != 0) out.push_back(b.bdf);  // RR or CR
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<InitFailureFacts> GpuSharingCause(const InitEvidence& r) {
  // NCCL's own calls first: a program's call that failed outside NCCL is
  // evidence only when nothing of NCCL's failed.
  const InitEvidence::CudaFailure* first = nullptr;
  for (int pass = 0; pass < 2 && first == nullptr; ++pass) {
    for (const InitEvidence::CudaFailure& c : r.cuda_failures) {
      if (pass == 0 && !c.from_nccl) continue;
      if (first == nullptr || c.when_ns < first->when_ns) first = &c;
    }
  }
  if (first == nullptr) return std::nullopt;
  const InitEvidence::CudaFailure& c = *first;
  GpuSharingFacts s = FactsOf(r, c);
  const bool fabric_handle =
      c.handle_type == kFabricHandle &&
      (c.function == f::kCuMemImportFromShareableHandle ||
       c.function == f::kCuMemExportToShareableHandle || c.function == f::kCuMemCreate);
  if (Multicast(c.function) || fabric_handle) {
    return Of(InitCause::kFabricManager, Area::kFabric, s, 0);
  }
  if (c.result == 217 || (PeerAccessCall(c.function) && c.result != 0)) {
    s.acs_bridges = AcsRedirectBridges(r.gpus);
    s.iommu = r.iommu_enabled;
    return Of(InitCause::kPeerAccessUnsupported, Area::kP2p, s, 0);
  }
  if ((Import(c.function) || c.function == f::kCuMemExportToShareableHandle) && Refused(c)) {
    return Of(InitCause::kIpcImportRefused, Area::kIpc, s,
              c.err == EPERM || c.err == EACCES ? c.err : 0);
  }
  return std::nullopt;
}

}  // namespace ncclwatch::decoder

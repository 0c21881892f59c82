#include "knowledge/area.h"

#include <array>
#include <cstddef>

namespace ncclwatch::decoder {
namespace {

struct Named {
  Area area;
  const char* name;
};

// In the enum's order (checked below at compile time).
constexpr Named kNames[] = {
    {Area::kNone, ""},
    {Area::kNetwork, "network"},
    {Area::kBootstrap, "bootstrap"},
    {Area::kShm, "shm"},
    {Area::kVersion, "version"},
    {Area::kGpu, "gpu"},
    {Area::kIb, "ib"},
    {Area::kFabric, "fabric"},
    {Area::kP2p, "p2p"},
    {Area::kIpc, "ipc"},
    {Area::kCuda, "cuda"},
    {Area::kUnknown, "unknown"},
    {Area::kWaiting, "waiting"},
    {Area::kNet, "net"},
    {Area::kNetIb, "net/ib"},
    {Area::kNetSocket, "net/socket"},
    {Area::kSocket, "socket"},
    {Area::kCollnet, "collnet"},
    {Area::kTransport, "transport"},
    {Area::kNvls, "nvls"},
    {Area::kNvml, "nvml"},
    {Area::kGdr, "gdr"},
    {Area::kPcie, "pcie"},
    {Area::kUsage, "usage"},
    {Area::kConfig, "config"},
    {Area::kTopology, "topology"},
    {Area::kProxy, "proxy"},
    {Area::kPlugin, "plugin"},
    {Area::kEnqueue, "enqueue"},
    {Area::kRas, "ras"},
    {Area::kRegistration, "registration"},
    {Area::kRma, "rma"},
    {Area::kInit, "init"},
    {Area::kGroup, "group"},
    {Area::kDevice, "device"},
    {Area::kDeviceApi, "device_api"},
    {Area::kMemory, "memory"},
    {Area::kAlloc, "alloc"},
    {Area::kInternal, "internal"},
    {Area::kSystem, "system"},
    {Area::kLoader, "loader"},
    {Area::kHost, "host"},
    {Area::kNccl, "nccl"},
    {Area::kPytorch, "pytorch"},
    {Area::kC10d, "c10d"},
    {Area::kC10dInit, "c10d/init"},
    {Area::kC10dNccl, "c10d/nccl"},
    {Area::kC10dStore, "c10d/store"},
    {Area::kDdp, "ddp"},
    {Area::kTorchrun, "torchrun"},
    {Area::kJaxCoordination, "jax/coordination"},
    {Area::kDeepspeedComm, "deepspeed/comm"},
    {Area::kDeepspeedLauncher, "deepspeed/launcher"},
    {Area::kModelParallel, "model_parallel"},
    {Area::kSglang, "sglang"},
};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (static_cast<size_t>(kNames[i].area) != i) return false;
  return static_cast<size_t>(kAreaCount) == std::size(kNames);
}
static_assert(InEnumOrder(), "kNames must list every Area, in the enum's order");

}  // namespace

const char* AreaName(Area area) {
  const size_t i = static_cast<size_t>(area);
  return i < std::size(kNames) ? kNames[i].name : "";
}

std::optional<Area> AreaNamed(absl::string_view name) {
  for (const Named& n : kNames)
    if (name == n.name) return n.area;
  return std::nullopt;
}

}  // namespace ncclwatch::decoder

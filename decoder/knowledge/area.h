// The parts of NCCL, of CUDA and of the frameworks that a failure belongs
// to: the "subsystem" the reports name. One table of names, so an analysis
// says which part with a value the compiler checks, and the reports print
// the name the JSON contract has always used.
//
//     init forensics        network, bootstrap, shm, version, gpu, ib, fabric,
//                           p2p, ipc, cuda, unknown, waiting
//     NCCL's source tree    net, net/ib, net/socket, socket, topology, proxy,
//                           plugin, ras, ... (NcclSourceArea: a WARN's file)
//     the frameworks        c10d, c10d/store, ddp, torchrun, jax/coordination
//     a crash's module      nccl, cuda, pytorch (ModuleSubsystem)
//
// The names are stable: they are the JSON's `subsystem` values, which
// report.schema.json lists (report_schema_test keeps its list and this one
// the same: a part a new NCCL release adds is added to both), and the
// catalogue's tests (nccl_warns_test.cc, torch_messages_test.cc) compare them.
//
// Thread-safety: the table is constant.

#ifndef NCCLWATCH_DECODER_KNOWLEDGE_AREA_H_
#define NCCLWATCH_DECODER_KNOWLEDGE_AREA_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace ncclwatch::decoder {

enum class Area : uint8_t {
  kNone,  // "": no part named (a cause that is never an init failure, the program's own code)
  // The subsystems init forensics files a failed initialisation under.
  kNetwork,
  kBootstrap,
  kShm,
  kVersion,
  kGpu,
  kIb,
  kFabric,
  kP2p,
  kIpc,
  kCuda,
  kUnknown,  // a failure nothing names: its call and result are reported
  kWaiting,  // ranks that waited in their init for another rank's failure
  // NCCL's other parts, as its source tree and its WARN lines divide it.
  kNet,
  kNetIb,
  kNetSocket,
  kSocket,
  kCollnet,
  kTransport,
  kNvls,
  kNvml,
  kGdr,
  kPcie,
  kUsage,
  kConfig,
  kTopology,
  kProxy,
  kPlugin,
  kEnqueue,
  kRas,
  kRegistration,
  kRma,
  kInit,
  kGroup,
  kDevice,
  kDeviceApi,
  kMemory,
  kAlloc,
  kInternal,
  kSystem,
  kLoader,
  kHost,  // the host's kernel (its OOM killer)
  // The frameworks around NCCL, and the libraries a crash can hit.
  kNccl,
  kPytorch,
  kC10d,
  kC10dInit,
  kC10dNccl,
  kC10dStore,
  kDdp,
  kTorchrun,
  kJaxCoordination,
  kDeepspeedComm,
  kDeepspeedLauncher,
  kModelParallel,
  kSglang,
};

// How many areas there are (the last is kSglang).
inline constexpr int kAreaCount = static_cast<int>(Area::kSglang) + 1;

// The JSON's name: "net/ib", "c10d/store", "" for kNone.
const char* AreaName(Area area);
// The area of a name AreaName gives, or nullopt.
std::optional<Area> AreaNamed(absl::string_view name);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_KNOWLEDGE_AREA_H_

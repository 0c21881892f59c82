#include "knowledge/stack_places.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ncclwatch::decoder {
namespace {

using P = StackPhase;

struct Entry {
  const char* owner;  // the class ("ProcessGroupNCCL"), "" for a free function
  const char* name;   // the function
  // Where the frame must be (a Python file, a module) for a name too common
  // to say anything alone ("barrier", "send"); nullptr: the name suffices.
  const char* where;
  StackPlace place;
};

constexpr StackPlace kNcclInit{P::kStartup, "NCCL's communicator setup", Area::kNccl};
constexpr StackPlace kNcclColl{P::kStep, "an NCCL collective or send/receive", Area::kNccl};
constexpr StackPlace kNcclEnd{P::kTeardown, "NCCL's communicator teardown", Area::kNccl};
constexpr StackPlace kGpuWait{P::kStep, "a wait for its GPU", Area::kCuda};
constexpr StackPlace kTorchColl{P::kStep, "a torch.distributed collective", Area::kC10d};
constexpr StackPlace kTorchInit{P::kStartup, "torch.distributed's setup (its rendezvous)",
                                Area::kC10d};
constexpr StackPlace kStore{P::kStartup, "the rendezvous store (TCPStore)", Area::kC10dStore};
constexpr StackPlace kTorchEnd{P::kTeardown, "torch.distributed's teardown", Area::kC10d};
constexpr StackPlace kJaxInit{P::kStartup, "jax.distributed.initialize", Area::kJaxCoordination};

constexpr const char* kC10d = "torch/distributed";

const Entry kEntries[] = {
    // NCCL's API (nccl.h): what a thread blocks in.
    {"", "ncclGetUniqueId", nullptr, kNcclInit},
    {"", "ncclCommInitRank", nullptr, kNcclInit},
    {"", "ncclCommInitRankConfig", nullptr, kNcclInit},
    {"", "ncclCommInitRankScalable", nullptr, kNcclInit},
    {"", "ncclCommInitAll", nullptr, kNcclInit},
    {"", "ncclCommSplit", nullptr, kNcclInit},
    {"", "ncclCommShrink", nullptr, kNcclInit},
    {"", "ncclCommGrow", nullptr, kNcclInit},
    {"", "ncclAllReduce", nullptr, kNcclColl},
    {"", "ncclBroadcast", nullptr, kNcclColl},
    {"", "ncclBcast", nullptr, kNcclColl},
    {"", "ncclReduce", nullptr, kNcclColl},
    {"", "ncclAllGather", nullptr, kNcclColl},
    {"", "ncclReduceScatter", nullptr, kNcclColl},
    {"", "ncclAlltoAll", nullptr, kNcclColl},
    {"", "ncclGather", nullptr, kNcclColl},
    {"", "ncclScatter", nullptr, kNcclColl},
    {"", "ncclSend", nullptr, kNcclColl},
    {"", "ncclRecv", nullptr, kNcclColl},
    {"", "ncclGroupEnd", nullptr, kNcclColl},
    {"", "ncclGroupSimulateEnd", nullptr, kNcclColl},
    {"", "ncclPutSignal", nullptr, kNcclColl},
    {"", "ncclSignal", nullptr, kNcclColl},
    {"", "ncclWaitSignal", nullptr, kNcclColl},
    {"", "ncclCommAbort", nullptr, kNcclEnd},
    {"", "ncclCommDestroy", nullptr, kNcclEnd},
    {"", "ncclCommFinalize", nullptr, kNcclEnd},
    {"", "ncclCommRevoke", nullptr, kNcclEnd},
    // The host waiting for its GPU (the CUDA runtime and driver).
    {"", "cudaStreamSynchronize", nullptr, kGpuWait},
    {"", "cudaDeviceSynchronize", nullptr, kGpuWait},
    {"", "cudaEventSynchronize", nullptr, kGpuWait},
    {"", "cuStreamSynchronize", nullptr, kGpuWait},
    {"", "cuCtxSynchronize", nullptr, kGpuWait},
    {"", "cuEventSynchronize", nullptr, kGpuWait},
    // PyTorch's C++ (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, TCPStore.cpp).
    {"ProcessGroupNCCL", "allreduce", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "allreduce_coalesced", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "allgather", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "_allgather_base", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "allgather_into_tensor_coalesced", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "reduce_scatter", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "_reduce_scatter_base", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "reduce_scatter_tensor_coalesced", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "broadcast", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "reduce", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "alltoall", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "alltoall_base", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "send", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "recv", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "barrier", nullptr, kTorchColl},
    {"WorkNCCL", "wait", nullptr, kTorchColl},
    {"WorkNCCL", "synchronize", nullptr, kTorchColl},
    {"WorkNCCL", "synchronizeStream", nullptr, kTorchColl},
    {"ProcessGroupNCCL", "getNCCLComm", nullptr, kTorchInit},
    {"ProcessGroupNCCL", "initNCCLComm", nullptr, kTorchInit},
    {"ProcessGroupNCCL", "abort", nullptr, kTorchEnd},
    {"ProcessGroupNCCL", "abortComms", nullptr, kTorchEnd},
    {"ProcessGroupNCCL", "shutdown", nullptr, kTorchEnd},
    {"ProcessGroupNCCL", "~ProcessGroupNCCL", nullptr, kTorchEnd},
    {"TCPStore", "*", nullptr, kStore},
    // PyTorch's Python (torch/distributed/distributed_c10d.py, rendezvous.py).
    {"", "all_reduce", nullptr, kTorchColl},
    {"", "all_reduce_coalesced", nullptr, kTorchColl},
    {"", "all_gather", kC10d, kTorchColl},
    {"", "all_gather_into_tensor", nullptr, kTorchColl},
    {"", "all_gather_object", nullptr, kTorchColl},
    {"", "reduce_scatter", kC10d, kTorchColl},
    {"", "reduce_scatter_tensor", nullptr, kTorchColl},
    {"", "all_to_all", kC10d, kTorchColl},
    {"", "all_to_all_single", nullptr, kTorchColl},
    {"", "broadcast", kC10d, kTorchColl},
    {"", "broadcast_object_list", nullptr, kTorchColl},
    {"", "reduce", kC10d, kTorchColl},
    {"", "barrier", kC10d, kTorchColl},
    {"", "monitored_barrier", nullptr, kTorchColl},
    {"", "gather", kC10d, kTorchColl},
    {"", "scatter", kC10d, kTorchColl},
    {"", "send", kC10d, kTorchColl},
    {"", "recv", kC10d, kTorchColl},
    {"", "batch_isend_irecv", nullptr, kTorchColl},
    {"", "init_process_group", nullptr, kTorchInit},
    {"", "new_group", kC10d, kTorchInit},
    {"", "_new_process_group_helper", nullptr, kTorchInit},
    {"", "_store_based_barrier", nullptr, kTorchInit},
    {"", "_create_c10d_store", nullptr, kStore},
    {"", "_env_rendezvous_handler", nullptr, kStore},
    {"", "_tcp_rendezvous_handler", nullptr, kStore},
    {"", "destroy_process_group", nullptr, kTorchEnd},
    {"", "_shutdown_backend", nullptr, kTorchEnd},
    // JAX (jax/_src/distributed.py).
    {"", "initialize", "jax/_src/distributed", kJaxInit},
};

// "c10d::ProcessGroupNCCL::abort(...)" -> {"ProcessGroupNCCL", "abort"};
// "all_reduce" -> {"", "all_reduce"}. Template arguments and the argument
// list are dropped.
std::pair<std::string, std::string> OwnerAndName(absl::string_view function) {
  std::string bare;
  int depth = 0;
  for (char c : function) {
    if (c == '(' && depth == 0) break;
    if (c == '<') ++depth;
    if (depth == 0) bare.push_back(c);
    if (c == '>' && depth > 0) --depth;
  }
  absl::string_view s = absl::StripAsciiWhitespace(bare);
  // gdb's "const", a return type before the name: the last word.
  if (const size_t space = s.rfind(' '); space != absl::string_view::npos) s = s.substr(space + 1);
  const size_t colons = s.rfind("::");
  if (colons == absl::string_view::npos) return {"", std::string(s)};
  absl::string_view owner = s.substr(0, colons);
  if (const size_t before = owner.rfind("::"); before != absl::string_view::npos)
    owner = owner.substr(before + 2);
  return {std::string(owner), std::string(s.substr(colons + 2))};
}

}  // namespace

const StackPlace* PlaceOfFrame(absl::string_view function, absl::string_view where) {
  const auto [owner, name] = OwnerAndName(function);
  if (name.empty()) return nullptr;
  for (const Entry& e : kEntries) {
    if (owner != e.owner) continue;
    if (absl::string_view(e.name) != "*" && name != e.name) continue;
    if (e.where != nullptr && !absl::StrContains(where, e.where)) continue;
    return &e.place;
  }
  return nullptr;
}

Area ModuleSubsystem(absl::string_view module) {
  const size_t slash = module.rfind('/');
  if (slash != absl::string_view::npos) module = module.substr(slash + 1);
  if (absl::StartsWith(module, "libnccl")) return Area::kNccl;
  if (absl::StartsWith(module, "libcuda.") || absl::StartsWith(module, "libcudart") ||
      absl::StartsWith(module, "libnvidia"))
    return Area::kCuda;
  if (absl::StartsWith(module, "libtorch") || absl::StartsWith(module, "libc10"))
    return Area::kPytorch;
  if (absl::StartsWith(module, "libibverbs") || absl::StartsWith(module, "libmlx") ||
      absl::StartsWith(module, "librdma"))
    return Area::kNetIb;
  return Area::kNone;
}

}  // namespace ncclwatch::decoder

// TorchrunAgent: a process that is torchrun's elastic agent (torchrun, or
// python -m torch.distributed.run / torch.distributed.launch), and where its
// agents meet, read from its command line and environment as torchrun
// itself reads them (torch/distributed/run.py).
//
// The agent is not a rank: it imports torch (so NCCL is loaded and the shim
// traces it) and meets the other nodes' agents before any worker starts.
// Agents that never meet start no worker, so their traces are all a job
// has. Where they meet:
//   static (the default)  MASTER host and port: --master-addr (default
//                         127.0.0.1) and --master-port (default 29500); each
//                         agent is node --node-rank (default 0) of --nnodes
//   c10d, etcd, ...       --rdzv-endpoint host[:port] (c10d's default port
//                         29400); node ranks are assigned there
//   --standalone, or static with one node and no port: a store on a free
//                         local port (localhost:0); nothing to meet
// Every option may come from the environment instead (PET_NNODES,
// PET_MASTER_PORT, ...), as torchrun's own parser takes it, and
// "--opt value" and "--opt=value" are the same. Options end at the first
// argument that is not one (the training script).
//
// Thread-safety: pure functions.

#ifndef NCCLWATCH_DECODER_MODEL_TORCHRUN_AGENT_H_
#define NCCLWATCH_DECODER_MODEL_TORCHRUN_AGENT_H_

#include <optional>
#include <string>

#include "model/events.h"

namespace ncclwatch::decoder {

struct TorchrunAgent {
  std::string backend;  // "static", "c10d", "etcd", "etcd-v2", ...
  std::string host;     // where the agents meet
  std::string port;     // ... its port, as given ("29500")
  bool local = false;   // --standalone, or one node with no port: nothing to meet
  std::string nnodes;   // as given: "2", "1:4"
  int min_nodes = -1;   // parsed from it, -1 unreadable
  int max_nodes = -1;
  int node_rank = -1;  // static only: this agent's node; -1 otherwise
  std::string run_id;  // --rdzv-id ("none" by default)
};

// The agent `inventory` describes, or nullopt when the process is no
// torchrun agent (or its command line was not recorded).
std::optional<TorchrunAgent> TorchrunAgentOf(const InventoryInfo& inventory);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_TORCHRUN_AGENT_H_

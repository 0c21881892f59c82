// RendezvousEvidence: what a process's trace shows of the framework's
// rendezvous (PyTorch's TCPStore at MASTER_ADDR:MASTER_PORT, torchrun's),
// from NCCL's load to its first NCCL call: its rendezvous settings and its
// TCP socket calls, counted per kind, address and outcome
// (shim/core/rendezvous_sockets.h). The job model keeps one per process;
// analysis/rendezvous.h judges them.
//
// Thread-safety: plain values; RendezvousSocketsOf is pure.

#ifndef NCCLWATCH_DECODER_MODEL_RENDEZVOUS_EVIDENCE_H_
#define NCCLWATCH_DECODER_MODEL_RENDEZVOUS_EVIDENCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/process_trace.h"
#include "trace/socket_address.h"

namespace ncclwatch::decoder {

// A process's socket calls before its first NCCL call (SocketActivityEvent,
// its address parsed: an IPv4-mapped IPv6 address as the IPv4 one).
struct RendezvousSocket {
  uint32_t kind = 0;  // 1 bind, 2 listen, 3 connect, 4 accept
  std::optional<SocketAddress> addr;
  int err = 0;
  bool deferred = false;
  uint64_t count = 0;
  int64_t first_ns = 0;  // realtime
  int64_t last_ns = 0;
};

std::vector<RendezvousSocket> RendezvousSocketsOf(const ProcessTrace& t);

// What the analysis reads of one process.
struct RendezvousEvidence {
  int process = -1;
  int rank = -1;  // the launcher's rank, -1 unknown
  std::string host;
  bool traced_from_load = false;  // ProcessStart.traced_from NCCL_LOADED
  bool nccl_calls = false;        // it made an NCCL call
  bool made_comm = false;         // it made a communicator
  // The rendezvous settings from its environment; "" unset.
  std::string master_addr, master_port, world_size;
  // A torchrun agent: rank is its node (-1 unknown), master_addr and
  // master_port where the agents meet, world_size its --nnodes.
  bool agent = false;
  std::string backend;  // its rendezvous backend ("static", "c10d", ...)
  std::vector<RendezvousSocket> sockets;
  bool ended_ok = false;  // it exited with code 0
  bool live = false;      // alive when diagnosed (the diagnosis's liveness)
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_RENDEZVOUS_EVIDENCE_H_

// Rendezvous findings from traces: a job whose ranks never got past the
// framework's rendezvous (PyTorch's TCPStore at MASTER_ADDR:MASTER_PORT,
// torchrun's), read from what the shim records of a process from NCCL's
// load to its first NCCL call (shim/core/rendezvous_sockets.h): its
// rendezvous settings (the inventory's MASTER_ADDR, MASTER_PORT,
// WORLD_SIZE, RANK) and its TCP socket calls, counted per kind, address and
// outcome.
//
// One finding per job, kind rendezvous_failure, phase startup, with a cause,
// the first that holds of:
//   settings_differ  ranks that disagree on MASTER_ADDR, MASTER_PORT or
//                    WORLD_SIZE: which ranks hold which value
//   port_in_use      the master's bind to MASTER_PORT failed (EADDRINUSE):
//                    another process holds the port
//   refused          connects to the master's port refused (ECONNREFUSED):
//                    nothing listened there, with the count and time span
//   unreachable      connects to it that failed to reach the host
//                    (EHOSTUNREACH, ENETUNREACH, ETIMEDOUT), or started and
//                    never answered
//   ranks_missing    fewer ranks have traces than WORLD_SIZE: the ranks that
//                    never came (named from those that did), and those
//                    left waiting
// torchrun's agents (model/torchrun_agent.h) meet before any rank exists:
// a job of agents alone is judged the same way, on their settings
// (--master-addr, --master-port or --rdzv-endpoint, --nnodes, the backend)
// and sockets, and names nodes (static rendezvous: --node-rank), never
// ranks (facts.agents; the finding's ranks stay empty).
// It applies only to a job none of whose processes made a communicator, and
// where some process made no NCCL call at all: a job past its rendezvous is
// the other analyses' to judge. While a rank of the job is alive, only what
// cannot heal is a finding (settings that differ, a port in use): a client
// refused or a rank not there yet may be one that has not started yet, and
// the job is running.
//
// Thread-safety: pure functions.

#ifndef NCCLWATCH_DECODER_ANALYSIS_RENDEZVOUS_H_
#define NCCLWATCH_DECODER_ANALYSIS_RENDEZVOUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "findings/finding.h"
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

// The job's rendezvous finding, if any (role and job left to the caller).
std::optional<Finding> RendezvousFinding(const std::vector<RendezvousEvidence>& ranks);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_RENDEZVOUS_H_

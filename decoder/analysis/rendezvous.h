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

#include <optional>
#include <vector>

#include "findings/finding.h"
#include "model/rendezvous_evidence.h"

namespace ncclwatch::decoder {

// The job's rendezvous finding, if any (role and job left to the caller).
std::optional<Finding> RendezvousFinding(const std::vector<RendezvousEvidence>& ranks);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_RENDEZVOUS_H_

// ncclwatch probe: the minimal job, built in, to prove that NCCL forms on
// these nodes before the real job is launched.
//
//   ncclwatch probe [-n N] [--nccl PATH] [--dir D] [--bytes B] [--timeout S]
//                   [--nnodes M --node-rank K --master ADDR:PORT]
//
// It starts N ranks of ncclwatch-probe-worker (decoder/probe/) on this node
// (default: one per visible GPU, else 2) under the shim, with RANK,
// WORLD_SIZE and LOCAL_RANK set as torchrun sets them; with --nnodes, every
// node runs `ncclwatch probe` with the same N and its --node-rank, and the
// node of rank 0 hands out the ncclUniqueId and gathers every node's
// inventory over a TCP connection to --master. The workers use the NCCL the
// job would use: the libnccl.so.2 the dynamic loader finds (LD_LIBRARY_PATH,
// the loader's cache), or the one --nccl names, preloaded behind the shim.
//
// Each worker forms a communicator, runs AllReduce, AllGather and a
// Send/Recv ring, checks the data, and times AllReduce. Then probe prints
// each rank's result and the bandwidth; the inventory of this node next to
// the other nodes' (interfaces, /dev/shm, NCCL and CUDA versions, NCCL_*
// settings), read back from the shim's Inventory records, with what differs
// flagged; and when anything failed, the diagnosis of the traces (the analysis
// of `diagnose`: root cause first, with its fix).
//
// Exit codes: 0 NCCL formed and every result was right, 1 it did not (or the
// data was wrong), 2 bad usage or a probe that cannot start (no worker, no
// shim).

#ifndef NCCLWATCH_DECODER_PROBE_PROBE_H_
#define NCCLWATCH_DECODER_PROBE_PROBE_H_

#include <ostream>
#include <string>
#include <vector>

namespace ncclwatch::decoder {

// `args`: what follows `ncclwatch probe`.
int RunProbe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_PROBE_PROBE_H_

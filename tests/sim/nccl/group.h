// Group semantics (ncclGroupStart/End) and the launch of operations onto CUDA
// streams.
//
// Outside a group every call is a group of one. Inside, calls are collected
// per thread and, at the outermost ncclGroupEnd: deferred inits and splits
// run together (one thread each, as they must meet each other), then each
// communicator's operations become one Batch, posted to its progress engine
// and launched on the stream of its first operation (other streams of the
// group wait for it with events).
//
// Thread-safety: group state is per thread, as in NCCL.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_GROUP_H_
#define NCCLWATCH_TESTS_SIM_NCCL_GROUP_H_

#include <nccl.h>

#include <functional>

#include "nccl/ops.h"

namespace ncclsim::nccl {

int GroupDepth();
void GroupDeferJob(std::function<ncclResult_t()> job);
ncclResult_t GroupStart();
ncclResult_t GroupEnd();
ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info);

// Checks and enqueues one collective or point-to-point operation.
ncclResult_t Enqueue(ncclComm_t comm, const OpArgs& args);

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_GROUP_H_

// Where a stack frame says a process is: the functions of NCCL, CUDA and the
// frameworks that a rank blocks in, and the phase of the job each belongs to
// (the checklists' first question: at startup, in a step, at teardown).
//
//     "ncclCommAbort", "c10d::ProcessGroupNCCL::abort()"   -> teardown
//     "ncclAllReduce", "all_reduce", "WorkNCCL::wait"       -> step
//     "ncclCommInitRank", "init_process_group", "TCPStore"  -> startup
//
// The names were read in NCCL's nccl.h (2.18-2.32), CUDA's runtime and driver
// APIs, PyTorch's torch/distributed/distributed_c10d.py and
// torch/csrc/distributed/c10d/ (ProcessGroupNCCL, TCPStore) and JAX's
// jax/_src/distributed.py; the phases are ours. A frame is named as the
// debuggers print it: gdb and glog give C++ names with their namespaces and
// arguments, py-spy and faulthandler Python function names.
//
// Thread-safety: the table is constant.

#ifndef NCCLWATCH_DECODER_KNOWLEDGE_STACK_PLACES_H_
#define NCCLWATCH_DECODER_KNOWLEDGE_STACK_PLACES_H_

#include "absl/strings/string_view.h"
#include "knowledge/area.h"

namespace ncclwatch::decoder {

enum class StackPhase { kStartup, kStep, kTeardown };

struct StackPlace {
  StackPhase phase;
  const char* what;  // "an NCCL collective", after "waits in"
  Area subsystem;    // nccl, cuda, c10d, jax/coordination
};

// The place a frame's function names, or nullptr for a function that says
// nothing of the phase (the program's own, the C library's). `where` is the
// frame's file or module, for names that are torch.distributed's only in its
// files ("barrier", "send").
const StackPlace* PlaceOfFrame(absl::string_view function, absl::string_view where);

// The subsystem a module a crash hit belongs to ("libnccl.so.2" -> nccl,
// "libcuda.so.1" -> cuda, "libtorch_cuda.so" -> pytorch), or kNone for
// the program's own and unknown modules.
Area ModuleSubsystem(absl::string_view module);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_KNOWLEDGE_STACK_PLACES_H_

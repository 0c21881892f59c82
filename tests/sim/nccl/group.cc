#include "nccl/group.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "nccl/comm.h"
#include "nccl/debug.h"
#include "nccl/params.h"

namespace ncclsim::nccl {
namespace {

struct PendingOp {
  ncclComm* comm;
  OpArgs args;
  Reduction reduction;
};

struct GroupState {
  int depth = 0;
  std::vector<PendingOp> ops;
  std::vector<std::function<ncclResult_t()>> jobs;
  ncclResult_t error = ncclSuccess;
};

GroupState& Group() {
  thread_local GroupState g;
  return g;
}

// Every operation this process enqueues, on any communicator, in call order:
// what NCCLSIM_GPU_FAULT, NCCLSIM_NET_STALL and NCCLSIM_SLOW_LINK count.
std::atomic<int64_t> g_op_index{0};

struct StreamLaunch {
  std::shared_ptr<Batch> batch;
  ProgressEngine* engine;
};

// The host task a batch occupies its stream with, as a kernel would.
void RunOnStream(void* arg) {
  auto* launch = static_cast<StreamLaunch*>(arg);
  launch->engine->Activate(launch->batch);
  (void)launch->batch->Wait();
  delete launch;
}

// What the GPU does when NCCLSIM_GPU_FAULT fires: the device fails with a
// sticky error, the communicator reports it asynchronously, its work stops,
// and peers wait for data that never comes.
bool InjectFault(ncclComm* comm, CUresult error, Batch& batch) {
  using InjectFn = CUresult (*)(int, CUresult);
  auto inject = reinterpret_cast<InjectFn>(dlsym(RTLD_DEFAULT, "ncclsimInjectDeviceFault"));
  if (inject != nullptr) inject(comm->cuda_dev, error);
  WARN("Cuda failure '%s'", cudaGetErrorString(static_cast<cudaError_t>(error)));
  CommSetAsyncError(comm, ncclUnhandledCudaError);
  batch.Finish(ncclUnhandledCudaError);
  comm->progress.Abort(ncclUnhandledCudaError);
  return false;
}

ncclResult_t BuildReduction(ncclComm* comm, const OpArgs& args, Reduction* r) {
  r->type = args.datatype;
  r->op = args.redop;
  if (!IsReduction(args.func)) return ncclSuccess;
  if (args.redop >= ncclNumOps) {
    std::lock_guard<std::mutex> lock(comm->mu);
    auto it = comm->premul_ops.find(args.redop);
    if (it == comm->premul_ops.end()) {
      WARN("%s : reduction operation %d unknown to this communicator", FuncName(args.func),
           args.redop);
      return ncclInvalidArgument;
    }
    if (it->second.type != args.datatype) {
      WARN("%s : reduction operation %d was created for datatype %d, not %d", FuncName(args.func),
           args.redop, it->second.type, args.datatype);
      return ncclInvalidArgument;
    }
    *r = it->second;
    return ncclSuccess;
  }
  if (args.redop == ncclAvg) {
    const bool floating = args.datatype == ncclFloat16 || args.datatype == ncclFloat32 ||
                          args.datatype == ncclFloat64 || args.datatype == ncclBfloat16 ||
                          args.datatype == ncclFloat8e4m3 || args.datatype == ncclFloat8e5m2;
    if (floating) {
      r->op = ncclSum;
      r->premultiply = true;
      r->scalar = 1.0 / comm->nranks;
    } else {
      r->divisor = comm->nranks;
    }
  }
  return ncclSuccess;
}

ncclResult_t CheckArgs(ncclComm* comm, const OpArgs& args) {
  const char* name = FuncName(args.func);
  if (DataTypeSize(args.datatype) == 0) {
    WARN("%s : invalid type %d", name, args.datatype);
    return ncclInvalidArgument;
  }
  if (args.func == Func::kPutSignal || args.func == Func::kSignal) {
    if (args.peer < 0 || args.peer >= comm->nranks) {
      WARN("%s : invalid peer %d (peer should be in the 0..%d range)", name, args.peer,
           comm->nranks);
      return ncclInvalidArgument;
    }
    return ncclSuccess;
  }
  if (args.func == Func::kWaitSignal) return ncclSuccess;
  if (IsRooted(args.func) && (args.peer < 0 || args.peer >= comm->nranks)) {
    WARN("%s : invalid root %d (root should be in the 0..%d range)", name, args.peer, comm->nranks);
    return ncclInvalidArgument;
  }
  if ((args.func == Func::kSend || args.func == Func::kRecv) &&
      (args.peer < 0 || args.peer >= comm->nranks)) {
    WARN("%s : invalid peer %d (peer should be in the 0..%d range)", name, args.peer, comm->nranks);
    return ncclInvalidArgument;
  }
  if (IsReduction(args.func) && static_cast<int>(args.redop) < 0) {
    WARN("%s : invalid reduction operation %d", name, args.redop);
    return ncclInvalidArgument;
  }
  if (args.count == 0) return ncclSuccess;
  const bool root = args.peer == comm->rank;
  const bool uses_send = args.func != Func::kRecv && !((args.func == Func::kScatter) && !root);
  const bool uses_recv = args.func != Func::kSend &&
                         !((args.func == Func::kReduce || args.func == Func::kGather) && !root);
  if (uses_send && args.sendbuff == nullptr) {
    WARN("%s : sendbuff argument is NULL", name);
    return ncclInvalidArgument;
  }
  if (uses_recv && args.recvbuff == nullptr) {
    WARN("%s : recvbuff argument is NULL", name);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// Launches one communicator's share of a group.
ncclResult_t LaunchBatch(ncclComm* comm, std::vector<PendingOp*>& ops) {
  auto batch = std::make_shared<Batch>();
  std::vector<cudaStream_t> streams;
  bool fault = false;
  bool stall = false;
  const GpuFault& knob = GpuFaultKnob();
  const NetStall& net = NetStallKnob();
  for (PendingOp* p : ops) {
    batch->ops.push_back(std::make_unique<Op>(p->args, comm->rank, comm->nranks, p->reduction));
    if (IsOneSided(p->args.func)) batch->ops.back()->SetOneSided(&comm->progress.one_sided());
    if (std::find(streams.begin(), streams.end(), p->args.stream) == streams.end())
      streams.push_back(p->args.stream);
    const int64_t index = g_op_index.fetch_add(1);
    fault |= knob.armed && index == knob.at_collective;
    stall |= net.armed && index == net.at_operation;
    if (batch->ops.back()->UsesPeers()) {
      const size_t bytes = p->args.count * DataTypeSize(p->args.datatype);
      batch->hold_ns = std::max(batch->hold_ns, SlowLinkHoldNs(comm->cuda_dev, index, bytes));
    }
  }
  // A Send to self meets the Recv from self of the same group.
  std::vector<Op*> self_sends;
  for (auto& op : batch->ops) {
    const OpArgs& a = op->args();
    if (a.func == Func::kSend && a.peer == comm->rank) self_sends.push_back(op.get());
  }
  for (auto& op : batch->ops) {
    const OpArgs& a = op->args();
    if (a.func != Func::kRecv || a.peer != comm->rank) continue;
    for (auto it = self_sends.begin(); it != self_sends.end(); ++it) {
      const OpArgs& s = (*it)->args();
      if (s.count * DataTypeSize(s.datatype) == a.count * DataTypeSize(a.datatype)) {
        op->PairWithSelfSend(**it);
        self_sends.erase(it);
        break;
      }
    }
  }
  if (fault) {
    const CUresult error = knob.error;
    batch->on_start = [comm, error](Batch& b) { return InjectFault(comm, error, b); };
  } else if (stall) {
    batch->on_start = [](Batch&) {
      KillNetReceive();
      return true;
    };
  } else {
    batch->on_start = [](Batch&) { return true; };
  }
  comm->progress.Post(batch);

  const cudaStream_t first = streams.front();
  for (size_t i = 1; i < streams.size(); ++i) {
    cudaEvent_t ev;
    if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) == cudaSuccess) {
      cudaEventRecord(ev, streams[i]);
      cudaStreamWaitEvent(first, ev, 0);
    }
  }
  auto* launch = new StreamLaunch{batch, &comm->progress};
  cudaError_t err = cudaLaunchHostFunc(first, RunOnStream, launch);
  if (err != cudaSuccess) {
    delete launch;
    batch->Finish(ncclUnhandledCudaError);
    WARN("Cuda failure '%s'", cudaGetErrorString(err));
    return ncclUnhandledCudaError;
  }
  for (size_t i = 1; i < streams.size(); ++i) {
    cudaEvent_t ev;
    if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) == cudaSuccess) {
      cudaEventRecord(ev, first);
      cudaStreamWaitEvent(streams[i], ev, 0);
    }
  }
  return ncclSuccess;
}

ncclResult_t LaunchAll(std::vector<PendingOp>& ops) {
  std::vector<ncclComm*> order;
  for (const PendingOp& p : ops)
    if (std::find(order.begin(), order.end(), p.comm) == order.end()) order.push_back(p.comm);
  ncclResult_t result = ncclSuccess;
  for (ncclComm* c : order) {
    std::vector<PendingOp*> mine;
    for (PendingOp& p : ops)
      if (p.comm == c) mine.push_back(&p);
    ncclResult_t rc = LaunchBatch(c, mine);
    if (result == ncclSuccess) result = rc;
  }
  return result;
}

ncclResult_t RunJobs(std::vector<std::function<ncclResult_t()>>& jobs) {
  if (jobs.empty()) return ncclSuccess;
  if (jobs.size() == 1) return jobs[0]();
  std::vector<ncclResult_t> results(jobs.size(), ncclSuccess);
  std::vector<std::thread> threads;
  // Each job runs with the CUDA device its caller had selected.
  int dev = 0;
  (void)cudaGetDevice(&dev);
  for (size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&jobs, &results, i, dev] {
      (void)cudaSetDevice(dev);
      results[i] = jobs[i]();
    });
  }
  for (auto& t : threads) t.join();
  for (ncclResult_t r : results)
    if (r != ncclSuccess) return r;
  return ncclSuccess;
}

}  // namespace

int GroupDepth() { return Group().depth; }

void GroupDeferJob(std::function<ncclResult_t()> job) { Group().jobs.push_back(std::move(job)); }

ncclResult_t GroupStart() {
  ++Group().depth;
  return ncclSuccess;
}

ncclResult_t GroupEnd() {
  GroupState& g = Group();
  if (g.depth == 0) {
    WARN("ncclGroupEnd: not in a group call.");
    return ncclInvalidUsage;
  }
  if (--g.depth > 0) return ncclSuccess;
  std::vector<std::function<ncclResult_t()>> jobs = std::move(g.jobs);
  std::vector<PendingOp> ops = std::move(g.ops);
  ncclResult_t error = g.error;
  g = GroupState();
  ncclResult_t rc = RunJobs(jobs);
  if (error == ncclSuccess) error = rc;
  if (error != ncclSuccess) return error;
  return LaunchAll(ops);
}

ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info) {
  GroupState& g = Group();
  if (info == nullptr || info->magic != 0x74685283) {
    WARN("ncclGroupSimulateEnd: simInfo is not initialized with NCCL_SIM_INFO_INITIALIZER");
    return ncclInvalidArgument;
  }
  if (g.depth == 0) {
    WARN("ncclGroupEnd: not in a group call.");
    return ncclInvalidUsage;
  }
  if (--g.depth > 0) return ncclSuccess;
  // An estimate, not a launch: 50 GB/s per operation plus 10 us of latency.
  double us = 0;
  for (const PendingOp& p : g.ops) us += 10.0 + p.args.count * DataTypeSize(p.args.datatype) / 50e3;
  info->estimatedTime = static_cast<float>(us);
  std::vector<std::function<ncclResult_t()>> jobs = std::move(g.jobs);
  g = GroupState();
  return RunJobs(jobs);
}

ncclResult_t Enqueue(ncclComm_t comm, const OpArgs& args) {
  GroupState& g = Group();
  ncclResult_t rc = CommEnsureReady(comm, FuncName(args.func));
  if (rc == ncclSuccess) rc = CheckArgs(comm, args);
  Reduction reduction;
  if (rc == ncclSuccess) rc = BuildReduction(comm, args, &reduction);
  if (rc != ncclSuccess) {
    if (g.depth > 0 && g.error == ncclSuccess) g.error = rc;
    return rc;
  }
  // NCCL launches nothing for an empty operation (a signal and a wait carry no data).
  if (args.count == 0 && !IsOneSided(args.func)) return ncclSuccess;
  if (g.depth > 0) {
    g.ops.push_back(PendingOp{comm, args, reduction});
    return ncclSuccess;
  }
  std::vector<PendingOp> one{PendingOp{comm, args, reduction}};
  return LaunchAll(one);
}

}  // namespace ncclsim::nccl

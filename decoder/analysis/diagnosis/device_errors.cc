// CUDA errors (gpu_fault, cuda_error: tier 0) and NCCL's asynchronous errors
// (nccl_async_error), the first each process reported.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"

namespace ncclwatch::decoder::diagnosis {

namespace {

// Hardware faults among CUDA's errors; the rest are a kernel's or the program's.
bool HardwareError(const std::string& name) {
  for (const char* n :
       {"CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_NVLINK_UNCORRECTABLE", "CUDA_ERROR_DEVICE_UNAVAILABLE",
        "CUDA_ERROR_DEVICE_NOT_LICENSED", "CUDA_ERROR_SYSTEM_NOT_READY", "CUDA_ERROR_UNKNOWN"}) {
    if (name == n) return true;
  }
  return false;
}

// The ranks of `q`'s job that reported a CUDA or NCCL error after `when`.
std::vector<int> LaterErrors(const DiagnosisContext& cx, int q, int64_t when) {
  std::vector<int> out;
  for (int o : cx.jobs[cx.job_of[q]]) {
    if (o == q) continue;
    const ProcessCompletion& c = cx.procs[o].completion;
    const bool later = (!c.device_errors.empty() && c.device_errors.front().when_ns >= when) ||
                       (!c.async_errors.empty() && c.async_errors.front().when_ns >= when);
    if (later) out.push_back(cx.procs[o].rank);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void FindDeviceErrors(DiagnosisContext& cx) {
  for (const ProcessRecord& p : cx.procs) {
    const ProcessCompletion& pc = p.completion;
    if (!pc.device_errors.empty()) {
      const DeviceError& e = pc.device_errors.front();
      Candidate c;
      c.tier = 0;
      c.process = p.index;
      Finding& x = c.finding;
      x.kind = HardwareError(e.name) ? FindingKind::kGpuFault : FindingKind::kCudaError;
      DeviceErrorFacts facts;
      facts.result = e.result;
      facts.name = e.name;
      facts.text = e.text;
      facts.device = e.device;
      facts.bus_id = e.bus_id;
      facts.host = p.host;
      cx.Locate(p.index, e.comm, &x, &facts.completed);
      if (e.comm != 0 && e.completed > facts.completed.value_or(0)) facts.completed = e.completed;
      x.when_ns = e.when_ns;
      facts.also = LaterErrors(cx, p.index, e.when_ns);
      facts.waiting = cx.WaitingOthers(p.index);
      x.facts = std::move(facts);
      cx.candidates.push_back(std::move(c));
    }
    if (!pc.async_errors.empty()) {
      const AsyncError& e = pc.async_errors.front();
      Candidate c;
      c.process = p.index;
      Finding& x = c.finding;
      x.kind = FindingKind::kNcclAsyncError;
      DeviceErrorFacts facts;
      facts.nccl = true;
      facts.result = e.result;
      facts.text = e.text;
      facts.host = p.host;
      cx.Locate(p.index, e.comm, &x, &facts.completed);
      x.when_ns = e.when_ns;
      facts.waiting = cx.WaitingOthers(p.index);
      x.facts = std::move(facts);
      cx.candidates.push_back(std::move(c));
    }
  }
}

}  // namespace ncclwatch::decoder::diagnosis

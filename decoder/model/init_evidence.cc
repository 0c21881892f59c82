#include "model/init_evidence.h"

#include <algorithm>
#include <string>

namespace ncclwatch::decoder {

int64_t InitEvidence::FirstFailureNs() const {
  int64_t t = INT64_MAX;
  for (const Failure& f : failures) t = std::min(t, f.when_ns);
  for (const SysFailure& s : sys_failures) t = std::min(t, s.when_ns);
  for (const CudaFailure& c : cuda_failures) t = std::min(t, c.when_ns);
  return t;
}

void InitEvidence::AddFromLog(const InitEvidence& log) {
  for (const std::string& w : log.warnings)
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  for (const auto& [name, value] : log.env) env.emplace(name, value);  // the trace's value stays
  if (bootstrap_iface.empty()) bootstrap_iface = log.bootstrap_iface;
  if (!bootstrap_addr) bootstrap_addr = log.bootstrap_addr;
  if (!root_addr) root_addr = log.root_addr;
  if (bus_id.empty()) bus_id = log.bus_id;
  if (device < 0) device = log.device;
  if (nccl_version == 0) nccl_version = log.nccl_version;
  if (cuda_runtime_version == 0) cuda_runtime_version = log.cuda_runtime_version;
}

}  // namespace ncclwatch::decoder

#include "analysis/gpu_topology_check.h"

#include <map>
#include <vector>

namespace ncclwatch::decoder {
namespace {

// The link between devices a and b: a's row, else b's.
const std::string& Link(const GpuTopology& t, size_t a, size_t b) {
  return !t.links[a][b].empty() ? t.links[a][b] : t.links[b][a];
}

// Whether `link` is below `usual` (an NVLink): fewer NVLinks, or none.
bool Below(const std::string& link, const std::string& usual) {
  const int n = NvlinkCount(link);
  return n == 0 ? LinkDistance(link) > 0 : n < NvlinkCount(usual);
}

constexpr int kPxb = 3;  // LinkDistance("PXB")

}  // namespace

std::optional<Finding> GpuTopologyWarning(const GpuTopology& t, const std::string& where) {
  std::vector<size_t> gpus, nics;
  for (size_t d = 0; d < t.devices.size(); ++d) (t.gpu[d] ? gpus : nics).push_back(d);
  GpuTopologyFacts x;
  x.file = where;
  x.gpus = static_cast<int>(gpus.size());
  x.nics = static_cast<int>(nics.size());

  // The link most GPU pairs have.
  std::map<std::string, int> count;
  int pairs = 0;
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = i + 1; j < gpus.size(); ++j, ++pairs) ++count[Link(t, gpus[i], gpus[j])];
  for (const auto& [link, n] : count)
    if (n > x.usual_pairs) {
      x.usual = link;
      x.usual_pairs = n;
    }
  if (pairs >= 3 && NvlinkCount(x.usual) > 0 && 3 * x.usual_pairs >= 2 * pairs) {
    for (size_t i = 0; i < gpus.size(); ++i)
      for (size_t j = i + 1; j < gpus.size(); ++j) {
        const std::string& link = Link(t, gpus[i], gpus[j]);
        if (Below(link, x.usual)) x.weak.push_back({t.devices[gpus[i]], t.devices[gpus[j]], link});
      }
  }

  // NICs beyond GPU Direct RDMA's reach from every GPU.
  for (size_t n : nics) {
    int nearest = -1;
    size_t by = 0;
    for (size_t g : gpus) {
      const int d = LinkDistance(Link(t, g, n));
      if (d > 0 && (nearest < 0 || d < nearest)) {
        nearest = d;
        by = g;
      }
    }
    if (nearest > kPxb) x.far_nics.push_back({t.devices[n], t.devices[by], Link(t, by, n)});
  }

  if (x.weak.empty() && x.far_nics.empty()) return std::nullopt;
  Finding f;
  f.kind = FindingKind::kGpuTopology;
  f.role = FindingRole::kWarning;
  f.facts = std::move(x);
  return f;
}

}  // namespace ncclwatch::decoder

#include "analysis/setup_notes.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "analysis/gpu_sharing_failure.h"
#include "knowledge/nccl_semantics.h"

namespace ncclwatch::decoder {
namespace {

// NCCL variables that differ between ranks by design.
bool PerRankByDesign(const std::string& name) {
  return name == "NCCL_DEBUG_FILE" || name == "NCCL_HOSTID";
}

std::string DriverText(int32_t v) {
  return v > 0 ? std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) : "";
}

// The values of one setting across the ranks that recorded an inventory;
// a Setting when there is more than one.
// With `reached_only`, a rank whose value is empty never got as far as the
// setting (it failed or waited before NCCL chose a bootstrap interface, or
// asked its version): it is left out, not counted as a different value.
template <typename ValueOf>
void Compare(const std::vector<const InitEvidence*>& ranks, const std::string& name,
             ValueOf value_of, std::vector<SetupFacts::Setting>* out, bool reached_only = false) {
  std::map<std::string, std::vector<int>> by_value;
  for (const InitEvidence* r : ranks) {
    std::string v = value_of(*r);
    if (reached_only && v.empty()) continue;
    by_value[std::move(v)].push_back(r->rank);
  }
  if (by_value.size() < 2) return;
  SetupFacts::Setting s;
  s.name = name;
  for (auto& [v, rs] : by_value) {
    std::sort(rs.begin(), rs.end());
    s.values.push_back({v, rs});
  }
  std::stable_sort(s.values.begin(), s.values.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  out->push_back(std::move(s));
}

std::vector<Finding> ConfigSkew(const std::vector<const InitEvidence*>& all) {
  std::vector<const InitEvidence*> ranks;
  for (const InitEvidence* r : all)
    if (r->driver_known) ranks.push_back(r);  // an inventory was recorded
  if (ranks.size() < 2) return {};
  SetupFacts facts;
  std::set<std::string> names;
  for (const InitEvidence* r : ranks)
    for (const auto& [name, value] : r->env)
      if (absl::StartsWith(name, "NCCL_") && !PerRankByDesign(name)) names.insert(name);
  for (const std::string& name : names) {
    Compare(
        ranks, name,
        [&](const InitEvidence& r) {
          const std::string* v = r.Env(name);
          return v ? *v : std::string();
        },
        &facts.settings);
  }
  Compare(
      ranks, "NCCL version",
      [](const InitEvidence& r) {
        return r.nccl_version > 0 ? NcclVersionString(r.nccl_version) : std::string();
      },
      &facts.settings, /*reached_only=*/true);
  Compare(
      ranks, "CUDA driver", [](const InitEvidence& r) { return DriverText(r.cuda_driver_version); },
      &facts.settings);
  Compare(
      ranks, "bootstrap interface", [](const InitEvidence& r) { return r.bootstrap_iface; },
      &facts.settings, /*reached_only=*/true);
  if (facts.settings.empty()) return {};
  Finding n;
  n.kind = FindingKind::kConfigSkew;
  n.role = FindingRole::kNote;
  std::set<int> odd;
  for (const SetupFacts::Setting& s : facts.settings)
    for (size_t i = 1; i < s.values.size(); ++i)
      odd.insert(s.values[i].second.begin(), s.values[i].second.end());
  n.ranks.assign(odd.begin(), odd.end());
  n.facts = std::move(facts);
  return {std::move(n)};
}

std::vector<Finding> P2pPath(const std::vector<const InitEvidence*>& ranks) {
  std::vector<Finding> out;
  std::set<std::string> hosts_seen;
  for (const InitEvidence* r : ranks) {
    if (r->gpus.empty() || !hosts_seen.insert(r->host).second) continue;
    const std::vector<std::string> bridges = AcsRedirectBridges(r->gpus);
    if (bridges.empty()) continue;
    SetupFacts facts;
    facts.host = r->host;
    facts.bridges = bridges;
    facts.iommu = r->iommu_enabled;
    for (const GpuPathInfo& g : r->gpus)
      for (const GpuPathInfo::Bridge& b : g.bridges)
        if (std::find(bridges.begin(), bridges.end(), b.bdf) != bridges.end() &&
            std::find(facts.gpus.begin(), facts.gpus.end(), g.bdf) == facts.gpus.end())
          facts.gpus.push_back(g.bdf);
    Finding n;
    n.kind = FindingKind::kP2pPath;
    n.role = FindingRole::kNote;
    for (const InitEvidence* o : ranks)
      if (o->host == r->host && o->rank >= 0) n.ranks.push_back(o->rank);
    std::sort(n.ranks.begin(), n.ranks.end());
    n.facts = std::move(facts);
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

std::vector<Finding> SetupNotes(const std::vector<const InitEvidence*>& ranks) {
  std::vector<Finding> out = P2pPath(ranks);
  for (Finding& n : ConfigSkew(ranks)) out.push_back(std::move(n));
  return out;
}

}  // namespace ncclwatch::decoder

#include "logs/gpu_topology.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace ncclwatch::decoder {
namespace {

std::vector<absl::string_view> Words(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

bool Numbered(absl::string_view w, absl::string_view prefix) {
  if (!absl::ConsumePrefix(&w, prefix) || w.empty()) return false;
  for (char c : w)
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// A column of the header: GPUn, NICn, or an old driver's NIC name (mlx5_0,
// ibp12s0: lower case, ending in a digit).
bool DeviceName(absl::string_view w) {
  if (Numbered(w, "GPU") || Numbered(w, "NIC")) return true;
  if (w.size() < 2 || !absl::ascii_islower(static_cast<unsigned char>(w.front())) ||
      !absl::ascii_isdigit(static_cast<unsigned char>(w.back())))
    return false;
  for (char c : w)
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

// The header's devices, or none when the line is no header.
std::vector<std::string> Header(absl::string_view line) {
  std::vector<std::string> devices;
  const std::vector<absl::string_view> words = Words(line);
  if (words.empty() || words.front() != "GPU0") return {};
  for (absl::string_view w : words) {
    if (w == "CPU") break;
    if (!DeviceName(w) || devices.size() >= kMaxTopologyDevices) return {};
    devices.emplace_back(w);
  }
  return devices.size() >= 2 ? devices : std::vector<std::string>{};
}

}  // namespace

int LinkDistance(const std::string& link) {
  if (link == "X") return 0;
  if (NvlinkCount(link) > 0) return 1;
  if (link == "PIX") return 2;
  if (link == "PXB") return 3;
  if (link == "PHB") return 4;
  if (link == "NODE") return 5;
  if (link == "SYS" || link == "SOC") return 6;
  return -1;
}

int NvlinkCount(const std::string& link) {
  int n = 0;
  absl::string_view w = link;
  if (!absl::ConsumePrefix(&w, "NV") || !absl::SimpleAtoi(w, &n) || n <= 0) return 0;
  return n;
}

std::vector<GpuTopology> FindGpuTopologies(const NcclLog& log) {
  std::vector<GpuTopology> out;
  const std::vector<LogLine>& lines = log.lines();
  for (size_t i = 0; i < lines.size() && out.size() < kMaxTopologies; ++i) {
    if (lines[i].level != LogLine::kOther) continue;
    std::vector<std::string> devices = Header(lines[i].text);
    if (devices.empty()) continue;
    GpuTopology t;
    t.source = lines[i].source;
    t.line = lines[i].number;
    t.process = lines[i].process;
    t.rank = lines[i].process >= 0 && log.processes()[lines[i].process].rank >= 0
                 ? log.processes()[lines[i].process].rank
                 : lines[i].tagged_rank;
    const size_t n = devices.size();
    t.links.assign(n, std::vector<std::string>(n));
    std::map<std::string, size_t> index;
    for (size_t d = 0; d < n; ++d) index[devices[d]] = d;
    // The rows that follow, each a device of the header and its n links.
    size_t j = i + 1;
    for (; j < lines.size() && lines[j].source == t.source; ++j) {
      const std::vector<absl::string_view> words = Words(lines[j].text);
      if (words.size() < n + 1) break;
      auto row = index.find(std::string(words[0]));
      if (row == index.end()) break;
      bool cells = true;
      for (size_t c = 0; c < n && cells; ++c) cells = LinkDistance(std::string(words[c + 1])) >= 0;
      if (!cells) break;
      for (size_t c = 0; c < n; ++c) t.links[row->second][c] = std::string(words[c + 1]);
    }
    // Every GPU's row, and each X where it belongs.
    bool whole = true;
    t.gpu.resize(n);
    for (size_t d = 0; d < n; ++d) {
      t.gpu[d] = Numbered(devices[d], "GPU");
      if (t.gpu[d]) whole &= t.links[d][d] == "X";
    }
    if (!whole) continue;
    // The NIC legend ("NIC0: mlx5_0") a little further on.
    for (size_t k = j; k < lines.size() && k < j + 40 && lines[k].source == t.source; ++k) {
      absl::string_view l = absl::StripAsciiWhitespace(lines[k].text);
      const size_t colon = l.find(':');
      if (colon == absl::string_view::npos || !Numbered(l.substr(0, colon), "NIC")) continue;
      const std::string name(absl::StripAsciiWhitespace(l.substr(colon + 1)));
      auto it = index.find(std::string(l.substr(0, colon)));
      if (it != index.end() && !name.empty() && name.size() < 64) devices[it->second] = name;
    }
    t.devices = std::move(devices);
    out.push_back(std::move(t));
    i = j - 1;
  }
  return out;
}

}  // namespace ncclwatch::decoder

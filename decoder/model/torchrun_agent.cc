#include "model/torchrun_agent.h"

#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace ncclwatch::decoder {
namespace {

// torchrun's options that take no value (store_true and check_env flags).
bool IsFlag(const std::string& name) {
  return name == "standalone" || name == "no-python" || name == "run-path" || name == "module" ||
         name == "m" || name == "virtual-local-rank";
}

// Where torchrun's own arguments begin: after `torchrun` (its script, run
// by an interpreter or not) or `-m torch.distributed.run|launch`, among the
// first few words (an interpreter and its flags); npos when neither.
size_t OptionsStart(const std::vector<std::string>& words) {
  for (size_t i = 0; i < words.size() && i < 4; ++i) {
    const std::string& w = words[i];
    const size_t slash = w.rfind('/');
    if (w.compare(slash == std::string::npos ? 0 : slash + 1, std::string::npos, "torchrun") == 0)
      return i + 1;
    if (w == "-m" && i + 1 < words.size() &&
        (words[i + 1] == "torch.distributed.run" || words[i + 1] == "torch.distributed.launch"))
      return i + 2;
  }
  return std::string::npos;
}

void ParseNodes(const std::string& nnodes, int* min_nodes, int* max_nodes) {
  std::vector<std::string> parts = absl::StrSplit(nnodes, ':');
  int a = -1, b = -1;
  if (parts.size() == 1 && absl::SimpleAtoi(parts[0], &a)) {
    b = a;
  } else if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &a) ||
             !absl::SimpleAtoi(parts[1], &b)) {
    a = b = -1;
  }
  *min_nodes = a;
  *max_nodes = b;
}

}  // namespace

std::optional<TorchrunAgent> TorchrunAgentOf(const InventoryInfo& inventory) {
  const std::vector<std::string> words =
      absl::StrSplit(inventory.command_line, ' ', absl::SkipEmpty());
  size_t i = OptionsStart(words);
  if (i == std::string::npos) return std::nullopt;

  // Its options, by name ("master-port"; "--master_port" is the same), up
  // to the training script.
  std::map<std::string, std::string> options;
  while (i < words.size()) {
    absl::string_view w = words[i];
    if (w.size() < 2 || w[0] != '-') break;
    w = absl::StripPrefix(absl::StripPrefix(w, "-"), "-");
    std::string name(w.substr(0, w.find('=')));
    for (char& c : name)
      if (c == '_') c = '-';
    ++i;
    if (w.find('=') != absl::string_view::npos) {
      options[name] = std::string(w.substr(w.find('=') + 1));
    } else if (IsFlag(name)) {
      options[name] = "1";
    } else if (i < words.size()) {
      options[name] = words[i++];
    }
  }
  // An option, else its PET_ variable (torchrun's defaults from the environment).
  auto get = [&](const std::string& name) -> std::optional<std::string> {
    if (auto it = options.find(name); it != options.end()) return it->second;
    std::string var = "PET_" + absl::AsciiStrToUpper(name);
    for (char& c : var)
      if (c == '-') c = '_';
    if (const std::string* v = inventory.Env(var)) return *v;
    return std::nullopt;
  };

  TorchrunAgent a;
  a.backend = get("rdzv-backend").value_or("static");
  a.nnodes = get("nnodes").value_or("1:1");
  ParseNodes(a.nnodes, &a.min_nodes, &a.max_nodes);
  a.run_id = get("rdzv-id").value_or("none");
  const std::string endpoint = get("rdzv-endpoint").value_or("");
  const std::optional<std::string> master_port = get("master-port");
  const std::optional<std::string> standalone = get("standalone");
  if ((standalone && *standalone != "0" && !standalone->empty()) ||
      (a.backend == "static" && endpoint.empty() && !master_port && a.max_nodes == 1)) {
    a.local = true;
    a.backend = "c10d";
    a.host = "localhost";
    a.port = "0";
    return a;
  }
  if (a.backend == "static") {
    int node_rank = 0;
    if (!absl::SimpleAtoi(get("node-rank").value_or("0"), &node_rank)) node_rank = -1;
    a.node_rank = node_rank;
  }
  if (a.backend == "static" && endpoint.empty()) {
    a.host = get("master-addr").value_or("127.0.0.1");
    a.port = master_port.value_or("29500");
    return a;
  }
  // host[:port], or [v6]:port.
  absl::string_view e = endpoint;
  size_t colon = e.rfind(':');
  if (!e.empty() && e.front() == '[') {
    const size_t close = e.find(']');
    colon = close != absl::string_view::npos && close + 1 < e.size() && e[close + 1] == ':'
                ? close + 1
                : absl::string_view::npos;
    a.host = std::string(e.substr(1, close == absl::string_view::npos ? e.size() - 1 : close - 1));
  } else {
    a.host = std::string(e.substr(0, colon));
  }
  a.port = colon == absl::string_view::npos ? (a.backend == "c10d" ? "29400" : "")
                                            : std::string(e.substr(colon + 1));
  return a;
}

}  // namespace ncclwatch::decoder

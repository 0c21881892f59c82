#include "analysis/rendezvous.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {
namespace {

namespace sa = ::ncclwatch::fields::socket_activity;

int Port(const std::string& text) {
  int port = -1;
  if (!absl::SimpleAtoi(text, &port) || port < 0 || port > 65535) return -1;
  return port;
}

bool Unreachable(int err) {
  return err == EHOSTUNREACH || err == ENETUNREACH || err == ETIMEDOUT || err == EHOSTDOWN ||
         err == ENETDOWN;
}

// The ranks of each value of a setting, rank 0's value first, then by how
// many ranks hold it.
std::vector<std::pair<std::string, std::vector<int>>> ByValue(
    const std::vector<RendezvousEvidence>& ranks, std::string RendezvousEvidence::*setting) {
  std::map<std::string, std::set<int>> by;
  for (const RendezvousEvidence& r : ranks)
    if (r.rank >= 0) by[r.*setting].insert(r.rank);
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (const auto& [value, set] : by) out.push_back({value, {set.begin(), set.end()}});
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    const bool a0 = !a.second.empty() && a.second.front() == 0;
    const bool b0 = !b.second.empty() && b.second.front() == 0;
    if (a0 != b0) return a0;
    return a.second.size() > b.second.size();
  });
  return out;
}

// Sums calls that match into facts.
struct Tally {
  uint64_t count = 0;
  int64_t first = INT64_MAX, last = 0;
  std::set<int> ranks;
  int err = 0;
  void Add(const RendezvousEvidence& r, const RendezvousSocket& s) {
    count += s.count;
    if (s.first_ns > 0) first = std::min(first, s.first_ns);
    last = std::max(last, s.last_ns);
    if (r.rank >= 0) ranks.insert(r.rank);
    if (err == 0) err = s.err;
  }
  int64_t Span() const { return first == INT64_MAX || last < first ? 0 : last - first; }
};

}  // namespace

std::optional<Finding> RendezvousFinding(const std::vector<RendezvousEvidence>& job) {
  // Agents are judged apart from ranks (a job holds one kind or the other:
  // analysis/diagnosis.cc joins agents only with agents).
  std::vector<RendezvousEvidence> ranks;
  bool agents = !job.empty();
  for (const RendezvousEvidence& r : job) agents &= r.agent;
  for (const RendezvousEvidence& r : job)
    if (r.agent == agents) ranks.push_back(r);
  if (ranks.empty()) return std::nullopt;
  bool before_nccl = false, all_ok = true, live = false;
  for (const RendezvousEvidence& r : ranks) {
    if (r.made_comm) return std::nullopt;  // past the rendezvous: the other analyses'
    if (!r.nccl_calls && r.traced_from_load) before_nccl = true;
    all_ok &= r.ended_ok;
    live |= r.live;
  }
  if (!before_nccl || all_ok) return std::nullopt;

  RendezvousFacts x;
  std::set<int> started;
  for (const RendezvousEvidence& r : ranks) {
    if (r.rank >= 0) started.insert(r.rank);
    if (r.rank >= 0 && !r.nccl_calls && !r.ended_ok) x.waiting.push_back(r.rank);
  }
  x.started.assign(started.begin(), started.end());
  std::sort(x.waiting.begin(), x.waiting.end());
  x.waiting.erase(std::unique(x.waiting.begin(), x.waiting.end()), x.waiting.end());

  // The settings every rank should share.
  struct Named {
    const char* name;
    std::string RendezvousEvidence::*field;
  };
  const Named kSettings[] = {{"MASTER_ADDR", &RendezvousEvidence::master_addr},
                             {"MASTER_PORT", &RendezvousEvidence::master_port},
                             {"WORLD_SIZE", &RendezvousEvidence::world_size}};
  // An agent's, as torchrun's options name them.
  const bool is_static = agents && ByValue(ranks, &RendezvousEvidence::backend).size() == 1 &&
                         ranks.front().backend == "static";
  const Named kAgentSettings[] = {
      {"--rdzv-backend", &RendezvousEvidence::backend},
      {is_static ? "--master-addr" : "--rdzv-endpoint host", &RendezvousEvidence::master_addr},
      {is_static ? "--master-port" : "--rdzv-endpoint port", &RendezvousEvidence::master_port},
      {"--nnodes", &RendezvousEvidence::world_size}};
  std::set<int> deviants;
  std::vector<Named> settings(std::begin(kSettings), std::end(kSettings));
  if (agents) settings.assign(std::begin(kAgentSettings), std::end(kAgentSettings));
  for (const Named& n : settings) {
    auto values = ByValue(ranks, n.field);
    if (values.size() < 2) continue;
    for (size_t i = 1; i < values.size(); ++i)
      deviants.insert(values[i].second.begin(), values[i].second.end());
    x.settings.push_back({n.name, std::move(values)});
  }
  {
    // The job's WORLD_SIZE: the reference rank's (rank 0's, or the most common).
    const auto sizes = ByValue(ranks, &RendezvousEvidence::world_size);
    if (!sizes.empty() && !absl::SimpleAtoi(sizes.front().first, &x.world_size)) x.world_size = -1;
  }
  if (x.world_size > 0) {
    for (int r = 0; r < x.world_size && x.missing.size() < 4096; ++r)
      if (started.count(r) == 0) x.missing.push_back(r);
  }

  // Each process's calls at its own MASTER_PORT.
  Tally in_use, refused, unreachable, no_answer, listened, accepted;
  std::string master;  // the address as the failing calls name it
  auto name = [&](const RendezvousEvidence& r, const RendezvousSocket& s) {
    if (!master.empty()) return;
    master =
        s.kind == sa::kConnect && s.addr
            ? s.addr->ToString()
            : absl::StrCat(r.master_addr.empty() ? "*" : r.master_addr, ":", Port(r.master_port));
  };
  for (const RendezvousEvidence& r : ranks) {
    const int port = Port(r.master_port);
    if (port < 0 || r.nccl_calls) continue;
    // Connects to the port: did any succeed? Which failed, how?
    bool connected = false;
    uint64_t started_nb = 0, outcomes = 0;
    for (const RendezvousSocket& s : r.sockets) {
      if (s.kind != sa::kConnect || !s.addr || s.addr->port != port) continue;
      if (s.err == 0) connected = true;
      if (s.err == EINPROGRESS && !s.deferred) {
        started_nb += s.count;
      } else {
        outcomes += s.count;
      }
    }
    for (const RendezvousSocket& s : r.sockets) {
      if (!s.addr || s.addr->port != port) continue;
      if (s.kind == sa::kBind && s.err == EADDRINUSE) {
        in_use.Add(r, s);
        if (master.empty()) master = absl::StrCat(r.master_addr, ":", port);
      }
      if (s.kind == sa::kListen && s.err == 0) listened.Add(r, s);
      if (s.kind == sa::kAccept && s.err == 0) accepted.Add(r, s);
      if (s.kind != sa::kConnect || connected) continue;
      if (s.err == ECONNREFUSED) {
        refused.Add(r, s);
        name(r, s);
      } else if (Unreachable(s.err)) {
        unreachable.Add(r, s);
        name(r, s);
      } else if (s.err == EINPROGRESS && !s.deferred && outcomes == 0 && started_nb > 0) {
        no_answer.Add(r, s);
        name(r, s);
      }
    }
  }
  x.server.assign(listened.ranks.begin(), listened.ranks.end());
  if (!listened.ranks.empty()) x.joined = static_cast<int64_t>(accepted.count);

  x.agents = agents;
  if (agents) x.backend = ByValue(ranks, &RendezvousEvidence::backend).front().first;

  Finding f;
  f.kind = FindingKind::kRendezvousFailure;
  f.phase = HangPhase::kStartup;
  auto take = [&](const Tally& t, RendezvousFacts::Cause cause) {
    x.cause = cause;
    x.err = t.err;
    x.attempts = t.count;
    x.span_ns = t.Span();
    x.failed.assign(t.ranks.begin(), t.ranks.end());
    x.address = master;
    f.when_ns = t.first == INT64_MAX ? 0 : t.first;
  };
  // The failures also say what the disagreement did.
  const Tally& failures = in_use.count > 0        ? in_use
                          : refused.count > 0     ? refused
                          : unreachable.count > 0 ? unreachable
                                                  : no_answer;
  if (!x.settings.empty()) {
    take(failures, RendezvousFacts::Cause::kSettingsDiffer);
    f.ranks.assign(deviants.begin(), deviants.end());
  } else if (in_use.count > 0) {
    take(in_use, RendezvousFacts::Cause::kPortInUse);
    f.ranks = x.failed;
  } else if (live) {
    return std::nullopt;  // still in its rendezvous: running
  } else if (refused.count > 0) {
    take(refused, RendezvousFacts::Cause::kRefused);
    f.ranks = x.failed;
  } else if (unreachable.count > 0 || no_answer.count > 0) {
    take(unreachable.count > 0 ? unreachable : no_answer, RendezvousFacts::Cause::kUnreachable);
    f.ranks = x.failed;
  } else if (!x.missing.empty()) {
    x.cause = RendezvousFacts::Cause::kRanksMissing;
    f.ranks = x.missing;
  } else {
    return std::nullopt;
  }
  if (agents) f.ranks.clear();  // nodes, in the facts: no rank of the job is to blame
  f.facts = std::move(x);
  return f;
}

}  // namespace ncclwatch::decoder

#include "report/rendezvous_text.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "knowledge/nccl_semantics.h"
#include "report/hang_text.h"
#include "report/names.h"

namespace ncclwatch::decoder {
namespace {

using Cause = RendezvousFacts::Cause;

std::string Times(uint64_t n) { return n == 1 ? "once" : absl::StrCat(n, " times"); }

// Whom a list names: ranks, or torchrun's agents by node ("the agent of
// node 1", "the agents of nodes 0-1").
std::string Who(const RendezvousFacts& x, std::vector<int> ids) {
  if (!x.agents) return RanksNoun(ids);
  ids.erase(std::remove_if(ids.begin(), ids.end(), [](int n) { return n < 0; }), ids.end());
  if (ids.empty()) return "torchrun's agents";
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return absl::StrCat(ids.size() == 1 ? "the agent of node " : "the agents of nodes ",
                      RankList(ids));
}

// Where the processes meet, as the user set it.
const char* Where(const RendezvousFacts& x) {
  if (!x.agents) return "MASTER_ADDR:MASTER_PORT";
  return x.backend == "static" ? "torchrun --master-addr:--master-port"
                               : "torchrun --rdzv-endpoint";
}

// "rank 1 tried 127.0.0.1:29511 6 times over 7.4 s (ECONNREFUSED)"
std::string Attempts(const RendezvousFacts& x, const char* verb) {
  std::string s = absl::StrCat(Who(x, x.failed), " ", verb, " ", x.address, " ", Times(x.attempts));
  if (x.span_ns > 0 && x.attempts > 1) absl::StrAppend(&s, " over ", Seconds(x.span_ns));
  if (x.err != 0) absl::StrAppend(&s, " (", ErrnoName(x.err), ")");
  return s;
}

std::string Waiting(const RendezvousFacts& x) {
  if (x.waiting.empty()) return "";
  std::string s = absl::StrCat("; ", Who(x, x.waiting), " waited in the rendezvous");
  if (!x.server.empty() && x.joined >= 0 && x.world_size > 0)
    absl::StrAppend(&s, " (the store's server, ", Who(x, x.server), ", saw ", x.joined, " of ",
                    x.world_size, x.agents ? " nodes join)" : " ranks join)");
  absl::StrAppend(&s, x.agents ? " and started no worker" : " and never called NCCL");
  return s;
}

std::string Missing(const RendezvousFacts& x) {
  if (x.missing.empty()) return "";
  return absl::StrCat("; ", Who(x, x.missing), x.agents ? " of --nnodes " : " of WORLD_SIZE ",
                      x.world_size,
                      " left no trace (never started, or its trace was not collected)");
}

}  // namespace

const char* RendezvousCauseName(Cause cause) {
  switch (cause) {
    case Cause::kSettingsDiffer:
      return "settings_differ";
    case Cause::kPortInUse:
      return "port_in_use";
    case Cause::kRefused:
      return "refused";
    case Cause::kUnreachable:
      return "unreachable";
    case Cause::kRanksMissing:
      return "ranks_missing";
  }
  return "unknown";
}

void RenderRendezvous(const Finding& f, const RendezvousFacts& x, FindingText* t) {
  switch (x.cause) {
    case Cause::kSettingsDiffer: {
      std::vector<std::string> parts;
      for (const SetupFacts::Setting& s : x.settings) {
        std::vector<std::string> values;
        for (const auto& [value, ranks] : s.values)
          values.push_back(absl::StrCat(value.empty() ? "unset" : value, " on ", Who(x, ranks)));
        parts.push_back(absl::StrCat(s.name, " ", absl::StrJoin(values, ", ")));
      }
      t->detail = absl::StrCat(x.agents ? "torchrun's agents (one per node, before any worker) "
                                          "disagree on where and how many meet: "
                                        : "the ranks disagree on where and how many meet: ",
                               absl::StrJoin(parts, "; "), ", so they never met");
      if (x.attempts > 0) absl::StrAppend(&t->detail, "; ", Attempts(x, "tried"));
      absl::StrAppend(&t->detail, Waiting(x));
      t->fix =
          x.agents
              ? "start torchrun on every node with the same --nnodes, --rdzv-backend and meeting "
                "point (--master-addr/--master-port for the static rendezvous, --rdzv-endpoint "
                "for c10d), each node with its own --node-rank; a launcher script that builds the "
                "command per node (from SLURM_* or a hostfile) is where they part"
              : "give every rank the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE: let the "
                "launcher set them (torchrun --master-addr/--master-port/--nnodes/"
                "--nproc-per-node, or export them to every node: srun --export=ALL, mpirun -x), "
                "and make sure no script overrides them per rank";
      break;
    }
    case Cause::kPortInUse:
      t->detail = absl::StrCat("the master could not listen at ", x.address, " (", Where(x),
                               "): ", Attempts(x, "bound"),
                               ", so another process holds the port (an earlier run still "
                               "alive, another job on the host)");
      absl::StrAppend(&t->detail, Waiting(x));
      t->fix = absl::StrCat(
          "find and stop the port's holder (ss -ltnp 'sport = :",
          x.address.substr(x.address.rfind(':') + 1),
          "' names it), or give every rank another free MASTER_PORT (torchrun --master-port; "
          "--rdzv-endpoint=localhost:0 --standalone picks a free one on one node)");
      break;
    case Cause::kRefused:
      t->detail = absl::StrCat("nothing listened at ", x.address, " (", Where(x),
                               "): ", Attempts(x, "tried"), Missing(x), Waiting(x));
      t->fix =
          "start the master (rank 0) and check that it listens at MASTER_ADDR:MASTER_PORT before "
          "the others time out (ss -ltn on its host); if it runs, MASTER_ADDR or MASTER_PORT "
          "names another host or port than the one it listens on";
      break;
    case Cause::kUnreachable:
      t->detail = absl::StrCat(
          "the master's address ", x.address, " (", Where(x), ") could not be reached: ",
          Attempts(x, x.err == EINPROGRESS ? "started connecting to" : "tried"),
          x.err == EINPROGRESS ? ", and no attempt was ever answered" : "", Missing(x), Waiting(x));
      t->fix =
          "check that MASTER_ADDR is the master's address on a network every node reaches (a "
          "firewall, a route, a hostname that resolves elsewhere): from a worker, nc -zv "
          "MASTER_ADDR MASTER_PORT";
      break;
    case Cause::kRanksMissing:
      t->detail = absl::StrCat(x.agents ? "--nnodes is " : "WORLD_SIZE is ", x.world_size,
                               " and only ", Who(x, x.started), " started: ", Who(x, x.missing),
                               " never came (no trace: never started, or its trace was not "
                               "collected)",
                               Waiting(x));
      t->fix =
          "start every rank of WORLD_SIZE (a launcher with fewer --nnodes or --nproc-per-node "
          "than WORLD_SIZE, a node that never joined or failed to start), or set WORLD_SIZE to "
          "the number of ranks launched; collect the traces of every host";
      break;
  }
  if (x.agents) return;  // the detail names the nodes; ranks there are none
  // Who did what.
  std::vector<int> named = f.ranks;
  if (!f.ranks.empty()) {
    const char* what = "";
    switch (x.cause) {
      case Cause::kSettingsDiffer:
        what = "a rendezvous setting differs from rank 0's";
        break;
      case Cause::kPortInUse:
        what = "could not listen at the master's port (EADDRINUSE)";
        break;
      case Cause::kRefused:
        what = "found nothing listening at the master's address";
        break;
      case Cause::kUnreachable:
        what = "could not reach the master's address";
        break;
      case Cause::kRanksMissing:
        what = "never started (no trace)";
        break;
    }
    t->groups.push_back({f.ranks, what});
  }
  std::vector<int> waiting;
  for (int r : x.waiting)
    if (std::find(named.begin(), named.end(), r) == named.end()) waiting.push_back(r);
  if (!waiting.empty()) t->groups.push_back({waiting, "waited in the rendezvous, no NCCL call"});
}

void WriteRendezvousJson(const RendezvousFacts& x, JsonWriter& w) {
  auto string_or_null = [&](bool known, const std::string& s) {
    if (known)
      w.String(s);
    else
      w.Null();
  };
  auto integer_or_null = [&](bool known, int64_t v) {
    if (known)
      w.Integer(v);
    else
      w.Null();
  };
  w.Key("cause").String(RendezvousCauseName(x.cause));
  w.Key("address");
  string_or_null(!x.address.empty(), x.address);
  w.Key("errno");
  string_or_null(x.err != 0, x.err != 0 ? ErrnoName(x.err) : "");
  w.Key("attempts").Integer(x.attempts).Key("span_s").Double(x.span_ns / 1e9);
  w.Key("failed").IntArray(x.failed);
  w.Key("settings").BeginArray();
  for (const auto& setting : x.settings) {
    w.BeginObject().Key("name").String(setting.name).Key("values").BeginArray();
    for (const auto& [value, ranks] : setting.values) {
      w.BeginObject().Key("value");
      string_or_null(!value.empty(), value);
      w.Key("ranks").IntArray(ranks).EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray();
  w.Key("world_size");
  integer_or_null(x.world_size > 0, x.world_size);
  w.Key("started").IntArray(x.started);
  w.Key("missing").IntArray(x.missing);
  w.Key("waiting").IntArray(x.waiting);
  w.Key("server").IntArray(x.server);
  w.Key("joined");
  integer_or_null(x.joined >= 0, x.joined);
  w.Key("agents").Bool(x.agents);
  w.Key("backend");
  string_or_null(x.agents, x.backend);
}

}  // namespace ncclwatch::decoder

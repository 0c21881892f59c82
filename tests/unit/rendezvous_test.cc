// analysis/rendezvous.h on evidence built by hand: each cause, what it
// names, and no finding for a job past its rendezvous. (The real cases,
// from real PyTorch under the shim, are in tests/real/real_torch_test.cc;
// an unreachable master cannot be produced there, and is here.)

#include "analysis/rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <cerrno>

#include "ncclwatch/trace_fields.h"
#include "report/finding_text.h"

namespace ncclwatch::decoder {
namespace {

namespace sa = fields::socket_activity;

SocketAddress At(const char* ip, int port) {
  SocketAddress a;
  a.family = AF_INET;
  inet_pton(AF_INET, ip, a.ip.data());
  a.port = port;
  return a;
}

RendezvousSocket Calls(uint32_t kind, SocketAddress addr, int err, uint64_t count,
                       bool deferred = false) {
  RendezvousSocket s;
  s.kind = kind;
  s.addr = addr;
  s.err = err;
  s.deferred = deferred;
  s.count = count;
  s.first_ns = 1'000'000'000;
  s.last_ns = 1'000'000'000 + static_cast<int64_t>(count) * 500'000'000;
  return s;
}

RendezvousEvidence Rank(int rank, const char* addr = "10.0.0.1", const char* port = "29500",
                        const char* world = "2") {
  RendezvousEvidence e;
  e.process = rank;
  e.rank = rank;
  e.traced_from_load = true;
  e.master_addr = addr;
  e.master_port = port;
  e.world_size = world;
  return e;
}

const RendezvousFacts& Facts(const Finding& f) { return std::get<RendezvousFacts>(f.facts); }

}  // namespace

TEST_CASE("rendezvous: connects the master's host never answers: unreachable, the rank named") {
  RendezvousEvidence r1 = Rank(1);
  // Started, and never an outcome: the poll timed out each time.
  r1.sockets.push_back(Calls(sa::kConnect, At("10.0.0.1", 29500), EINPROGRESS, 7));
  const auto f = RendezvousFinding({r1});
  REQUIRE(f.has_value());
  CHECK(f->kind == FindingKind::kRendezvousFailure);
  CHECK(f->phase == HangPhase::kStartup);
  CHECK(f->ranks == std::vector<int>{1});
  CHECK(Facts(*f).cause == RendezvousFacts::Cause::kUnreachable);
  CHECK(Facts(*f).address == "10.0.0.1:29500");
  CHECK(Facts(*f).attempts == 7);
  CHECK(Facts(*f).missing == std::vector<int>{0});  // the master left no trace here
  const FindingText t = RenderFinding(*f, NoCallSites());
  CHECK(t.detail.find("10.0.0.1:29500") != std::string::npos);
  CHECK(t.detail.find("no attempt was ever answered") != std::string::npos);
  CHECK(t.detail.find("rank 0 of WORLD_SIZE 2 left no trace") != std::string::npos);
}

TEST_CASE("rendezvous: EHOSTUNREACH is unreachable, ECONNREFUSED is refused") {
  RendezvousEvidence r1 = Rank(1);
  r1.sockets.push_back(Calls(sa::kConnect, At("10.0.0.1", 29500), EHOSTUNREACH, 3));
  auto f = RendezvousFinding({r1});
  REQUIRE(f.has_value());
  CHECK(Facts(*f).cause == RendezvousFacts::Cause::kUnreachable);
  CHECK(Facts(*f).err == EHOSTUNREACH);

  RendezvousEvidence r0 = Rank(0), r2 = Rank(1);
  r0.ended_ok = false;  // it was killed
  r2.sockets.push_back(Calls(sa::kConnect, At("10.0.0.1", 29500), EINPROGRESS, 4));
  r2.sockets.push_back(Calls(sa::kConnect, At("10.0.0.1", 29500), ECONNREFUSED, 4, true));
  f = RendezvousFinding({r0, r2});
  REQUIRE(f.has_value());
  CHECK(Facts(*f).cause == RendezvousFacts::Cause::kRefused);
  CHECK(f->ranks == std::vector<int>{1});
  CHECK(Facts(*f).attempts == 4);
  CHECK(Facts(*f).span_ns == 2'000'000'000);
  CHECK(Facts(*f).waiting == std::vector<int>{0, 1});
}

TEST_CASE("rendezvous: refusals before a connect that succeeded are no failure") {
  RendezvousEvidence r0 = Rank(0), r1 = Rank(1);
  r1.sockets.push_back(Calls(sa::kConnect, At("10.0.0.1", 29500), ECONNREFUSED, 2));
  r1.sockets.push_back(Calls(sa::kConnect, At("10.0.0.1", 29500), 0, 1));
  CHECK_FALSE(RendezvousFinding({r0, r1}).has_value());  // every rank there, all connected
}

TEST_CASE("rendezvous: WORLD_SIZE and MASTER_ADDR disagree: every differing setting named") {
  RendezvousEvidence r0 = Rank(0, "10.0.0.1", "29500", "4");
  RendezvousEvidence r1 = Rank(1, "10.0.0.2", "29500", "4");
  RendezvousEvidence r2 = Rank(2, "10.0.0.1", "29500", "2");
  RendezvousEvidence r3 = Rank(3, "10.0.0.1", "29500", "4");
  const auto f = RendezvousFinding({r0, r1, r2, r3});
  REQUIRE(f.has_value());
  CHECK(Facts(*f).cause == RendezvousFacts::Cause::kSettingsDiffer);
  CHECK(f->ranks == std::vector<int>{1, 2});
  REQUIRE(Facts(*f).settings.size() == 2);
  CHECK(Facts(*f).settings[0].name == "MASTER_ADDR");
  CHECK(Facts(*f).settings[0].values[0] ==
        std::pair<std::string, std::vector<int>>{"10.0.0.1", {0, 2, 3}});
  CHECK(Facts(*f).settings[0].values[1] ==
        std::pair<std::string, std::vector<int>>{"10.0.0.2", {1}});
  CHECK(Facts(*f).settings[1].name == "WORLD_SIZE");
  CHECK(Facts(*f).settings[1].values[1] == std::pair<std::string, std::vector<int>>{"2", {2}});
}

TEST_CASE("rendezvous: a job past it, or that ended well, is not the rendezvous's") {
  RendezvousEvidence r0 = Rank(0), r1 = Rank(1, "10.0.0.1", "29501");
  r0.made_comm = true;  // a communicator formed: the other analyses judge it
  CHECK_FALSE(RendezvousFinding({r0, r1}).has_value());
  r0.made_comm = false;
  r0.ended_ok = r1.ended_ok = true;  // a program that loaded NCCL and did not need it
  CHECK_FALSE(RendezvousFinding({r0, r1}).has_value());
  CHECK_FALSE(RendezvousFinding({}).has_value());
}

namespace ncclwatch::decoder {

TEST_CASE("rendezvous: live, only what cannot heal is a finding") {
  RendezvousEvidence r1 = Rank(1);
  r1.live = true;  // still retrying: its master may not have started yet
  r1.sockets.push_back(Calls(sa::kConnect, At("10.0.0.1", 29500), ECONNREFUSED, 3));
  CHECK_FALSE(RendezvousFinding({r1}).has_value());
  RendezvousEvidence r0 = Rank(0, "10.0.0.1", "29501");
  r0.live = true;
  const auto f = RendezvousFinding({r0, r1});  // the ports differ: that does not heal
  REQUIRE(f.has_value());
  CHECK(std::get<RendezvousFacts>(f->facts).cause == RendezvousFacts::Cause::kSettingsDiffer);
  CHECK(f->ranks == std::vector<int>{1});
}

}  // namespace ncclwatch::decoder

// torchrun's agents (static rendezvous): two nodes started with different
// --master-port never meet. Nodes are named in the facts, never as ranks.
TEST_CASE("rendezvous: torchrun's agents disagree on --master-port: their nodes named") {
  RendezvousEvidence n0 = Rank(0, "127.0.0.1", "29611", "2");
  RendezvousEvidence n1 = Rank(1, "127.0.0.1", "29612", "2");
  for (RendezvousEvidence* n : {&n0, &n1}) {
    n->agent = true;
    n->backend = "static";
  }
  n0.sockets.push_back(Calls(sa::kListen, At("0.0.0.0", 29611), 0, 1));
  n1.sockets.push_back(Calls(sa::kConnect, At("127.0.0.1", 29612), ECONNREFUSED, 11));
  const auto f = RendezvousFinding({n0, n1});
  REQUIRE(f.has_value());
  const RendezvousFacts& x = Facts(*f);
  CHECK(x.cause == RendezvousFacts::Cause::kSettingsDiffer);
  CHECK(x.agents);
  CHECK(x.backend == "static");
  CHECK(f->ranks.empty());
  REQUIRE(x.settings.size() == 1);
  CHECK(x.settings[0].name == "--master-port");
  CHECK(x.settings[0].values[0] == std::pair<std::string, std::vector<int>>{"29611", {0}});
  CHECK(x.settings[0].values[1] == std::pair<std::string, std::vector<int>>{"29612", {1}});
  CHECK(x.failed == std::vector<int>{1});
  CHECK(x.attempts == 11);
  const FindingText t = RenderFinding(*f, NoCallSites());
  INFO(t.detail);
  CHECK(t.detail.find("--master-port 29611 on the agent of node 0, 29612 on the agent of node 1") !=
        std::string::npos);
  CHECK(t.detail.find("rank") == std::string::npos);
}

TEST_CASE("rendezvous: torchrun's agents, one node never came: named by node") {
  RendezvousEvidence n0 = Rank(0, "127.0.0.1", "29611", "3");
  RendezvousEvidence n2 = Rank(2, "127.0.0.1", "29611", "3");
  for (RendezvousEvidence* n : {&n0, &n2}) {
    n->agent = true;
    n->backend = "static";
  }
  const auto f = RendezvousFinding({n0, n2});
  REQUIRE(f.has_value());
  const RendezvousFacts& x = Facts(*f);
  CHECK(x.cause == RendezvousFacts::Cause::kRanksMissing);
  CHECK(x.missing == std::vector<int>{1});
  CHECK(f->ranks.empty());
  const FindingText t = RenderFinding(*f, NoCallSites());
  CHECK(t.detail.find("--nnodes is 3 and only the agents of nodes 0,2 started: the agent of node "
                      "1 never came") == 0);
}

}  // namespace ncclwatch::decoder

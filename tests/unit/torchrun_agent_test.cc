// model/torchrun_agent.h: where torchrun's agents meet, read from command
// lines as torchrun 2.x writes them and as `ps` shows them (torchrun's
// script run by its interpreter, python -m torch.distributed.run), with the
// defaults and PET_ variables torch/distributed/run.py applies.

#include "model/torchrun_agent.h"

#include <catch2/catch.hpp>

namespace ncclwatch::decoder {
namespace {

std::optional<TorchrunAgent> Agent(const std::string& command_line,
                                   std::map<std::string, std::string> env = {}) {
  InventoryInfo inv;
  inv.command_line = command_line;
  inv.env = std::move(env);
  return TorchrunAgentOf(inv);
}

}  // namespace

TEST_CASE("torchrun agent: static rendezvous, options in both spellings") {
  const auto a = Agent(
      "/usr/bin/python3.11 /venv/bin/torchrun --nnodes 2 --node_rank=1 --nproc-per-node 8 "
      "--master-addr 10.0.0.1 --master_port=29611 train.py --lr 0.1 --master-port 1");
  REQUIRE(a.has_value());
  CHECK(a->backend == "static");
  CHECK_FALSE(a->local);
  CHECK(a->host == "10.0.0.1");
  CHECK(a->port == "29611");  // the script's own --master-port is not torchrun's
  CHECK(a->nnodes == "2");
  CHECK(a->min_nodes == 2);
  CHECK(a->max_nodes == 2);
  CHECK(a->node_rank == 1);
}

TEST_CASE("torchrun agent: defaults, and PET_ variables where no option is given") {
  const auto a = Agent("python -m torch.distributed.run --nnodes=2 train.py");
  REQUIRE(a.has_value());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == "29500");
  CHECK(a->node_rank == 0);
  const auto b = Agent("torchrun train.py",
                       {{"PET_NNODES", "4"}, {"PET_NODE_RANK", "3"}, {"PET_MASTER_PORT", "1234"}});
  REQUIRE(b.has_value());
  CHECK(b->nnodes == "4");
  CHECK(b->node_rank == 3);
  CHECK(b->port == "1234");
  // An option beats its variable.
  const auto c = Agent("torchrun --node-rank 2 --nnodes 4 x.py", {{"PET_NODE_RANK", "3"}});
  REQUIRE(c.has_value());
  CHECK(c->node_rank == 2);
}

TEST_CASE("torchrun agent: c10d endpoints, elastic node counts") {
  const auto a = Agent(
      "torchrun --nnodes 1:4 --rdzv-backend c10d --rdzv-endpoint node7:29401 --rdzv-id job5 "
      "--node-rank 3 x.py");
  REQUIRE(a.has_value());
  CHECK(a->backend == "c10d");
  CHECK(a->host == "node7");
  CHECK(a->port == "29401");
  CHECK(a->min_nodes == 1);
  CHECK(a->max_nodes == 4);
  CHECK(a->node_rank == -1);  // ignored by torchrun for c10d
  CHECK(a->run_id == "job5");
  const auto b = Agent("torchrun --nnodes 2 --rdzv_backend=c10d --rdzv_endpoint=[fd00::1] x.py");
  REQUIRE(b.has_value());
  CHECK(b->host == "fd00::1");
  CHECK(b->port == "29400");  // c10d's default
  const auto c = Agent("torchrun --nnodes 2 --rdzv-backend c10d --rdzv-endpoint [fd00::1]:5 x.py");
  REQUIRE(c.has_value());
  CHECK(c->host == "fd00::1");
  CHECK(c->port == "5");
}

TEST_CASE("torchrun agent: one node with no port, or --standalone, meets no one") {
  const auto a = Agent("torchrun --nproc-per-node 2 train.py");
  REQUIRE(a.has_value());
  CHECK(a->local);
  const auto b = Agent("torchrun --standalone --nnodes 1 --nproc-per-node 2 train.py");
  REQUIRE(b.has_value());
  CHECK(b->local);
  // One node with a port given: a static rendezvous at it.
  const auto c = Agent("torchrun --nproc-per-node 2 --master-port 29555 train.py");
  REQUIRE(c.has_value());
  CHECK_FALSE(c->local);
  CHECK(c->port == "29555");
}

TEST_CASE("torchrun agent: a process that is no agent, or an empty command line") {
  CHECK_FALSE(Agent("").has_value());
  CHECK_FALSE(Agent("python train.py --nnodes 2").has_value());
  CHECK_FALSE(Agent("python -m torch.distributed.elastic.foo").has_value());
  // A rank's script that merely mentions torchrun further on.
  CHECK_FALSE(Agent("python a b c d /bin/torchrun").has_value());
}

}  // namespace ncclwatch::decoder

// Communicator lifecycles, bootstrap failures and API coverage of the
// simulated NCCL, in real processes.

#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "support/job_launcher.h"
#include "support/netns.h"

namespace {

jobs::JobResult Run(int nranks, std::vector<std::string> args, std::vector<std::string> env = {},
                    double timeout = 120) {
  jobs::JobSpec spec;
  spec.nranks = nranks;
  spec.argv = {jobs::BinDir() + "/" + args[0]};
  spec.argv.insert(spec.argv.end(), args.begin() + 1, args.end());
  spec.env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir(), "NCCL_DEBUG=WARN"};
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.timeout_s = timeout;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  return r;
}

void RequirePassed(const jobs::JobResult& r, const std::string& mode) {
  REQUIRE_FALSE(r.timed_out);
  for (const jobs::RankResult& rr : r.ranks) {
    INFO("rank " << rr.rank << ":\n" << rr.output);
    CHECK(rr.exit_code == 0);
    CHECK(rr.output.find("FAIL") == std::string::npos);
  }
  CHECK(r.ranks[0].output.find("lifecycle_check: " + mode + " passed") != std::string::npos);
}

bool Has(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

// A TCP port on 127.0.0.1 that nothing listens on.
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("one process drives four GPUs with ncclCommInitAll", "[sim][lifecycle]") {
  RequirePassed(Run(1, {"lifecycle_check", "initall"}), "initall");
}

TEST_CASE("the survivors shrink away a rank that left", "[sim][lifecycle]") {
  jobs::JobResult r = Run(4, {"lifecycle_check", "shrink"});
  REQUIRE_FALSE(r.timed_out);
  for (int i = 0; i < 3; ++i) {
    INFO(r.ranks[i].output);
    CHECK(r.ranks[i].exit_code == 0);
    CHECK(Has(r.ranks[i].output, "ok AllReduce on the shrunk communicator"));
  }
  CHECK(Has(r.ranks[3].output, "rank 3 leaves the job"));
}

TEST_CASE("ncclCommAbort releases a collective that can never finish", "[sim][lifecycle]") {
  RequirePassed(Run(2, {"lifecycle_check", "abort"}), "abort");
}

TEST_CASE("ncclCommRevoke stops in-flight work and refuses new work", "[sim][lifecycle]") {
  RequirePassed(Run(2, {"lifecycle_check", "revoke"}), "revoke");
}

TEST_CASE("ncclCommInitRankScalable with one unique id per two ranks", "[sim][lifecycle]") {
  RequirePassed(Run(6, {"lifecycle_check", "scalable"}), "scalable");
}

TEST_CASE("the rest of the NCCL API answers sensibly", "[sim][lifecycle]") {
  RequirePassed(Run(2, {"lifecycle_check", "api"}), "api");
}

TEST_CASE("a bootstrap root nobody listens on: refused, retried, ncclRemoteError",
          "[sim][bootstrap]") {
  // Rank 1 of 2 alone, told the root is on a closed port.
  const std::string where = "127.0.0.1:" + std::to_string(ClosedPort());
  jobs::JobSpec spec;
  spec.argv = {jobs::BinDir() + "/train_loop", "--steps", "1"};
  spec.env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir(),
              "NCCL_DEBUG=INFO",
              "NCCL_COMM_ID=" + where,
              "NCCL_SOCKET_RETRY_CNT=3",
              "NCCL_SOCKET_RETRY_SLEEP_MSEC=10",
              "RANK=1",
              "WORLD_SIZE=2",
              "JOBRUN_RENDEZVOUS"};
  spec.timeout_s = 60;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  const std::string& out = r.ranks[0].output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 3);
  CHECK(Has(out, "socketStartConnect: connect to 127.0.0.1<"));
  CHECK(Has(out, "returned Connection refused, retrying (1/3) after sleep for 10 msec"));
  CHECK(Has(out, "NCCL WARN socketStartConnect: connect to 127.0.0.1<"));
  CHECK(Has(out, "> returned Connection refused, exceeded error retry count after 4 attempts"));
  CHECK(Has(out, "remote process exited or there was a network error (6)"));
}

TEST_CASE("a root address on the subnet but not on this host: bind fails, ncclSystemError",
          "[sim][bootstrap]") {
  // MASTER_ADDR pointing at another machine of the subnet, on the rank that
  // must create the root there. The bind fails locally; nothing is sent.
  jobs::NetNamespace ns("bind");
  ns.AddInterface("eth0", "10.220.0.5/24");
  REQUIRE(ns.ok());
  jobs::JobSpec spec;
  spec.argv = {jobs::BinDir() + "/train_loop", "--steps", "1"};
  spec.env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir(), "NCCL_DEBUG=WARN",
              "NCCL_COMM_ID=10.220.0.99:29500"};
  spec.ranks[0].netns = ns.name();
  spec.timeout_s = 60;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  const std::string& out = r.ranks[0].output;
  INFO(out);
  CHECK(r.ranks[0].exit_code == 3);
  CHECK(Has(out, "NCCL WARN Call to bind failed: Cannot assign requested address"));
  CHECK(Has(out, "ncclCommInitRank(&comm, world, id, rank) failed: unhandled system error"));
}

TEST_CASE("every entry point of nccl.h is exported, with its pnccl twin", "[sim][api]") {
  std::ifstream header(NCCL_HEADER_PATH);
  REQUIRE(header.good());
  std::string text((std::istreambuf_iterator<char>(header)), std::istreambuf_iterator<char>());
  std::set<std::string> names;
  std::regex decl(R"((?:ncclResult_t|const char\*|void)\s+(nccl[A-Za-z]+)\s*\()");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator();
       ++it) {
    names.insert((*it)[1]);
  }
  REQUIRE(names.size() >= 40);
  void* lib = dlopen((jobs::SimLibDir() + "/libnccl.so.2").c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  for (const std::string& n : names) {
    INFO(n);
    CHECK(dlsym(lib, n.c_str()) != nullptr);
    CHECK(dlsym(lib, ("p" + n).c_str()) != nullptr);
  }
}

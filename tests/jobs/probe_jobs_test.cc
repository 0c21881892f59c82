// `ncclwatch probe`: the built-in minimal job, run for real on the simulator
// (the workers find its libnccl.so.2 through LD_LIBRARY_PATH, as they would
// find a cluster's NCCL), passing with 2 and 8 ranks and failing, diagnosed,
// where a real job would fail: a bad NCCL_SOCKET_IFNAME, a container-sized
// /dev/shm (a private mount namespace with a 16 MiB tmpfs, as root). Two
// probes on this machine play two nodes meeting at a master address.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "support/sim_release.h"
#include "support/traced_job.h"

namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;
};

Outcome Probe(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
              const std::string& shm_size = "") {
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath(), "probe"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = jobs::LauncherEnv();
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.shm_size = shm_size;
  spec.timeout_s = 120;
  jobs::JobResult r = jobs::RunJob(spec);
  Outcome o;
  if (r.ranks.empty()) return o;
  o.exit_code = r.ranks[0].exit_code;
  o.output = r.ranks[0].output;
  return o;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A port for the master to listen on: one below the kernel's ephemeral
// range (32768 and up by default), where the sockets that tests running
// beside this one open without a port (the simulator's bootstrap, their
// connections) never land between this check and the master's bind.
int FreePort() {
  std::random_device seed;
  std::mt19937 pick(seed());
  std::uniform_int_distribution<int> port(20000, 32000);
  for (int tries = 0; tries < 1000; ++tries) {
    const int p = port(pick);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(p));
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (free) return p;
  }
  FAIL("no free port between 20000 and 32000");
  return 0;
}

}  // namespace

TEST_CASE("probe: 2 ranks form NCCL, the data is right, the inventory is read back", "[probe]") {
  jobs::TempDir dir;
  const Outcome o = Probe({"--dir", dir.path() + "/p", "--bytes", "1048576"});
  INFO(o.output);
  CHECK(o.exit_code == 0);
  CHECK(Has(o.output, "ncclwatch probe: 2 processes on this node"));
  CHECK(Has(o.output, "rank 0  GPU 0  ok: AllReduce, AllGather, Send/Recv ring right"));
  CHECK(Has(o.output, "rank 1  GPU 1  ok:"));
  CHECK(Has(o.output, "RESULT: OK: NCCL formed across 2 ranks"));
  CHECK(Has(o.output, "bus bandwidth"));
  // The inventory comes from the shim's records: the simulator's NCCL.
  CHECK(Has(o.output,
            "NCCL: " + jobs::SimNcclVersionString() + " " + jobs::SimLibDir() + "/libnccl.so.2"));
  CHECK(Has(o.output, "/dev/shm: "));
  CHECK(Has(o.output, "interfaces: lo 127.0.0.1/8"));
}

TEST_CASE("probe: 8 ranks", "[probe]") {
  jobs::TempDir dir;
  const Outcome o = Probe({"-n", "8", "--dir", dir.path() + "/p", "--bytes", "262144"});
  INFO(o.output);
  CHECK(o.exit_code == 0);
  CHECK(Has(o.output, "RESULT: OK: NCCL formed across 8 ranks"));
  CHECK(Has(o.output, "rank 7  GPU 7  ok:"));
}

TEST_CASE("probe: a bad NCCL_SOCKET_IFNAME fails, diagnosed, naming the interface", "[probe]") {
  jobs::TempDir dir;
  const Outcome o =
      Probe({"--dir", dir.path() + "/p", "--timeout", "30"}, {"NCCL_SOCKET_IFNAME=nosuchif"});
  INFO(o.output);
  CHECK(o.exit_code == 1);
  CHECK(Has(o.output, "env NCCL_SOCKET_IFNAME: nosuchif"));
  CHECK(Has(o.output, "RESULT: FAILED: the diagnosis of its traces:"));
  CHECK(Has(o.output, "PROBLEM: init_failure (network)"));
  CHECK(Has(o.output, "NCCL_SOCKET_IFNAME=nosuchif matches no usable interface"));
  CHECK(Has(o.output, "Fix: set NCCL_SOCKET_IFNAME on every rank"));
}

TEST_CASE("probe: a /dev/shm too small fails, diagnosed, naming /dev/shm", "[probe]") {
  jobs::TempDir dir;
  const Outcome o = Probe({"--dir", dir.path() + "/p", "--timeout", "30"}, {}, "16m");
  INFO(o.output);
  CHECK(o.exit_code == 1);
  CHECK(Has(o.output, "/dev/shm: 16.0 MiB"));
  CHECK(Has(o.output, "PROBLEM: init_failure (shm"));
  CHECK(Has(o.output, "could not make NCCL's shared-memory segment in /dev/shm"));
  CHECK(Has(o.output, "--shm-size"));
}

TEST_CASE("probe --nccl: a NCCL the loader would not find, preloaded behind the shim", "[probe]") {
  jobs::TempDir dir;
  const std::string nccl = jobs::SimLibDir() + "/libnccl.so.2";
  const Outcome o =
      Probe({"--nccl", nccl, "--dir", dir.path() + "/p", "--bytes", "65536"}, {"LD_LIBRARY_PATH"});
  INFO(o.output);
  CHECK(o.exit_code == 0);
  CHECK(Has(o.output, "NCCL: " + jobs::SimNcclVersionString() + " " + nccl));
  CHECK(Has(o.output, "RESULT: OK"));
}

TEST_CASE(
    "probe with the real NCCL the loader finds: on this GPU-less machine, the missing "
    "driver named",
    "[probe]") {
  jobs::TempDir dir;
  const Outcome o = Probe({"--dir", dir.path() + "/p", "--bytes", "65536", "--timeout", "60"},
                          {"LD_LIBRARY_PATH"});
  INFO(o.output);
  if (o.exit_code == 0) {
    CHECK(Has(o.output, "RESULT: OK"));  // a machine with a GPU and its driver
    return;
  }
  CHECK(o.exit_code == 1);
  CHECK(Has(o.output, "CUDA driver version is insufficient for CUDA runtime version"));
  // The runtime's words say "insufficient", but no driver is loaded at all:
  // that is no version skew (issue 20).
  CHECK(Has(o.output, "PROBLEM: init_failure (cuda)"));
  CHECK(Has(o.output, "NCCL initialisation failed: no CUDA driver"));
  CHECK(Has(o.output, "no CUDA driver is loaded in the process"));
  CHECK_FALSE(Has(o.output, "(version)"));
  CHECK_FALSE(Has(o.output, "NCCL: " + jobs::SimNcclVersionString() + " " +
                                jobs::SimLibDir()));  // not the simulator's
}

TEST_CASE("probe: two nodes meet at the master, compare inventories, flag what differs",
          "[probe]") {
  jobs::TempDir dir;
  const std::string master = "127.0.0.1:" + std::to_string(FreePort());
  const std::string common =
      " probe -n 2 --nnodes 2 --master " + master + " --bytes 65536 --timeout 60";
  // Node 1 sees the machine's GPUs 2 and 3 as its 0 and 1, and sets NCCL_DEBUG_SUBSYS
  // where node 0 does not.
  const std::string script = "CUDA_VISIBLE_DEVICES=2,3 NCCL_DEBUG_SUBSYS=INIT \"$0\"" + common +
                             " --node-rank 1 --dir \"$1/n1\"" + " > \"$1/n1.out\" 2>&1 & \"$0\"" +
                             common + " --node-rank 0 --dir \"$1/n0\"; r0=$?; wait $!; " +
                             "r1=$?; echo; echo NODE1; cat \"$1/n1.out\"; echo \"exit $r0 $r1\"";
  jobs::JobSpec spec;
  spec.argv = {"sh", "-c", script, jobs::NcclwatchPath(), dir.path()};
  spec.env = jobs::LauncherEnv();
  spec.timeout_s = 120;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  const std::string& out = r.ranks[0].output;
  INFO(out);
  CHECK(Has(out, "exit 0 0"));
  CHECK(Has(out, "2 processes on node 0 of 2 (4 ranks)"));
  CHECK(Has(out, "RESULT: OK: NCCL formed across 4 ranks"));
  CHECK(Has(out, "rank 2  GPU 0  ok:"));  // node 1's first rank
  CHECK(Has(out, "Inventory (from the shim's records), 2 nodes:"));
  CHECK(Has(out, "env NCCL_DEBUG_SUBSYS: (unset)   <- DIFFERS"));  // node 0's view
  CHECK(Has(out, "env NCCL_DEBUG_SUBSYS: INIT   <- DIFFERS"));     // node 1's view
  CHECK(Has(out, "1 setting(s) differ between the nodes"));
}

// The probe writes files of fixed names in its folder (each worker's
// output, the unique id): a folder that someone else could write to, or
// that is not the caller's, is refused before anything is written, and its
// mode is left alone (the probe used to chmod it to 0700, /tmp included).
TEST_CASE("probe --dir: a folder others may write to, or another user's, is refused",
          "[probe][security]") {
  namespace fs = std::filesystem;
  jobs::TempDir dir;
  const std::string shared = dir.path() + "/shared";
  fs::create_directory(shared);
  chmod(shared.c_str(), 01777);
  const std::string victim = dir.path() + "/precious";
  std::ofstream(victim) << "precious\n";
  fs::create_symlink(victim, shared + "/probe-rank-0.log");
  const std::string theirs = dir.path() + "/theirs";
  fs::create_directory(theirs);
  chmod(theirs.c_str(), 0700);
  REQUIRE(chown(theirs.c_str(), 65534, 65534) == 0);
  fs::create_directory(dir.path() + "/real");
  fs::create_directory_symlink(dir.path() + "/real", dir.path() + "/link");
  struct Refused {
    std::string dir, why;
  };
  for (const Refused& r : {Refused{shared, " may be written by others (mode 1777)"},
                           Refused{theirs, " belongs to another user"},
                           Refused{dir.path() + "/link", " is a symbolic link"}}) {
    const Outcome o = Probe({"--dir", r.dir, "--timeout", "30"});
    INFO(o.output);
    CHECK(o.exit_code == 2);
    CHECK(o.output == "ncclwatch: --dir " + r.dir + r.why + "; name " +
                          (r.why == " is a symbolic link" ? "the folder itself"
                                                          : "a folder of your own, or a new one") +
                          "\n");
  }
  std::ifstream in(victim);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "precious\n");
  struct stat st;
  REQUIRE(stat(shared.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 01777);
  CHECK(fs::is_empty(dir.path() + "/real"));
  // A new folder is made for the caller alone.
  const Outcome o = Probe({"--dir", shared + "/mine/", "--bytes", "65536"});
  INFO(o.output);
  CHECK(o.exit_code == 0);
  REQUIRE(stat((shared + "/mine").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

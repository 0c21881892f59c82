// The machine's view of a traced process: its state from /proc/PID/stat,
// and a pid reused by a later process is not the traced one. Read from a
// made-up /proc in a temporary folder.

#include "model/process_liveness.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using ncclwatch::decoder::ObserveProcess;
using ncclwatch::decoder::ProcessObservation;
namespace fs = std::filesystem;

constexpr uint64_t kBoot = 1'700'000'000;  // btime, seconds
constexpr uint64_t kS = 1'000'000'000;

struct FakeProc {
  FakeProc() {
    char tmpl[] = "/tmp/ncclwatch-proc-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    root = tmpl;
    std::ofstream(root + "/stat") << "cpu  1 2 3 4\nbtime " << kBoot << "\nprocesses 7\n";
  }
  ~FakeProc() { fs::remove_all(root); }
  // Process `pid` in `state`, started `after_boot_s` seconds after boot.
  void Add(uint32_t pid, char state, uint64_t after_boot_s) {
    fs::create_directories(root + "/" + std::to_string(pid));
    const long hz = sysconf(_SC_CLK_TCK);
    std::ofstream(root + "/" + std::to_string(pid) + "/stat")
        << pid << " (python3 (a) b) " << state << " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 "
        << after_boot_s * hz << " 100 200 300\n";
  }
  std::string root;
};

}  // namespace

TEST_CASE("liveness: a traced process's state, and pid reuse", "[liveness]") {
  FakeProc proc;
  const uint64_t created = (kBoot + 100) * kS;  // the trace was made 100 s after boot
  proc.Add(10, 'T', 90);
  proc.Add(11, 'S', 90);
  proc.Add(12, 'R', 500);  // started after the trace was made: another process
  proc.Add(13, 'Z', 90);
  CHECK(ObserveProcess(10, created, proc.root).state == ProcessObservation::State::kStopped);
  CHECK(ObserveProcess(10, created, proc.root).letter == 'T');
  CHECK(ObserveProcess(11, created, proc.root).state == ProcessObservation::State::kRunning);
  CHECK(ObserveProcess(12, created, proc.root).state == ProcessObservation::State::kGone);
  CHECK(ObserveProcess(13, created, proc.root).state == ProcessObservation::State::kZombie);
  CHECK(ObserveProcess(14, created, proc.root).state == ProcessObservation::State::kGone);
}

TEST_CASE("liveness: the observation looks only at this host's processes", "[liveness]") {
  FakeProc proc;
  proc.Add(10, 'T', 90);
  const uint64_t created = (kBoot + 100) * kS;
  const auto obs =
      ncclwatch::decoder::ObserveLiveness({{"elsewhere.invalid", 10, created}}, proc.root);
  CHECK(obs.now_ns > 0);
  CHECK(obs.Find({"elsewhere.invalid", 10, created}) == nullptr);
}

namespace {

// Pid namespaces in the made-up /proc: each a file, its inode the
// namespace's; a process is in one when its ns/pid is a hard link to it.
struct FakeNamespaces {
  explicit FakeNamespaces(FakeProc* fake) : proc(*fake) {
    fs::create_directories(proc.root + "/namespaces");
    fs::create_directories(proc.root + "/self/ns");
    ours = Make("ours");
    REQUIRE(link((proc.root + "/namespaces/ours").c_str(), (proc.root + "/self/ns/pid").c_str()) ==
            0);
  }
  uint64_t Make(const std::string& name) {
    const std::string path = proc.root + "/namespaces/" + name;
    std::ofstream(path) << name;
    struct stat st;
    REQUIRE(stat(path.c_str(), &st) == 0);
    return st.st_ino;
  }
  // Process `pid` here (added with FakeProc::Add) is in namespace `name`,
  // where its pid is `inner`.
  void Put(uint32_t pid, const std::string& name, uint32_t inner) {
    const std::string dir = proc.root + "/" + std::to_string(pid);
    fs::create_directories(dir + "/ns");
    REQUIRE(link((proc.root + "/namespaces/" + name).c_str(), (dir + "/ns/pid").c_str()) == 0);
    std::ofstream(dir + "/status") << "Name:\tpython3\nNSpid:\t" << pid
                                   << (inner != pid ? "\t" + std::to_string(inner) : "") << "\n";
  }
  FakeProc& proc;
  uint64_t ours = 0;
};

std::string ThisHost() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

}  // namespace

// A rank that was pid 1 in its container, seen from the host: this host's
// pid 1 is another, older process, and must not make the rank look alive.
TEST_CASE("liveness: a pid counts only in the pid namespace the trace names", "[liveness]") {
  using ncclwatch::decoder::ObserveLiveness;
  using ncclwatch::decoder::TracedProcessId;
  FakeProc proc;
  FakeNamespaces ns(&proc);
  const uint64_t container = ns.Make("container");
  const uint64_t created = (kBoot + 100) * kS;
  proc.Add(1, 'S', 0);  // this host's init, running since boot
  ns.Put(1, "ours", 1);
  proc.Add(4711, 'T', 90);  // a live rank: pid 7 in the container, stopped
  ns.Put(4711, "container", 7);
  const std::string host = ThisHost();
  // (Created a millisecond apart: the identity is host, pid and creation time.)
  const TracedProcessId killed{host, 1, created, container};  // pid 1 in the container: killed
  const TracedProcessId stopped{host, 7, created, container};
  const TracedProcessId init{host, 1, created + 1'000'000, ns.ours};
  const TracedProcessId older_shim{host, 1, created + 2'000'000, 0};
  const auto obs = ObserveLiveness({killed, stopped, init, older_shim}, proc.root);
  // Found by its pid in its own namespace: the host's pid 4711.
  REQUIRE(obs.Find(stopped) != nullptr);
  CHECK(obs.Find(stopped)->state == ProcessObservation::State::kStopped);
  // Not in the container any more: never this host's pid 1; not looked at
  // (a sibling container's processes are not in this /proc either), so its
  // heartbeat decides.
  CHECK(obs.Find(killed) == nullptr);
  // In our own namespace a pid is looked up directly.
  REQUIRE(obs.Find(init) != nullptr);
  CHECK(obs.Find(init)->state == ProcessObservation::State::kRunning);
  // A trace that names no namespace is not looked at: its heartbeat decides.
  CHECK(obs.Find(older_shim) == nullptr);
}

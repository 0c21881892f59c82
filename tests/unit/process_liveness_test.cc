// The machine's view of a traced process: its state from /proc/PID/stat,
// and a pid reused by a later process is not the traced one. Read from a
// made-up /proc in a temporary folder.

#include "model/process_liveness.h"

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

// `ncclwatch explain`'s reading of logs, on the line formats NCCL 2.7 to
// 2.30 print (debug.cc of each version: "host:pid:tid [dev] NCCL INFO",
// "host:pid:tid [dev] file:line NCCL WARN" after a blank line, a timestamp
// before WARN lines since 2.23, "NCCL version" without a prefix since 2.19),
// behind each launcher's prefixes, and on the error output that comes with
// them (PyTorch's watchdog, torchrun's and mpirun's exit reports, dmesg).
// Real logs from real NCCL and the simulator are tested end to end in
// tests/jobs/init_forensics_test.cc; these are the formats this machine
// cannot produce (older NCCL, InfiniBand, Xid, PyTorch).

#include "logs/nccl_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/log_diagnosis.h"
#include "knowledge/message_catalogue.h"
#include "knowledge/nccl_semantics.h"
#include "report/finding_text.h"
#include "support/explained_logs.h"
#include "support/traced_job.h"

using ncclwatch::decoder::Area;

namespace {

using ncclwatch::decoder::DiagnoseLogs;
using ncclwatch::decoder::ErrnoName;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::FindingKind;
using ncclwatch::decoder::FindingRole;
using ncclwatch::decoder::InitFailureFacts;
using ncclwatch::decoder::LogDiagnosis;
using ncclwatch::decoder::LogFacts;
using ncclwatch::decoder::MismatchField;
using ncclwatch::decoder::NcclLog;
using ncclwatch::decoder::SignalName;

// The finding in words, as the reports render it.
ncclwatch::decoder::FindingText Text(const Finding& f) {
  return ncclwatch::decoder::RenderFinding(f, ncclwatch::decoder::NoCallSites());
}

using Logs = jobs::ExplainedLogs;

const InitFailureFacts& Init(const Finding& f) {
  const auto* x = std::get_if<InitFailureFacts>(&f.facts);
  REQUIRE(x != nullptr);
  return *x;
}

const LogFacts& Log(const Finding& f) {
  const auto* x = std::get_if<LogFacts>(&f.facts);
  REQUIRE(x != nullptr);
  return *x;
}

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("NCCL 2.7: a refused bootstrap connection, the rank found by elimination", "[logs]") {
  Logs l;
  l.File(
      "node1:1234:1234 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.1<0>\n"
      "node1:1234:1234 [0] NCCL INFO NCCL version 2.7.8+cuda11.0\n"
      "node1:1234:1250 [0] NCCL INFO comm 0x7f00 rank 0 nranks 2 cudaDev 0 busId 1000 - Init "
      "COMPLETE\n"
      "node2:2222:2222 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.1.2<0>\n"
      "\n"
      "node2:2222:2222 [0] include/socket.h:403 NCCL WARN Connect to 10.0.0.1<49623> failed : "
      "Connection refused\n"
      "node2:2222:2222 [0] NCCL INFO bootstrap.cc:95 -> 2\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kInitFailure);
  CHECK(Init(f).subsystem == Area::kBootstrap);
  CHECK(ErrnoName(Init(f).err) == "ECONNREFUSED");
  CHECK(Init(f).address == std::optional<std::string>("10.0.0.1:49623"));
  CHECK(f.ranks == std::vector<int>{1});
  REQUIRE(l.log.processes().size() == 2);
  CHECK(l.log.processes()[0].nccl_version == 2708);
  CHECK(l.log.processes()[0].bus_id == "0000:01:00.0");  // NCCL's busId 0x1000
}

TEST_CASE(
    "NCCL 2.19+ behind torchrun's prefixes: an unprefixed version line, a timestamped /dev/shm "
    "WARN",
    "[logs]") {
  Logs l;
  std::string text = "[default0]:NCCL version 2.19.3+cuda12.3\n";
  const char* bus[] = {"18000", "2a000", "3a000", "5d000"};
  for (int r = 0; r < 4; ++r) {
    text += "[default" + std::to_string(r) + "]:node1:10" + std::to_string(r) + ":10" +
            std::to_string(r) + " [" + std::to_string(r) +
            "] NCCL INFO ncclCommInitRank comm 0x1 rank " + std::to_string(r) +
            " nranks 4 cudaDev " + std::to_string(r) + " nvmlDev " + std::to_string(r) + " busId " +
            bus[r] + " commId 0xabc - Init START\n";
  }
  text +=
      "[default2]:\n"
      "[default2]:[2024-05-01 10:00:01] node1:102:110 [2] misc/shmutils.cc:87 NCCL WARN Error: "
      "failed to extend "
      "/dev/shm/nccl-aBc123 to 9637892 bytes, error: No space left on device (28)\n"
      "[default2]:[2024-05-01 10:00:01] node1:102:110 [2] misc/shmutils.cc:112 NCCL WARN Error "
      "while creating shared "
      "memory segment /dev/shm/nccl-aBc123 (size 9637888), error: No space left on device (28)\n";
  l.File(text);
  const Finding& f = l.Root();
  CHECK(Init(f).subsystem == Area::kShm);
  CHECK(ErrnoName(Init(f).err) == "ENOSPC");
  CHECK((Init(f).shm && Init(f).shm->requested == 9637892));
  CHECK(f.ranks == std::vector<int>{2});
  CHECK(l.log.processes()[0].nccl_version == 21903);
  CHECK(l.log.processes()[3].bus_id == "0000:5d:00.0");
  CHECK(l.log.timestamps());
}

TEST_CASE("InfiniBand registration failing: ib", "[logs]") {
  Logs l;
  l.File(
      "node3:77:77 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 5 nranks 8 cudaDev 0 nvmlDev 0 "
      "busId 18000 commId "
      "0x1 - Init START\n"
      "node3:77:77 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.0.3<0>\n"
      "\n"
      "[2025-02-02 02:02:02] node3:77:90 [0] misc/ibvwrap.cc:40 NCCL WARN Call to ibv_reg_mr "
      "failed with error "
      "Cannot allocate memory\n");
  const Finding& f = l.Root();
  CHECK(Init(f).subsystem == Area::kIb);
  CHECK(ErrnoName(Init(f).err) == "ENOMEM");
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(Has(Text(f).fix, "ibstat"));
}

TEST_CASE("NVLS at init without the Fabric Manager: fabric", "[logs]") {
  Logs l;
  l.File(
      "gb1:5:5 [3] NCCL INFO ncclCommInitRank comm 0x1 rank 3 nranks 4 cudaDev 3 nvmlDev 3 busId "
      "5d000 commId 0x1 - "
      "Init START\n"
      "\n"
      "[2025-03-03 03:03:03] gb1:5:9 [3] transport/nvls.cc:166 NCCL WARN Cuda failure 'system not "
      "yet initialized'\n");
  const Finding& f = l.Root();
  CHECK(Init(f).subsystem == Area::kFabric);
  CHECK(f.ranks == std::vector<int>{3});
  CHECK(Has(Text(f).fix, "fabricmanager"));
}

TEST_CASE("PyTorch's watchdog, ranks in different collectives: collective_mismatch", "[logs]") {
  Logs l;
  std::string text;
  for (int r = 0; r < 4; ++r) {
    text += "[rank" + std::to_string(r) +
            "]:[E501 10:00:00.000000000 ProcessGroupNCCL.cpp:607] [Rank " + std::to_string(r) +
            "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=43, OpType=" +
            (r == 2 ? "BROADCAST" : "ALLREDUCE") +
            ", NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600012 milliseconds before "
            "timing out.\n";
  }
  l.File(text);
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kCollectiveMismatch);
  CHECK(f.field == MismatchField::kOp);
  CHECK(f.seq == 43u);
  CHECK(f.ranks == std::vector<int>{2});
}

TEST_CASE("PyTorch's watchdog, one rank never timed out: missing_rank, then the timeout",
          "[logs]") {
  Logs l;
  std::string text;
  for (int r = 0; r < 4; ++r) {
    text += "node1:" + std::to_string(200 + r) + ":1 [" + std::to_string(r) +
            "] NCCL INFO ncclCommInitRank comm 0x1 rank " + std::to_string(r) +
            " nranks 4 cudaDev " + std::to_string(r) + " nvmlDev 0 busId " + std::to_string(r + 1) +
            "8000 commId 0x1 - Init COMPLETE\n";
  }
  for (int r : {0, 1, 2}) {
    text += "[rank" + std::to_string(r) + "]:[Rank " + std::to_string(r) +
            "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
            "NumelIn=8, "
            "NumelOut=8, Timeout(ms)=5000) ran for 5007 milliseconds before timing out.\n";
  }
  l.File(text);
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kMissingRank);
  CHECK(f.seq == 7u);
  CHECK(f.ranks == std::vector<int>{3});
  REQUIRE(l.d.findings.size() >= 2);
  CHECK(l.d.findings[1].kind == FindingKind::kWatchdogTimeout);
  CHECK(l.d.findings[1].role == FindingRole::kConsequence);
  CHECK(l.d.findings[1].ranks == std::vector<int>{0, 1, 2});
}

TEST_CASE("an Xid in dmesg is the root cause of the watchdog timeouts that follow", "[logs]") {
  Logs l;
  l.File(
      "node7:300:300 [5] NCCL INFO ncclCommInitRank comm 0x1 rank 5 nranks 8 cudaDev 5 nvmlDev 5 "
      "busId 3b000 commId "
      "0x1 - Init COMPLETE\n"
      "[rank0]:[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=99, "
      "OpType=ALLREDUCE, "
      "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing "
      "out.\n");
  l.File(
      "[123456.789012] NVRM: Xid (PCI:0000:3b:00): 79, pid=300, name=python, GPU has fallen off "
      "the bus.\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kGpuFault);
  CHECK(Log(f).xid == 79);
  CHECK(f.ranks == std::vector<int>{5});
  CHECK(Has(Text(f).detail, "fell off the bus"));
}

TEST_CASE("torchrun's exit report: a rank killed by SIGKILL, the kernel's OOM killer first",
          "[logs]") {
  Logs l;
  l.File(
      "[E0501 10:00:00.000000 1 torch/distributed/elastic/multiprocessing/api.py:826] failed "
      "(exitcode: -9)\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  time      : 2024-05-01_10:00:00\n"
      "  host      : node1\n"
      "  rank      : 3 (local_rank: 3)\n"
      "  exitcode  : -9 (pid: 4242)\n"
      "  error_file: <N/A>\n"
      "  traceback : Signal 9 (SIGKILL) received by PID 4242\n");
  {
    Logs only_death;
    only_death.File("  rank      : 3 (local_rank: 3)\n  exitcode  : -9 (pid: 4242)\n");
    const Finding& f = only_death.Root();
    CHECK(f.kind == FindingKind::kRankDied);
    CHECK(f.ranks == std::vector<int>{3});
    CHECK((Log(f).signo && SignalName(*Log(f).signo) == "SIGKILL"));
  }
  l.File(
      "[98765.4321] Out of memory: Killed process 4242 (python) total-vm:1000kB, anon-rss:900kB\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kOutOfMemory);
  CHECK(Log(f).memory == std::optional<std::string>("host"));
  REQUIRE(l.d.findings.size() >= 2);
  CHECK(l.d.findings[1].kind == FindingKind::kRankDied);
}

TEST_CASE("mpirun's tags and its report of a crashed rank", "[logs]") {
  Logs l;
  l.File(
      "[1,3]<stderr>:n1:99:99 [3] NCCL INFO ncclCommInitRank comm 0x1 rank 3 nranks 4 cudaDev 3 "
      "nvmlDev 3 busId "
      "5d000 commId 0x1 - Init COMPLETE\n"
      "mpirun noticed that process rank 3 with PID 99 on node n1 exited on signal 11 (Segmentation "
      "fault).\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kRankDied);
  CHECK(f.ranks == std::vector<int>{3});
  CHECK((Log(f).signo && SignalName(*Log(f).signo) == "SIGSEGV"));
}

TEST_CASE("P2P mapping failing after init, and a kernel's illegal access", "[logs]") {
  Logs l;
  l.File(
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
      "18000 commId 0x1 - "
      "Init COMPLETE\n"
      "\n"
      "[2025-01-01 00:00:09] h:1:3 [0] transport/p2p.cc:270 NCCL WARN Cuda failure 'peer mapping "
      "resources "
      "exhausted'\n"
      "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kCudaIpcFailure);
  CHECK(f.ranks == std::vector<int>{0});
  bool kernel = false;
  for (const Finding& x : l.d.findings) kernel |= x.kind == FindingKind::kCudaError;
  CHECK(kernel);
}

TEST_CASE("a clean log is healthy, a WARN-only log says what it lacks", "[logs]") {
  Logs clean;
  clean.File(
      "h:1:1 [0] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>\n"
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId "
      "18000 commId 0x1 - "
      "Init COMPLETE\n");
  clean.log.Finish();
  LogDiagnosis d = DiagnoseLogs(clean.log);
  CHECK_FALSE(d.problem);
  CHECK(d.findings.empty());

  Logs warn_only;
  warn_only.File(
      "\nh:1:1 [0] init.cc:1 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
      "device 18000\n");
  const Finding& f = warn_only.Root();
  CHECK(f.kind == FindingKind::kInitFailure);
  CHECK(Init(f).subsystem == Area::kGpu);
  CHECK(f.ranks == std::vector<int>{0, 1});
  bool note = false;
  for (const Finding& x : warn_only.d.findings)
    note |= x.kind == FindingKind::kLogInsufficient && x.role == FindingRole::kNote;
  CHECK(note);
}

TEST_CASE("NCCL's notices (2.32's ATTN): a failure is read as a WARN, the rest are warnings",
          "[logs]") {
  // The two quoted in tests/data/logs/quoted/nccl_232_attn_*.log, and one no
  // release prints (the catalogue cannot name it: a later release's words).
  const std::string init =
      "h:7:7 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
      "18000 commId 0x1 - Init COMPLETE\n";
  Logs failed;
  failed.File(init +
              "h:7:7 [0] init.cc:3440 (commReclaim) NCCL ATTN cleanup comm 0x1 rank 0 failed in "
              "destroy/abort, error 6\n");
  CHECK(failed.Root().kind == FindingKind::kTeardownHang);

  for (const std::string notice :
       {"Mismatched NCCL git versions detected: rank 0 fingerprint 0x3fa1c2d4, rank 1 "
        "fingerprint 0x8b07e615",
        "Something NCCL 2.99 says that no release before it did"}) {
    Logs notes;
    notes.File(init + "h:7:7 [0] init.cc:1 (f) NCCL ATTN " + notice + "\n");
    notes.log.Finish();
    const LogDiagnosis d = DiagnoseLogs(notes.log);
    CHECK_FALSE(d.problem);  // a notice is not an error ...
    size_t warnings = 0;     // ... and never silence
    for (const Finding& x : d.findings) {
      if (x.role != FindingRole::kWarning) continue;
      ++warnings;
      CHECK(Has(Text(x).detail, notice));
      CHECK(x.ranks == std::vector<int>{0});
    }
    CHECK(warnings == 1);
  }
  // The same notice from two ranks: one warning, both ranks.
  Logs two;
  two.File(init + "h:7:7 [0] init.cc:1 (f) NCCL ATTN Something NCCL 2.99 says\n" +
           "h:8:8 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 "
           "busId 2a000 commId 0x1 - Init COMPLETE\n" +
           "h:8:8 [0] init.cc:1 (f) NCCL ATTN Something NCCL 2.99 says\n");
  two.log.Finish();
  const LogDiagnosis d = DiagnoseLogs(two.log);
  CHECK_FALSE(d.problem);
  size_t warnings = 0;
  for (const Finding& x : d.findings) {
    if (x.role != FindingRole::kWarning) continue;
    ++warnings;
    CHECK(x.ranks == std::vector<int>{0, 1});
  }
  CHECK(warnings == 1);
}

TEST_CASE("hostile files: binary, huge lines, unreadable, never a crash", "[logs]") {
  jobs::TempDir dir;
  NcclLog log;
  const std::string binary = dir.path() + "/core";
  {
    std::ofstream out(binary, std::ios::binary);
    for (int i = 0; i < 100000; ++i) out.put(static_cast<char>(i % 7 == 0 ? 0 : i % 256));
  }
  absl::Status s = log.AddFile(binary);
  CHECK_FALSE(s.ok());
  CHECK(Has(std::string(s.message()), "not a text file"));
  CHECK_FALSE(log.AddFile(dir.path() + "/missing").ok());
  CHECK_FALSE(log.AddFile(dir.path()).ok());
  const std::string huge = dir.path() + "/huge.log";
  std::ofstream(huge) << std::string(1 << 20, 'x') << " NCCL WARN " << std::string(1 << 20, 'y')
                      << "\n";
  CHECK(log.AddFile(huge).ok());
  log.Finish();
  LogDiagnosis d = DiagnoseLogs(log);
  CHECK(log.sources().size() == 1);
  (void)d;
}

TEST_CASE("explain on nothing usable: exit 2 and one line", "[logs][cli]") {
  jobs::TempDir dir;
  const std::string prose = dir.path() + "/notes.txt";
  std::ofstream(prose) << "nothing to see here\njust a text file\n";
  for (const std::vector<std::string>& paths :
       {std::vector<std::string>{dir.path() + "/missing.log"}, std::vector<std::string>{prose}}) {
    jobs::DiagnosisView v = jobs::RunNcclwatch("explain", paths, false);
    INFO(v.output);
    CHECK(v.exit_code == 2);
    CHECK(std::count(v.output.begin(), v.output.end(), '\n') == 1);
    CHECK(v.output.rfind("ncclwatch: ", 0) == 0);
  }
}

// --- hostile logs: what a crafted or broken log must not do to explain.
// Each line below is a real one from the tests above (which say where NCCL,
// PyTorch and the kernel print it), with a number made absurd or the line
// made long.

TEST_CASE("numbers too big for their type are no numbers: no abort, the rest still read",
          "[logs][hostile]") {
  const std::string digits30 = "123456789012345678901234567890";
  Logs l;
  l.File(
      // NCCL's Init line (init.cc), rank and nranks past any int.
      "node7:300:300 [5] NCCL INFO ncclCommInitRank comm 0x1 rank " + digits30 + " nranks " +
      digits30 +
      " cudaDev 5 nvmlDev 5 busId 3b000 commId 0x1 - Init COMPLETE\n"
      // "NCCL version" (init.cc), every part too long.
      "node7:300:300 [5] NCCL INFO NCCL version 2." +
      digits30 + ".1+cuda" + digits30 +
      ".0\n"
      // PyTorch's watchdog (ProcessGroupNCCL.cpp), a SeqNum past 2^64 and a rank past any int.
      "[rank0]:[Rank " +
      digits30 + "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + digits30 +
      ", OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds "
      "before timing out.\n"
      // torchrun's exit report (elastic/multiprocessing/api.py).
      "  rank      : " +
      digits30 +
      " (local_rank: 3)\n"
      "  exitcode  : -" +
      digits30 +
      " (pid: 4242)\n"
      // mpirun's report of a rank that died.
      "mpirun noticed that process rank " +
      digits30 + " with PID 99 on node n1 exited on signal " + digits30 +
      " (Segmentation fault).\n");
  // The kernel's Xid line (dmesg), the Xid past any int, in a file of its own.
  l.File("[123456.789012] NVRM: Xid (PCI:0000:3b:00): " + digits30 +
         ", pid=300, name=python, GPU has fallen off the bus.\n");
  l.log.Finish();
  l.d = DiagnoseLogs(l.log);
  REQUIRE(l.log.processes().size() == 1);
  const auto& p = l.log.processes()[0];
  CHECK(p.rank == -1);
  CHECK(p.nranks == -1);
  CHECK(p.nccl_version == 0);
  CHECK(p.cuda_runtime == 0);
  CHECK(p.cuda_dev == 5);  // what could be read still is
  for (const Finding& f : l.d.findings) {
    const auto* facts = std::get_if<LogFacts>(&f.facts);
    CHECK((facts == nullptr ||
           !facts->xid.has_value()));  // no Xid finding from a number that is none
    // The line still says the watchdog fired (the catalogue's word), but no
    // sequence number is made of digits that are none.
    CHECK((f.kind != FindingKind::kWatchdogTimeout || !f.seq.has_value()));
  }
  // The line still tells that the GPU fell off the bus, by its words.
  bool fault = false;
  for (const Finding& f : l.d.findings) fault |= f.kind == FindingKind::kGpuFault;
  CHECK(fault);
}

TEST_CASE("a timestamp out of range is no timestamp (its nanoseconds overflowed)",
          "[logs][hostile]") {
  Logs l;
  // "NVLS at init" above, in the year 4633 (found by nccl_log_fuzzer), and in 0632.
  l.File(
      "gb1:5:5 [3] NCCL INFO ncclCommInitRank comm 0x1 rank 3 nranks 4 cudaDev 3 nvmlDev 3 busId "
      "5d000 commId 0x1 "
      "- Init START\n"
      "\n"
      "[4633-03-03 03:03:03] gb1:5:9 [3] transport/nvls.cc:166 NCCL WARN Cuda failure 'system not "
      "yet initialized'\n"
      "[0632-03-03 03:03:03] gb1:5:9 [3] transport/nvls.cc:166 NCCL WARN Cuda failure 'system not "
      "yet initialized'\n");
  CHECK_FALSE(l.log.timestamps());
  const Finding& f = l.Root();
  CHECK(Init(f).subsystem == Area::kFabric);
}

TEST_CASE("a 65 KiB line is cut at kMaxLine, its NCCL prefix still read, the next line whole",
          "[logs][hostile]") {
  Logs l;
  const std::string warn =
      "[2025-01-01 00:00:09] h:1:3 [0] transport/p2p.cc:270 NCCL WARN Cuda failure 'peer mapping "
      "resources exhausted' ";  // from "P2P mapping failing after init" above
  l.File(
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
      "18000 commId 0x1 - "
      "Init COMPLETE\n" +
      warn + std::string(65 * 1024, 'x') +
      "\n" +  // 65 KiB: std::regex used to overflow the stack here
      "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n");
  l.log.Finish();
  l.d = DiagnoseLogs(l.log);
  const auto& lines = l.log.lines();
  REQUIRE(lines.size() == 3);
  CHECK(lines[1].level == ncclwatch::decoder::LogLine::kWarn);
  CHECK(lines[1].text.size() < ncclwatch::decoder::kMaxLine);
  CHECK(lines[2].text == "RuntimeError: CUDA error: an illegal memory access was encountered");
  bool ipc = false, kernel = false;
  for (const Finding& f : l.d.findings) {
    ipc |= f.kind == FindingKind::kCudaIpcFailure;
    kernel |= f.kind == FindingKind::kCudaError;
  }
  CHECK(ipc);
  CHECK(kernel);
}

TEST_CASE("a rank count no job has is not believed: nothing grows with it", "[logs][hostile]") {
  Logs l;
  // "missing_rank" above, with nranks 2^31-1: the ranks that never timed out
  // would have been listed one by one.
  std::string text =
      "node1:200:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2147483647 cudaDev 0 "
      "nvmlDev 0 busId 18000 "
      "commId 0x1 - Init COMPLETE\n";
  text +=
      "[rank0]:[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
      "OpType=ALLREDUCE, "
      "NumelIn=8, NumelOut=8, Timeout(ms)=5000) ran for 5007 milliseconds before timing out.\n";
  l.File(text);
  l.log.Finish();
  l.d = DiagnoseLogs(l.log);
  REQUIRE(l.log.processes().size() == 1);
  CHECK(l.log.processes()[0].nranks == -1);
  CHECK(l.log.processes()[0].rank == 0);
  for (const Finding& f : l.d.findings) CHECK(f.ranks.size() <= 1);
}

TEST_CASE("a FIFO and /dev/zero are refused at once, never read", "[logs][hostile]") {
  jobs::TempDir dir;
  const std::string fifo = dir.path() + "/fifo.log";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);  // no writer: a blocking open would wait for ever
  NcclLog log;
  absl::Status s = log.AddFile(fifo);
  CHECK_FALSE(s.ok());
  CHECK(Has(std::string(s.message()), "not a regular file"));
  s = log.AddFile("/dev/zero");
  CHECK_FALSE(s.ok());
  CHECK(Has(std::string(s.message()), "not a regular file"));
  CHECK(log.sources().empty());
}

TEST_CASE("logs past 1 GiB in all are refused by their size, before a byte is read",
          "[logs][hostile]") {
  jobs::TempDir dir;
  const std::string big = dir.path() + "/big.log";  // sparse: no disk, no time
  // A version line as nccl_log.h quotes it (init.cc), then a hole to 1 GiB + 1 byte.
  { std::ofstream(big) << "h:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"; }
  REQUIRE(truncate(big.c_str(), static_cast<off_t>(ncclwatch::decoder::kMaxLogBytes) + 1) == 0);
  NcclLog log;
  const absl::Status s = log.AddFile(big);
  CHECK_FALSE(s.ok());
  CHECK(Has(std::string(s.message()), "1 GiB"));
  CHECK(log.sources().empty());
  CHECK(log.lines().empty());
}

TEST_CASE(
    "the CLI on hostile inputs: exit 2 with one line or a sane answer, never a crash or a hang",
    "[logs][cli][hostile]") {
  jobs::TempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  auto refused = [](const std::string& command, const std::string& path, const std::string& why) {
    jobs::DiagnosisView v = jobs::RunNcclwatch(command, {path}, false);
    INFO(command << " " << path << ": " << v.output);
    CHECK(v.exit_code == 2);
    CHECK(std::count(v.output.begin(), v.output.end(), '\n') == 1);
    CHECK(v.output.rfind("ncclwatch: ", 0) == 0);
    CHECK(Has(v.output, why));
  };
  for (const char* command : {"explain", "diagnose", "dump"}) {
    refused(command, fifo, "a FIFO");
    refused(command, "/dev/zero", "a character device");
  }
  // The Xid and watchdog lines of the tests above with 30-digit numbers, and
  // a 65 KiB line: read, with an answer (0 or 1), not a crash.
  const std::string digits30 = "123456789012345678901234567890";
  const std::string numbers = dir.path() + "/numbers.log";
  std::ofstream(numbers)
      << "[123456.789012] NVRM: Xid (PCI:0000:3b:00): " << digits30
      << ", pid=300, name=python, GPU has fallen off the bus.\n"
      << "[rank0]:[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
      << digits30
      << ", OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 "
         "milliseconds before timing out.\n";
  const std::string long_line = dir.path() + "/long.log";
  std::ofstream(long_line)
      << "[2025-01-01 00:00:09] h:1:3 [0] transport/p2p.cc:270 NCCL WARN Cuda failure 'peer "
         "mapping resources exhausted' "
      << std::string(65 * 1024, '(') << "\n";
  for (const std::string& path : {numbers, long_line}) {
    jobs::DiagnosisView v = jobs::RunNcclwatch("explain", {path}, true);
    INFO(path << ": " << v.output.substr(0, 2000));
    CHECK((v.exit_code == 0 || v.exit_code == 1));
    CHECK(v.parsed);
  }
}

TEST_CASE("a refused file leaves nothing behind, CRLF line ends are not part of the text",
          "[logs][hostile]") {
  jobs::TempDir dir;
  NcclLog log;
  const std::string good = dir.path() + "/good.log";
  // "a clean log is healthy" above, with Windows line ends.
  std::ofstream(good)
      << "h:1:1 [0] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>\r\n"
         "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId "
         "18000 commId 0x1 - Init COMPLETE\r\n";
  REQUIRE(log.AddFile(good).ok());
  // An NCCL line of another process, then binary: refused at its 64th line.
  const std::string binary = dir.path() + "/binary.log";
  {
    std::ofstream out(binary, std::ios::binary);
    out << "h:2:2 [1] NCCL INFO ncclCommInitRank comm 0x1 rank 1 nranks 2 cudaDev 1 nvmlDev 1 "
           "busId 19000 commId 0x1 - "
           "Init COMPLETE\n";
    for (int i = 0; i < 70; ++i) out << std::string(1, '\0') << "\n";
  }
  CHECK_FALSE(log.AddFile(binary).ok());
  CHECK(log.sources().size() == 1);
  CHECK(log.processes().size() == 1);
  CHECK(log.nccl_lines() == 2);
  REQUIRE(log.lines().size() == 2);
  CHECK(log.lines()[1].text.back() == 'E');  // "... Init COMPLETE", no '?' for the '\r'
  CHECK(log.processes()[0].bootstrap_iface == "eth0");
}

// The read budget is one for the whole command: what a refused file made it
// read counts too, so that files refused one after another (each read up to
// the budget, then dropped) cannot make explain read without end. A small
// budget stands for the 1 GiB one.
TEST_CASE("the read budget counts refused files: one budget for the whole command",
          "[logs][hostile]") {
  jobs::TempDir dir;
  constexpr uint64_t kBudget = 1 << 20;
  NcclLog log(kBudget);
  const std::string line = "h:1:1 [0] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>\n";
  auto text = [&](const std::string& name, size_t bytes) {
    const std::string path = dir.path() + "/" + name;
    std::ofstream out(path);
    for (size_t n = 0; n < bytes; n += line.size()) out << line;
    return path;
  };
  REQUIRE(log.AddFile(text("first.log", 600 << 10)).ok());
  // 300 KiB of lines of NULs: refused as binary at its 64th line, 256 KiB in.
  const std::string binary = dir.path() + "/binary.log";
  {
    std::ofstream out(binary, std::ios::binary);
    for (int i = 0; i < 75; ++i) out << std::string(4095, '\0') << "\n";
  }
  absl::Status s = log.AddFile(binary);
  CHECK(Has(std::string(s.message()), "not a text file"));
  // 200 KiB more would fit beside the first file alone; not after the bytes
  // the refused one took.
  s = log.AddFile(text("last.log", 200 << 10));
  CHECK(s.code() == absl::StatusCode::kResourceExhausted);
  CHECK(Has(std::string(s.message()), "the logs pass 1048576 bytes, the most ncclwatch reads"));
  CHECK(log.sources().size() == 1);
}

// Files the kernel makes up are refused unread: /proc/self/pagemap says
// size 0 and holds 8 bytes for every page of the address space.
TEST_CASE("a file on a pseudo file system is refused without a byte read", "[logs][hostile]") {
  NcclLog log;
  for (const char* path :
       {"/proc/self/pagemap", "/proc/self/status", "/sys/kernel/uevent_seqnum"}) {
    const absl::Status s = log.AddFile(path);
    INFO(path << ": " << s.message());
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(Has(std::string(s.message()), ", a pseudo file system, not a log"));
  }
  CHECK(log.sources().empty());
}

// explain on /proc, and on a folder of links to /proc/self/pagemap (each
// read 1 GiB before: 16 of them took 30 s, and /proc never ended): refused
// at once, exit 2 with one line. Judged by what is said, not by time.
TEST_CASE("explain: /proc and links into it are refused, never read", "[logs][cli][hostile]") {
  jobs::TempDir dir;
  for (int i = 0; i < 16; ++i)
    std::filesystem::create_symlink("/proc/self/pagemap",
                                    dir.path() + "/pagemap" + std::to_string(i) + ".log");
  jobs::DiagnosisView v = jobs::RunNcclwatch("explain", {dir.path()}, false);
  INFO(v.output);
  CHECK(v.exit_code == 2);
  CHECK(std::count(v.output.begin(), v.output.end(), '\n') == 1);
  CHECK(v.output.rfind("ncclwatch: none of the ", 0) == 0);  // the 16 links lead to one file
  CHECK(Has(v.output, "/pagemap: on proc, a pseudo file system, not a log"));
  v = jobs::RunNcclwatch("explain", {"/proc"}, false);
  INFO(v.output);
  CHECK(v.exit_code == 2);
  CHECK(v.output == "ncclwatch: /proc: on proc, a pseudo file system, not read\n");
}

TEST_CASE("a WARN no message names: the source file of NCCL's location names the subsystem",
          "[logs]") {
  using ncclwatch::decoder::NcclSourceArea;
  CHECK(NcclSourceArea("transport/net_ib.cc") == Area::kNetIb);
  CHECK(NcclSourceArea("/dvs/p4/build/nccl/src/misc/socket.cc") == Area::kSocket);
  CHECK(NcclSourceArea("graph/topo.cc") == Area::kTopology);
  CHECK(NcclSourceArea("misc/shmutils.cc") == Area::kShm);
  CHECK(NcclSourceArea("train.py") == Area::kNone);
  SECTION("at init: init_failure under that subsystem, NCCL 2.28's and 2.32's prefixes") {
    for (const std::string where :
         {"transport/net_ib.cc:1234", "transport/net_ib.cc:1234 (ncclIbCreateQpNew)"}) {
      Logs l;
      l.File(
          "node1:4242:4242 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n"
          "\nnode1:4242:4242 [0] " +
          where + " NCCL WARN a failure no release printed before: 7\n");
      const Finding& f = l.Root();
      CHECK(f.kind == FindingKind::kInitFailure);
      CHECK(Init(f).subsystem == Area::kNetIb);
      CHECK(Has(Text(f).detail, "a failure no release printed before"));
    }
  }
  SECTION("under a running job: log_insufficient, from that part of NCCL") {
    Logs l;
    l.File(
        "node1:4242:4242 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 commId "
        "0x1 - Init COMPLETE\n"
        "\nnode1:4242:4242 [0] misc/socket.cc:777 NCCL WARN a socket failure no release "
        "printed before\n");
    const Finding& f = l.Root();
    CHECK(f.kind == FindingKind::kLogInsufficient);
    CHECK(Log(f).subsystem == std::optional<Area>(Area::kSocket));
    CHECK(Has(Text(f).detail, "from NCCL's socket"));
  }
}

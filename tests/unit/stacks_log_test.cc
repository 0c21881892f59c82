// explain on the evidence around NCCL that is not NCCL's own lines: the
// crash reports and the stacks people paste beside a job's log. The texts
// are in the formats the tools print them (this machine cannot crash a GPU
// job): CPython's faulthandler (Python/traceback.c: "Fatal Python error: ",
// "Current thread 0x... (most recent call first):", "  File \"...\", line N
// in f"), py-spy's dump ("Process N: ...", "Thread N (idle): \"MainThread\"",
// "    f (file:line)"), gdb's "thread apply all bt", glog's and c10's fatal
// signal handler ("*** SIGSEGV (@0x0) received by PID N ...", "    @ 0x...
// f"), the kernel's segfault line (arch/x86/mm/fault.c: "comm[pid]: segfault
// at ... in module[base+size]"), bash's job report, and libstdc++'s
// terminate handler.

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/log_diagnosis.h"
#include "commands/explain.h"
#include "knowledge/stack_places.h"
#include "logs/stacks.h"
#include "report/finding_text.h"
#include "support/explained_logs.h"
#include "support/json_schema.h"
#include "support/traced_job.h"

namespace {

using ncclwatch::decoder::Area;
using ncclwatch::decoder::DiagnoseLogs;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::FindingKind;
using ncclwatch::decoder::FindingRole;
using ncclwatch::decoder::HangPhase;
using ncclwatch::decoder::LogCause;
using ncclwatch::decoder::LogDiagnosis;
using ncclwatch::decoder::LogFacts;

// The fixture, with explain --json on the same files.
struct Logs : jobs::ExplainedLogs {
  // explain --json on the same files: the report conforms to its schema.
  std::string Json() {
    std::ostringstream out, err;
    CHECK(ncclwatch::decoder::RunExplain(paths, true, out, err) == 1);
    const std::vector<std::string> errors = jobs::ValidateReport(out.str());
    std::string all;
    for (const std::string& e : errors) all += e + "\n";
    INFO(out.str() << "\n" << all);
    CHECK(errors.empty());
    return out.str();
  }
};

const LogFacts& Log(const Finding& f) {
  const auto* x = std::get_if<LogFacts>(&f.facts);
  REQUIRE(x != nullptr);
  return *x;
}

int Count(const LogDiagnosis& d, FindingKind kind) {
  int n = 0;
  for (const Finding& f : d.findings) n += f.kind == kind;
  return n;
}

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// NCCL's Init line of a rank (NCCL 2.28's init.cc format).
std::string Init(int rank, int pid) {
  return "node1:" + std::to_string(pid) + ":" + std::to_string(pid) + " [" + std::to_string(rank) +
         "] NCCL INFO comm 0x5555" + std::to_string(rank) + " rank " + std::to_string(rank) +
         " nranks 4 cudaDev " + std::to_string(rank) + " nvmlDev " + std::to_string(rank) +
         " busId " + std::to_string(rank + 1) + "8000 commId 0x1 - Init COMPLETE\n";
}

}  // namespace

TEST_CASE("faulthandler's crash under all_reduce, torchrun's report of it: one death, the frame",
          "[logs][stacks]") {
  Logs l;
  l.File(
      "[default1]:Fatal Python error: Segmentation fault\n"
      "[default1]:\n"
      "[default1]:Thread 0x00007f3a1bfff640 (most recent call first):\n"
      "[default1]:  File \"/usr/lib/python3.11/threading.py\", line 331 in wait\n"
      "[default1]:\n"
      "[default1]:Current thread 0x00007f3a3cb5f740 (most recent call first):\n"
      "[default1]:  File "
      "\"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 2501 in "
      "all_reduce\n"
      "[default1]:  File \"/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py\", "
      "line 83 in wrapper\n"
      "[default1]:  File \"/app/train.py\", line 40 in step\n"
      "[default1]:\n"
      "[default1]:Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n"
      "[E1204 10:00:00.000000 1 torch/distributed/elastic/multiprocessing/api.py:874] failed "
      "(exitcode: -11) local_rank: 1 (pid: 4242) of binary: /usr/bin/python3\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  host      : node1\n"
      "  rank      : 1 (local_rank: 1)\n"
      "  exitcode  : -11 (pid: 4242)\n"
      "  traceback : Signal 11 (SIGSEGV) received by PID 4242\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kRankDied);
  CHECK(f.ranks == std::vector<int>{1});
  CHECK(Count(l.d, FindingKind::kRankDied) == 1);  // the crash and the launcher's word: one
  const LogFacts& x = Log(f);
  CHECK(x.cause == LogCause::kCrash);
  CHECK(x.signo == std::optional<int>(SIGSEGV));
  CHECK(x.tool == std::optional<std::string>("faulthandler"));
  CHECK(x.hit ==
        std::optional<std::string>("all_reduce (/usr/lib/python3/dist-packages/torch/distributed/"
                                   "distributed_c10d.py:2501)"));
  CHECK(x.subsystem == std::optional<Area>(Area::kC10d));
  CHECK(f.phase == std::optional<HangPhase>(HangPhase::kStep));
  const std::string json = l.Json();
  CHECK(Has(json, "\"kind\":\"rank_died\""));
  CHECK(Has(json, "\"subsystem\":\"c10d\""));
  CHECK(Has(json, "\"signal\":\"SIGSEGV\""));
}

TEST_CASE("c10's fatal signal handler in NCCL's proxy thread: the rank by its pid, inside NCCL",
          "[logs][stacks]") {
  Logs l;
  std::string nccl;
  for (int r = 0; r < 4; ++r) nccl += Init(r, 4240 + r);
  l.File(nccl);
  l.File(
      "*** SIGSEGV (@0x0) received by PID 4242 (TID 0x7f2a1bfff640) from PID 0; stack trace: ***\n"
      "    @     0x7f2a3c8a4520 (unknown)\n"
      "    @     0x7f2a2d7c1a10 c10::FatalSignalHandler::fatalSignalHandler(int)\n"
      "    @     0x7f2a1c0a2b11 ncclProxyProgress(void*)\n"
      "    @     0x7f2a3c8f6ac3 start_thread\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kRankDied);
  CHECK(f.ranks == std::vector<int>{2});
  const LogFacts& x = Log(f);
  CHECK(x.cause == LogCause::kCrash);
  CHECK(x.hit == std::optional<std::string>("ncclProxyProgress"));
  CHECK(x.subsystem == std::optional<Area>(Area::kNccl));
  CHECK(x.tool == std::optional<std::string>("glog"));
  l.Json();
}

TEST_CASE("the kernel's segfault line names the module: NCCL, for the rank with that pid",
          "[logs][stacks]") {
  Logs l;
  std::string nccl;
  for (int r = 0; r < 4; ++r) nccl += Init(r, 4240 + r);
  l.File(nccl);
  l.File(
      "[12345.678901] python3[4243]: segfault at 0 ip 00007f2a1c0a2b11 sp 00007f2a1bffe9f0 error 4 "
      "in libnccl.so.2.28.9[7f2a1c000000+1a00000] likely on CPU 3 (core 3, socket 0)\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kRankDied);
  CHECK(f.ranks == std::vector<int>{3});
  const LogFacts& x = Log(f);
  CHECK(x.hit == std::optional<std::string>("libnccl.so.2.28.9"));
  CHECK(x.subsystem == std::optional<Area>(Area::kNccl));
  CHECK(x.tool == std::optional<std::string>("kernel"));
  CHECK(x.signo == std::optional<int>(SIGSEGV));
}

TEST_CASE("the shell's word on a crashed rank, and an uncaught C++ exception", "[logs][stacks]") {
  SECTION("srun --label and bash's report") {
    Logs l;
    l.File("3: Segmentation fault (core dumped)\n");
    const Finding& f = l.Root();
    CHECK(f.kind == FindingKind::kRankDied);
    CHECK(f.ranks == std::vector<int>{3});
    CHECK(Log(f).signo == std::optional<int>(SIGSEGV));
    CHECK(Log(f).tool == std::optional<std::string>("shell"));
    CHECK(Log(f).subsystem == std::nullopt);  // nothing says where
  }
  SECTION("a job line of bash") {
    Logs l;
    l.File("[rank2]: bash: line 1:  4242 Bus error               (core dumped) python3 train.py\n");
    const Finding& f = l.Root();
    CHECK(f.ranks == std::vector<int>{2});
    CHECK(Log(f).signo == std::optional<int>(SIGBUS));
  }
  SECTION("libstdc++'s terminate handler") {
    Logs l;
    l.File(
        "[rank0]: terminate called after throwing an instance of 'std::bad_alloc'\n"
        "[rank0]:   what():  std::bad_alloc\n");
    const Finding& f = l.Root();
    CHECK(f.kind == FindingKind::kRankDied);
    CHECK(f.ranks == std::vector<int>{0});
    CHECK(Log(f).signo == std::optional<int>(SIGABRT));
    CHECK(Log(f).hit == std::optional<std::string>("an uncaught C++ exception (std::bad_alloc)"));
  }
  SECTION("a SIGTERM handled by glog is the launcher stopping the job: no death") {
    Logs l;
    l.File("*** SIGTERM received by PID 4242 (TID 0x7f) from PID 4200; stack trace: ***\n");
    l.log.Finish();
    const LogDiagnosis d = DiagnoseLogs(l.log);
    CHECK(Count(d, FindingKind::kRankDied) == 0);
  }
}

TEST_CASE("py-spy dumps of four ranks: three in all_reduce, one in teardown, ranks by pid",
          "[logs][stacks]") {
  Logs l;
  std::string nccl;
  for (int r = 0; r < 4; ++r) nccl += Init(r, 4240 + r);
  l.File(nccl);
  for (int r = 0; r < 4; ++r) {
    const std::string top =
        r == 2 ? "    destroy_process_group (torch/distributed/distributed_c10d.py:2110)\n"
                 "    main (train.py:80)\n"
               : "    all_reduce (torch/distributed/distributed_c10d.py:2501)\n"
                 "    wrapper (torch/distributed/c10d_logger.py:83)\n"
                 "    step (train.py:40)\n";
    l.File("Process " + std::to_string(4240 + r) +
           ": /usr/bin/python3 train.py\n"
           "Python v3.11.4 (/usr/bin/python3.11)\n"
           "\n"
           "Thread 4301 (idle): \"Thread-1\"\n"
           "    wait (threading.py:331)\n"
           "Thread " +
           std::to_string(4240 + r) + " (idle): \"MainThread\"\n" + top);
  }
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kHangUnexplained);
  CHECK(f.ranks == std::vector<int>{0, 1, 2, 3});
  CHECK_FALSE(f.phase.has_value());  // the stacks are not all in one phase
  const LogFacts& x = Log(f);
  CHECK(x.cause == LogCause::kStacks);
  CHECK(x.tool == std::optional<std::string>("py-spy"));
  REQUIRE(x.waits.size() == 2);
  CHECK(x.waits[0].frame == "all_reduce");
  CHECK(x.waits[0].ranks == std::vector<int>{0, 1, 3});
  CHECK(x.waits[0].phase == ncclwatch::decoder::HangPhase::kStep);
  CHECK(x.waits[0].subsystem == Area::kC10d);
  CHECK(x.waits[1].frame == "destroy_process_group");
  CHECK(x.waits[1].ranks == std::vector<int>{2});
  CHECK(x.waits[1].phase == ncclwatch::decoder::HangPhase::kTeardown);
  const auto text = ncclwatch::decoder::RenderFinding(f, ncclwatch::decoder::NoCallSites());
  CHECK(Has(text.detail, "rank 2 waits in destroy_process_group"));
  const std::string json = l.Json();
  CHECK(Has(json, "\"frame\":\"destroy_process_group\""));
}

TEST_CASE("gdb's thread apply all bt: the main thread in ncclCommAbort is a teardown hang",
          "[logs][stacks]") {
  Logs l;
  l.File(Init(0, 4242) + Init(1, 4243));
  l.File(
      "Thread 3 (Thread 0x7f2a1bfff640 (LWP 4250) \"python3\"):\n"
      "#0  0x00007f2a3c91e7f8 in __GI___clock_nanosleep () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "#1  0x00007f2a1c0a2b11 in ncclProxyProgress () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
      "\n"
      "Thread 1 (Thread 0x7f2a3cb5f740 (LWP 4242) \"python3\"):\n"
      "#0  0x00007f2a3c91c117 in sched_yield () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "#1  0x00007f2a1c0e1c53 in ncclCommAbort () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
      "#2  0x00007f2a2d7c0e4e in c10d::ProcessGroupNCCL::abort(std::optional<std::string>) () "
      "from /usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kTeardownHang);  // every stack in its teardown
  CHECK(f.ranks == std::vector<int>{0});
  CHECK(f.phase == std::optional<HangPhase>(HangPhase::kTeardown));
  const LogFacts& x = Log(f);
  REQUIRE(x.waits.size() == 1);
  CHECK(x.waits[0].frame == "ncclCommAbort");
  CHECK(x.waits[0].subsystem == Area::kNccl);
  CHECK(x.tool == std::optional<std::string>("gdb"));
}

TEST_CASE("faulthandler's timeout dump beside an Xid: the Xid is the cause, the stacks a note",
          "[logs][stacks]") {
  Logs l;
  l.File(
      "[rank0]:Timeout (0:30:00)!\n"
      "[rank0]:Thread 0x00007f3a3cb5f740 (most recent call first):\n"
      "[rank0]:  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", "
      "line 4150 in barrier\n"
      "[rank0]:  File \"/app/train.py\", line 52 in main\n");
  {
    Logs alone;
    alone.File(
        "Timeout (0:30:00)!\n"
        "Thread 0x00007f3a3cb5f740 (most recent call first):\n"
        "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line "
        "4150 in barrier\n");
    const Finding& f = alone.Root();
    CHECK(f.kind == FindingKind::kHangUnexplained);
    CHECK(f.phase == std::optional<HangPhase>(HangPhase::kStep));
    CHECK(Log(f).waits.at(0).frame == "barrier");
  }
  l.File(
      "[Thu Dec  3 10:12:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU "
      "has fallen off the bus.\n");
  const Finding& f = l.Root();
  CHECK(f.kind == FindingKind::kGpuFault);
  const Finding& note = l.d.findings.back();
  CHECK(note.kind == FindingKind::kHangUnexplained);
  CHECK(note.role == FindingRole::kNote);
  CHECK(note.ranks == std::vector<int>{0});
  l.Json();
}

TEST_CASE("a frame names its place only where it is NCCL's, CUDA's or the framework's",
          "[logs][stacks]") {
  using ncclwatch::decoder::PlaceOfFrame;
  using ncclwatch::decoder::StackPhase;
  REQUIRE(PlaceOfFrame("ncclAllReduce", "") != nullptr);
  CHECK(PlaceOfFrame("ncclAllReduce", "")->phase == StackPhase::kStep);
  CHECK(PlaceOfFrame("ncclCommInitRank", "")->phase == StackPhase::kStartup);
  CHECK(PlaceOfFrame("c10d::ProcessGroupNCCL::WorkNCCL::wait(std::chrono::duration<long, "
                     "std::ratio<1l, 1000l> >)",
                     "")
            ->phase == StackPhase::kStep);
  CHECK(PlaceOfFrame("c10d::TCPStore::doWait(c10::ArrayRef<std::string>)", "")->phase ==
        StackPhase::kStartup);
  CHECK(PlaceOfFrame("cudaStreamSynchronize", "")->subsystem == Area::kCuda);
  // Common words count only in torch.distributed's files.
  CHECK(PlaceOfFrame("barrier", "/app/my_threads.py:10") == nullptr);
  CHECK(PlaceOfFrame("barrier", "torch/distributed/distributed_c10d.py:4150") != nullptr);
  CHECK(PlaceOfFrame("ncclProxyProgress", "") == nullptr);  // NCCL's own thread: no wait
  CHECK(PlaceOfFrame("main", "train.py:1") == nullptr);
}

TEST_CASE("hostile stacks: frames and threads past the bounds are read and dropped",
          "[logs][stacks]") {
  Logs l;
  std::string text = "Thread 1 (Thread 0x1 (LWP 7) \"p\"):\n";
  for (size_t i = 0; i < ncclwatch::decoder::kMaxStackFrames + 50; ++i)
    text +=
        "#" + std::to_string(i) + "  0x00007f in f" + std::to_string(i) + " () from /lib/x.so\n";
  for (size_t t = 0; t < 300; ++t)
    text += "Thread " + std::to_string(t + 2) + " (Thread 0x2 (LWP 8)):\n";
  text += "#0 (\n#1 0x in\n#\n";
  l.File(text);
  l.log.Finish();
  const auto ev = ncclwatch::decoder::ReadStacks(l.log);
  REQUIRE(ev.dumps.size() == 1);
  CHECK(ev.dumps[0].threads[0].frames.size() == ncclwatch::decoder::kMaxStackFrames);
  const LogDiagnosis d = DiagnoseLogs(l.log);
  CHECK(d.problem);  // stacks of a job with no place of NCCL's: still no "healthy"
}

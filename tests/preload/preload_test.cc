// libncclwatch.so as a guest in someone else's process: it changes no result,
// output or errno; it stays out of the way when off or when it cannot trace;
// it keeps the program's signal handlers working while recording signals; a
// forked child does not write its parent's trace; threads are safe; the
// trace survives SIGKILL; a call from another library's constructor is
// traced; and it needs nothing but glibc.

#include <nccl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/process_trace.h"
#include "ncclwatch/trace_fields.h"
#include "report/names.h"
#include "support/netns.h"
#include "support/traced_job.h"
#include "trace/socket_address.h"

namespace {

// How many NCCL entry points the shim wraps, as built (nccl_functions.inc,
// each guarded by the release that added it): each exported as ncclX and pncclX.
constexpr int kWrapped = 0
#define NCCLWATCH_NCCL_FN(name) +1
#include "resolve/nccl_functions.inc"
#undef NCCLWATCH_NCCL_FN
    ;

namespace fs = std::filesystem;
using ncclwatch::decoder::LoadProcessTrace;
using ncclwatch::decoder::ProcessTrace;

jobs::RankResult RunProbe(const std::vector<std::string>& args, const std::vector<std::string>& env,
                          const std::string& program = "preload_probe", long long fsize_bytes = -1,
                          const std::string& netns = "", double timeout_s = 60) {
  jobs::JobSpec spec;
  spec.fsize_bytes = fsize_bytes;
  spec.ranks[0].netns = netns;
  spec.argv = {program.front() == '/' ? program : jobs::BinDir() + "/" + program};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = env;
  spec.timeout_s = timeout_s;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  return r.ranks.at(0);
}

std::vector<std::string> Traced(const std::string& dir, std::vector<std::string> more = {}) {
  std::vector<std::string> env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir(),
                                  "LD_PRELOAD=" + jobs::ShimPath(), "NCCLWATCH_DIR=" + dir};
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

std::vector<std::string> TraceFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().string());
  return out;
}

ProcessTrace OnlyTrace(const std::string& dir) {
  const auto files = TraceFiles(dir);
  REQUIRE(files.size() == 1);
  auto t = LoadProcessTrace(files[0]);
  REQUIRE(t.ok());
  return *t;
}

// The shim traced `program` from start to a normal exit: a test that only
// compares output with and without it would also pass with a shim that was
// not loaded, or that recorded nothing.
void CheckTracedStartToExit(const ProcessTrace& t, const std::string& program, int exit_code = 0) {
  CHECK(t.has_start);
  CHECK(fs::path(t.exe).filename() == program);
  CHECK_FALSE(t.modules.empty());
  REQUIRE(t.end.has_value());
  CHECK(t.end->how == 1);  // exit() or main returning
  CHECK(t.end->exit_code == exit_code);
}

std::vector<std::string> CallNames(const std::vector<ncclwatch::decoder::ApiEvent>& apis) {
  std::vector<std::string> names;
  for (const auto& a : apis) names.push_back(ncclwatch::decoder::CallName(a.call));
  return names;
}

// `output` without its lines that start with `prefix`; the first such line
// (without the prefix) in *line when it is given.
std::string WithoutLine(const std::string& output, const std::string& prefix,
                        std::string* line = nullptr) {
  std::istringstream in(output);
  std::string out, l;
  while (std::getline(in, l)) {
    if (l.rfind(prefix, 0) == 0) {
      if (line != nullptr && line->empty()) *line = l.substr(prefix.size());
      continue;
    }
    out += l + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("results, outputs and errno are the same with and without the shim", "[preload]") {
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"api"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult traced = RunProbe({"api"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(plain.exit_code == 0);
  CHECK(traced.exit_code == 0);
  CHECK(traced.output == plain.output);
  CHECK(plain.output.find("-> 5 errno=4242") != std::string::npos);  // ncclGroupEnd outside a group
  const ProcessTrace t = OnlyTrace(dir.path());
  // The AllReduce on a NULL communicator, the good AllReduce, and the
  // Broadcast NCCL refused (root 3): all recorded, with NCCL's results.
  REQUIRE(t.collectives.size() == 3);
  CHECK(t.collectives[0].result == 4);
  CHECK(t.collectives[0].comm == 0);
  CHECK(t.collectives[1].result == 0);
  CHECK(t.collectives[2].result == 4);
  CHECK(t.p2p.size() == 2);
}

TEST_CASE(
    "the libc calls the shim interposes: same results and errno, and none recorded when not NCCL's",
    "[preload][libc]") {
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"libc"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult traced = RunProbe({"libc"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(plain.exit_code == 0);
  CHECK(traced.output == plain.output);
  CHECK(plain.output.find("errno=111") != std::string::npos);       // the refused connect
  CHECK(plain.output.find("-> -1 errno=17") != std::string::npos);  // shm_open O_EXCL
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  CHECK(CallNames(t.apis) == std::vector<std::string>{"ncclGetUniqueId"});
  // Only NCCL's calls (its bootstrap's interfaces and listening socket) are
  // recorded, none of the program's own, failed or not, before it.
  std::set<std::string> kinds;
  for (const auto& c : t.syscalls) {
    const std::string kind = ncclwatch::decoder::SysCallName(c.kind);
    INFO(kind << " " << c.path);
    kinds.insert(kind);
    CHECK(c.from_nccl);
    CHECK(ncclwatch::decoder::CallName(c.in_call) == "ncclGetUniqueId");
    CHECK(c.err == 0);
  }
  CHECK(kinds == std::set<std::string>{"getifaddrs", "bind", "listen"});
}

TEST_CASE("real NCCL under the shim: the same results, and the failures are traced",
          "[preload][real-nccl]") {
  // Real NCCL on this machine goes as far as its bootstrap.
  jobs::TempDir dir;
  for (const std::string ifname : {"nosuchif", "lo"}) {
    const std::vector<std::string> env = {"LD_LIBRARY_PATH", "NCCL_SOCKET_IFNAME=" + ifname};
    std::vector<std::string> traced_env = env;
    traced_env.push_back("LD_PRELOAD=" + jobs::ShimPath());
    traced_env.push_back("NCCLWATCH_DIR=" + dir.path());
    const jobs::RankResult plain = RunProbe({}, env, "uniqueid_probe");
    const jobs::RankResult traced = RunProbe({}, traced_env, "uniqueid_probe");
    INFO(ifname << "\nwithout:\n" << plain.output << "with:\n" << traced.output);
    CHECK(traced.output == plain.output);
  }
  REQUIRE(TraceFiles(dir.path()).size() == 2);
  for (const std::string& f : TraceFiles(dir.path())) {
    auto t = LoadProcessTrace(f);
    REQUIRE(t.ok());
    REQUIRE(t->apis.size() == 1);
    CHECK(ncclwatch::decoder::CallName(t->apis[0].call) == "ncclGetUniqueId");
    CHECK((t->apis[0].result == 0 ||
           t->apis[0].result == 5));  // success, or "no socket interface found"
  }
}

TEST_CASE("the inventory records no secret: not the variables, not inside a value",
          "[preload][env]") {
  jobs::TempDir dir;
  const std::string secret = "s3cr3t-4a7f";
  const jobs::RankResult r = RunProbe(
      {"api", "--password", secret, "--nnodes", "2", "--db=https://u:" + secret + "@h/x",
       "token=" + secret},
      Traced(dir.path(), {"SLURM_JWT=" + secret, "FI_PSK=" + secret, "NCCL_IB_PASSPHRASE=" + secret,
                          "OMPI_MCA_orte_precondition_transports=" + secret,
                          "MASTER_ADDR=https://user:" + secret + "@host",
                          "SLURM_JOB_COMMENT=run 7 token=" + secret,
                          "NCCL_COMM_ID=user:" + secret + "@10.0.0.1:29500", "NCCL_IB_PKEY=0x8001",
                          "NCCL_SOCKET_IFNAME=lo",
                          // Each form a credential took that an earlier filter kept.
                          "NCCL_TEST_URL=https://user:pa;" + secret + "@host",
                          "NCCL_TEST_URL2=https://user:pa," + secret + "@host/x",
                          "TORCHELASTIC_RUN_ID=token=" + secret, "NCCL_TEST_OPTS=pw=" + secret,
                          "NCCL_TEST_ARGS=--password " + secret + " --port 1",
                          "NCCL_TEST_JSON={\"token\": \"" + secret + "\"}",
                          "NCCL_TEST_SAS=https://a.blob.core.windows.net/c?sv=1&sig=" + secret,
                          "NCCL_CREDS=" + secret}));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.inventory.present);
  CHECK(*t.inventory.Env("NCCL_IB_PKEY") == "0x8001");
  CHECK(*t.inventory.Env("NCCL_SOCKET_IFNAME") == "lo");
  CHECK(*t.inventory.Env("MASTER_ADDR") == "https://<redacted>@host");
  CHECK(*t.inventory.Env("NCCL_COMM_ID") == "<redacted>@10.0.0.1:29500");
  CHECK(*t.inventory.Env("NCCL_TEST_URL") == "https://<redacted>@host");
  CHECK(*t.inventory.Env("NCCL_TEST_URL2") == "https://<redacted>@host/x");
  CHECK(*t.inventory.Env("TORCHELASTIC_RUN_ID") == "token=<redacted>");
  CHECK(t.job_id == "token=<redacted>");
  CHECK(*t.inventory.Env("NCCL_TEST_OPTS") == "pw=<redacted>");
  CHECK(*t.inventory.Env("NCCL_TEST_ARGS") == "--password <redacted> --port 1");
  CHECK(*t.inventory.Env("NCCL_TEST_JSON") == "{\"token\": \"<redacted>\"}");
  CHECK(*t.inventory.Env("NCCL_TEST_SAS") ==
        "https://a.blob.core.windows.net/c?sv=1&sig=<redacted>");
  // The command line, its options kept (a launcher's settings), the
  // credentials among them not.
  CHECK(t.inventory.command_line ==
        jobs::BinDir() +
            "/preload_probe api --password <redacted> --nnodes 2 --db=https://<redacted>@h/x "
            "token=<redacted>");
  for (const char* name :
       {"SLURM_JWT", "FI_PSK", "NCCL_IB_PASSPHRASE", "OMPI_MCA_orte_precondition_transports",
        "SLURM_JOB_COMMENT", "NCCL_CREDS"}) {
    INFO(name);
    CHECK(t.inventory.Env(name) == nullptr);
  }
  // Nowhere in the file, in any record.
  std::ifstream in(TraceFiles(dir.path())[0], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(bytes.find(secret) == std::string::npos);
}

TEST_CASE("NCCLWATCH=0 is a pure pass-through: no file at all", "[preload]") {
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"api"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult off = RunProbe({"api"}, Traced(dir.path(), {"NCCLWATCH=0"}));
  CHECK(off.output == plain.output);
  CHECK(TraceFiles(dir.path()).empty());
  // The same run without NCCLWATCH=0 is traced: the variable made the difference.
  jobs::TempDir on_dir;
  const jobs::RankResult on = RunProbe({"api"}, Traced(on_dir.path()));
  CHECK(on.output == plain.output);
  const ProcessTrace t = OnlyTrace(on_dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  CHECK(t.collectives.size() == 3);
}

TEST_CASE("a process that never calls NCCL leaves no file, even at exit or killed",
          "[preload][lazy]") {
  jobs::TempDir dir;
  jobs::JobSpec spec;
  spec.argv = {"/bin/true"};
  spec.env = Traced(dir.path());
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  CHECK(r.ranks.at(0).exit_code == 0);
  // A shell (fork, exec, signals), a program dying of a signal, a program
  // exiting non-zero: none of them touched NCCL.
  spec.argv = {"/bin/sh", "-c", "/bin/true; /bin/false; exit 3"};
  r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  CHECK(r.ranks.at(0).exit_code == 3);
  spec.argv = {"/bin/sh", "-c", "kill -SEGV $$"};
  r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  CHECK(r.ranks.at(0).signal == SIGSEGV);
  CHECK(TraceFiles(dir.path()).empty());
  // The same preload on a program that calls NCCL once, at its end, is traced.
  const jobs::RankResult traced = RunProbe({"chain"}, Traced(dir.path()));
  CHECK(traced.exit_code == 0);
  CheckTracedStartToExit(OnlyTrace(dir.path()), "preload_probe");
}

TEST_CASE("a folder that cannot be used: one warning line, the job runs untraced", "[preload]") {
  const jobs::RankResult plain = RunProbe({"api"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult r = RunProbe({"api"}, Traced("/proc/ncclwatch-cannot-be-here"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const std::string warning = r.output.substr(0, r.output.find('\n') + 1);
  CHECK(warning.rfind(
            "ncclwatch: not tracing this process: cannot create /proc/ncclwatch-cannot-be-here",
            0) == 0);
  CHECK(r.output.substr(warning.size()) == plain.output);
}

TEST_CASE(
    "a file-size limit below the trace file: no SIGXFSZ, the program runs as without the shim",
    "[preload][rlimit]") {
  // ulimit -f once made the ring's preallocation raise SIGXFSZ: a job that
  // runs fine untraced died with exit 153 under the shim. The probe's dlvsym
  // mode: the simulated device memory is a 64 GiB memfd, which such a limit
  // refuses with or without the shim.
  constexpr long long kMiB = 1 << 20;
  const jobs::RankResult plain =
      RunProbe({"dlvsym"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()}, "preload_probe", kMiB);
  REQUIRE(plain.exited);
  REQUIRE(plain.exit_code == 0);

  SECTION("room for a smaller ring: traced into it, after one line") {
    jobs::TempDir dir;
    const jobs::RankResult r = RunProbe({"dlvsym"}, Traced(dir.path()), "preload_probe", kMiB);
    INFO(r.output);
    CHECK(r.exited);
    CHECK(r.signal == 0);
    CHECK(r.exit_code == plain.exit_code);
    const std::string warning = r.output.substr(0, r.output.find('\n') + 1);
    CHECK(warning.rfind("ncclwatch: the file-size limit (ulimit -f) of 1048576 bytes", 0) == 0);
    CHECK(r.output.substr(warning.size()) == plain.output);
    const ProcessTrace t = OnlyTrace(dir.path());
    CheckTracedStartToExit(t, "preload_probe");
    CHECK(fs::file_size(TraceFiles(dir.path())[0]) <= static_cast<uintmax_t>(kMiB));
  }
  SECTION("no room for the smallest file: untraced, after one line") {
    constexpr long long kLimit = 64 << 10;
    const jobs::RankResult small_plain =
        RunProbe({"dlvsym"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()}, "preload_probe", kLimit);
    jobs::TempDir dir;
    const jobs::RankResult r = RunProbe({"dlvsym"}, Traced(dir.path()), "preload_probe", kLimit);
    INFO(r.output);
    CHECK(r.exited);
    CHECK(r.signal == 0);
    CHECK(r.exit_code == small_plain.exit_code);
    const std::string warning = r.output.substr(0, r.output.find('\n') + 1);
    CHECK(warning.rfind("ncclwatch: not tracing this process: the file-size limit (ulimit -f) of "
                        "65536 bytes is below the smallest trace file",
                        0) == 0);
    CHECK(r.output.substr(warning.size()) == small_plain.output);
    CHECK(TraceFiles(dir.path()).empty());
  }
}

TEST_CASE("the program's own signal handler still runs, and the signal is recorded",
          "[preload][signals]") {
  jobs::TempDir dir;
  const jobs::RankResult r = RunProbe({"handler"}, Traced(dir.path()));
  INFO(r.output);
  CHECK(r.exit_code == 7);
  CHECK(r.output.find("the program's own handler ran") != std::string::npos);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.signals.size() == 1);
  CHECK(t.signals[0].signo == SIGTERM);
  CHECK(t.signals[0].disposition == 2);
}

TEST_CASE("sigaction and signal report the program's handlers as it installed them",
          "[preload][signals]") {
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"chain"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult traced = RunProbe({"chain"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(traced.output == plain.output);
  CHECK(plain.output.find("the previous one was A") != std::string::npos);
  CHECK(plain.output.find("SA_RESTART kept") != std::string::npos);
  // The shim was there, its handlers in front, and no signal was raised.
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  CHECK(t.signals.empty());
}

TEST_CASE("a vfork child that resets its handlers before exec leaves the parent's in place",
          "[preload][signals]") {
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"vfork"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult traced = RunProbe({"vfork"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(plain.output.find("handlers ran: SIGINT yes, SIGTERM yes") != std::string::npos);
  CHECK(traced.output == plain.output);
  CHECK(traced.exit_code == 0);
  // Traced to a clean exit, and both signals went to the program's handler.
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  REQUIRE(t.signals.size() == 2);
  CHECK(t.signals[0].disposition == 2);
  CHECK(t.signals[1].disposition == 2);
}

// CPython 3.10+ runs a subprocess's child in vfork (import torch itself runs
// one): the parent's SIGINT handler, KeyboardInterrupt, must survive it.
TEST_CASE("a real CPython keeps its signal handlers after a subprocess", "[preload][signals]") {
  jobs::TempDir dir;
  if (RunProbe({"-c", "command -v python3"}, {}, "/bin/sh").exit_code != 0) {
    std::cout << "NCCLWATCH-SKIP: no python3 on PATH\n";
    return;
  }
  const std::string script =
      "import signal, subprocess, os, time\n"
      "signal.signal(signal.SIGINT, lambda *a: print('handler ran', flush=True))\n"
      "subprocess.run(['true'])\n"
      "os.kill(os.getpid(), signal.SIGINT)\n"
      "time.sleep(0.2)\n"
      "try:\n"
      "    signal.signal(signal.SIGINT, signal.default_int_handler)\n"
      "    subprocess.run(['true'])\n"
      "    os.kill(os.getpid(), signal.SIGINT)\n"
      "    time.sleep(0.2)\n"
      "except KeyboardInterrupt:\n"
      "    print('KeyboardInterrupt', flush=True)\n";
  const std::vector<std::string> args = {"-c", "exec python3 -c \"$0\"", script};
  const jobs::RankResult plain = RunProbe(args, {}, "/bin/sh");
  const jobs::RankResult traced = RunProbe(args, Traced(dir.path()), "/bin/sh");
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(plain.output == "handler ran\nKeyboardInterrupt\n");
  CHECK(traced.output == plain.output);
  CHECK(traced.exit_code == plain.exit_code);
  CHECK(traced.exit_code == 0);
}

TEST_CASE("an ignored signal stays ignored", "[preload][signals]") {
  jobs::TempDir dir;
  const jobs::RankResult r = RunProbe({"ignore"}, Traced(dir.path()));
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("survived an ignored SIGTERM") != std::string::npos);
  // Traced to the end; the ignored signal never reached a handler, so it is
  // not recorded as fatal.
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  CHECK(CallNames(t.apis) == std::vector<std::string>{"ncclGetUniqueId"});
  REQUIRE(t.comms.size() == 1);
  CHECK(t.comms[0].init_result == 0);
  CHECK(t.comms[0].nranks == 1);
  CHECK(t.signals.empty());
}

TEST_CASE("a crash still crashes, with the signal in the trace", "[preload][signals]") {
  jobs::TempDir dir;
  const jobs::RankResult r = RunProbe({"segv"}, Traced(dir.path()));
  CHECK(r.signal == SIGSEGV);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.signals.size() == 1);
  CHECK(t.signals[0].signo == SIGSEGV);
  CHECK(t.signals[0].code > 0);  // a fault, not a kill
  CHECK(t.signals[0].disposition == 0);
  CHECK_FALSE(t.end.has_value());
}

TEST_CASE("the trace survives SIGKILL", "[preload]") {
  jobs::TempDir dir;
  const jobs::RankResult r = RunProbe({"sigkill"}, Traced(dir.path()));
  CHECK(r.signal == SIGKILL);
  const ProcessTrace t = OnlyTrace(dir.path());
  CHECK(t.collectives.size() == 10);
  CHECK(t.collectives.back().seq == 9);
  CHECK(t.collectives.back().result == 0);
  CHECK(t.comms.size() == 1);
  CHECK_FALSE(t.end.has_value());
  CHECK(t.signals.empty());  // SIGKILL cannot be caught: the trace just stops
}

TEST_CASE("a forked child does not write its parent's trace: it gets its own", "[preload][fork]") {
  jobs::TempDir dir;
  const jobs::RankResult r = RunProbe({"fork"}, Traced(dir.path()));
  CHECK(r.exit_code == 0);
  const auto files = TraceFiles(dir.path());
  REQUIRE(files.size() == 2);
  std::map<size_t, ProcessTrace> by_calls;
  for (const std::string& f : files) {
    auto t = LoadProcessTrace(f);
    REQUIRE(t.ok());
    by_calls.emplace(t->apis.size(), *t);
  }
  // The parent's two ncclGetUniqueId calls in its file, the child's five in its own.
  REQUIRE(by_calls.count(2) == 1);
  REQUIRE(by_calls.count(5) == 1);
  const ProcessTrace& parent = by_calls.at(2);
  const ProcessTrace& child = by_calls.at(5);
  CHECK(parent.pid != child.pid);
  CheckTracedStartToExit(parent, "preload_probe");
  CHECK(child.has_start);
  CHECK_FALSE(child.modules.empty());
  CHECK(child.inventory.present);
  REQUIRE(child.end.has_value());
  CHECK(child.end->how == 2);  // _exit(0)
  CHECK(child.end->exit_code == 0);
}

TEST_CASE("ranks forked after the parent's first NCCL call are traced, each in its own file",
          "[preload][fork]") {
  // The children of a traced process stopped tracing for good: a launcher
  // that made the NCCL id and forked its ranks left their work unseen.
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"fork_ranks"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult r = RunProbe({"fork_ranks"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << r.output);
  CHECK(plain.output == "rank 0 exited 0\nrank 1 exited 0\n");
  CHECK(r.output == plain.output);
  REQUIRE(r.exit_code == 0);
  const auto files = TraceFiles(dir.path());
  REQUIRE(files.size() == 3);
  std::set<int> ranks;
  for (const std::string& f : files) {
    auto t = LoadProcessTrace(f);
    REQUIRE(t.ok());
    INFO(f);
    REQUIRE(t->end.has_value());
    CHECK(t->end->exit_code == 0);
    if (t->comms.empty()) {  // the parent: the id only
      CHECK(CallNames(t->apis) == std::vector<std::string>{"ncclGetUniqueId"});
      continue;
    }
    ranks.insert(t->global_rank);
    REQUIRE(t->comms.size() == 1);
    CHECK(t->comms[0].nranks == 2);
    CHECK(t->collectives.size() == 10);
    CHECK(t->collectives.back().seq == 9);
    REQUIRE(t->tracking.size() == 1);
    CHECK(t->tracking[0].Tracked());
  }
  CHECK(ranks == std::set<int>{0, 1});
  jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  INFO(d.output);
  CHECK(d.verdict == "healthy");
}

TEST_CASE("threads calling NCCL at once: every call recorded, numbered per communicator rank",
          "[preload]") {
  jobs::TempDir dir;
  const jobs::RankResult r = RunProbe({"threads"}, Traced(dir.path()));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.collectives.size() == 400);
  std::map<int, std::vector<uint64_t>> seqs;
  std::set<uint32_t> threads;
  for (const auto& c : t.collectives) {
    seqs[c.rank].push_back(c.seq);
    threads.insert(c.thread);
    CHECK(c.result == 0);
  }
  REQUIRE(seqs.size() == 4);
  for (auto& [rank, s] : seqs) {
    INFO("rank " << rank);
    REQUIRE(s.size() == 100);
    for (size_t i = 0; i < s.size(); ++i) CHECK(s[i] == i);
  }
  CHECK(threads.size() == 4);
  // The job is healthy: one process, four ranks of one communicator.
  jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  CHECK(d.verdict == "healthy");
}

TEST_CASE("a call from another library's constructor is traced", "[preload]") {
  jobs::TempDir dir;
  const jobs::RankResult r = RunProbe({}, Traced(dir.path()), "early_caller_main");
  INFO(r.output);
  CHECK(r.output.find("early ncclGetUniqueId returned 0") != std::string::npos);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.apis.size() == 1);
  CHECK(t.has_start);
}

TEST_CASE("NCCL loaded in a local scope (a Python extension's) is found and traced", "[preload]") {
  jobs::TempDir dir;
  const jobs::RankResult plain =
      RunProbe({}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()}, "local_scope_main");
  const jobs::RankResult traced = RunProbe({}, Traced(dir.path()), "local_scope_main");
  INFO(plain.output << "\n---\n" << traced.output);
  CHECK(plain.output.find("plugin result 0 version " +
                          std::to_string(NCCLWATCH_NCCL_HEADER_VERSION)) != std::string::npos);
  CHECK(traced.output == plain.output);
  CHECK(traced.exit_code == 0);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.apis.size() == 2);  // ncclGetVersion (pinned, once per process), ncclGetUniqueId
  std::set<std::string> calls;
  for (const auto& a : t.apis) {
    calls.insert(ncclwatch::decoder::CallName(a.call));
    CHECK(a.result == 0);
  }
  CHECK(calls == std::set<std::string>{"ncclGetUniqueId", "ncclGetVersion"});
  CHECK(t.nccl_version == NCCLWATCH_NCCL_HEADER_VERSION);
}

TEST_CASE("dlopen under the shim searches the caller's RUNPATH, as without it",
          "[preload][dlopen]") {
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({}, {}, "dlopen_origin_main");
  const jobs::RankResult traced = RunProbe({}, Traced(dir.path()), "dlopen_origin_main");
  INFO(plain.output << "\n---\n" << traced.output);
  CHECK(plain.output.find("sibling answered 42") != std::string::npos);
  CHECK(traced.output == plain.output);
  // The program never calls NCCL: no trace file.
  CHECK(TraceFiles(dir.path()).empty());
}

TEST_CASE("dlvsym under the shim answers as without it, whoever asks", "[preload][dlopen]") {
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"dlvsym"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult traced = RunProbe({"dlvsym"}, Traced(dir.path()));
  INFO(plain.output << "\n---\n" << traced.output);
  CHECK(plain.output.find("RTLD_DEFAULT getpid is getpid: 1") != std::string::npos);
  CHECK(plain.output.find("handle wrong version found: 0") != std::string::npos);
  CHECK(traced.output == plain.output);
  // The shim traced the process; a lookup that is not NCCL's (nor of a verbs
  // function) is not recorded.
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  CHECK(t.syscalls.empty());
}

TEST_CASE("real NCCL's dlopen of a plugin that is not there is noted, and seen not to load",
          "[preload][dlopen][real-nccl]") {
  jobs::TempDir dir;
  const jobs::RankResult r = RunProbe(
      {}, {"LD_LIBRARY_PATH", "LD_PRELOAD=" + jobs::ShimPath(), "NCCLWATCH_DIR=" + dir.path()},
      "uniqueid_probe");
  INFO(r.output);
  const ProcessTrace t = OnlyTrace(dir.path());
  bool env_plugin = false;
  for (const auto& c : t.syscalls) {
    if (ncclwatch::decoder::SysCallName(c.kind) != "dlopen" || c.path != "libnccl-env.so") continue;
    env_plugin = true;
    CHECK(c.from_nccl);
    CHECK(ncclwatch::decoder::CallName(c.in_call) == "ncclGetUniqueId");
    CHECK_FALSE(t.Loaded(c.path));
  }
  CHECK(env_plugin);
  CHECK(t.Loaded("libnccl.so.2"));
}

TEST_CASE("the shim needs only glibc and exports only what it intercepts", "[preload][abi]") {
  jobs::JobSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "readelf -d " + jobs::ShimPath() + " | grep NEEDED; nm -D --defined-only " +
                   jobs::ShimPath() + " | awk '{print $3}'"};
  jobs::JobResult r = jobs::RunJob(spec);
  const std::string& out = r.ranks.at(0).output;
  INFO(out);
  CHECK(out.find("[libc.so.6]") != std::string::npos);
  std::istringstream lines(out);
  std::string line;
  int exported = 0;
  int cuda_exports = 0;
  while (std::getline(lines, line)) {
    if (line.find("NEEDED") != std::string::npos) {
      CHECK(line.find("[libc.so.6]") !=
            std::string::npos);  // nothing else: no libstdc++, protobuf, abseil
      continue;
    }
    if (line.empty()) continue;
    ++exported;
    static const std::set<std::string> kLibc = {"sigaction",
                                                "signal",
                                                "exit",
                                                "_exit",
                                                "_Exit",
                                                "quick_exit",
                                                "execve",
                                                "execv",
                                                "execvp",
                                                "execvpe",
                                                "execl",
                                                "execlp",
                                                "execle",
                                                "fexecve",  // process
                                                "socket",
                                                "bind",
                                                "listen",
                                                "connect",
                                                "accept",
                                                "accept4",
                                                "setsockopt",
                                                "getsockopt",  // a rendezvous connect's outcome
                                                "getifaddrs",  // sockets
                                                "shm_open",
                                                "open",
                                                "open64",
                                                "mkstemp",
                                                "unlink",
                                                "fallocate",
                                                "fallocate64",
                                                "posix_fallocate",  // /dev/shm
                                                "posix_fallocate64",
                                                "ftruncate",
                                                "ftruncate64",
                                                "mmap",
                                                "mmap64",
                                                "dlopen",
                                                "dlsym",
                                                "dlvsym"};
    // The CUDA memory-sharing functions a program calls directly, and the
    // driver lookups whose results are wrapped (interpose/cuda_hooks.cc).
    static const std::set<std::string> kCuda = {
        "cudaIpcGetMemHandle",     "cudaIpcOpenMemHandle",    "cudaIpcCloseMemHandle",
        "cudaIpcGetEventHandle",   "cudaIpcOpenEventHandle",  "cudaDeviceEnablePeerAccess",
        "cudaDeviceCanAccessPeer", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion",
        "cuGetProcAddress",        "cuGetProcAddress_v2"};
    if (kCuda.count(line) == 1) ++cuda_exports;
    const bool intercepted = line.rfind("nccl", 0) == 0 || line.rfind("pnccl", 0) == 0 ||
                             kLibc.count(line) == 1 || kCuda.count(line) == 1;
    INFO(line);
    CHECK(intercepted);
  }
  CHECK(cuda_exports == 11);
  CHECK(exported == 2 * kWrapped + 39 + cuda_exports);
}

TEST_CASE("an operation issued under CUDA graph capture gets no completion marker", "[preload]") {
  jobs::TempDir dir;
  // No LD_LIBRARY_PATH: the probe's RUNPATH finds the do-nothing NCCL.
  const jobs::RankResult r = RunProbe({CUDA_NOOP_PATH},
                                      {"LD_PRELOAD=" + jobs::ShimPath(),
                                       "NCCLWATCH_DIR=" + dir.path(), "CUDA_NOOP_CAPTURING=0x1000"},
                                      "capture_probe");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.tracking.size() == 1);
  CHECK(t.tracking[0].Tracked());
  // AllReduce #0 on the capturing stream: recorded as captured, no marker.
  REQUIRE(t.untracked.size() == 1);
  CHECK(t.untracked[0].seq == 0);
  CHECK(t.untracked[0].reason == ncclwatch::fields::untracked::kCaptured);
  // AllReduce #1 on an ordinary stream: its marker completed (by the
  // destroy's last query at the latest).
  const auto* p = t.LastProgress(t.tracking[0].comm);
  REQUIRE(p != nullptr);
  CHECK(p->collectives == 2);
  CHECK(p->pending == 0);
}

// Harm to the job (issue 26): each case the same with and without the shim.

TEST_CASE("a signal handler that calls NCCL during the process's first NCCL call does not hang",
          "[preload][signals][harm]") {
  // The shim made the trace file in that first call and waited there for
  // itself: the handler, on the same thread, spun forever. A large ring
  // made the first call long enough for the 100 us timer to fire in it.
  // Now a program linked with NCCL has its file made when the shim finds
  // NCCL loaded, before main (ProcessStart.traced_from NCCL_LOADED), and the
  // first call only marks the process as calling NCCL: the handler's calls
  // may or may not land inside it, and neither may hang nor change a result.
  const std::string kOverlap = "handler calls during the first call: ";
  const jobs::RankResult plain = RunProbe({"timer"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  REQUIRE(plain.exit_code == 0);
  int overlapped = 0;
  for (int attempt = 0; attempt < 2 && overlapped == 0; ++attempt) {
    jobs::TempDir dir;
    const jobs::RankResult traced =
        RunProbe({"timer"}, Traced(dir.path(), {"NCCLWATCH_RING_SIZE=256M"}));
    INFO("without:\n" << plain.output << "with:\n" << traced.output);
    REQUIRE(traced.exited);
    REQUIRE_FALSE(traced.killed_at_timeout);
    CHECK(traced.exit_code == 0);
    std::string count;
    CHECK(WithoutLine(traced.output, kOverlap, &count) == WithoutLine(plain.output, kOverlap));
    overlapped = std::stoi(count);
    // Traced: the first call's record; the handler's calls during it went untraced.
    const ProcessTrace t = OnlyTrace(dir.path());
    CheckTracedStartToExit(t, "preload_probe");
    CHECK(t.nccl_version == NCCLWATCH_NCCL_HEADER_VERSION);
    CHECK(t.traced_from == 1);  // made at NCCL's load, not in the first call
    CHECK(!t.apis.empty());     // the first call's record
  }
}

TEST_CASE(
    "a signal handler that calls NCCL at every instruction of the hot path: no wait, every "
    "call recorded once",
    "[preload][signals][harm]") {
  // step_probe single-steps an AllReduce, a group with a Send, a query, a
  // failing open, a socket, and a communicator's init and destroy (and with
  // --from-start the process's first NCCL call); after each instruction of
  // the shim its SIGTRAP handler calls ncclGetVersion,
  // ncclCommGetAsyncError, an AllReduce of its own and a failing open. A
  // hot path that waits on its own thread's half-made state hangs here
  // (tracer.cc's claim of the file's making did, tracer_signal_test); one
  // that loses, doubles or tears a record shows in the numbers below.
  const std::string kStepped = "stepped: ";
  for (const std::string mode : {"", "--from-start"}) {
    DYNAMIC_SECTION("step_probe " << mode) {
      std::vector<std::string> args = {CUDA_NOOP_PATH};
      if (!mode.empty()) args.push_back(mode);
      const jobs::RankResult plain = RunProbe(args, {}, "step_probe");
      REQUIRE(plain.exit_code == 0);
      jobs::TempDir dir;
      const jobs::RankResult traced = RunProbe(
          args, {"LD_PRELOAD=" + jobs::ShimPath(), "NCCLWATCH_DIR=" + dir.path()}, "step_probe");
      INFO("without:\n" << plain.output << "with:\n" << traced.output);
      REQUIRE(traced.exited);
      REQUIRE_FALSE(traced.killed_at_timeout);
      CHECK(traced.exit_code == 0);
      std::string stepped;
      CHECK(WithoutLine(traced.output, kStepped, &stepped) == WithoutLine(plain.output, kStepped));
      CHECK(WithoutLine(plain.output, kStepped) == "step_probe: 0 failures, 0 in the handler\n");
      long steps = 0, inside = 0, nested = 0, reduces = 0, loader = -1;
      REQUIRE(std::sscanf(stepped.c_str(),
                          "%ld instructions, %ld in the hooks' module, %ld calls from the handler, "
                          "%ld AllReduces, %ld in the loader",
                          &steps, &inside, &nested, &reduces, &loader) == 5);
      CHECK(inside > 5000);  // the shim's hooks, stepped through
      CHECK(reduces > 5000);
      CHECK(nested > 3 * inside);
      // The shim looked glibc's listen up before main: its first call never
      // enters the loader (it did, and the handler's first accept4 there
      // failed with ENOSYS, counted in the failures above).
      CHECK(loader == 0);

      const ProcessTrace t = OnlyTrace(dir.path());
      CheckTracedStartToExit(t, "step_probe");
      CHECK(t.stats.torn_slots == 0);
      CHECK(t.stats.ring_overwritten == 0);
      CHECK(t.unparsed_records == 0);
      // Three communicators: the stepped calls', the handler's, and the one
      // made and destroyed while stepped.
      std::map<uint64_t, std::vector<uint64_t>> seqs;
      for (const auto& c : t.collectives) seqs[c.comm].push_back(c.seq);
      std::set<uint64_t> comms;
      for (const auto& m : t.comms) comms.insert(m.comm);
      CHECK(comms.size() == 3);
      REQUIRE(seqs.size() == 2);
      std::vector<uint64_t> handler, stepped_comm;
      for (auto& [comm, s] : seqs) (s.size() > 2 ? handler : stepped_comm) = s;
      // The stepped AllReduce, after its warm-up: #0 and #1.
      CHECK(stepped_comm == std::vector<uint64_t>{0, 1});
      // The handler's: the program's one, then one at each of the shim's
      // instructions once its communicator was made, each numbered once, in
      // order.
      REQUIRE(handler.size() == static_cast<size_t>(1 + reduces));
      size_t in_order = 0;
      while (in_order < handler.size() && handler[in_order] == in_order) ++in_order;
      CHECK(in_order == handler.size());
      std::vector<uint64_t> sends;
      for (const auto& p : t.p2p) sends.push_back(p.seq);
      CHECK(sends == std::vector<uint64_t>{0, 1});
      CHECK(t.groups.size() == 4);
    }
  }
}

TEST_CASE(
    "a signal handler at every instruction of the shim's dlopen hook: its NCCL call and its "
    "exit() never wait",
    "[preload][signals][harm]") {
  // dlopen_step_probe single-steps a program's dlopen of NCCL (a framework's
  // way). The shim's hook looks at the modules and updates its exports
  // under locks of its own; a handler that came back to them on the same
  // thread spun there forever: an NCCL call (the first, which resolves
  // NCCL's functions and so updates the exports) at any instruction of the
  // update, and an exit() (a SIGTERM handler's) at any of the look's.
  const std::string kStepped = "stepped: ";
  const jobs::RankResult plain = RunProbe({NCCL_NOOP_PATH}, {}, "dlopen_step_probe");
  REQUIRE(plain.exit_code == 0);
  CHECK(WithoutLine(plain.output, kStepped) ==
        "dlopen_step_probe: NCCL loaded, ncclGetVersion -> 0\n");
  jobs::TempDir dir;
  const std::vector<std::string> env = {"LD_PRELOAD=" + jobs::ShimPath(),
                                        "NCCLWATCH_DIR=" + dir.path()};
  const jobs::RankResult traced = RunProbe({NCCL_NOOP_PATH}, env, "dlopen_step_probe");
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  REQUIRE(traced.exited);
  REQUIRE_FALSE(traced.killed_at_timeout);
  CHECK(traced.exit_code == 0);
  // The handler's calls before NCCL is mapped get the shim's answer (a
  // program without the shim finds no ncclGetVersion to call), said once.
  const std::string kNoNccl = "ncclwatch: ncclGetVersion: no NCCL library provides it";
  std::string stepped, said;
  CHECK(WithoutLine(WithoutLine(traced.output, kNoNccl, &said), kStepped, &stepped) ==
        WithoutLine(plain.output, kStepped));
  CHECK(said == "; returning ncclSystemError (said once)");
  long steps = 0, inside = 0, calls = 0;
  REQUIRE(std::sscanf(stepped.c_str(),
                      "%ld instructions, %ld in the hooks' module, %ld calls from the handler",
                      &steps, &inside, &calls) == 3);
  // The shim's hook, stepped through: its look at the modules loaded before
  // and its update of the exports (~540 instructions).
  CHECK(inside > 300);
  CHECK(calls == inside);
  // exit() from the handler at 24 instructions spread over the hook.
  constexpr long kPoints = 24;
  for (long k = 0; k < kPoints; ++k) {
    const long at = k * inside / kPoints + k % 7;
    jobs::TempDir exit_dir;
    const jobs::RankResult exited =
        RunProbe({NCCL_NOOP_PATH, "--exit-at", std::to_string(at)},
                 {"LD_PRELOAD=" + jobs::ShimPath(), "NCCLWATCH_DIR=" + exit_dir.path()},
                 "dlopen_step_probe");
    INFO("exit() at the shim's instruction " << at << " of " << inside << ":\n" << exited.output);
    REQUIRE(exited.exited);
    REQUIRE_FALSE(exited.killed_at_timeout);
    CHECK(exited.exit_code == 7);
  }
}

TEST_CASE(
    "a fork on another thread while a thread is in the shim's dlopen hook: the child's dlopen "
    "never waits",
    "[preload][fork][harm]") {
  // The hook walks the modules under the loader's lock (dl_iterate_phdr),
  // which glibc does not let go in a child forked while another thread
  // held it: the child's first dlopen waited forever (a DataLoader's worker
  // forked while the main thread loaded a library). A fork now waits for
  // the shim's walk to end. dlopen_step_probe has another thread fork at
  // one of the hook's instructions and its child dlopen NCCL.
  const jobs::RankResult plain =
      RunProbe({NCCL_NOOP_PATH, "--fork-at", "100"}, {}, "dlopen_step_probe");
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.output.find("the child forked at 100 loaded NCCL and exited") != std::string::npos);
  constexpr long kPoints = 24, kHookInstructions = 540;  // the test above counts them
  for (long k = 0; k < kPoints; ++k) {
    const long at = k * kHookInstructions / kPoints + k % 7;
    jobs::TempDir dir;
    const jobs::RankResult forked = RunProbe(
        {NCCL_NOOP_PATH, "--fork-at", std::to_string(at)},
        {"LD_PRELOAD=" + jobs::ShimPath(), "NCCLWATCH_DIR=" + dir.path()}, "dlopen_step_probe");
    INFO("fork at the shim's instruction " << at << ":\n" << forked.output);
    REQUIRE(forked.exited);
    REQUIRE_FALSE(forked.killed_at_timeout);
    CHECK(forked.exit_code == 0);
    CHECK(forked.output.find("the child forked at " + std::to_string(at) +
                             " loaded NCCL and exited") != std::string::npos);
  }
}

TEST_CASE("a trace file truncated while the job runs does not kill the job", "[preload][harm]") {
  // The writer's stores past the file's new end raised SIGBUS (exit 135).
  const std::string kCut = "trace files truncated: ";
  const jobs::RankResult plain = RunProbe({"truncate"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  jobs::TempDir dir;
  const jobs::RankResult traced =
      RunProbe({"truncate"}, Traced(dir.path(), {"NCCLWATCH_HEARTBEAT_MS=10"}));
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(plain.exit_code == 0);
  CHECK(traced.signal == 0);
  CHECK(traced.exit_code == 0);
  std::string cut;
  CHECK(WithoutLine(traced.output, kCut, &cut) == WithoutLine(plain.output, kCut));
  CHECK(WithoutLine(plain.output, kCut) == "after the trace was cut: 0 failures\n");
  CHECK(cut == "1");  // the shim's file was there, and was cut
  REQUIRE(TraceFiles(dir.path()).size() == 1);
}

TEST_CASE("the program's handlers run on the stack it chose: no alternate stack forced on them",
          "[preload][signals][harm]") {
  // The shim added SA_ONSTACK to every handler it stands in front of: a
  // handler needing 64 KiB ran on the program's 16 KiB sigaltstack and
  // crashed into its guard page.
  const jobs::RankResult plain = RunProbe({"altstack"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  jobs::TempDir dir;
  const jobs::RankResult traced = RunProbe({"altstack"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(plain.output ==
        "the SIGTERM handler used 64 KiB of stack\n"
        "the SIGINT handler ran on the alternate stack: yes\n");
  CHECK(traced.output == plain.output);
  CHECK(traced.signal == 0);
  CHECK(traced.exit_code == 0);
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  REQUIRE(t.signals.size() == 2);  // both recorded, both went to the program's handlers
  CHECK(t.signals[0].disposition == 2);
  CHECK(t.signals[1].disposition == 2);
}

TEST_CASE("the first NCCL calls from a thread with a 16 KiB stack work under the shim",
          "[preload][harm]") {
  // The shim made the trace file, its inventory and module records with
  // their buffers on the calling thread's stack.
  const jobs::RankResult plain =
      RunProbe({"small_stack"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  jobs::TempDir dir;
  const jobs::RankResult traced = RunProbe({"small_stack"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(plain.output == "from a 16 KiB stack: ncclGetVersion -> 0 (" +
                            std::to_string(NCCLWATCH_NCCL_HEADER_VERSION) +
                            "), ncclGetUniqueId -> 0\n");
  CHECK(traced.output == plain.output);
  CHECK(traced.signal == 0);
  CHECK(traced.exit_code == 0);
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  CHECK(t.inventory.present);
  const auto names = CallNames(t.apis);
  CHECK(std::set<std::string>(names.begin(), names.end()) ==
        std::set<std::string>{"ncclGetVersion", "ncclGetUniqueId"});
}

// Lost data: what is evidence of NCCL's.

TEST_CASE(
    "a failed open of the program's own in a signal handler during a good NCCL init is "
    "not NCCL's: the job stays healthy",
    "[preload][libc]") {
  // Every failed libc call on a thread inside an NCCL init was recorded as
  // NCCL's: the program's timer handler's ENOENT made a healthy job
  // "init_failure (shm, ENOENT)".
  const std::string kRuns = "handler runs during an init: ";
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"init_timer"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult r = RunProbe({"init_timer"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << r.output);
  REQUIRE(r.exit_code == 0);
  std::string runs;
  CHECK(WithoutLine(r.output, kRuns, &runs) == WithoutLine(plain.output, kRuns));
  CHECK(WithoutLine(plain.output, kRuns) == "communicators made and destroyed, 0 failures\n");
  CHECK(std::stoi(runs) >= 3);  // the handler did fail its open inside inits
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  for (const auto& c : t.syscalls) {
    INFO(ncclwatch::decoder::SysCallName(c.kind) << " " << c.path << " err " << c.err);
    CHECK(c.path != "/dev/shm/ncclwatch-probe-missing");
  }
  jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  INFO(d.output);
  CHECK(d.verdict == "healthy");
  CHECK(d.First("init_failure") == nullptr);
}

TEST_CASE("a rank that makes its NCCL id before any CUDA call still has its GPU work tracked",
          "[preload][completion]") {
  // NCCL's one-device-per-process example: ncclGetUniqueId, then
  // cudaSetDevice. The shim looked for the CUDA driver once, at the id,
  // before the runtime had loaded it: rank 0 was never tracked ("no CUDA
  // driver loaded"), had no heartbeat and no stall watchdog.
  jobs::TempDir dir;
  jobs::JobSpec spec =
      jobs::TracedJobSpec(2, "train_loop", {"--steps", "6", "--id-before-cuda"}, dir.path());
  spec.env.push_back("NCCLWATCH_HEARTBEAT_MS=10");
  const jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());
  for (const jobs::RankResult& r : job.ranks) {
    INFO("rank " << r.rank << ":\n" << r.output);
    REQUIRE(r.exit_code == 0);
    auto t = LoadProcessTrace(jobs::TraceOf(dir.path(), r.rank));
    REQUIRE(t.ok());
    REQUIRE(t->tracking.size() == 1);
    INFO(t->tracking[0].why_not);
    CHECK(t->tracking[0].Tracked());
    CHECK(t->tracking[0].device == r.rank);
    CHECK(t->liveness.beats > 0);  // the watcher ran
    const auto* p = t->LastProgress(t->tracking[0].comm);
    REQUIRE(p != nullptr);
    CHECK(p->pending == 0);
    REQUIRE(t->comms.size() == 1);
    CHECK(t->comms[0].begin_device == r.rank);  // the init saw its GPU
  }
  jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  INFO(d.output);
  CHECK(d.verdict == "healthy");
}

TEST_CASE(
    "10,000 communicators made and destroyed: the shim's memory stays flat, every call "
    "numbered",
    "[preload][completion][harm]") {
  // Each communicator left its 1,024 CUDA events and a 56 KiB mapping
  // behind (and its registry entry: after the 4,096th at a new address,
  // calls went unnumbered).
  const std::string kGrowth = "growth after the first fifth: ";
  auto rss_growth = [&](const std::string& output) {
    std::string line;
    WithoutLine(output, kGrowth, &line);
    REQUIRE(line.rfind("rss ", 0) == 0);
    return std::stol(line.substr(4));
  };
  // 12 s with the shim on an idle machine, over 60 on a starved one; both
  // runs within ctest's 300 s.
  constexpr double kBound = 140;
  const jobs::RankResult plain =
      RunProbe({"comms", "10000", "destroy"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()},
               "preload_probe", -1, "", kBound);
  jobs::TempDir dir;
  // A ring that holds all their records (40 slots each).
  const jobs::RankResult traced =
      RunProbe({"comms", "10000", "destroy"}, Traced(dir.path(), {"NCCLWATCH_RING_SIZE=128M"}),
               "preload_probe", -1, "", kBound);
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  CHECK(WithoutLine(plain.output, kGrowth) == "10000 communicators, 0 failures\n");
  CHECK(WithoutLine(traced.output, kGrowth) == WithoutLine(plain.output, kGrowth));
  // The last 8,000 communicators' memory, with the shim and without: within
  // 8 MiB of each other (the leak was 56 KiB and 1,024 events for each).
  const long added = rss_growth(traced.output) - rss_growth(plain.output);
  INFO("the shim added " << added << " KiB over 8,000 communicators");
  CHECK(added < 8 * 1024);
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  REQUIRE(t.tracking.size() == 10000);
  for (const auto& k : t.tracking) CHECK(k.Tracked());
  // Every communicator's two AllReduces are numbered 0 and 1 on it, and
  // complete.
  std::map<uint64_t, std::vector<uint64_t>> seqs;
  for (const auto& c : t.collectives) seqs[c.comm].push_back(c.seq);
  CHECK(seqs.count(0) == 0);
  CHECK(seqs.size() == 10000);
  for (const auto& [comm, s] : seqs) {
    INFO(comm);
    CHECK(s == std::vector<uint64_t>{0, 1});
  }
  const auto* last = t.LastProgress(t.tracking.back().comm);
  REQUIRE(last != nullptr);
  CHECK(last->collectives == 2);
}

TEST_CASE("past 4,096 communicators alive at once, each call still names its communicator",
          "[preload][completion]") {
  // The registry had 4,096 entries: the rest's calls said comm 0, seq 0.
  jobs::TempDir dir;
  // In a network namespace of its own: 4,200 communicators' bootstrap
  // sockets (~27,000 at once, and as many in TIME_WAIT for a minute after)
  // would take this machine's ephemeral ports from the tests beside it,
  // whose binds then fail with EADDRINUSE.
  jobs::NetNamespace ns("splits");
  ns.AddInterface("eth0", "10.230.0.5/24");
  REQUIRE(ns.ok());
  const jobs::RankResult plain = RunProbe(
      {"splits", "4200"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()}, "preload_probe", -1, ns.name());
  const jobs::RankResult r =
      RunProbe({"splits", "4200"}, Traced(dir.path()), "preload_probe", -1, ns.name());
  INFO("without:\n" << plain.output << "with:\n" << r.output);
  CHECK(plain.output == "4200 splits alive at once, 0 failures\n");
  CHECK(r.output == plain.output);
  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  std::map<uint64_t, std::vector<uint64_t>> seqs;
  for (const auto& c : t.collectives) seqs[c.comm].push_back(c.seq);
  CHECK(seqs.count(0) == 0);
  CHECK(seqs.size() == 4200);
  for (const auto& [comm, s] : seqs) {
    INFO(comm);
    CHECK(s == std::vector<uint64_t>{0, 1});
  }
  // Tracked as far as the watcher goes (4,096 at once), the rest said so.
  size_t tracked = 0;
  for (const auto& k : t.tracking) {
    if (k.Tracked()) {
      ++tracked;
    } else {
      CHECK(k.why_not == "more than 4096 communicators tracked at once in this process");
    }
  }
  CHECK(tracked == 4096);
}

// How a process ends, when it is not by exit(): a vfork child's _exit, an
// exec, quick_exit.

TEST_CASE("a vfork child's _exit after a failed exec is not the parent's end", "[preload][exit]") {
  // Recorded as the traced parent's end: a job that exited 0 was
  // "rank_exit_error, code 127".
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"vfork_fail"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult r = RunProbe({"vfork_fail"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << r.output);
  CHECK(plain.output == "work done, 0 failures; the tool's child exited 127\n");
  CHECK(r.output == plain.output);
  CheckTracedStartToExit(OnlyTrace(dir.path()), "preload_probe", 0);
  jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  INFO(d.output);
  CHECK(d.verdict == "healthy");
}

TEST_CASE("a real CPython's subprocess of a missing tool is not the traced process's end",
          "[preload][exit]") {
  jobs::TempDir dir;
  if (RunProbe({"-c", "command -v python3"}, {}, "/bin/sh").exit_code != 0) {
    std::cout << "NCCLWATCH-SKIP: no python3 on PATH\n";
    return;
  }
  const std::string script =
      "import ctypes, subprocess\n"
      "nccl = ctypes.CDLL('libnccl.so.2')\n"
      "v = ctypes.c_int()\n"
      "print('ncclGetVersion ->', nccl.ncclGetVersion(ctypes.byref(v)), v.value, flush=True)\n"
      "try:\n"
      "    subprocess.run(['/nonexistent/ncclwatch-tool'])\n"
      "except FileNotFoundError:\n"
      "    print('no such tool', flush=True)\n";
  const std::vector<std::string> args = {"-c", "exec python3 -c \"$0\"", script};
  const jobs::RankResult plain =
      RunProbe(args, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()}, "/bin/sh");
  const jobs::RankResult r = RunProbe(args, Traced(dir.path()), "/bin/sh");
  INFO("without:\n" << plain.output << "with:\n" << r.output);
  CHECK(plain.output == "ncclGetVersion -> 0 " + std::to_string(NCCLWATCH_NCCL_HEADER_VERSION) +
                            "\nno such tool\n");
  CHECK(r.output == plain.output);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.end.has_value());
  CHECK(t.end->how == ncclwatch::fields::process_end::kHowExit);
  CHECK(t.end->exit_code == 0);
}

TEST_CASE("an exec after NCCL ends the trace as a handover, not as a death", "[preload][exit]") {
  // No end was recorded: the process was "killed".
  jobs::TempDir dir;
  const jobs::RankResult plain =
      RunProbe({"exec", "/bin/true"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult r = RunProbe({"exec", "/bin/true"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << r.output);
  CHECK(plain.output == "work done, 0 failures; exec /bin/true\n");
  CHECK(r.output == plain.output);
  CHECK(r.exit_code == 0);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.end.has_value());
  CHECK(t.end->how == ncclwatch::fields::process_end::kHowExec);
  CHECK(t.end->exit_code == 0);
  jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  INFO(d.output);
  CHECK(d.verdict == "healthy");
}

TEST_CASE("an exec that fails is no end: the process lives on, and its real end counts",
          "[preload][exit]") {
  const std::string missing = "/nonexistent/ncclwatch-next";
  {
    jobs::TempDir dir;  // it exits 0 after the failed exec
    const jobs::RankResult r = RunProbe({"exec", missing}, Traced(dir.path()));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    const ProcessTrace t = OnlyTrace(dir.path());
    REQUIRE(t.end.has_value());
    CHECK(t.end->how == ncclwatch::fields::process_end::kHowExit);
    CHECK(t.end->exit_code == 0);
  }
  {
    jobs::TempDir dir;  // it is killed after the failed exec: no end at all
    const jobs::RankResult r = RunProbe({"exec", missing, "kill"}, Traced(dir.path()));
    INFO(r.output);
    CHECK(r.signal == SIGKILL);
    const ProcessTrace t = OnlyTrace(dir.path());
    CHECK_FALSE(t.end.has_value());
  }
}

TEST_CASE("quick_exit after a clean destroy is a clean end", "[preload][exit]") {
  // glibc's quick_exit ends with an _exit of its own that no hook saw: no
  // end, "hang_unexplained: killed".
  jobs::TempDir dir;
  const jobs::RankResult plain = RunProbe({"quick_exit"}, {"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult r = RunProbe({"quick_exit"}, Traced(dir.path()));
  INFO("without:\n" << plain.output << "with:\n" << r.output);
  CHECK(r.output == plain.output);
  CHECK(r.exit_code == 0);
  const ProcessTrace t = OnlyTrace(dir.path());
  REQUIRE(t.end.has_value());
  CHECK(t.end->how == ncclwatch::fields::process_end::kHowQuickExit);
  CHECK(t.end->exit_code == 0);
  jobs::DiagnosisView d = jobs::Diagnose({dir.path()});
  INFO(d.output);
  CHECK(d.verdict == "healthy");
}

TEST_CASE("processes that never make a communicator keep small traces, and one that does grows its",
          "[preload][ring]") {
  // Every traced process preallocated the whole ring (16 MiB): 300 that
  // only asked NCCL's version wrote 4.8 GB.
  jobs::TempDir dir;
  jobs::JobSpec spec;
  spec.nranks = 16;
  spec.argv = {jobs::BinDir() + "/preload_probe", "chain"};  // ncclGetVersion only
  spec.env = Traced(dir.path());
  const jobs::JobResult job = jobs::RunJob(spec);
  REQUIRE(job.error.empty());
  for (const auto& rank : job.ranks) CHECK(rank.exit_code == 0);
  const auto files = TraceFiles(dir.path());
  REQUIRE(files.size() == 16);
  uintmax_t total = 0;
  for (const std::string& f : files) {
    total += fs::file_size(f);
    auto t = LoadProcessTrace(f);  // the small shape reads as any trace
    REQUIRE(t.ok());
    CheckTracedStartToExit(*t, "preload_probe");
    CHECK(t->nccl_version == NCCLWATCH_NCCL_HEADER_VERSION);
  }
  CHECK(total < 16u * (512u << 10));  // under 512 KiB each
  // A process with a communicator: the whole ring, read back whole.
  jobs::TempDir with_comm;
  const jobs::RankResult r = RunProbe({"api"}, Traced(with_comm.path()));
  REQUIRE(r.exit_code == 0);
  REQUIRE(TraceFiles(with_comm.path()).size() == 1);
  CHECK(fs::file_size(TraceFiles(with_comm.path())[0]) >= (16u << 20));
  const ProcessTrace t = OnlyTrace(with_comm.path());
  CheckTracedStartToExit(t, "preload_probe");
  CHECK(t.collectives.size() == 3);
  CHECK(t.stats.torn_slots == 0);
}

TEST_CASE("under umask 0777 the default trace folder is still made usable: the job is traced",
          "[preload][umask]") {
  // mkdir(0700) under umask 0777 made the folder 0000: a user's job ran
  // untraced. As user nobody (root writes in any folder).
  if (RunProbe({"-c", "command -v setpriv"}, {}, "/bin/sh").exit_code != 0) {
    std::cout << "NCCLWATCH-SKIP: no setpriv\n";
    return;
  }
  jobs::TempDir dir;
  const std::string tmp = dir.path() + "/tmp";  // a sticky TMPDIR, as /tmp is
  REQUIRE(chmod(dir.path().c_str(), 0755) == 0);
  REQUIRE(mkdir(tmp.c_str(), 0777) == 0);
  REQUIRE(chmod(tmp.c_str(), 01777) == 0);
  auto as_nobody = [&](const std::vector<std::string>& env) {
    std::string cmd = "umask 0777 && exec setpriv --reuid=65534 --regid=65534 --clear-groups env";
    for (const std::string& e : env) cmd += " '" + e + "'";
    cmd += " " + jobs::BinDir() + "/preload_probe chain";
    return RunProbe({"-c", cmd}, {}, "/bin/sh");
  };
  const jobs::RankResult plain = as_nobody({"LD_LIBRARY_PATH=" + jobs::SimLibDir()});
  const jobs::RankResult r = as_nobody(
      {"LD_LIBRARY_PATH=" + jobs::SimLibDir(), "LD_PRELOAD=" + jobs::ShimPath(), "TMPDIR=" + tmp});
  INFO("without:\n" << plain.output << "with:\n" << r.output);
  CHECK(plain.exit_code == 0);
  CHECK(r.output == plain.output);  // no "not tracing" line
  const std::string folder = tmp + "/ncclwatch-65534";
  struct stat st;
  REQUIRE(stat(folder.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  CHECK(st.st_uid == 65534u);
  const ProcessTrace t = OnlyTrace(folder);
  CheckTracedStartToExit(t, "preload_probe");
}

// The shim exports a hook for every entry point of the newest nccl.h and
// runs with NCCL 2.18 and later: an entry point the loaded NCCL lacks must
// stay absent to the program, as without the shim (resolve/nccl_exports.h).
TEST_CASE("an entry point the loaded NCCL lacks stays absent: weak references, dlsym and dlerror",
          "[preload][absent]") {
  const std::string old_nccl = jobs::BinDir() + "/../fakes/nccl-2.18";
  auto Contains = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  REQUIRE(fs::exists(old_nccl + "/libnccl.so.2"));
  for (const std::string& lib : {old_nccl, jobs::SimLibDir()}) {
    INFO(lib);
    jobs::TempDir dir;
    const jobs::RankResult plain = RunProbe({}, {"LD_LIBRARY_PATH=" + lib}, "absent_probe");
    const jobs::RankResult traced = RunProbe(
        {},
        {"LD_LIBRARY_PATH=" + lib, "LD_PRELOAD=" + jobs::ShimPath(), "NCCLWATCH_DIR=" + dir.path()},
        "absent_probe");
    INFO("without the shim:\n" << plain.output << "with it:\n" << traced.output);
    REQUIRE(plain.exit_code == 0);
    CHECK(traced.exit_code == 0);
    CHECK(traced.output == plain.output);
    // What 2.18 has is found; what came later is not (the simulator has all).
    CHECK(Contains(plain.output, "ncclAllReduce weak=1 default=1 handle=1\n"));
    if (lib == old_nccl) {
      CHECK(Contains(plain.output, "ncclCommShrink weak=0 default=0 handle=0 dlerror="));
      CHECK(Contains(plain.output, "ncclMemAlloc weak=0 default=0 handle=0 dlerror="));
      CHECK(Contains(plain.output, "ncclDevCommCreate weak=0 default=0 handle=0 dlerror="));
      CHECK(Contains(plain.output, "ncclGetVersion -> 0 21803\n"));
    } else {
      CHECK(Contains(plain.output, "ncclCommShrink weak=1 default=1 handle=1\n"));
#if NCCLWATCH_NCCL_HEADER_VERSION >= 22900
      CHECK(Contains(plain.output, "ncclCommGrow weak=1 default=1 handle=1\n"));
      CHECK(Contains(plain.output, "ncclWaitSignal weak=1 default=1 handle=1\n"));
#endif
    }
    // And the calls the program made were seen.
    const std::vector<std::string> files = TraceFiles(dir.path());
    REQUIRE(files.size() == 1);
    auto t = LoadProcessTrace(files[0]);
    REQUIRE(t.ok());
    CHECK(t->nccl_version == (lib == old_nccl ? 21803 : NCCLWATCH_NCCL_HEADER_VERSION));
  }
}

// Issue 20: a process with NCCL loaded is traced from then on, before any
// NCCL call: its rendezvous's sockets, counted, its inventory and heartbeats.
TEST_CASE("a process with NCCL loaded and no NCCL call: its rendezvous sockets are counted",
          "[preload][rendezvous]") {
  jobs::TempDir dir;
  const std::vector<std::string> rendezvous_env = {"MASTER_ADDR=127.0.0.1", "MASTER_PORT=29123",
                                                   "WORLD_SIZE=2", "RANK=1"};
  std::vector<std::string> plain_env = {"LD_LIBRARY_PATH=" + jobs::SimLibDir()};
  plain_env.insert(plain_env.end(), rendezvous_env.begin(), rendezvous_env.end());
  std::vector<std::string> more = rendezvous_env;
  more.push_back("NCCLWATCH_HEARTBEAT_MS=20");
  const jobs::RankResult plain = RunProbe({"rendezvous"}, plain_env);
  const jobs::RankResult traced = RunProbe({"rendezvous"}, Traced(dir.path(), more));
  INFO("without:\n" << plain.output << "with:\n" << traced.output);
  REQUIRE(plain.exit_code == 0);
  CHECK(traced.exit_code == 0);
  // The same outcomes (ports differ from run to run).
  auto outcomes = [](const std::string& out) {
    std::string held, free_port;
    std::string rest = WithoutLine(WithoutLine(out, "held ", &held), "free ", &free_port);
    return std::make_tuple(rest, held, free_port);
  };
  const auto [plain_rest, plain_held, plain_free] = outcomes(plain.output);
  const auto [rest, held, free_port] = outcomes(traced.output);
  CHECK(rest == plain_rest);
  CHECK(rest.find("bind held: EADDRINUSE") != std::string::npos);
  CHECK(rest.find("connect free: ECONNREFUSED") != std::string::npos);

  const ProcessTrace t = OnlyTrace(dir.path());
  CheckTracedStartToExit(t, "preload_probe");
  CHECK(t.traced_from == 1);  // NCCL loaded
  CHECK(t.apis.empty());      // and never called
  CHECK(t.inventory.present);
  CHECK(t.inventory.at_load);
  REQUIRE(t.inventory.Env("MASTER_PORT") != nullptr);
  CHECK(*t.inventory.Env("MASTER_PORT") == "29123");
  CHECK(*t.inventory.Env("WORLD_SIZE") == "2");
  CHECK(t.global_rank == 1);
  CHECK(t.liveness.beats >= 2);

  // kind, address, errno, deferred -> count
  std::map<std::tuple<uint32_t, std::string, int, bool>, uint64_t> counts;
  for (const auto& e : t.socket_activity) {
    const auto a = ncclwatch::decoder::ParseSocketAddress(e.addr);
    const std::string addr = a ? a->ToString() : "";
    INFO(e.kind << " " << addr << " err " << e.err << " deferred " << e.deferred << " x"
                << e.count);
    CHECK(e.first_t <= e.last_t);
    CHECK(e.count >= 1);
    counts[{e.kind, addr, e.err, e.deferred}] += e.count;
  }
  const std::string held_addr = "127.0.0.1:" + held;
  const std::string free_addr = "127.0.0.1:" + free_port;
  namespace s = ncclwatch::fields::socket_activity;
  CHECK(counts[{s::kBind, "127.0.0.1:0", 0, false}] == 2);    // the server's, the free port's
  CHECK(counts[{s::kListen, "127.0.0.1:0", 0, false}] == 1);  // as bound
  CHECK(counts[{s::kBind, held_addr, EADDRINUSE, false}] == 1);
  CHECK(counts[{s::kConnect, free_addr, ECONNREFUSED, false}] == 5);
  CHECK(counts[{s::kConnect, free_addr, EINPROGRESS, false}] == 1);
  CHECK(counts[{s::kConnect, free_addr, ECONNREFUSED, true}] == 1);  // read with SO_ERROR
  CHECK(counts[{s::kConnect, held_addr, 0, false}] == 1);
  CHECK(counts[{s::kAccept, "127.0.0.1:0", 0, false}] == 1);
}

TEST_CASE("a process without NCCL under the shim still writes nothing, sockets or not",
          "[preload][rendezvous]") {
  jobs::TempDir dir;
  jobs::JobSpec spec;
  // A TCP client of a port nothing listens on, in a program with no NCCL.
  spec.argv = {"python3", "-c",
               "import socket\n"
               "for _ in range(3): print(socket.socket().connect_ex(('127.0.0.1', 1)) != 0)\n"
               "print('done')"};
  spec.env = {"LD_PRELOAD=" + jobs::ShimPath(), "NCCLWATCH_DIR=" + dir.path(),
              "MASTER_ADDR=127.0.0.1"};
  spec.timeout_s = 60;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.error.empty());
  CHECK(r.ranks.at(0).output.find("done") != std::string::npos);
  CHECK(TraceFiles(dir.path()).empty());
}

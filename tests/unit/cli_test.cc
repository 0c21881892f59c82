// The ncclwatch command line: every command's --help, the version from
// CMake, explain's headline and exit codes (0 healthy, 1 a problem, 2
// input that cannot be used), and the libraries the program needs.

#include <elf.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ncclwatch_version.h"
#include "support/traced_job.h"

namespace {

jobs::RankResult Run(const std::vector<std::string>& args) {
  jobs::JobSpec spec;
  spec.argv = {jobs::NcclwatchPath()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout_s = 60;
  jobs::JobResult r = jobs::RunJob(spec);
  REQUIRE(r.ranks.size() == 1);
  return r.ranks[0];
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The shared libraries an ELF64 program names itself (DT_NEEDED), read
// from its dynamic section: what the loader looks for first (`ldd` lists
// these and what they name in turn).
std::vector<std::string> NeededLibraries(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  auto read = [&](uint64_t offset, void* out, size_t n) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
    REQUIRE(in.gcount() == static_cast<std::streamsize>(n));
  };
  Elf64_Ehdr eh;
  read(0, &eh, sizeof(eh));
  REQUIRE(std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0);
  REQUIRE(eh.e_ident[EI_CLASS] == ELFCLASS64);
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  for (size_t i = 0; i < ph.size(); ++i)
    read(eh.e_phoff + i * eh.e_phentsize, &ph[i], sizeof(Elf64_Phdr));
  // An address of the loaded program, as a place in the file.
  auto file_offset = [&](uint64_t vaddr) {
    for (const Elf64_Phdr& p : ph)
      if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz)
        return vaddr - p.p_vaddr + p.p_offset;
    FAIL("address " << vaddr << " is in no loaded segment");
    return uint64_t{0};
  };
  std::vector<Elf64_Dyn> dynamic;
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type != PT_DYNAMIC) continue;
    dynamic.resize(p.p_filesz / sizeof(Elf64_Dyn));
    read(p.p_offset, dynamic.data(), dynamic.size() * sizeof(Elf64_Dyn));
  }
  uint64_t strtab = 0, strsz = 0;
  for (const Elf64_Dyn& d : dynamic) {
    if (d.d_tag == DT_STRTAB) strtab = file_offset(d.d_un.d_ptr);
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
  }
  REQUIRE(strtab != 0);
  REQUIRE(strsz != 0);
  std::string table(strsz, '\0');
  read(strtab, table.data(), table.size());
  std::vector<std::string> needed;
  for (const Elf64_Dyn& d : dynamic) {
    if (d.d_tag != DT_NEEDED) continue;
    REQUIRE(d.d_un.d_val < table.size());
    needed.emplace_back(table.c_str() + d.d_un.d_val);  // NUL-terminated within the table
  }
  return needed;
}

}  // namespace

TEST_CASE("every command answers --help and -h with its usage, exit 0", "[cli]") {
  for (const std::string command :
       {"diagnose", "explain", "dump", "version", "timeline", "run", "status", "probe"}) {
    for (const std::string flag : {"--help", "-h"}) {
      INFO(command << " " << flag);
      const jobs::RankResult r = Run({command, flag});
      CHECK(r.exit_code == 0);
      CHECK(StartsWith(r.output, "usage: ncclwatch " + command));
    }
  }
  const jobs::RankResult top = Run({"--help"});
  CHECK(top.exit_code == 0);
  CHECK(top.output.find("Exit codes: 0 healthy") != std::string::npos);
  CHECK(StartsWith(Run({"help", "explain"}).output, "usage: ncclwatch explain"));
}

TEST_CASE("the version comes from CMake's project()", "[cli]") {
  const jobs::RankResult r = Run({"version"});
  CHECK(r.exit_code == 0);
  CHECK(StartsWith(r.output,
                   std::string("ncclwatch ") + ncclwatch::decoder::kNcclwatchVersion + " "));
}

TEST_CASE("the program is one file: abseil, protobuf and RE2 are linked in", "[cli]") {
  // What the README promises for containers: copy `ncclwatch` and run it.
  const std::vector<std::string> needed = NeededLibraries(jobs::NcclwatchPath());
  REQUIRE_FALSE(needed.empty());
  CHECK(std::find(needed.begin(), needed.end(), "libc.so.6") != needed.end());
  for (const std::string& lib : needed) {
    INFO(lib);
    CHECK_FALSE(lib.empty());
#ifdef NCCLWATCH_TEST_STATIC_DEPS
    CHECK_FALSE(StartsWith(lib, "libabsl_"));
    CHECK_FALSE(StartsWith(lib, "libprotobuf"));
    CHECK_FALSE(StartsWith(lib, "libre2"));
#endif
#ifdef NCCLWATCH_TEST_STATIC_RUNTIME
    // glibc's own: libc, libm and the loader (for __tls_get_addr and
    // _dl_find_object, which the static C++ runtime and unwinder call).
    CHECK((lib == "libc.so.6" || lib == "libm.so.6" || StartsWith(lib, "ld-linux")));
#endif
  }
}

TEST_CASE("unusable input and unknown options: exit 2", "[cli]") {
  CHECK(Run({"diagnose", "--frobnicate", "x"}).exit_code == 2);
  CHECK(Run({"frobnicate"}).exit_code == 2);
  CHECK(Run({"diagnose", "/nonexistent/ncclwatch-traces"}).exit_code == 2);
  jobs::TempDir empty;
  CHECK(Run({"timeline", empty.path()}).exit_code == 2);  // no -o
  const jobs::RankResult no_traces =
      Run({"timeline", empty.path(), "-o", empty.path() + "/t.pftrace"});
  CHECK(no_traces.exit_code == 2);
  CHECK(no_traces.output == "ncclwatch: no trace files (*.trace) under " + empty.path() + "\n");
  CHECK(Run({"status"}).exit_code == 2);
  CHECK(Run({"status", "/nonexistent/ncclwatch-traces"}).exit_code == 2);
  CHECK(Run({"run"}).exit_code == 2);
  CHECK(Run({"probe", "--nnodes", "2"}).exit_code == 2);  // no --master
  CHECK(Run({"probe", "-n", "zero"}).exit_code == 2);
  // `run`'s own options end at "--": the command's --help is the command's.
  CHECK(StartsWith(
      Run({"run", "--dir", empty.path() + "/t", "--", "sh", "-c", "echo ran --help"}).output,
      "ncclwatch: tracing into"));
}

TEST_CASE("explain: the headline first, exit 0 healthy and 1 a problem", "[cli]") {
  jobs::TempDir dir;
  const std::string clean = dir.path() + "/clean.log";
  std::ofstream(clean)
      << "h:1:1 [0] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>\n"
         "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId "
         "18000 commId 0x1 - Init COMPLETE\n";
  const jobs::RankResult healthy = Run({"explain", clean});
  INFO(healthy.output);
  CHECK(healthy.exit_code == 0);
  CHECK(StartsWith(healthy.output, "HEALTHY\n"));

  const std::string xid = dir.path() + "/dmesg.txt";
  std::ofstream(xid)
      << "node7:300:300 [5] NCCL INFO ncclCommInitRank comm 0x1 rank 5 nranks 8 cudaDev 5 nvmlDev "
         "5 "
         "busId 3b000 commId 0x1 - Init COMPLETE\n"
         "[123456.789012] NVRM: Xid (PCI:0000:3b:00): 79, pid=300, name=python, GPU has fallen off "
         "the bus.\n";
  const jobs::RankResult problem = Run({"explain", xid});
  INFO(problem.output);
  CHECK(problem.exit_code == 1);
  CHECK(StartsWith(problem.output, "PROBLEM: gpu_fault (rank 5)\n"));
  CHECK(problem.output.find("Root cause: GPU fault") != std::string::npos);
  CHECK(problem.output.find("\nncclwatch explain: 1 file, 1 NCCL process on 1 host\n") !=
        std::string::npos);

  // A kernel log alone names no NCCL process and no host: the header says
  // so, not "0 processes on 0 hosts".
  const std::string kernel = dir.path() + "/kern.log";
  std::ofstream(kernel) << "[123456.789012] NVRM: Xid (PCI:0000:3b:00): 79, pid=300, "
                           "name=python, GPU has fallen off the bus.\n";
  const jobs::RankResult alone = Run({"explain", kernel});
  INFO(alone.output);
  CHECK(alone.output.find("\nncclwatch explain: 1 file, no NCCL process named (no line with "
                          "NCCL's host:pid:tid prefix)\n") != std::string::npos);
}

// explain and diagnose take logs the same way, through one pipeline: a log
// named through a link is read where it leads, by both.
TEST_CASE("a log named through a link: diagnose reads it as explain does", "[cli][logs]") {
  jobs::TempDir dir;
  const std::string real = dir.path() + "/dmesg.txt";
  std::ofstream(real) << "node7:300:300 [5] NCCL INFO ncclCommInitRank comm 0x1 rank 5 nranks 8 "
                         "cudaDev 5 nvmlDev 5 busId 3b000 commId 0x1 - Init COMPLETE\n"
                         "[123456.789012] NVRM: Xid (PCI:0000:3b:00): 79, pid=300, name=python, "
                         "GPU has fallen off the bus.\n";
  const std::string link = dir.path() + "/node7.out";
  std::filesystem::create_symlink(real, link);
  const jobs::RankResult explained = Run({"explain", "--json", link});
  const jobs::RankResult diagnosed = Run({"diagnose", "--json", link});
  INFO("explain: " << explained.output << "\ndiagnose: " << diagnosed.output);
  CHECK(explained.exit_code == 1);
  CHECK(diagnosed.exit_code == 1);
  CHECK(explained.output.find("\"kind\":\"gpu_fault\"") != std::string::npos);
  CHECK(diagnosed.output == explained.output);
}

// A folder whose one trace cannot be read, beside the job's output that
// says why the job failed: the output's problem is the verdict, and the
// trace is named as not read (never a healthy verdict from the logs alone).
TEST_CASE("no trace can be read: a problem the logs show is the verdict, the trace not read",
          "[cli][logs]") {
  jobs::TempDir dir;
  std::ofstream(dir.path() + "/rank0.trace");  // empty: not a trace
  const std::string output = dir.path() + "/job.out";
  std::ofstream(output) << "[123456.789012] NVRM: Xid (PCI:0000:3b:00): 79, pid=300, "
                           "name=python, GPU has fallen off the bus.\n";
  for (const char* command : {"explain", "diagnose"}) {
    const jobs::RankResult r = Run({command, dir.path()});
    INFO(command << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK(StartsWith(r.output, "PROBLEM: gpu_fault\n"));
    CHECK(r.output.find("\nNot read: " + dir.path() + "/rank0.trace: ") != std::string::npos);
  }
  // Output that shows no problem leaves the unreadable trace the answer: exit 2.
  std::ofstream(output) << "step 1 loss 0.93\n";
  for (const char* command : {"explain", "diagnose"}) {
    const jobs::RankResult r = Run({command, dir.path()});
    INFO(command << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK(StartsWith(r.output, "ncclwatch: none of the 1 trace file(s) can be read; first: "));
  }
}

// ncclwatch: reads the traces libncclwatch.so wrote and says what went wrong.
//
//   ncclwatch diagnose [--json] PATH...   every trace under the folders/files
//   ncclwatch explain [--json] LOG...      the same, from plain NCCL_DEBUG logs and error output
//   ncclwatch dump [--json] FILE          one trace's records, one per line
//   ncclwatch timeline PATH... -o FILE    the job as one Perfetto trace
//   ncclwatch run [--dir D] [--on-stall] -- CMD...   runs a job under the shim
//   ncclwatch status PATH... [--watch]    the live state of a running job
//   ncclwatch summarize DIR... -o FILE    one node's traces as one small summary
//   ncclwatch probe [-n N] [--nnodes M --node-rank K --master ADDR:PORT]   the minimal job
//   ncclwatch version
//
//   ncclwatch COMMAND --help (or -h)
//
// Exit codes: 0 healthy (or done; warnings and notes allowed), 1 a problem
// was found, 2 the input cannot be used (with a one-line reason on stderr).

#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands/diagnose.h"
#include "commands/dump.h"
#include "commands/explain.h"
#include "commands/status.h"
#include "commands/summarize.h"
#include "commands/timeline.h"
#include "ncclwatch/ring_format.h"
#include "ncclwatch_version.h"
#include "probe/probe.h"
#include "run/run.h"

namespace {

constexpr char kUsage[] =
    "usage: ncclwatch diagnose [--json] PATH...   diagnose the traces in these folders or files\n"
    "       ncclwatch explain [--json] LOG...     the same from NCCL_DEBUG logs and error output\n"
    "       ncclwatch dump [--json] FILE          print one trace's records\n"
    "       ncclwatch timeline PATH... -o FILE    the job as one Perfetto trace (ui.perfetto.dev)\n"
    "       ncclwatch run [--dir D] [--on-stall] -- CMD...   run a job traced; diagnose it if it "
    "fails\n"
    "       ncclwatch status PATH... [--watch]   the live state of a running job (--watch: like "
    "top)\n"
    "       ncclwatch summarize DIR... -o FILE   this node's traces as one small summary for "
    "diagnose\n"
    "       ncclwatch probe [-n N] [--nccl PATH]  prove that NCCL forms here (--nnodes ... for "
    "several nodes)\n"
    "       ncclwatch version\n"
    "       ncclwatch COMMAND --help              one command's usage\n"
    "Exit codes: 0 healthy (warnings and notes allowed), 1 a problem, 2 input that cannot be "
    "used.\n";

// Each command's own usage, for `ncclwatch COMMAND --help`.
const char* CommandUsage(const std::string& command) {
  if (command == "diagnose") {
    return "usage: ncclwatch diagnose [--json] PATH...\n"
           "  Reads every trace (*.trace) in the folders and files given, and names the root cause "
           "first.\n"
           "  The first line is the headline: HEALTHY, HEALTHY with warnings or notes, or PROBLEM: "
           "its kind,\n"
           "  communicator, collective and ranks.\n"
           "  --json   the JSON contract (README.md, \"JSON output\")\n"
           "  Exit codes: 0 healthy (warnings and notes allowed), 1 a problem, 2 input that cannot "
           "be used.\n";
  }
  if (command == "explain") {
    return "usage: ncclwatch explain [--json] LOG...\n"
           "  Diagnoses a job that ran without the shim from its NCCL_DEBUG logs and error output\n"
           "  (files or folders), the headline first. Traces and node summaries among them are\n"
           "  judged with the logs, as diagnose judges them.\n"
           "  --json   the same JSON contract as diagnose\n"
           "  Exit codes: 0 no problem seen, 1 a problem, 2 input that cannot be used.\n";
  }
  if (command == "dump") {
    return "usage: ncclwatch dump [--json] FILE\n"
           "  Prints one trace's records, one per line (--json: one JSON object per line).\n"
           "  Exit codes: 0 done, 2 a file that cannot be read.\n";
  }
  if (command == "timeline") {
    return "usage: ncclwatch timeline PATH... -o FILE\n"
           "  Writes every trace in the folders and files given as one Perfetto trace: a track "
           "per\n"
           "  rank and per communicator, a slice per collective and send/receive, flows linking a\n"
           "  collective across ranks and a send to its receive, init steps, failing system calls\n"
           "  and errors as instants, the root cause marked. Open FILE at "
           "https://ui.perfetto.dev.\n"
           "  -o FILE  where to write it (e.g. job.pftrace)\n"
           "  Exit codes: 0 written, 2 input that cannot be used or a file that cannot be "
           "written.\n";
  }
  if (command == "run") {
    return "usage: ncclwatch run [--dir D] [--on-stall] [--shim PATH] -- CMD [ARGS...]\n"
           "  Runs CMD (torchrun, srun, mpirun, a container entrypoint, ...) with libncclwatch.so\n"
           "  preloaded for it and every process it starts, tracing into D (default: a fresh\n"
           "  ncclwatch-run-YYYYmmdd-HHMMSS here). Signals are passed on. When CMD fails or is\n"
           "  interrupted, the diagnosis is printed on stderr, root cause first.\n"
           "  --on-stall   also print it when a trace reports a stall, while the job runs on\n"
           "  --shim PATH  the shim to preload (default: the one installed with ncclwatch)\n"
           "  Exit code: CMD's (128+N when signal N ended it; 127 when it cannot be run), 2 bad "
           "usage.\n";
  }
  if (command == "summarize") return ncclwatch::decoder::kSummarizeUsage;
  if (command == "status") {
    return "usage: ncclwatch status PATH... [--watch] [--interval S] [--stuck-after S]\n"
           "  The live state of a running job, from its traces: per communicator, each rank's "
           "last\n"
           "  entered and last completed collective, how long since its last progress and "
           "heartbeat,\n"
           "  which ranks lag, any stall or asynchronous error. The first line is STUCK: ... or\n"
           "  PROGRESSING.\n"
           "  --watch          redraw every S seconds (--interval, default 2) until interrupted\n"
           "  --stuck-after S  pending work with no progress for S seconds is stuck (default 60;\n"
           "                   a stall the shim reported is stuck at once)\n"
           "  Exit codes: 0 everything progresses, 1 something is stuck, 2 input that cannot be "
           "used.\n";
  }
  if (command == "probe") {
    return "usage: ncclwatch probe [-n N] [--nccl PATH] [--dir D] [--bytes B] [--timeout S]\n"
           "                       [--nnodes M --node-rank K --master ADDR:PORT]\n"
           "  The minimal job, before the real one: N ranks on this node (default one per visible\n"
           "  GPU, else 2) form a communicator with the NCCL the job would use (the loader's, or\n"
           "  --nccl PATH), run AllReduce, AllGather and a Send/Recv ring, check the data and\n"
           "  time AllReduce, under the shim. Prints each rank's result, this node's inventory\n"
           "  next to the other nodes' with what differs flagged, and on failure the diagnosis.\n"
           "  --nnodes M --node-rank K --master ADDR:PORT  run on every node, node 0 at ADDR\n"
           "  --dir D       the traces and the workers' output (default: a new "
           "/tmp/ncclwatch-probe-*);\n"
           "                made if missing, else it must be yours and writable by you alone\n"
           "  --bytes B     the AllReduce's size (default 8 MiB); --timeout S (default 120)\n"
           "  Exit codes: 0 NCCL formed and the data is right, 1 it did not, 2 bad usage.\n";
  }
  if (command == "version")
    return "usage: ncclwatch version\n  Prints the version of ncclwatch and of its trace format.\n";
  return nullptr;
}

int Usage(const std::string& why) {
  std::cerr << "ncclwatch: " << why << "\n" << kUsage;
  return 2;
}

}  // namespace

int Main(int argc, char** argv) {
  if (argc < 2) return Usage("no command given");
  const std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    const char* usage = argc > 2 ? CommandUsage(argv[2]) : nullptr;
    std::cout << (usage ? usage : kUsage);
    return 0;
  }
  // Commands with a command line of their own: only their options (before
  // "--" or the first operand) are read here.
  if (command == "run" || command == "probe" || command == "status" || command == "summarize") {
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const std::string& a : args) {
      if (a == "--" || a.empty() || a[0] != '-') break;
      if (a == "--help" || a == "-h") {
        std::cout << CommandUsage(command);
        return 0;
      }
    }
    if (command == "probe") return ncclwatch::decoder::RunProbe(args, std::cout, std::cerr);
    if (command == "status") return ncclwatch::decoder::RunStatus(args, std::cout, std::cerr);
    if (command == "summarize") return ncclwatch::decoder::RunSummarize(args, std::cout, std::cerr);
    return ncclwatch::decoder::RunRun(args, std::cerr);
  }
  bool json = false;
  std::vector<std::string> paths;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      const char* usage = CommandUsage(command);
      if (usage == nullptr) return Usage("unknown command " + command);
      std::cout << usage;
      return 0;
    }
  }
  std::string output;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (command == "timeline" && (a == "-o" || a == "--output")) {
      if (i + 1 >= argc) return Usage(a + " needs a file name");
      output = argv[++i];
    } else if (command == "timeline" && a.rfind("--output=", 0) == 0) {
      output = a.substr(9);
    } else if (a == "--json" && command != "timeline")
      json = true;
    else if (a.size() > 1 && a[0] == '-')
      return Usage("unknown option " + a);
    else
      paths.push_back(a);
  }
  if (command == "version" || command == "--version") {
    std::cout << "ncclwatch " << ncclwatch::decoder::kNcclwatchVersion << " (trace format "
              << NCCLWATCH_RING_FORMAT_VERSION << ", schema " << NCCLWATCH_SCHEMA_VERSION << ")\n";
    return 0;
  }
  if (command == "dump") {
    if (paths.size() != 1) return Usage("dump takes exactly one trace file");
    return ncclwatch::decoder::RunDump(paths[0], json, std::cout, std::cerr);
  }
  if (command == "explain") {
    if (paths.empty()) return Usage("explain needs at least one log file or folder");
    return ncclwatch::decoder::RunExplain(paths, json, std::cout, std::cerr);
  }
  if (command == "timeline") {
    if (paths.empty()) return Usage("timeline needs at least one folder or trace file");
    if (output.empty()) return Usage("timeline needs -o FILE");
    return ncclwatch::decoder::RunTimeline(paths, output, std::cout, std::cerr);
  }
  if (command == "diagnose") {
    if (paths.empty()) return Usage("diagnose needs at least one folder or trace file");
    return ncclwatch::decoder::RunDiagnose(paths, json, std::cout, std::cerr);
  }
  return Usage("unknown command " + command);
}

// No exception leaves ncclwatch: whatever escapes a command (std::bad_alloc
// on an input too big to hold, a bug) is one line and exit code 2.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ncclwatch: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "ncclwatch: unexpected error\n";
  }
  return 2;
}

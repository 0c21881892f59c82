// ncclwatch: reads the traces libncclwatch.so wrote and says what went wrong.
//
//   ncclwatch diagnose [--json] PATH...   every trace under the folders/files
//   ncclwatch explain [--json] LOG...      the same, from plain NCCL_DEBUG logs and error output
//   ncclwatch dump [--json] FILE          one trace's records, one per line
//   ncclwatch version
//
// Exit codes: 0 healthy (or done), 1 a problem was found, 2 the input cannot
// be used (with a one-line reason on stderr).

#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands/diagnose.h"
#include "commands/dump.h"
#include "commands/explain.h"

namespace {

constexpr char kUsage[] =
    "usage: ncclwatch diagnose [--json] PATH...   diagnose the traces in these folders or files\n"
    "       ncclwatch explain [--json] LOG...     the same from NCCL_DEBUG logs and error output\n"
    "       ncclwatch dump [--json] FILE          print one trace's records\n"
    "       ncclwatch version\n";

int Usage(const std::string& why) {
  std::cerr << "ncclwatch: " << why << "\n" << kUsage;
  return 2;
}

}  // namespace

int Main(int argc, char** argv) {
  if (argc < 2) return Usage("no command given");
  const std::string command = argv[1];
  bool json = false;
  std::vector<std::string> paths;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") json = true;
    else if (a.size() > 1 && a[0] == '-') return Usage("unknown option " + a);
    else paths.push_back(a);
  }
  if (command == "version" || command == "--version") {
    std::cout << "ncclwatch 0.1.0 (trace format 1, schema 1)\n";
    return 0;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
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

#include "model/process_liveness.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ncclwatch::decoder {
namespace {

constexpr int64_t kStartSlackNs = 2'000'000'000;  // btime is whole seconds; ticks are 10 ms

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string s;
  s.resize(64 * 1024);
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// The boot time (realtime seconds) from /proc/stat's btime line, 0 unknown.
uint64_t BootTime(const std::string& proc) {
  const std::string stat = ReadSmallFile(proc + "/stat");
  for (absl::string_view line : absl::StrSplit(stat, '\n')) {
    if (!absl::ConsumePrefix(&line, "btime ")) continue;
    uint64_t v = 0;
    if (absl::SimpleAtoi(line, &v)) return v;
  }
  return 0;
}

// The pid namespace (the inode of PROCESS/ns/pid) of `process`, a folder of
// /proc ("/proc/self", "/proc/4711"); 0 when it cannot be read.
uint64_t NamespaceOf(const std::string& process) {
  struct stat ns;
  return stat((process + "/ns/pid").c_str(), &ns) == 0 ? static_cast<uint64_t>(ns.st_ino) : 0;
}

// Processes of other pid namespaces (a container's), found by their pid
// there: every process under `proc` whose namespace is one of `namespaces`,
// by (namespace, its innermost pid: the last of status's NSpid) -> its pid
// here. One not found proves nothing: its namespace may be one whose
// processes this /proc does not show (a sibling container's), or one
// whose /proc/PID/ns is closed to us.
std::map<std::pair<uint64_t, uint32_t>, uint32_t> FindForeignPids(
    const std::string& proc, const std::set<uint64_t>& namespaces) {
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> here;
  if (namespaces.empty()) return here;
  DIR* d = opendir(proc.c_str());
  if (d == nullptr) return here;
  for (const dirent* e = readdir(d); e != nullptr; e = readdir(d)) {
    uint32_t pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid) || pid == 0) continue;
    const std::string dir = absl::StrCat(proc, "/", pid);
    struct stat ns;
    if (stat((dir + "/ns/pid").c_str(), &ns) != 0) continue;  // gone, or closed to us
    if (namespaces.count(static_cast<uint64_t>(ns.st_ino)) == 0) continue;
    for (absl::string_view line : absl::StrSplit(ReadSmallFile(dir + "/status"), '\n')) {
      if (!absl::ConsumePrefix(&line, "NSpid:")) continue;
      std::vector<absl::string_view> pids = absl::StrSplit(line, '\t', absl::SkipEmpty());
      uint32_t inner = 0;
      if (!pids.empty() && absl::SimpleAtoi(pids.back(), &inner))
        here[{static_cast<uint64_t>(ns.st_ino), inner}] = pid;
    }
  }
  closedir(d);
  return here;
}

}  // namespace

ProcessObservation ObserveProcess(uint32_t pid, uint64_t created_ns, const std::string& proc) {
  ProcessObservation o;
  if (pid == 0) return o;
  const std::string stat = ReadSmallFile(absl::StrCat(proc, "/", pid, "/stat"));
  // "pid (comm) S ppid ...": the command may hold spaces and parentheses,
  // so the fields start after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return o;
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat).substr(close + 2), ' ', absl::SkipEmpty());
  if (fields.empty() || fields[0].size() != 1) return o;
  const char letter = fields[0][0];
  // starttime is field 22 of the line, the 20th after the command.
  uint64_t start_ticks = 0;
  const uint64_t boot = BootTime(proc);
  const long hz = sysconf(_SC_CLK_TCK);
  if (fields.size() > 19 && absl::SimpleAtoi(fields[19], &start_ticks) && boot > 0 && hz > 0 &&
      created_ns > 0) {
    const int64_t started_ns = static_cast<int64_t>(boot) * 1'000'000'000 +
                               static_cast<int64_t>(start_ticks) * (1'000'000'000 / hz);
    // A process that started after the trace was created is another one
    // that got the same pid.
    if (started_ns > static_cast<int64_t>(created_ns) + kStartSlackNs) return o;
  } else if (created_ns > 0) {
    return o;  // cannot tell whether it is the traced process: not claimed alive
  }
  o.letter = letter;
  switch (letter) {
    case 'T':
    case 't':
      o.state = ProcessObservation::State::kStopped;
      break;
    case 'Z':
    case 'X':
    case 'x':
      o.state = ProcessObservation::State::kZombie;
      break;
    default:
      o.state = ProcessObservation::State::kRunning;
      break;
  }
  return o;
}

LivenessObservation ObserveLiveness(const std::vector<TracedProcessId>& ids,
                                    const std::string& proc) {
  LivenessObservation obs;
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  obs.now_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) obs.host = host;
  // Our own pid namespace: a pid means the same process here only in it.
  const uint64_t own = NamespaceOf(proc + "/self");
  std::set<uint64_t> foreign;
  for (const TracedProcessId& id : ids) {
    if (obs.host.empty() || id.host != obs.host || id.pid_namespace == 0 || own == 0) continue;
    if (id.pid_namespace != own) foreign.insert(id.pid_namespace);
  }
  const auto found = FindForeignPids(proc, foreign);
  for (const TracedProcessId& id : ids) {
    // Another host, a trace that names no namespace (an older shim), or no
    // namespace of our own to compare with: not looked at.
    if (obs.host.empty() || id.host != obs.host || id.pid_namespace == 0 || own == 0) continue;
    if (id.pid_namespace == own) {
      obs.processes[id] = ObserveProcess(id.pid, id.created_ns, proc);
      continue;
    }
    // Found in its namespace: looked at by its pid here. Not found: not
    // looked at (its heartbeat decides), never taken for another process.
    auto it = found.find({id.pid_namespace, id.pid});
    if (it != found.end()) obs.processes[id] = ObserveProcess(it->second, id.created_ns, proc);
  }
  return obs;
}

}  // namespace ncclwatch::decoder

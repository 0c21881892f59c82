#include "probe/probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "commands/diagnose.h"
#include "commands/input_files.h"
#include "model/trace_loader.h"
#include "report/names.h"
#include "report/terminal_text.h"
#include "run/run.h"

namespace ncclwatch::decoder {
namespace {

namespace fs = std::filesystem;

// The folder --dir names, made (0700) when missing; "" when it can be used,
// else why not. The probe writes files of fixed names there (the workers'
// output, the unique id), so an existing folder must be one that no one
// else could have planted a link in: the caller's own, not a symbolic link,
// not writable by its group or others (/tmp itself is refused, a new folder
// in it is not). An existing folder's mode is left as it is.
std::string PrepareFolder(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    std::error_code ec;
    const fs::path leaf = fs::path(dir).lexically_normal();
    if (leaf.has_parent_path()) fs::create_directories(leaf.parent_path(), ec);
    if (mkdir(dir.c_str(), 0700) != 0 || lstat(dir.c_str(), &st) != 0)
      return "cannot make the trace folder " + dir + ": " + std::strerror(errno);
    return "";
  }
  if (S_ISLNK(st.st_mode)) return "--dir " + dir + " is a symbolic link; name the folder itself";
  if (!S_ISDIR(st.st_mode)) return "--dir " + dir + " is not a folder";
  if (st.st_uid != geteuid())
    return "--dir " + dir + " belongs to another user; name a folder of your own, or a new one";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return "--dir " + dir + " may be written by others (mode " + mode +
           "); name a folder of your own, or a new one";
  }
  return "";
}
using Clock = std::chrono::steady_clock;

struct Options {
  int nproc = 0;  // 0: one per visible GPU, else 2
  int nnodes = 1;
  int node_rank = 0;
  std::string master;  // ADDR:PORT
  std::string nccl;
  std::string dir;
  long bytes = 8 << 20;
  int timeout_s = 120;
};

int Usage(std::ostream& err, const std::string& why) {
  err << "ncclwatch: " << why << "\n"
      << "usage: ncclwatch probe [-n N] [--nccl PATH] [--dir D] [--bytes B] [--timeout S]\n"
         "                       [--nnodes M --node-rank K --master ADDR:PORT]\n";
  return 2;
}

bool ParseInt(const std::string& s, long lo, long hi, long* v) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || errno != 0 || *end != '\0' || n < lo || n > hi) return false;
  *v = n;
  return true;
}

// GPUs this node shows the job: CUDA_VISIBLE_DEVICES, else the driver's
// list; 0 when neither says.
int VisibleGpus() {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::string s = v;
    if (s.empty()) return 0;
    return static_cast<int>(std::count(s.begin(), s.end(), ',') + 1);
  }
  std::error_code ec;
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)e;
    ++n;
  }
  return n;
}

std::string FindWorker() {
  std::error_code ec;
  const fs::path bin = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return "";
  for (const fs::path& p : {bin / "ncclwatch-probe-worker",
                            bin / ".." / "libexec" / "ncclwatch" / "ncclwatch-probe-worker",
                            bin / ".." / "lib" / "ncclwatch" / "ncclwatch-probe-worker"}) {
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

// ------------------------------------------------------------ the node's inventory

// One node's facts, as "key" -> "value" lines, so that nodes can send them
// to each other as text.
using Summary = std::map<std::string, std::string>;

std::string Interfaces(const InventoryInfo& inv) {
  std::string s;
  for (const InterfaceInfo& i : inv.interfaces) {
    if (i.addr.family != AF_INET && i.addr.family != AF_INET6) continue;
    if (i.addr.family == AF_INET6 && i.addr.Ip().rfind("fe80", 0) == 0) continue;
    if (!s.empty()) s += ", ";
    s += i.name + " " + i.addr.Ip() + "/" + std::to_string(i.prefix_len);
    if (!i.Up()) s += " (down)";
  }
  return s.empty() ? "none" : s;
}

std::string Version(int32_t v) {
  return v > 0 ? std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) : "unknown";
}

// This node's summary from its traces: the first rank's inventory, and
// every rank's result.
Summary NodeSummary(const std::string& dir, const std::string& host_hint) {
  Summary s;
  s["host"] = host_hint;
  absl::StatusOr<std::vector<std::string>> files = InputFiles({dir}, IsTraceFile);
  if (!files.ok()) return s;
  bool have = false;
  LoadProcessTraces(
      *files, 1, [&](const std::string&, const absl::Status& st, const ProcessTrace& t) {
        if (!st.ok() || !t.inventory.present) return;
        if (have && t.DisplayRank() >= std::stoi(s["rank"])) return;
        have = true;
        const InventoryInfo& inv = t.inventory;
        s.clear();
        s["rank"] = std::to_string(t.DisplayRank());
        s["host"] = TerminalSafe(t.host);
        s["NCCL"] = NcclVersionString(inv.nccl_version ? inv.nccl_version : t.nccl_version) +
                    (inv.nccl_path.empty() ? "" : " " + TerminalSafe(inv.nccl_path));
        s["CUDA driver"] = Version(inv.cuda_driver_version);
        s["CUDA runtime"] = Version(inv.cuda_runtime_version);
        s["interfaces"] = TerminalSafe(Interfaces(inv));
        // Its size is a setting to compare; what is free changes from moment to moment.
        s["/dev/shm"] = inv.shm_known ? Bytes(inv.shm_size) : "unknown";
        if (inv.shm_known) s["/dev/shm free"] = Bytes(inv.shm_free);
        s["memlock"] = inv.memlock_soft == UINT64_MAX ? "unlimited" : Bytes(inv.memlock_soft);
        if (!inv.container.empty()) s["container"] = inv.container;
        if (!inv.framework.empty()) s["framework"] = inv.framework;
        for (const auto& [name, value] : inv.env) {
          if (name.rfind("NCCL_", 0) == 0) s["env " + TerminalSafe(name)] = TerminalSafe(value);
        }
      });
  return s;
}

std::string Encode(const Summary& s) {
  std::string text;
  for (const auto& [k, v] : s) {
    std::string line = k + "\t" + v;
    for (char& c : line)
      if (c == '\n') c = ' ';
    text += line + "\n";
  }
  return text;
}

Summary Decode(const std::string& text) {
  Summary s;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) s[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return s;
}

// Prints the nodes' inventories side by side, this node first, and flags
// what differs.
void PrintInventory(const std::vector<Summary>& nodes, int me, std::ostream& out) {
  std::set<std::string> keys;
  for (const Summary& n : nodes)
    for (const auto& [k, v] : n)
      if (k != "rank" && k != "host") keys.insert(k);
  auto name = [&](int i) {
    auto it = nodes[i].find("host");
    return (i == me ? std::string("this node") : "node " + std::to_string(i)) + " (" +
           (it == nodes[i].end() ? "?" : it->second) + ")";
  };
  out << "\nInventory (from the shim's records)";
  if (nodes.size() > 1) out << ", " << nodes.size() << " nodes";
  out << ":\n";
  int differing = 0;
  for (const std::string& k : keys) {
    std::set<std::string> values;
    for (const Summary& n : nodes) {
      auto it = n.find(k);
      values.insert(it == n.end() ? "(unset)" : it->second);
    }
    const bool differs = values.size() > 1 && k != "/dev/shm free";
    differing += differs;
    auto value = [&](int i) {
      auto it = nodes[i].find(k);
      return it == nodes[i].end() ? std::string("(unset)") : it->second;
    };
    out << "  " << k << ": " << value(me) << (differs ? "   <- DIFFERS" : "") << "\n";
    if (!differs) continue;
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i)
      if (i != me) out << "      " << name(i) << ": " << value(i) << "\n";
  }
  if (nodes.size() > 1) {
    out << (differing ? "  " + std::to_string(differing) + " setting(s) differ between the nodes\n"
                      : "  the nodes agree on all of these\n");
  }
}

// ------------------------------------------------------------ nodes over TCP

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t n, int timeout_s) {
  char* p = static_cast<char*>(data);
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) <= 0) return false;
    const ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool SendText(int fd, const std::string& s) {
  const uint32_t n = htonl(static_cast<uint32_t>(s.size()));
  return WriteAll(fd, &n, 4) && WriteAll(fd, s.data(), s.size());
}

bool ReadText(int fd, std::string* s, int timeout_s) {
  uint32_t n = 0;
  if (!ReadAll(fd, &n, 4, timeout_s)) return false;
  n = ntohl(n);
  if (n > (1u << 20)) return false;
  s->assign(n, '\0');
  return ReadAll(fd, s->data(), n, timeout_s);
}

bool SplitHostPort(const std::string& s, std::string* host, std::string* port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return false;
  *host = s.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  *port = s.substr(colon + 1);
  return true;
}

// Node 0: listens at the master's port.
int Listen(const std::string& port, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(nullptr, port.c_str(), &hints, &res) != 0) {
    *why = "bad port " + port;
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) break;
    *why = std::string("cannot listen on port ") + port + ": " + std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

// The other nodes: connect to the master, retrying until `timeout_s`.
int Connect(const std::string& host, const std::string& port, int timeout_s, std::string* why) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  while (Clock::now() < deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int g = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    if (g != 0) {
      *why = "cannot resolve " + host + ": " + gai_strerror(g);
    } else {
      for (addrinfo* a = res; a; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          freeaddrinfo(res);
          return fd;
        }
        *why = "cannot connect to " + host + ":" + port + ": " + std::strerror(errno);
        close(fd);
      }
      freeaddrinfo(res);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return -1;
}

bool WaitForFile(const std::string& path, const std::string& failed, int timeout_s,
                 const std::function<bool()>& workers_alive) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  std::error_code ec;
  while (Clock::now() < deadline) {
    if (fs::exists(path, ec)) return true;
    if (fs::exists(failed, ec) || !workers_alive()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// ------------------------------------------------------------ the workers

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int status = 0;
  bool done = false;
  bool killed = false;
  std::string log;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Field(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const size_t from = at + key.size() + 2;
  return line.substr(from, line.find(' ', from) - from);
}

}  // namespace

int RunProbe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) return false;
      *v = args[++i];
      return true;
    };
    std::string v;
    long n = 0;
    if (a == "-n" || a == "--nproc" || a == "--nproc-per-node") {
      if (!value(&v) || !ParseInt(v, 1, 1024, &n))
        return Usage(err, a + " needs a number (1-1024)");
      o.nproc = static_cast<int>(n);
    } else if (a == "--nnodes") {
      if (!value(&v) || !ParseInt(v, 1, 4096, &n)) return Usage(err, "--nnodes needs a number");
      o.nnodes = static_cast<int>(n);
    } else if (a == "--node-rank" || a == "--node_rank") {
      if (!value(&v) || !ParseInt(v, 0, 4095, &n)) return Usage(err, "--node-rank needs a number");
      o.node_rank = static_cast<int>(n);
    } else if (a == "--master" || a == "--master-addr") {
      if (!value(&o.master)) return Usage(err, "--master needs ADDR:PORT");
    } else if (a == "--nccl") {
      if (!value(&o.nccl)) return Usage(err, "--nccl needs the path of libnccl.so.2");
    } else if (a == "--dir") {
      if (!value(&o.dir)) return Usage(err, "--dir needs a folder");
    } else if (a == "--bytes") {
      if (!value(&v) || !ParseInt(v, 4, 1L << 30, &n)) return Usage(err, "--bytes needs 4 to 1G");
      o.bytes = n;
    } else if (a == "--timeout") {
      if (!value(&v) || !ParseInt(v, 1, 86400, &n)) return Usage(err, "--timeout needs seconds");
      o.timeout_s = static_cast<int>(n);
    } else {
      return Usage(err, "unknown option " + a);
    }
  }
  if (o.node_rank >= o.nnodes) return Usage(err, "--node-rank must be below --nnodes");
  std::string master_host, master_port;
  if (o.nnodes > 1 && (o.master.empty() || !SplitHostPort(o.master, &master_host, &master_port)))
    return Usage(err, "a probe of several nodes needs --master ADDR:PORT (node 0's address)");
  if (o.nproc == 0) {
    o.nproc = VisibleGpus();
    if (o.nproc == 0) o.nproc = 2;
  }
  std::error_code ec;
  const std::string worker = FindWorker();
  if (worker.empty()) {
    err << "ncclwatch: ncclwatch-probe-worker is not installed next to this ncclwatch\n";
    return 2;
  }
  const std::string shim = FindShim();
  if (shim.empty()) {
    err << "ncclwatch: libncclwatch.so is not installed next to this ncclwatch (its folder, "
           "../lib, ../lib64, ../lib/ncclwatch)\n";
    return 2;
  }
  if (!o.nccl.empty() && !fs::is_regular_file(o.nccl, ec)) {
    err << "ncclwatch: " << o.nccl << ": no such file (--nccl)\n";
    return 2;
  }
  if (o.dir.empty()) {
    char tmpl[] = "/tmp/ncclwatch-probe-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      err << "ncclwatch: cannot make a trace folder in /tmp: " << std::strerror(errno) << "\n";
      return 2;
    }
    o.dir = tmpl;
  } else if (std::string why = PrepareFolder(o.dir); !why.empty()) {
    err << "ncclwatch: " << why << "\n";
    return 2;
  }
  o.dir = fs::absolute(o.dir, ec).lexically_normal().string();
  const std::string id_file = o.dir + "/probe.id";
  const std::string id_failed = id_file + ".failed";
  const int world = o.nnodes * o.nproc;

  out << "ncclwatch probe: " << o.nproc << " process" << (o.nproc > 1 ? "es" : "")
      << (o.nnodes > 1 ? " on node " + std::to_string(o.node_rank) + " of " +
                             std::to_string(o.nnodes) + " (" + std::to_string(world) + " ranks)"
                       : " on this node")
      << ", AllReduce of " << Bytes(static_cast<uint64_t>(o.bytes)) << "; traces in " << o.dir
      << "\n";
  out.flush();

  // Several nodes: node 0 accepts the others before its workers start; the
  // others connect first.
  std::vector<int> peers;  // node 0: one connection per other node
  int master_fd = -1;      // the others: the connection to node 0
  if (o.nnodes > 1) {
    std::string why;
    if (o.node_rank == 0) {
      const int lfd = Listen(master_port, &why);
      if (lfd < 0) {
        err << "ncclwatch: " << why << "\n";
        return 2;
      }
      const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
      while (static_cast<int>(peers.size()) < o.nnodes - 1 && Clock::now() < deadline) {
        pollfd pfd{lfd, POLLIN, 0};
        if (poll(&pfd, 1, 250) <= 0) continue;
        const int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) peers.push_back(fd);
      }
      close(lfd);
      if (static_cast<int>(peers.size()) < o.nnodes - 1) {
        out << "RESULT: FAILED: only " << peers.size() + 1 << " of " << o.nnodes
            << " nodes reached " << o.master << " within " << o.timeout_s << " s\n";
        for (int fd : peers) close(fd);
        return 1;
      }
    } else {
      master_fd = Connect(master_host, master_port, o.timeout_s, &why);
      if (master_fd < 0) {
        out << "RESULT: FAILED: this node could not reach the probe's master: " << why << "\n";
        return 1;
      }
    }
  }

  std::vector<Worker> workers(o.nproc);
  std::string preload = shim;
  if (!o.nccl.empty()) preload += ":" + fs::absolute(o.nccl, ec).string();
  if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing)
    preload += std::string(":") + existing;
  for (int i = 0; i < o.nproc; ++i) {
    Worker& w = workers[i];
    w.rank = o.node_rank * o.nproc + i;
    w.log = o.dir + "/probe-rank-" + std::to_string(w.rank) + ".log";
    w.pid = fork();
    if (w.pid < 0) {
      err << "ncclwatch: cannot start a worker: " << std::strerror(errno) << "\n";
      return 2;
    }
    if (w.pid == 0) {
      const int fd =
          open(w.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
      setenv("LD_PRELOAD", preload.c_str(), 1);
      setenv("NCCLWATCH_DIR", o.dir.c_str(), 1);
      setenv("RANK", std::to_string(w.rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(i).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
      setenv("GROUP_RANK", std::to_string(o.node_rank).c_str(), 1);
      setenv("NCCLWATCH_PROBE_ID", id_file.c_str(), 1);
      setenv("NCCLWATCH_PROBE_BYTES", std::to_string(o.bytes).c_str(), 1);
      setenv("NCCLWATCH_PROBE_WAIT_S", std::to_string(o.timeout_s).c_str(), 1);
      execl(worker.c_str(), worker.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  auto reap = [&]() {
    bool any = false;
    for (Worker& w : workers) {
      if (w.done) continue;
      if (waitpid(w.pid, &w.status, WNOHANG) == w.pid)
        w.done = true;
      else
        any = true;
    }
    return any;
  };

  // The id: node 0 hands its rank 0's to the other nodes.
  if (o.nnodes > 1) {
    if (o.node_rank == 0) {
      const bool ok = WaitForFile(id_file, id_failed, o.timeout_s, reap);
      std::string id = ok ? ReadFile(id_file) : std::string();
      const char flag = ok && id.size() == 128 ? 1 : 0;
      for (int fd : peers) {
        WriteAll(fd, &flag, 1);
        if (flag) WriteAll(fd, id.data(), id.size());
      }
    } else {
      char flag = 0;
      std::string id(128, '\0');
      const bool got = ReadAll(master_fd, &flag, 1, o.timeout_s) && flag == 1 &&
                       ReadAll(master_fd, id.data(), id.size(), o.timeout_s);
      const std::string target = got ? id_file : id_failed;
      std::ofstream(target + ".tmp", std::ios::binary) << (got ? id : std::string("failed"));
      fs::rename(target + ".tmp", target, ec);
    }
  }

  // Wait for the workers, then end what is left (a hang is a failure too).
  const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
  bool timed_out = false;
  while (reap()) {
    if (Clock::now() >= deadline) {
      timed_out = true;
      for (Worker& w : workers)
        if (!w.done) {
          w.killed = true;
          kill(w.pid, SIGTERM);
        }
      std::this_thread::sleep_for(std::chrono::seconds(1));
      for (Worker& w : workers)
        if (!w.done) kill(w.pid, SIGKILL);
      while (reap()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  // Each rank's result.
  bool all_ok = true;
  double slowest = -1;
  out << "\n";
  for (const Worker& w : workers) {
    const std::string log = ReadFile(w.log);
    std::string result_line;
    std::istringstream lines(log);
    std::string line, last_words;
    while (std::getline(lines, line)) {
      if (line.rfind("NCCLWATCH_PROBE ", 0) == 0)
        result_line = line;
      else if (!line.empty())
        last_words = line;
    }
    const bool ok =
        Field(result_line, "result") == "ok" && WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0;
    all_ok = all_ok && ok;
    out << "  rank " << w.rank;
    const std::string device = Field(result_line, "device");
    if (!device.empty() && device != "-1") out << "  GPU " << device;
    if (ok) {
      const double busbw = std::atof(Field(result_line, "busbw_gbs").c_str());
      if (slowest < 0 || busbw < slowest) slowest = busbw;
      out << "  ok: AllReduce, AllGather, Send/Recv ring right; AllReduce bus bandwidth " << busbw
          << " GB/s\n";
    } else {
      out << "  FAILED";
      if (w.killed)
        out << " (still running after " << o.timeout_s << " s: stopped)";
      else if (WIFSIGNALED(w.status))
        out << " (" << SignalName(WTERMSIG(w.status)) << ")";
      else if (WIFEXITED(w.status) && WEXITSTATUS(w.status) == 127)
        out << " (the worker could not start: is libnccl.so.2 on the loader's path? --nccl PATH)";
      if (!last_words.empty()) out << ": " << TerminalSafe(last_words);
      out << "\n";
    }
  }

  // The inventories: this node's, and with several nodes everyone's.
  std::vector<Summary> nodes;
  int me = 0;
  Summary mine = NodeSummary(o.dir, "");
  mine["probe result"] = all_ok ? "ok" : "FAILED";
  if (o.nnodes > 1) {
    if (o.node_rank == 0) {
      nodes.resize(o.nnodes);
      nodes[0] = mine;
      for (size_t p = 0; p < peers.size(); ++p) {
        std::string text;
        if (ReadText(peers[p], &text, o.timeout_s)) {
          Summary s = Decode(text);
          const int node = std::atoi(s["node"].c_str());
          s.erase("node");
          if (node > 0 && node < o.nnodes) nodes[node] = s;
        }
      }
      std::string all;
      for (const Summary& s : nodes) all += Encode(s) + "\x1e";
      for (int fd : peers) {
        SendText(fd, all);
        close(fd);
      }
    } else {
      Summary tagged = mine;
      tagged["node"] = std::to_string(o.node_rank);
      std::string all;
      if (SendText(master_fd, Encode(tagged)) && ReadText(master_fd, &all, o.timeout_s)) {
        size_t from = 0;
        for (size_t at; (at = all.find('\x1e', from)) != std::string::npos; from = at + 1)
          nodes.push_back(Decode(all.substr(from, at - from)));
      }
      close(master_fd);
      if (static_cast<int>(nodes.size()) != o.nnodes) nodes = {mine};
      me = static_cast<int>(nodes.size()) == o.nnodes ? o.node_rank : 0;
    }
    for (Summary& s : nodes)
      if (s.empty()) s["probe result"] = "no report";
  } else {
    nodes = {mine};
  }
  PrintInventory(nodes, me, out);
  for (const Summary& s : nodes) {
    auto it = s.find("probe result");
    if (it == s.end() || it->second != "ok") all_ok = false;
  }

  out << "\n";
  if (all_ok) {
    out << "RESULT: OK: NCCL formed across " << world << " ranks; AllReduce, AllGather and the "
        << "Send/Recv ring gave the right data";
    if (slowest >= 0) out << "; AllReduce bus bandwidth " << slowest << " GB/s (slowest rank here)";
    out << "\n";
    return 0;
  }
  out << "RESULT: FAILED: " << (timed_out ? "the probe hung; " : "")
      << "the diagnosis of its traces:\n";
  out.flush();
  std::ostringstream report, problems;
  const int verdict = RunDiagnose({o.dir}, false, report, problems);
  out << report.str() << problems.str();
  if (verdict == 0) {
    out << "The traces show no failure inside NCCL: what the ranks said above is the reason (their "
           "output is in "
        << o.dir << "/probe-rank-*.log).\n";
  }
  return 1;
}

}  // namespace ncclwatch::decoder

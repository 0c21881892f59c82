#include "analysis/init_failure.h"

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "report/json.h"
#include "report/names.h"
#include "re2/re2.h"

namespace ncclwatch::decoder {

int64_t InitEvidence::FirstFailureNs() const {
  int64_t t = INT64_MAX;
  for (const Failure& f : failures) t = std::min(t, f.when_ns);
  for (const SysFailure& s : sys_failures) t = std::min(t, s.when_ns);
  return t;
}

namespace {

constexpr char kRanks[] = "%RANKS%";  // replaced by "rank 3" / "ranks 1-3" once ranks are grouped

// One rank's cause, before ranks with the same cause are grouped.
struct Cause {
  std::string subsystem;
  int err = 0;
  std::string detail;  // with kRanks where the ranks go
  std::string fix;
  std::vector<std::pair<std::string, std::string>> extra;  // JSON values
  int64_t when_ns = 0;
  std::vector<int> ranks_override;  // the ranks a cross-rank cause names, when it knows them all
};

// What every rank's classification compares it with, computed once per job.
struct JobFacts {
  explicit JobFacts(const std::vector<InitEvidence>& ranks);
  const std::vector<InitEvidence>& all;
  std::map<int32_t, std::vector<const InitEvidence*>> by_version;            // ranks by NCCL version
  std::map<std::pair<std::string, std::string>, std::vector<const InitEvidence*>> by_gpu;  // by (host, bus id)
  std::optional<Cause> skew;  // when the ranks run more than one NCCL version
};

// "rank 3", "ranks 1-3"; processes whose rank is unknown (-1) are "the process".
std::string RanksOrProcess(const std::vector<int>& ranks) { return RanksNoun(ranks, "the process"); }

std::string JsonStrings(const std::vector<std::string>& v) {
  std::vector<std::string> quoted;
  for (const std::string& s : v) quoted.push_back(JsonString(s));
  return absl::StrCat("[", absl::StrJoin(quoted, ","), "]");
}

// Every text NCCL gave this rank: failures' last errors and WARN lines.
// NCCL's own words first (its WARN lines), then what the failed calls said.
std::vector<std::string> Texts(const InitEvidence& r) {
  std::vector<std::string> out = r.warnings;
  for (const InitEvidence::Failure& f : r.failures)
    if (!f.text.empty() && std::find(out.begin(), out.end(), f.text) == out.end()) out.push_back(f.text);
  return out;
}

const std::string* FindText(const std::vector<std::string>& texts, std::initializer_list<const char*> needles) {
  for (const std::string& t : texts)
    for (const char* n : needles)
      if (absl::StrContains(t, n)) return &t;
  return nullptr;
}

// strerror text back to its errno ("Connection refused" -> ECONNREFUSED).
int ErrnoFromText(const std::string& text) {
  int best = 0;
  size_t best_len = 0;
  for (int e = 1; e < 134; ++e) {
    const char* d = strerrordesc_np(e);
    if (d == nullptr) continue;
    const size_t n = std::strlen(d);
    if (n > best_len && absl::StrContains(text, d)) {
      best = e;
      best_len = n;
    }
  }
  return best;
}

std::string InterfaceList(const InitEvidence& r) {
  std::vector<std::string> parts;
  std::set<std::string> seen;
  for (int pass = 0; pass < 2; ++pass) {  // IPv4 first
    for (const InterfaceInfo& i : r.interfaces) {
      if ((pass == 0) != (i.addr.family == AF_INET)) continue;
      if (i.addr.IsLinkLocal()) continue;
      if (!seen.insert(absl::StrCat(i.name, i.addr.Ip())).second) continue;
      std::string s = absl::StrCat(i.name, " ", i.addr.Ip(), "/", i.prefix_len);
      if (!i.Up() || !i.Running()) absl::StrAppend(&s, " (down)");
      else if (i.Loopback()) absl::StrAppend(&s, " (loopback)");
      parts.push_back(s);
    }
  }
  return parts.empty() ? "none with an address" : absl::StrJoin(parts, ", ");
}

bool VirtualInterface(const std::string& name) {
  for (const char* p : {"docker", "virbr", "veth", "br-", "cni", "flannel", "cali", "vxlan", "tun", "tap", "lxc"})
    if (absl::StartsWith(name, p)) return true;
  return false;
}

// The interface to suggest pinning: up, running, not loopback, not a bridge.
std::string SuggestInterface(const InitEvidence& r, const std::optional<SocketAddress>& reach = std::nullopt) {
  for (const InterfaceInfo& i : r.interfaces) {
    if (!i.Up() || !i.Running() || i.Loopback() || i.addr.IsLinkLocal() || VirtualInterface(i.name)) continue;
    if (reach && !InSubnet(*reach, i.addr, i.prefix_len)) continue;
    return i.name;
  }
  return "";
}

// "; NCCL could not load libibverbs.so, libnccl-net.so" (optional plugins
// NCCL probes for are left out: their absence is normal).
std::string FailedLoads(const InitEvidence& r) {
  std::vector<std::string> names;
  for (const std::string& n : r.failed_loads)
    if (!absl::StartsWith(n, "libnccl-env") && !absl::StartsWith(n, "libnccl-tuner") &&
        !absl::StartsWith(n, "libnccl-profiler")) {
      names.push_back(n);
    }
  return names.empty() ? "" : absl::StrCat("; NCCL could not load ", absl::StrJoin(names, ", "));
}

std::string HostPhrase(const InitEvidence& r) { return r.host.empty() ? "its host" : r.host; }

std::string VersionText(int32_t cuda) {  // 13000 -> "13.0"
  return cuda > 0 ? absl::StrFormat("%d.%d", cuda / 1000, cuda % 1000 / 10) : "none";
}

// ------------------------------------------------------------ the causes

std::optional<Cause> NoInterface(const InitEvidence& r, const std::vector<std::string>& texts) {
  if (!FindText(texts, {"no socket interface found", "NET/Socket : no interface found", "No usable listening interface"}))
    return std::nullopt;
  Cause c;
  c.subsystem = "network";
  const std::string* ifname = r.Env("NCCL_SOCKET_IFNAME");
  const std::string have = r.interfaces_known ? InterfaceList(r) : "unknown (no inventory)";
  c.detail = ifname != nullptr
                 ? absl::StrFormat("%s: NCCL_SOCKET_IFNAME=%s matches no usable interface on %s, so NCCL found no "
                                   "socket interface for its bootstrap; the interfaces there are: %s",
                                   kRanks, *ifname, HostPhrase(r), have)
                 : absl::StrFormat("%s: NCCL found no usable socket interface on %s (it skips loopback and interfaces "
                                   "that are down); the interfaces there are: %s",
                                   kRanks, HostPhrase(r), have);
  const std::string suggest = SuggestInterface(r);
  c.fix = absl::StrCat("set NCCL_SOCKET_IFNAME on every rank to the interface that reaches the other nodes",
                       suggest.empty() ? "" : absl::StrCat(" (here: NCCL_SOCKET_IFNAME=", suggest, ")"),
                       ", or unset it; a value is a prefix (eth matches eth0, eth1), =eth0 matches exactly, ^docker,lo "
                       "excludes");
  c.extra.push_back({"socket_ifname", ifname ? JsonString(*ifname) : "null"});
  std::vector<std::string> names;
  for (const InterfaceInfo& i : r.interfaces)
    if (std::find(names.begin(), names.end(), i.name) == names.end()) names.push_back(i.name);
  c.extra.push_back({"interfaces", JsonStrings(names)});
  return c;
}

std::optional<Cause> SharedMemory(const InitEvidence& r, const std::vector<std::string>& texts) {
  const InitEvidence::SysFailure* sys = nullptr;
  for (const InitEvidence::SysFailure& s : r.sys_failures) {
    if (!absl::StartsWith(s.path, "/dev/shm")) continue;
    if (s.call == "unlink") continue;
    sys = &s;
    break;
  }
  const std::string* text = FindText(texts, {"failed to extend", "shared memory segment", "failed to create shared memory",
                                             "/dev/shm", "unable to allocate shared memory"});
  if (sys == nullptr && text == nullptr) return std::nullopt;
  Cause c;
  c.subsystem = "shm";
  int64_t size = sys ? sys->size : -1;
  std::string path = sys ? sys->path : "";
  std::string call = sys ? sys->call : "";
  c.err = sys ? sys->err : 0;
  if (text != nullptr) {
    static const LazyRE2 kExtend = {R"((?:extend|segment) (/dev/shm/\S+?)(?: to|,| \(size) (\d+))"};
    std::string shm_path, digits;
    if (RE2::PartialMatch(*text, *kExtend, &shm_path, &digits)) {
      if (path.empty()) path = shm_path;
      int64_t v = 0;
      if (size < 0 && absl::SimpleAtoi(digits, &v)) size = v;
    }
    if (c.err == 0) c.err = ErrnoFromText(*text);
    if (call.empty()) call = absl::StrContains(*text, "extend") ? "extending it" : "creating it";
  }
  const char* size_word = sys != nullptr ? " of " : " to ";  // "fallocate of 9.2 MiB", "extending it to 9.2 MiB"
  {
  }
  std::string room;
  if (r.shm_size) {
    room = absl::StrFormat("; /dev/shm on %s is %s (%s free when NCCL began)", HostPhrase(r), Bytes(*r.shm_size),
                           r.shm_free ? Bytes(*r.shm_free) : "unknown");
  }
  c.detail = absl::StrFormat(
      "%s could not make NCCL's shared-memory segment in /dev/shm: %s%s%s%s (each connection between two local ranks "
      "takes such a segment)",
      kRanks, call.empty() ? "making it" : call,
      size > 0 ? absl::StrCat(size_word, Bytes(static_cast<uint64_t>(size))) : "",
      c.err ? absl::StrCat(" failed with ", ErrnoName(c.err)) : " failed", room);
  c.fix = "give the container a larger /dev/shm (docker run --shm-size=8g; on Kubernetes a memory-backed emptyDir "
          "mounted at /dev/shm) or share the host's (--ipc=host); NCCL_SHM_DISABLE=1 avoids /dev/shm at the cost of "
          "bandwidth between local GPUs";
  c.extra.push_back({"path", path.empty() ? "null" : JsonString(path)});
  c.extra.push_back({"requested", size > 0 ? absl::StrCat(size) : "null"});
  c.extra.push_back({"shm_size", r.shm_size ? absl::StrCat(*r.shm_size) : "null"});
  c.extra.push_back({"shm_free", r.shm_free ? absl::StrCat(*r.shm_free) : "null"});
  return c;
}

bool ConnectErrno(int e) {
  return e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH || e == ECONNRESET ||
         e == ECONNABORTED || e == EADDRNOTAVAIL;
}

std::optional<Cause> Bootstrap(const InitEvidence& r, const std::vector<std::string>& texts, const JobFacts& job) {
  const std::vector<InitEvidence>& all = job.all;
  const InitEvidence::SysFailure* sys = nullptr;
  int attempts = 0;
  for (const InitEvidence::SysFailure& s : r.sys_failures) {
    if (s.call != "connect" || !ConnectErrno(s.err)) continue;
    if (sys == nullptr) sys = &s;
    if (sys->addr && s.addr && sys->addr->ToString() == s.addr->ToString()) ++attempts;
  }
  std::optional<SocketAddress> addr = sys ? sys->addr : std::nullopt;
  int err = sys ? sys->err : 0;
  const std::string* text = FindText(texts, {"connect to ", "Connect to "});
  if (text != nullptr) {
    static const LazyRE2 kConnect = {R"([Cc]onnect to (\S+?)(?:,| returned| failed)(.*))"};
    std::string to, rest;
    if (RE2::PartialMatch(*text, *kConnect, &to, &rest)) {
      if (!addr) addr = ParseSocketAddressText(to);
      if (err == 0) err = ErrnoFromText(rest);
      static const LazyRE2 kAttempts = {R"(after (\d+) attempts)"};
      std::string count;
      if (attempts == 0 && RE2::PartialMatch(rest, *kAttempts, &count)) (void)absl::SimpleAtoi(count, &attempts);
    }
  }
  if (sys == nullptr && (text == nullptr || !ConnectErrno(err))) return std::nullopt;
  Cause c;
  c.subsystem = "bootstrap";
  c.err = err;
  const std::string where = addr ? addr->ToString() : "its bootstrap root";
  const std::string tries = attempts > 1 ? absl::StrCat(", ", attempts, " attempts") : "";
  if (err == ECONNREFUSED) {
    // Who listens where: NCCL_COMM_ID values that differ between ranks are
    // the classic wrong address or port.
    std::map<std::string, std::vector<int>> comm_ids;
    for (const InitEvidence& o : all)
      if (const std::string* v = o.Env("NCCL_COMM_ID")) comm_ids[*v].push_back(o.rank);
    std::string listen;
    if (comm_ids.size() > 1) {
      std::vector<std::string> parts;
      for (const auto& [v, ranks] : comm_ids) parts.push_back(absl::StrCat(RanksOrProcess(ranks), " NCCL_COMM_ID=", v));
      listen = absl::StrCat("; the ranks disagree on the root's address: ", absl::StrJoin(parts, ", "));
    }
    c.detail = absl::StrFormat(
        "%s could not connect to the bootstrap root at %s (%s%s): nothing listens there; the root (rank 0 with "
        "NCCL_COMM_ID, else the process that made the ncclUniqueId) never started it there, had exited, or the "
        "address or port is wrong%s",
        kRanks, where, ErrnoName(err), tries, listen);
    c.fix = "make every rank use the same root address and port (NCCL_COMM_ID, or MASTER_ADDR/MASTER_PORT for the "
            "launcher's store), and make sure the root process is alive and reaches ncclCommInitRank";
  } else {
    std::string local;
    if (r.interfaces_known && addr) {
      bool on_net = false;
      for (const InterfaceInfo& i : r.interfaces)
        if (InSubnet(*addr, i.addr, i.prefix_len) && !i.Loopback()) on_net = true;
      local = absl::StrCat("; its interfaces are ", InterfaceList(r),
                           on_net ? "" : absl::StrCat(", none of them on the network of ", addr->Ip()));
    }
    if (!r.bootstrap_iface.empty() && VirtualInterface(r.bootstrap_iface)) {
      absl::StrAppend(&local, "; NCCL picked ", r.bootstrap_iface, ", a container or virtual bridge");
    }
    c.detail = absl::StrFormat("%s could not reach the bootstrap root at %s (%s%s)%s", kRanks, where, ErrnoName(err),
                               tries, local);
    std::string suggest;
    for (const InitEvidence& o : all)
      if (suggest.empty() && o.interfaces_known && addr) suggest = SuggestInterface(o, addr);
    c.fix = absl::StrCat(
        "give this node a route to ", addr ? addr->Ip() : "the root", ", or pin NCCL_SOCKET_IFNAME on every rank to the "
        "interface on the network the ranks share",
        suggest.empty() ? "" : absl::StrCat(" (", suggest, ")"),
        addr && addr->port > 0 ? absl::StrCat("; check that no firewall drops port ", addr->port) : "");
  }
  c.extra.push_back({"address", addr ? JsonString(addr->ToString()) : "null"});
  return c;
}

std::optional<Cause> DuplicateGpu(const InitEvidence& r, const std::vector<std::string>& texts, const JobFacts& job) {
  // From the bus ids the traces recorded: the same GPU on the same host.
  std::vector<int> sharing;
  if (!r.bus_id.empty()) {
    for (const InitEvidence* o : job.by_gpu.at({r.host, r.bus_id}))
      if (o->comm == r.comm || o->comm == 0 || r.comm == 0) sharing.push_back(o->rank);
  }
  const std::string* text = FindText(texts, {"Duplicate GPU detected"});
  if (sharing.size() < 2 && text == nullptr) return std::nullopt;
  Cause c;
  c.subsystem = "gpu";
  std::string bus = r.bus_id;
  if (text != nullptr) {
    static const LazyRE2 kDup = {R"(rank (\d+) and rank (\d+) both on CUDA device ([0-9a-fA-F]+))"};
    std::string first, second, device;
    if (RE2::PartialMatch(*text, *kDup, &first, &second, &device)) {
      if (bus.empty()) bus = device;
      if (sharing.size() < 2) {
        int a = 0, b = 0;
        if (absl::SimpleAtoi(first, &a) && absl::SimpleAtoi(second, &b)) sharing = {b, a};
      }
    }
  }
  if (sharing.size() >= 2) c.ranks_override = sharing;
  c.detail = absl::StrFormat("%s use the same GPU%s on %s: NCCL refuses two ranks of one communicator on one device "
                             "(\"Duplicate GPU detected\")",
                             kRanks, bus.empty() ? "" : absl::StrCat(" (PCI bus id ", bus, ")"), HostPhrase(r));
  c.fix = "give each rank its own GPU: select the device from the local rank (torch.cuda.set_device(LOCAL_RANK), "
          "CUDA_VISIBLE_DEVICES per rank), and do not start more processes on a node than it has GPUs";
  c.extra.push_back({"bus_id", bus.empty() ? "null" : JsonString(bus)});
  return c;
}

// The version-skew cause, from the ranks' versions (and NCCL's own words,
// when the versions alone do not show two: a log without them).
Cause SkewCause(const std::map<int32_t, std::vector<const InitEvidence*>>& by_version, const std::string* text) {
  Cause c;
  c.subsystem = "version";
  std::vector<std::string> parts;
  size_t most = 0;
  int32_t majority = 0;
  for (const auto& [v, ranks] : by_version) {
    if (ranks.size() > most) {
      most = ranks.size();
      majority = v;
    }
  }
  for (const auto& [v, ranks] : by_version) {
    std::vector<int> rs;
    for (const InitEvidence* o : ranks) rs.push_back(o->rank);
    parts.push_back(absl::StrCat(RanksOrProcess(rs), " NCCL ", NcclVersionString(v),
                                 ranks.front()->nccl_path.empty() ? "" : absl::StrCat(" (", ranks.front()->nccl_path, ")")));
    if (v != majority) c.ranks_override.insert(c.ranks_override.end(), rs.begin(), rs.end());
  }
  if (by_version.size() < 2 && text != nullptr) {
    parts.push_back(*text);
    c.ranks_override.clear();
  }
  c.detail = absl::StrFormat("%s: the NCCL version differs from the rest of the job: %s", kRanks,
                             absl::StrJoin(parts, "; "));
  c.fix = "run the same NCCL on every node: the same container image or wheel (nvidia-nccl-cu*), and no other "
          "libnccl.so.2 earlier on LD_LIBRARY_PATH; check with NCCL_DEBUG=VERSION";
  std::vector<std::string> versions;
  for (const auto& [v, ranks] : by_version) versions.push_back(NcclVersionString(v));
  c.extra.push_back({"versions", JsonStrings(versions)});
  return c;
}

std::optional<Cause> NcclVersionSkew(const std::vector<std::string>& texts, const JobFacts& job) {
  if (job.skew) return job.skew;
  const std::string* text = FindText(texts, {"Mismatched NCCL version", "NCCL version mismatch"});
  if (text == nullptr) return std::nullopt;
  return SkewCause(job.by_version, text);
}

JobFacts::JobFacts(const std::vector<InitEvidence>& ranks) : all(ranks) {
  for (const InitEvidence& o : ranks) {
    if (o.nccl_version > 0) by_version[o.nccl_version].push_back(&o);
    if (!o.bus_id.empty()) by_gpu[{o.host, o.bus_id}].push_back(&o);
  }
  if (by_version.size() >= 2) skew = SkewCause(by_version, nullptr);
}

std::optional<Cause> DriverTooOld(const InitEvidence& r, const std::vector<std::string>& texts) {
  const std::string* text = FindText(texts, {"driver version is insufficient", "cudaErrorInsufficientDriver",
                                             "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"});
  const bool older = r.cuda_driver_version > 0 && r.cuda_runtime_version > 0 &&
                     r.cuda_driver_version / 1000 < r.cuda_runtime_version / 1000;
  if (text == nullptr && !older) return std::nullopt;
  Cause c;
  c.subsystem = "version";
  const std::string driver = r.cuda_driver_version > 0 ? absl::StrCat("CUDA ", VersionText(r.cuda_driver_version))
                             : r.driver_known        ? "none loaded: no libcuda.so.1, or one that could not load"
                                                     : "its version is not in the log";
  const std::string runtime = r.cuda_runtime_version > 0 ? absl::StrCat(" (CUDA runtime ", VersionText(r.cuda_runtime_version), ")")
                                                         : "";
  c.detail = absl::StrFormat("%s: the CUDA driver (%s) is older than the CUDA runtime NCCL uses%s; NCCL said: %s",
                             kRanks, driver, runtime, text ? *text : "nothing");
  c.fix = "install a driver at least as new as the CUDA version of the NCCL and framework build (CUDA 13 needs "
          "driver 580 or newer, CUDA 12 needs 525 or newer), or use a build for the installed driver's CUDA; in a "
          "container, run it with the NVIDIA container runtime (--gpus all) so the host driver is mounted";
  c.extra.push_back({"cuda_driver", r.cuda_driver_version > 0 ? JsonString(VersionText(r.cuda_driver_version)) : "null"});
  c.extra.push_back({"cuda_runtime", r.cuda_runtime_version > 0 ? JsonString(VersionText(r.cuda_runtime_version)) : "null"});
  return c;
}

std::optional<Cause> InfiniBand(const InitEvidence& r, const std::vector<std::string>& texts) {
  const std::string* text = FindText(texts, {"NET/IB", "ibv_", "IBV_", "NET/IBext", "mlx5"});
  const InitEvidence::SysFailure* verbs = nullptr;
  for (const InitEvidence::SysFailure& s : r.sys_failures)
    if (verbs == nullptr && absl::StartsWith(s.call, "ibv_")) verbs = &s;
  if (text == nullptr && verbs == nullptr) return std::nullopt;
  Cause c;
  c.subsystem = "ib";
  c.err = verbs != nullptr ? verbs->err : ErrnoFromText(*text);
  const bool low_memlock = r.memlock_soft && *r.memlock_soft != UINT64_MAX && *r.memlock_soft < (64ull << 20);
  const std::string what = text != nullptr ? *text
                                           : absl::StrCat(verbs->call, " failed with ", ErrnoName(verbs->err));
  c.detail = absl::StrFormat("%s: InfiniBand verbs failed during init: %s%s%s", kRanks, what,
                             low_memlock ? absl::StrCat("; RLIMIT_MEMLOCK is only ", Bytes(*r.memlock_soft),
                                                        ", and NCCL pins its buffers for the NIC")
                                         : "",
                             FailedLoads(r));
  c.fix = low_memlock ? "raise the locked-memory limit to unlimited (ulimit -l unlimited; docker run --ulimit "
                        "memlock=-1; Slurm: PropagateResourceLimitsExcept=MEMLOCK or a higher limit in slurmd)"
                      : "check the HCA with ibstat/ibv_devinfo (port Active, link up), NCCL_IB_HCA, and that the "
                        "container sees /dev/infiniband; NCCL_IB_DISABLE=1 falls back to sockets";
  c.extra.push_back({"memlock", r.memlock_soft ? (*r.memlock_soft == UINT64_MAX ? JsonString("unlimited")
                                                                                : absl::StrCat(*r.memlock_soft))
                                               : "null"});
  return c;
}

std::optional<Cause> Fabric(const std::vector<std::string>& texts) {
  const std::string* text = FindText(texts, {"system not yet initialized", "NVLS", "NVLink SHARP", "abric Manager",
                                             "fabric manager", "IMEX", "cuMulticast"});
  if (text == nullptr) return std::nullopt;
  Cause c;
  c.subsystem = "fabric";
  c.detail = absl::StrFormat("%s: the NVLink fabric (NVSwitch, NVLS multicast) was not usable during init: %s", kRanks,
                             *text);
  c.fix = "check that nvidia-fabricmanager (and on GB200, IMEX) is running and healthy on the node (systemctl status "
          "nvidia-fabricmanager; nvidia-smi -q | grep -i -A2 fabric); NCCL_NVLS_ENABLE=0 works around NVLS meanwhile";
  return c;
}

std::optional<Cause> PeerToPeer(const std::vector<std::string>& texts) {
  const std::string* text = FindText(texts, {"P2P/IPC", "cudaIpcOpenMemHandle", "peer access", "peer mapping",
                                             "cuMemImportFromShareableHandle", "IPC handle"});
  if (text == nullptr) return std::nullopt;
  Cause c;
  c.subsystem = "p2p";
  c.detail = absl::StrFormat("%s could not map another local GPU's memory (P2P / CUDA IPC) during init: %s", kRanks,
                             *text);
  c.fix = "check GPU peer access on the node (nvidia-smi topo -m; ACS/IOMMU settings in a VM), run containers with "
          "--ipc=host and the same GPUs visible to every local rank; NCCL_P2P_DISABLE=1 works around it (slower)";
  return c;
}

std::optional<Cause> CudaFailure(const InitEvidence& r, const std::vector<std::string>& texts) {
  const std::string* text = FindText(texts, {"Cuda failure", "CUDA failure", "cuda failure", "CUDA error"});
  bool cuda_result = false;
  for (const InitEvidence::Failure& f : r.failures) cuda_result |= f.result == 1;
  if (text == nullptr && !cuda_result) return std::nullopt;
  Cause c;
  c.subsystem = "cuda";
  c.detail = absl::StrFormat("%s: a CUDA call failed during NCCL init: %s", kRanks,
                             text ? *text : "ncclUnhandledCudaError (no text)");
  if (text != nullptr && absl::StrContains(*text, "out of memory")) {
    const std::string* buffsize = r.Env("NCCL_BUFFSIZE");
    c.fix = absl::StrCat("free GPU memory before creating the communicator (NCCL allocates its buffers at init, "
                         "NCCL_BUFFSIZE per connection and channel",
                         buffsize ? absl::StrCat(", set to ", *buffsize, " here") : "",
                         "): lower NCCL_BUFFSIZE or NCCL_MAX_NCHANNELS, create communicators before the model and "
                         "optimizer fill the GPU, or cap the framework's cache (PYTORCH_CUDA_ALLOC_CONF)");
  } else {
    c.fix = "check the GPU and its driver with nvidia-smi (an Xid in dmesg means the GPU needs a reset), "
            "CUDA_VISIBLE_DEVICES, and that the framework's CUDA matches the driver";
  }
  return c;
}

bool RemoteOnly(const InitEvidence& r) {
  for (const InitEvidence::Failure& f : r.failures) {
    if (f.result != 6 && !absl::StrContains(f.text, "remote peer") && !absl::StrContains(f.text, "closed by"))
      return false;
  }
  return true;
}

std::optional<Cause> Unknown(const InitEvidence& r) {
  for (const InitEvidence::Failure& f : r.failures) {
    if (f.async) continue;
    Cause c;
    c.subsystem = "unknown";
    c.detail = absl::StrFormat("%s: %s failed with %s: %s%s", kRanks, f.call.empty() ? "NCCL init" : f.call,
                               f.result >= 0 ? ResultName(f.result) : "an error",
                               f.text.empty() ? "NCCL gave no text" : f.text, FailedLoads(r));
    c.fix = "run again with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV and read this rank's first WARN line";
    return c;
  }
  return std::nullopt;
}

// A rank's cause; or nothing, with *consequence set when what went wrong on
// it is another rank's doing (it lost a peer, or NCCL told every rank of a
// mismatch that the other ranks brought).
std::optional<Cause> Classify(const InitEvidence& r, const JobFacts& job, bool* consequence) {
  const std::vector<std::string> texts = Texts(r);
  const bool failed = !r.failures.empty() || !r.sys_failures.empty();
  *consequence = false;
  if (auto c = DuplicateGpu(r, texts, job)) return c;
  if (auto c = NcclVersionSkew(texts, job); c && (failed || r.init_pending)) {
    if (c->ranks_override.empty() ||
        std::find(c->ranks_override.begin(), c->ranks_override.end(), r.rank) != c->ranks_override.end()) {
      return c;
    }
    *consequence = true;  // on the majority's side of the skew
    return std::nullopt;
  }
  if (!failed) return std::nullopt;
  if (auto c = DriverTooOld(r, texts)) return c;
  if (auto c = NoInterface(r, texts)) return c;
  if (auto c = SharedMemory(r, texts)) return c;
  if (auto c = Bootstrap(r, texts, job)) return c;
  if (auto c = InfiniBand(r, texts)) return c;
  if (auto c = Fabric(texts)) return c;
  if (auto c = PeerToPeer(texts)) return c;
  if (auto c = CudaFailure(r, texts)) return c;
  if (RemoteOnly(r)) {  // it only lost a peer that failed
    *consequence = true;
    return std::nullopt;
  }
  return Unknown(r);
}

}  // namespace

std::vector<InitFinding> DiagnoseInit(const std::vector<InitEvidence>& ranks) {
  struct Group {
    Cause cause;
    std::vector<std::pair<int64_t, int>> ranks;  // (first failure, rank)
    std::vector<uint32_t> pids;
    int process = -1;
    uint64_t comm = 0;
  };
  std::vector<Group> groups;
  const JobFacts job(ranks);
  std::set<int> explained;
  std::set<int> consequences;
  for (const InitEvidence& r : ranks) {
    bool consequence = false;
    std::optional<Cause> c = Classify(r, job, &consequence);
    if (consequence) consequences.insert(r.rank);
    if (!c) continue;
    const int64_t when = std::min(r.FirstFailureNs(), r.end_ns > 0 ? r.end_ns : INT64_MAX);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.cause.subsystem == c->subsystem && g.cause.err == c->err && g.cause.detail == c->detail;
    });
    if (it == groups.end()) {
      groups.push_back({*c, {}, {}, r.process, r.comm});
      it = groups.end() - 1;
    }
    if (!c->ranks_override.empty()) {
      for (int x : c->ranks_override)
        if (std::none_of(it->ranks.begin(), it->ranks.end(), [&](const auto& p) { return p.second == x; }))
          it->ranks.push_back({when, x});
    } else {
      it->ranks.push_back({when, r.rank});
    }
    it->pids.push_back(r.pid);
    for (const auto& p : it->ranks) explained.insert(p.second);
  }
  std::vector<InitFinding> out;
  int64_t first_cause_ns = INT64_MAX;
  for (Group& g : groups) {
    std::sort(g.ranks.begin(), g.ranks.end());
    InitFinding f;
    Finding& x = f.finding;
    x.kind = "init_failure";
    for (const auto& [when, rank] : g.ranks)
      if (rank >= 0) x.ranks.push_back(rank);  // unknown ranks are named by pid
    const std::string noun = !x.ranks.empty() ? RanksOrProcess(x.ranks)
                             : g.pids.size() == 1 ? absl::StrCat("the process (pid ", g.pids[0], ")")
                                                  : absl::StrCat("processes ", absl::StrJoin(g.pids, ", "));
    x.detail = absl::StrReplaceAll(g.cause.detail, {{kRanks, noun}});
    if (!x.detail.empty()) x.detail[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(x.detail[0])));
    x.fix = g.cause.fix;
    x.when_ns = g.ranks.front().first == INT64_MAX ? 0 : g.ranks.front().first;
    if (g.comm != 0) x.comm = g.comm;
    x.field = "";
    x.extra.push_back({"subsystem", JsonString(g.cause.subsystem)});
    x.extra.push_back({"errno", g.cause.err ? JsonString(ErrnoName(g.cause.err)) : "null"});
    for (const auto& e : g.cause.extra) x.extra.push_back(e);
    x.extra.push_back({"pids", absl::StrCat("[", absl::StrJoin(g.pids, ","), "]")});
    if (!x.ranks.empty()) {
      x.groups.push_back({x.ranks, absl::StrCat("init failed: ", g.cause.subsystem,
                                                g.cause.err ? absl::StrCat(" (", ErrnoName(g.cause.err), ")") : "")});
    }
    f.process = g.process;
    first_cause_ns = std::min(first_cause_ns, x.when_ns);
    out.push_back(f);
  }
  std::sort(out.begin(), out.end(), [](const InitFinding& a, const InitFinding& b) {
    return a.finding.when_ns < b.finding.when_ns;
  });

  // The ranks that only waited: still in an init call when they ended, or
  // failed only because a peer went away.
  std::vector<int> waited;
  std::set<std::string> how;
  int process = -1;
  uint64_t comm = 0;
  std::string call;
  for (const InitEvidence& r : ranks) {
    if (explained.count(r.rank)) continue;
    if (!r.init_pending && !consequences.count(r.rank)) continue;
    if (r.rank >= 0) waited.push_back(r.rank);
    if (!r.end.empty()) how.insert(r.end);
    if (process < 0) process = r.process;
    if (comm == 0) comm = r.comm;
    if (call.empty()) call = r.pending_call;
  }
  if (!waited.empty()) {
    InitFinding f;
    Finding& x = f.finding;
    x.kind = "init_failure";
    x.ranks = waited;
    std::sort(x.ranks.begin(), x.ranks.end());
    if (comm != 0) x.comm = comm;
    const std::string ended = how.empty() ? "" : absl::StrCat(" (until: ", absl::StrJoin(how, ", "), ")");
    if (out.empty()) {
      x.detail = absl::StrFormat("%s waited in %s%s, and no rank's trace shows a failure: a rank of the job may "
                                 "never have started the init (its trace is missing, or it is stuck before it)",
                                 RanksOrProcess(x.ranks), call.empty() ? "NCCL init" : call, ended);
      x.fix = "check that every rank of the job started and reached ncclCommInitRank (the launcher's log, and each "
              "rank's trace folder)";
      x.when_ns = 0;
    } else {
      x.detail = absl::StrFormat("%s failed or waited in %s because of the rank(s) above%s", RanksOrProcess(x.ranks),
                                 call.empty() ? "NCCL init" : call, ended);
      x.fix = "nothing to fix on these ranks: fix the failure above";
      x.when_ns = first_cause_ns == INT64_MAX ? 0 : first_cause_ns + 1;
    }
    x.extra.push_back({"subsystem", JsonString("waiting")});
    x.extra.push_back({"errno", "null"});
    x.groups.push_back({x.ranks, "waited for the others"});
    f.process = process;
    out.push_back(f);
  }
  return out;
}

}  // namespace ncclwatch::decoder

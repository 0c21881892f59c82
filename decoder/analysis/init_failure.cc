#include "analysis/init_failure.h"

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "analysis/gpu_sharing_failure.h"
#include "knowledge/message_catalogue.h"
#include "knowledge/nccl_semantics.h"
#include "re2/re2.h"

namespace ncclwatch::decoder {

namespace {

// One rank's cause, before ranks with the same cause are grouped.
struct Cause {
  InitFailureFacts facts;           // what was measured, by cause
  std::vector<int> ranks_override;  // the ranks a cross-rank cause names, when it knows them all
};

// Whether two ranks' causes are one: every fact the report words them with is
// equal (facts only the JSON carries, such as a segment's path, are the first
// rank's).
bool SameCause(const InitFailureFacts& a, const InitFailureFacts& b) {
  auto shm = [](const InitFailureFacts& x) {
    // Not the segment's path: each rank names its own.
    return x.shm ? std::make_tuple(true, x.shm->requested, x.shm->shm_size, x.shm->shm_free)
                 : std::make_tuple(false, std::optional<int64_t>(), std::optional<uint64_t>(),
                                   std::optional<uint64_t>());
  };
  auto cuda = [](const InitFailureFacts& x) {
    return x.cuda ? std::make_pair(x.cuda->driver, x.cuda->runtime)
                  : std::make_pair(std::optional<std::string>(), std::optional<std::string>());
  };
  auto memlock = [](const InitFailureFacts& x) {
    return x.memlock ? std::make_pair(x.memlock->bytes, x.memlock->unlimited)
                     : std::make_pair(std::optional<uint64_t>(), false);
  };
  return std::tie(a.cause, a.subsystem, a.err, a.socket_ifname, a.address, a.bus_id, a.host,
                  a.nccl_text, a.failed_loads, a.interfaces_known, a.interface_list, a.shm_call,
                  a.shm_call_traced, a.attempts, a.comm_ids, a.root_ip, a.root_port,
                  a.root_on_local_net, a.virtual_bootstrap_iface, a.version_groups, a.driver_known,
                  a.low_memlock, a.buffsize, a.out_of_memory, a.call, a.result, a.message) ==
             std::tie(b.cause, b.subsystem, b.err, b.socket_ifname, b.address, b.bus_id, b.host,
                      b.nccl_text, b.failed_loads, b.interfaces_known, b.interface_list, b.shm_call,
                      b.shm_call_traced, b.attempts, b.comm_ids, b.root_ip, b.root_port,
                      b.root_on_local_net, b.virtual_bootstrap_iface, b.version_groups,
                      b.driver_known, b.low_memlock, b.buffsize, b.out_of_memory, b.call, b.result,
                      b.message) &&
         shm(a) == shm(b) && cuda(a) == cuda(b) && memlock(a) == memlock(b) &&
         a.sharing == b.sharing;
}

// What every rank's classification compares it with, computed once per job.
struct JobFacts {
  explicit JobFacts(const std::vector<InitEvidence>& ranks);
  const std::vector<InitEvidence>& all;
  std::map<int32_t, std::vector<const InitEvidence*>> by_version;  // ranks by NCCL version
  std::map<std::pair<std::string, std::string>, std::vector<const InitEvidence*>>
      by_gpu;                 // by (host, bus id)
  std::optional<Cause> skew;  // when the ranks run more than one NCCL version
};

// A text a rank was given, with every message of the catalogue
// (knowledge/message_catalogue.h) it holds: the catalogue is init forensics' one
// table of what NCCL's words mean, shared with explain.
struct RankText {
  std::string text;
  std::vector<const CatalogueMessage*> messages;  // in table order
};
using RankTexts = std::vector<RankText>;

// Every text this rank was given: NCCL's own words first (its WARN lines,
// and the last error of a traced NCCL call), then what else the failed calls
// said (a framework's words, in which NCCL-only messages are not looked for).
RankTexts Texts(const InitEvidence& r) {
  RankTexts out;
  auto add = [&](const std::string& t, bool nccl) {
    if (t.empty()) return;
    for (const RankText& o : out)
      if (o.text == t) return;
    RankText x{t, FindMessages(t)};
    if (!nccl) {
      x.messages.erase(std::remove_if(x.messages.begin(), x.messages.end(),
                                      [](const CatalogueMessage* m) { return m->nccl_only; }),
                       x.messages.end());
    }
    out.push_back(std::move(x));
  };
  for (const std::string& w : r.warnings) add(w, true);
  for (const InitEvidence::Failure& f : r.failures) add(f.text, !f.call.empty());
  return out;
}

// The first text holding a message `want` accepts (and that message in *m).
template <typename Want>
const std::string* FindMessageText(const RankTexts& texts, Want want,
                                   const CatalogueMessage** m = nullptr) {
  for (const RankText& t : texts) {
    for (const CatalogueMessage* x : t.messages) {
      if (!want(*x)) continue;
      if (m != nullptr) *m = x;
      return &t.text;
    }
  }
  return nullptr;
}

// The first text holding one of the messages named.
const std::string* FindMessageText(const RankTexts& texts,
                                   std::initializer_list<absl::string_view> ids) {
  return FindMessageText(texts, [&](const CatalogueMessage& m) {
    return std::find(ids.begin(), ids.end(), m.id) != ids.end();
  });
}

// The first text holding a message of one of the causes named.
const std::string* FindCauseText(const RankTexts& texts,
                                 std::initializer_list<CatalogueCause> causes) {
  return FindMessageText(texts, [&](const CatalogueMessage& m) {
    return std::find(causes.begin(), causes.end(), m.cause) != causes.end();
  });
}

// Whether the text holds a message of the cause named.
bool Holds(const RankTexts& texts, const std::string& text, CatalogueCause cause) {
  for (const RankText& t : texts) {
    if (t.text != text) continue;
    return std::any_of(t.messages.begin(), t.messages.end(),
                       [&](const CatalogueMessage* m) { return m->cause == cause; });
  }
  return false;
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

// The rank's interfaces, IPv4 first, for the report to list.
std::vector<InitInterface> InterfaceList(const InitEvidence& r) {
  std::vector<InitInterface> out;
  std::set<std::string> seen;
  for (int pass = 0; pass < 2; ++pass) {  // IPv4 first
    for (const InterfaceInfo& i : r.interfaces) {
      if ((pass == 0) != (i.addr.family == AF_INET)) continue;
      if (i.addr.IsLinkLocal()) continue;
      if (!seen.insert(absl::StrCat(i.name, i.addr.Ip())).second) continue;
      out.push_back({i.name, i.addr.Ip(), i.prefix_len, !i.Up() || !i.Running(), i.Loopback()});
    }
  }
  return out;
}

bool VirtualInterface(const std::string& name) {
  for (const char* p :
       {"docker", "virbr", "veth", "br-", "cni", "flannel", "cali", "vxlan", "tun", "tap", "lxc"})
    if (absl::StartsWith(name, p)) return true;
  return false;
}

// The interface to suggest pinning: up, running, not loopback, not a bridge.
std::string SuggestInterface(const InitEvidence& r,
                             const std::optional<SocketAddress>& reach = std::nullopt) {
  for (const InterfaceInfo& i : r.interfaces) {
    if (!i.Up() || !i.Running() || i.Loopback() || i.addr.IsLinkLocal() || VirtualInterface(i.name))
      continue;
    if (reach && !InSubnet(*reach, i.addr, i.prefix_len)) continue;
    return i.name;
  }
  return "";
}

// The libraries NCCL could not load (optional plugins NCCL probes for are
// left out: their absence is normal).
std::vector<std::string> FailedLoads(const InitEvidence& r) {
  std::vector<std::string> names;
  for (const std::string& n : r.failed_loads)
    if (!absl::StartsWith(n, "libnccl-env") && !absl::StartsWith(n, "libnccl-tuner") &&
        !absl::StartsWith(n, "libnccl-profiler")) {
      names.push_back(n);
    }
  return names;
}

std::string VersionText(int32_t cuda) {  // 13000 -> "13.0"
  return cuda > 0 ? absl::StrFormat("%d.%d", cuda / 1000, cuda % 1000 / 10) : "none";
}

// ------------------------------------------------------------ the causes

Cause Of(InitCause cause, Area subsystem) {
  Cause c;
  c.facts.cause = cause;
  c.facts.subsystem = subsystem;
  return c;
}

std::optional<Cause> NoInterface(const InitEvidence& r, const RankTexts& texts) {
  if (!FindCauseText(texts, {CatalogueCause::kNetwork})) return std::nullopt;
  Cause c = Of(InitCause::kNoInterface, Area::kNetwork);
  const std::string* ifname = r.Env("NCCL_SOCKET_IFNAME");
  c.facts.host = r.host;
  c.facts.interfaces_known = r.interfaces_known;
  if (r.interfaces_known) c.facts.interface_list = InterfaceList(r);
  c.facts.suggest_interface = SuggestInterface(r);
  if (ifname != nullptr) c.facts.socket_ifname = *ifname;
  std::vector<std::string> names;
  for (const InterfaceInfo& i : r.interfaces)
    if (std::find(names.begin(), names.end(), i.name) == names.end()) names.push_back(i.name);
  c.facts.interfaces = names;
  return c;
}

std::optional<Cause> SharedMemory(const InitEvidence& r, const RankTexts& texts) {
  const InitEvidence::SysFailure* sys = nullptr;
  for (const InitEvidence::SysFailure& s : r.sys_failures) {
    if (!absl::StartsWith(s.path, "/dev/shm")) continue;
    if (s.call == "unlink") continue;
    sys = &s;
    break;
  }
  const std::string* text = FindCauseText(texts, {CatalogueCause::kShm});
  if (sys == nullptr && text == nullptr) return std::nullopt;
  Cause c = Of(InitCause::kSharedMemory, Area::kShm);
  int64_t size = sys ? sys->size : -1;
  std::string path = sys ? sys->path : "";
  std::string call = sys ? sys->call : "";
  c.facts.err = sys ? sys->err : 0;
  if (text != nullptr) {
    static const LazyRE2 kExtend = {R"((?:extend|segment) (/dev/shm/\S+?)(?: to|,| \(size) (\d+))"};
    std::string shm_path, digits;
    if (RE2::PartialMatch(*text, *kExtend, &shm_path, &digits)) {
      if (path.empty()) path = shm_path;
      int64_t v = 0;
      if (size < 0 && absl::SimpleAtoi(digits, &v)) size = v;
    }
    if (c.facts.err == 0) c.facts.err = ErrnoFromText(*text);
    if (call.empty()) call = absl::StrContains(*text, "extend") ? "extending it" : "creating it";
  }
  c.facts.shm_call = call;
  c.facts.shm_call_traced = sys != nullptr;
  if (r.shm_size) c.facts.host = r.host;  // the words name the host with its /dev/shm's size
  InitFailureFacts::Shm shm;
  if (!path.empty()) shm.path = path;
  if (size > 0) shm.requested = size;
  if (r.shm_size) shm.shm_size = *r.shm_size;
  if (r.shm_free) shm.shm_free = *r.shm_free;
  c.facts.shm = shm;
  return c;
}

bool ConnectErrno(int e) {
  return e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH ||
         e == ECONNRESET || e == ECONNABORTED || e == EADDRNOTAVAIL;
}

std::optional<Cause> Bootstrap(const InitEvidence& r, const RankTexts& texts, const JobFacts& job) {
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
  const std::string* text = FindMessageText(texts, {"nccl.socket.connect"});
  if (text != nullptr) {
    static const LazyRE2 kConnect = {R"([Cc]onnect to (\S+?)(?:,| returned| failed)(.*))"};
    std::string to, rest;
    if (RE2::PartialMatch(*text, *kConnect, &to, &rest)) {
      if (!addr) addr = ParseSocketAddressText(to);
      if (err == 0) err = ErrnoFromText(rest);
      static const LazyRE2 kAttempts = {R"(after (\d+) attempts)"};
      std::string count;
      if (attempts == 0 && RE2::PartialMatch(rest, *kAttempts, &count))
        (void)absl::SimpleAtoi(count, &attempts);
    }
  }
  if (sys == nullptr && (text == nullptr || !ConnectErrno(err))) return std::nullopt;
  Cause c =
      Of(err == ECONNREFUSED ? InitCause::kBootstrapRefused : InitCause::kBootstrapUnreachable,
         Area::kBootstrap);
  c.facts.err = err;
  c.facts.attempts = attempts;
  if (addr) c.facts.address = addr->ToString();
  if (err == ECONNREFUSED) {
    // Who listens where: NCCL_COMM_ID values that differ between ranks are
    // the classic wrong address or port.
    std::map<std::string, std::vector<int>> comm_ids;
    for (const InitEvidence& o : all)
      if (const std::string* v = o.Env("NCCL_COMM_ID")) comm_ids[*v].push_back(o.rank);
    if (comm_ids.size() > 1) c.facts.comm_ids.assign(comm_ids.begin(), comm_ids.end());
    return c;
  }
  if (addr) {
    c.facts.root_ip = addr->Ip();
    c.facts.root_port = addr->port;
  }
  if (r.interfaces_known && addr) {
    c.facts.interfaces_known = true;
    c.facts.interface_list = InterfaceList(r);
    bool on_net = false;
    for (const InterfaceInfo& i : r.interfaces)
      if (InSubnet(*addr, i.addr, i.prefix_len) && !i.Loopback()) on_net = true;
    c.facts.root_on_local_net = on_net;
  }
  if (!r.bootstrap_iface.empty() && VirtualInterface(r.bootstrap_iface))
    c.facts.virtual_bootstrap_iface = r.bootstrap_iface;
  for (const InitEvidence& o : all)
    if (c.facts.suggest_interface.empty() && o.interfaces_known && addr)
      c.facts.suggest_interface = SuggestInterface(o, addr);
  return c;
}

std::optional<Cause> DuplicateGpu(const InitEvidence& r, const RankTexts& texts,
                                  const JobFacts& job) {
  // From the bus ids the traces recorded: the same GPU on the same host.
  std::vector<int> sharing;
  if (!r.bus_id.empty()) {
    for (const InitEvidence* o : job.by_gpu.at({r.host, r.bus_id}))
      if (o->comm == r.comm || o->comm == 0 || r.comm == 0) sharing.push_back(o->rank);
  }
  const std::string* text = FindCauseText(texts, {CatalogueCause::kGpu});
  if (sharing.size() < 2 && text == nullptr) return std::nullopt;
  Cause c = Of(InitCause::kDuplicateGpu, Area::kGpu);
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
  c.facts.host = r.host;
  if (!bus.empty()) c.facts.bus_id = bus;
  return c;
}

// The version-skew cause, from the ranks' versions (and NCCL's own words,
// when the versions alone do not show two: a log without them).
Cause SkewCause(const std::map<int32_t, std::vector<const InitEvidence*>>& by_version,
                const std::string* text) {
  Cause c = Of(InitCause::kVersionSkew, Area::kVersion);
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
    c.facts.version_groups.push_back({rs, v, ranks.front()->nccl_path});
    if (v != majority) c.ranks_override.insert(c.ranks_override.end(), rs.begin(), rs.end());
  }
  if (by_version.size() < 2 && text != nullptr) {
    c.facts.nccl_text = *text;
    c.ranks_override.clear();
  }
  std::vector<std::string> versions;
  for (const auto& [v, ranks] : by_version) versions.push_back(NcclVersionString(v));
  c.facts.versions = versions;
  return c;
}

std::optional<Cause> NcclVersionSkew(const RankTexts& texts, const JobFacts& job) {
  if (job.skew) return job.skew;
  const std::string* text = FindMessageText(texts, {"nccl.version.mismatch"});
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

std::optional<Cause> DriverTooOld(const InitEvidence& r, const RankTexts& texts) {
  const std::string* text = FindCauseText(texts, {CatalogueCause::kDriverOld});
  const bool older = r.cuda_driver_version > 0 && r.cuda_runtime_version > 0 &&
                     r.cuda_driver_version / 1000 < r.cuda_runtime_version / 1000;
  if (text == nullptr && !older) return std::nullopt;
  // The runtime says "insufficient" when there is no driver at all: the
  // inventory, taken at init, saw none (no libcuda.so.1, or one that did
  // not load). That is no version skew.
  if (r.driver_known && r.cuda_driver_version == 0) {
    Cause none = Of(InitCause::kNoDriver, Area::kCuda);
    none.facts.driver_known = true;
    if (text) none.facts.nccl_text = *text;
    return none;
  }
  Cause c = Of(InitCause::kDriverTooOld, Area::kVersion);
  c.facts.driver_known = r.driver_known;
  if (text) c.facts.nccl_text = *text;
  InitFailureFacts::Cuda cuda;
  if (r.cuda_driver_version > 0) cuda.driver = VersionText(r.cuda_driver_version);
  if (r.cuda_runtime_version > 0) cuda.runtime = VersionText(r.cuda_runtime_version);
  c.facts.cuda = cuda;
  return c;
}

std::optional<Cause> InfiniBand(const InitEvidence& r, const RankTexts& texts) {
  // Any message of the verbs or of NCCL's IB transport, of either phase.
  const std::string* text = FindMessageText(texts, [](const CatalogueMessage& m) {
    return m.cause == CatalogueCause::kIb || MessageArea(m) == Area::kNetIb;
  });
  const InitEvidence::SysFailure* verbs = nullptr;
  for (const InitEvidence::SysFailure& s : r.sys_failures)
    if (verbs == nullptr && absl::StartsWith(s.call, "ibv_")) verbs = &s;
  if (text == nullptr && verbs == nullptr) return std::nullopt;
  Cause c = Of(InitCause::kInfiniBand, Area::kIb);
  c.facts.err = verbs != nullptr ? verbs->err : ErrnoFromText(*text);
  c.facts.low_memlock =
      r.memlock_soft && *r.memlock_soft != UINT64_MAX && *r.memlock_soft < (64ull << 20);
  if (text != nullptr) {
    c.facts.nccl_text = *text;
  } else {
    c.facts.call = verbs->call;  // with verbs->err, the facts' errno
  }
  c.facts.failed_loads = FailedLoads(r);
  InitFailureFacts::Memlock memlock;
  if (r.memlock_soft) {
    memlock.unlimited = *r.memlock_soft == UINT64_MAX;
    if (!memlock.unlimited) memlock.bytes = *r.memlock_soft;
  }
  c.facts.memlock = memlock;
  return c;
}

// The first text a message of the catalogue (knowledge/message_catalogue.h)
// names `only` in (nullopt: any cause that init forensics files under a
// subsystem), and that message. Messages of a running job are not evidence of
// a failed init.
const CatalogueMessage* Catalogued(const RankTexts& texts, std::optional<CatalogueCause> only,
                                   const std::string** text) {
  for (const RankText& t : texts) {
    if (t.messages.empty()) continue;
    const CatalogueMessage* m = t.messages.front();  // what the text says first
    if (m->phase == MessagePhase::kRuntime || CauseOf(*m).subsystem == Area::kNone) continue;
    if (!only || *only == m->cause) {
      *text = &t.text;
      return m;
    }
  }
  return nullptr;
}

std::optional<Cause> Fabric(const RankTexts& texts) {
  const std::string* text = nullptr;
  const CatalogueMessage* m = Catalogued(texts, CatalogueCause::kFabric, &text);
  if (m == nullptr) return std::nullopt;
  Cause c = Of(InitCause::kFabric, Area::kFabric);
  c.facts.nccl_text = *text;
  c.facts.message = m->id;
  return c;
}

std::optional<Cause> PeerToPeer(const RankTexts& texts) {
  const std::string* text = nullptr;
  const CatalogueMessage* m = Catalogued(texts, CatalogueCause::kP2p, &text);
  if (m == nullptr) return std::nullopt;
  Cause c = Of(InitCause::kPeerToPeer, Area::kP2p);
  c.facts.nccl_text = *text;
  c.facts.message = m->id;
  return c;
}

// Any other cause the catalogue names, with its subsystem.
std::optional<Cause> OtherCatalogued(const RankTexts& texts) {
  const std::string* text = nullptr;
  const CatalogueMessage* m = Catalogued(texts, std::nullopt, &text);
  if (m == nullptr) return std::nullopt;
  Cause c = Of(InitCause::kCatalogued, CauseOf(*m).subsystem);
  c.facts.nccl_text = *text;
  c.facts.message = m->id;
  return c;
}

std::optional<Cause> CudaFailure(const InitEvidence& r, const RankTexts& texts) {
  const std::string* text = FindCauseText(texts, {CatalogueCause::kCuda});
  bool cuda_result = false;
  for (const InitEvidence::Failure& f : r.failures) cuda_result |= f.result == 1;
  if (text == nullptr && !cuda_result) return std::nullopt;
  Cause c = Of(InitCause::kCuda, Area::kCuda);
  if (text != nullptr) c.facts.nccl_text = *text;
  // The same text naming GPU memory (NCCL's "Cuda failure 'out of memory'").
  if (text != nullptr && Holds(texts, *text, CatalogueCause::kGpuOom)) {
    c.facts.out_of_memory = true;
    if (const std::string* buffsize = r.Env("NCCL_BUFFSIZE")) c.facts.buffsize = *buffsize;
  }
  return c;
}

// Whether every failure of the rank is a peer it lost (ncclRemoteError, or
// a message of the catalogue that names a lost peer).
bool RemoteOnly(const InitEvidence& r, const RankTexts& texts) {
  for (const InitEvidence::Failure& f : r.failures) {
    if (f.result == 6) continue;
    const auto t = std::find_if(texts.begin(), texts.end(),
                                [&](const RankText& x) { return x.text == f.text; });
    if (t == texts.end() ||
        std::none_of(t->messages.begin(), t->messages.end(), [](const CatalogueMessage* m) {
          return m->cause == CatalogueCause::kPeerLost;
        }))
      return false;
  }
  return true;
}

std::optional<Cause> Unknown(const InitEvidence& r) {
  // No message says why; the part of NCCL that printed the first failure
  // (its WARN line's source file) still says where.
  Area area = Area::kUnknown;
  for (const InitEvidence::Failure& f : r.failures) {
    if (f.async || f.location.empty()) continue;
    if (const Area a = NcclSourceArea(f.location); a != Area::kNone) {
      area = a;
      break;
    }
  }
  for (const InitEvidence::Failure& f : r.failures) {
    if (f.async) continue;
    Cause c = Of(InitCause::kUnknown, area);
    c.facts.call = f.call;
    c.facts.result = f.result;
    c.facts.nccl_text = f.text;
    c.facts.failed_loads = FailedLoads(r);
    return c;
  }
  return std::nullopt;
}

// A rank's cause; or nothing, with *consequence set when what went wrong on
// it is another rank's doing (it lost a peer, or NCCL told every rank of a
// mismatch that the other ranks brought).
std::optional<Cause> Classify(const InitEvidence& r, const JobFacts& job, bool* consequence) {
  const RankTexts texts = Texts(r);
  const bool failed = !r.failures.empty() || !r.sys_failures.empty();
  *consequence = false;
  if (auto c = DuplicateGpu(r, texts, job)) return c;
  if (auto c = NcclVersionSkew(texts, job); c && (failed || r.init_pending)) {
    if (c->ranks_override.empty() || std::find(c->ranks_override.begin(), c->ranks_override.end(),
                                               r.rank) != c->ranks_override.end()) {
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
  if (std::optional<InitFailureFacts> sharing = GpuSharingCause(r)) return Cause{*sharing, {}};
  if (auto c = Fabric(texts)) return c;
  if (auto c = PeerToPeer(texts)) return c;
  if (auto c = CudaFailure(r, texts)) return c;
  if (auto c = OtherCatalogued(texts)) return c;
  if (RemoteOnly(r, texts)) {  // it only lost a peer that failed
    *consequence = true;
    return std::nullopt;
  }
  return Unknown(r);
}

// The bootstrap root gone: the process that made a communicator's unique id
// (hosting its bootstrap root) ended before the ranks of that communicator
// connected, and they failed or waited in init. Returns the root's cause, and
// puts the ranks that could not connect in *victims.
std::optional<Cause> RootGone(const InitEvidence& root, const std::vector<InitEvidence>& all,
                              std::set<int>* victims) {
  if (root.made_unique_id == 0 || root.formed_from_unique_id || root.init_pending) {
    return std::nullopt;
  }
  if (!root.end_known || root.end_ns <= 0) return std::nullopt;
  std::vector<int> stuck;
  for (const InitEvidence& o : all) {
    if (&o == &root || o.comm != root.made_unique_id) continue;
    // It waited past the root's end, or failed after the root had gone.
    if (o.init_pending || o.FirstFailureNs() >= root.end_ns) stuck.push_back(o.rank);
  }
  if (stuck.empty()) return std::nullopt;
  Cause c = Of(InitCause::kRootGone, Area::kBootstrap);
  c.facts.exit_code = root.exit_code;
  c.facts.signo = root.signo;
  c.facts.host = root.host;
  c.facts.could_not_connect = stuck;
  std::sort(c.facts.could_not_connect.begin(), c.facts.could_not_connect.end());
  victims->insert(stuck.begin(), stuck.end());
  return c;
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
  // A bootstrap root that went away first is the cause of its ranks' failures.
  std::map<int, Cause> roots_gone;
  for (const InitEvidence& r : ranks)
    if (std::optional<Cause> c = RootGone(r, ranks, &consequences))
      roots_gone.emplace(r.process, *c);
  for (const InitEvidence& r : ranks) {
    bool consequence = false;
    std::optional<Cause> c;
    if (auto root = roots_gone.find(r.process); root != roots_gone.end()) {
      c = root->second;
    } else if (consequences.count(r.rank) && !roots_gone.empty()) {
      continue;  // it could not connect to a root that had gone
    } else {
      c = Classify(r, job, &consequence);
    }
    if (c && c->facts.message.empty()) {
      // The catalogue's id of the rank's message that names this subsystem, if one does.
      const CatalogueMessage* m = nullptr;
      if (FindMessageText(
              Texts(r),
              [&](const CatalogueMessage& x) { return c->facts.subsystem == CauseOf(x).subsystem; },
              &m))
        c->facts.message = m->id;
    }
    if (consequence) consequences.insert(r.rank);
    if (!c) continue;
    const int64_t when = std::min(r.FirstFailureNs(), r.end_ns > 0 ? r.end_ns : INT64_MAX);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return SameCause(g.cause.facts, c->facts); });
    if (it == groups.end()) {
      groups.push_back({*c, {}, {}, r.process, r.comm != 0 ? r.comm : r.made_unique_id});
      it = groups.end() - 1;
    }
    if (!c->ranks_override.empty()) {
      for (int x : c->ranks_override)
        if (std::none_of(it->ranks.begin(), it->ranks.end(),
                         [&](const auto& p) { return p.second == x; }))
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
    x.kind = FindingKind::kInitFailure;
    for (const auto& [when, rank] : g.ranks)
      if (rank >= 0) x.ranks.push_back(rank);  // unknown ranks are named by pid
    InitFailureFacts facts = g.cause.facts;
    facts.pids = g.pids;
    x.when_ns = g.ranks.front().first == INT64_MAX ? 0 : g.ranks.front().first;
    if (g.comm != 0) x.comm = g.comm;
    x.facts = std::move(facts);
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
  std::set<RankEnd> how;
  int process = -1;
  uint64_t comm = 0;
  std::string call;
  for (const InitEvidence& r : ranks) {
    if (explained.count(r.rank)) continue;
    if (!r.init_pending && !consequences.count(r.rank)) continue;
    if (r.rank >= 0) waited.push_back(r.rank);
    if (r.exit_code || r.signo != 0) how.insert({r.exit_code, r.signo});
    if (process < 0) process = r.process;
    if (comm == 0) comm = r.comm;
    if (call.empty()) call = r.pending_call;
  }
  if (!waited.empty()) {
    InitFinding f;
    Finding& x = f.finding;
    x.kind = FindingKind::kInitFailure;
    InitFailureFacts facts;
    facts.cause = out.empty() ? InitCause::kWaitedUnexplained : InitCause::kWaitedForCause;
    facts.subsystem = Area::kWaiting;
    facts.has_pids = false;
    facts.call = call;
    facts.until.assign(how.begin(), how.end());
    x.ranks = waited;
    std::sort(x.ranks.begin(), x.ranks.end());
    if (comm != 0) x.comm = comm;
    x.when_ns = out.empty() || first_cause_ns == INT64_MAX ? 0 : first_cause_ns + 1;
    x.facts = std::move(facts);
    f.process = process;
    out.push_back(f);
  }
  return out;
}

}  // namespace ncclwatch::decoder

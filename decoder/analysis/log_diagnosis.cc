#include "analysis/log_diagnosis.h"

#include <algorithm>
#include <climits>
#include <csignal>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "analysis/gpu_topology_check.h"
#include "analysis/init_failure.h"
#include "knowledge/message_catalogue.h"
#include "knowledge/nccl_semantics.h"
#include "knowledge/stack_places.h"
#include "logs/gpu_topology.h"
#include "logs/stacks.h"
#include "re2/re2.h"

namespace ncclwatch::decoder {

FindingKind FindingKindOf(CatalogueCause cause) {
  if (CauseOf(cause).init_failure) return FindingKind::kInitFailure;
  using C = CatalogueCause;
  switch (cause) {
    case C::kFabric:
      return FindingKind::kNvlinkFabric;
    case C::kP2p:
      return FindingKind::kCudaIpcFailure;
    case C::kGpuFailed:
      return FindingKind::kGpuFault;
    case C::kGpuOom:
    case C::kHostOom:
      return FindingKind::kOutOfMemory;
    case C::kKernel:
    case C::kCuda:
      return FindingKind::kCudaError;
    case C::kNetRuntime:
    case C::kNetNotice:
    case C::kSocket:
      return FindingKind::kNetworkError;
    case C::kPeerLost:
    case C::kJaxTaskLost:
    case C::kJaxLeaderLost:
    case C::kProcessKilled:
      return FindingKind::kRankDied;
    case C::kRendezvous:
    case C::kJaxRendezvous:
      return FindingKind::kRendezvousFailure;
    case C::kDdpUnused:
    case C::kDdpReadyTwice:
    case C::kDdpModel:
    case C::kDdpMisc:
      return FindingKind::kDdpUsage;
    case C::kSizeMismatch:
    case C::kTorchMismatch:
      return FindingKind::kCollectiveMismatch;
    case C::kUneven:
    case C::kJaxBarrier:
    case C::kTorchBarrier:
      return FindingKind::kMissingRank;
    case C::kTeardown:
    case C::kTeardownRisk:
      return FindingKind::kTeardownHang;
    case C::kWatchdog:
      return FindingKind::kWatchdogTimeout;
    case C::kProxy:
    case C::kInternal:
    case C::kC10dUsage:
    case C::kTorchNccl:
    case C::kDeepspeedInit:
    case C::kModelParallel:
    case C::kGpuBusy:
      return FindingKind::kLogInsufficient;
    default:  // no finding of its own: the catalogue's words, as what the logs show
      return FindingKind::kLogInsufficient;
  }
}

namespace {

// A message of the catalogue that init forensics explains (a cause with a
// subsystem whose finding is an init failure).
bool InitMessage(const CatalogueMessage* m) {
  return m != nullptr && m->phase != MessagePhase::kRuntime &&
         FindingKindOf(m->cause) == FindingKind::kInitFailure;
}

// Whether a line of a process is evidence for init forensics: what a process
// reported while its init ran, or, for a process the logs only know from
// such lines (no host:pid, no Init line), what can only come from an init.
bool InitEvidenceLine(const LogProcess& p, const LogLine& l) {
  const CatalogueMessage* m = l.message;
  // NCCL's notices name what it worked around, never why an init failed:
  // they are warnings of their own (Catalogued).
  if (l.level == LogLine::kNotice) return false;
  // Nor do its warnings of what it went on after (a setting ignored, an
  // InfiniBand port event).
  if (m != nullptr && WarningOnly(*m)) return false;
  if (l.level != LogLine::kWarn && !InitMessage(m) && !NcclErrorText(l.text)) return false;
  // Words that also name healthy things (an HCA's name, "mlx5_0" in a
  // topology or a device list) count only in a WARN line or beside an error
  // word.
  if (m != nullptr && m->error_only && l.level != LogLine::kWarn && !ErrorWords(l.text))
    return false;
  if (m != nullptr && m->phase == MessagePhase::kRuntime) return false;
  if (p.host.empty() && !p.init_started) {
    // Nothing tells when it was printed: a message of either phase is left
    // to what it names apart from init, unless only init forensics names it.
    return m == nullptr || m->phase == MessagePhase::kInit ||
           FindingKindOf(m->cause) == FindingKind::kInitFailure;
  }
  return !p.init_complete || l.order < p.init_complete_order;
}

// A thing the logs show after (or apart from) initialisation.
struct Event {
  FindingKind kind;
  std::string key;  // events of one kind and key become one finding
  int rank = -1;
  int process = -1;
  int64_t when = 0;
  std::string text;
  LogFacts facts;                  // the kind's facts (cause, xid, bus id, memory, signal)
  std::optional<HangPhase> phase;  // where in the job, when the evidence says
};

HangPhase PhaseOf(StackPhase p) {
  switch (p) {
    case StackPhase::kStartup:
      return HangPhase::kStartup;
    case StackPhase::kTeardown:
      return HangPhase::kTeardown;
    case StackPhase::kStep:
      break;
  }
  return HangPhase::kStep;
}

// "c10d::ProcessGroupNCCL::abort(bool) const" -> "c10d::ProcessGroupNCCL::abort"
std::string FrameName(const std::string& function) {
  size_t paren = function.find(" (");
  if (paren == std::string::npos) paren = function.find('(');
  return std::string(absl::StripAsciiWhitespace(absl::string_view(function).substr(0, paren)));
}

// The first frame (most recent first) that says where the thread is.
const StackFrame* PlacedFrame(const std::vector<StackFrame>& frames, const StackPlace** place) {
  for (const StackFrame& f : frames) {
    if ((*place = PlaceOfFrame(f.function, f.where)) != nullptr) return &f;
  }
  return nullptr;
}

// Hardware and resources first, then init, the framework's own checks,
// deaths, mismatches, and last the timeouts and teardowns they cause.
int Priority(const Finding& f) {
  switch (f.kind) {
    case FindingKind::kGpuFault:
      return 0;
    case FindingKind::kOutOfMemory:
      return 1;
    case FindingKind::kNvlinkFabric:
      return 2;
    case FindingKind::kCudaIpcFailure:
      return 3;
    case FindingKind::kNetworkError:
      return 4;
    case FindingKind::kInitFailure: {
      const auto* init = std::get_if<InitFailureFacts>(&f.facts);
      return init != nullptr && init->subsystem == Area::kWaiting ? 15 : 5;
    }
    case FindingKind::kRendezvousFailure:
      return 6;
    case FindingKind::kDdpUsage:
      return 7;
    case FindingKind::kRankDied: {
      // A peer lost (a closed connection, NCCL's remote error, RAS) is what
      // the others saw of a failure: after everything that could be it.
      const auto* log = std::get_if<LogFacts>(&f.facts);
      const bool lost_peer = log != nullptr && (log->cause == LogCause::kLostPeer ||
                                                log->cause == LogCause::kCatalogued);
      return lost_peer ? 12 : 8;
    }
    case FindingKind::kCudaError:
      return 9;
    case FindingKind::kCollectiveMismatch:
      return 10;
    case FindingKind::kMissingRank:
      return 11;
    case FindingKind::kTeardownHang:
      return 13;
    case FindingKind::kWatchdogTimeout:
      return 14;
    default:
      return 16;
  }
}

// The facts of a log finding, made when first asked for.
LogFacts& Facts(Finding& f) {
  if (!std::holds_alternative<LogFacts>(f.facts)) f.facts = LogFacts{};
  return std::get<LogFacts>(f.facts);
}

class LogDiagnoser {
 public:
  LogDiagnoser(const NcclLog& log, const std::set<int>& init_elsewhere)
      : log_(log), init_elsewhere_(init_elsewhere) {}

  LogDiagnosis Run(std::vector<InitEvidence> evidence) {
    out_.evidence = evidence.empty() ? LogInitEvidence(log_) : std::move(evidence);
    std::vector<InitEvidence> judged;
    for (const InitEvidence& e : out_.evidence)
      if (init_elsewhere_.count(e.process) == 0) judged.push_back(e);
    std::vector<Finding> causes;
    for (InitFinding& f : DiagnoseInit(judged)) causes.push_back(std::move(f.finding));
    const StackEvidence stacks = ReadStacks(log_);
    ScanLines(stacks.stack_lines);
    Crashes(stacks);
    Watchdogs(&causes);
    GroupEvents(&causes);
    Stacks(stacks);
    Topologies();
    Conclude(&causes);
    return out_;
  }

 private:
  int64_t When(const LogLine& l) const {
    return log_.timestamps() ? l.when_ns : static_cast<int64_t>(l.order);
  }

  int RankOf(const LogLine& l) const {
    if (l.process >= 0 && log_.processes()[l.process].rank >= 0)
      return log_.processes()[l.process].rank;
    return l.tagged_rank;
  }

  // Which process (rank) a GPU's PCI bus id ("0000:3b:00", as an Xid names
  // it) belongs to, from Init lines. The processes are indexed by it once,
  // so that many Xid lines do not each go through every process.
  int RankOfBus(const std::string& bus, const std::string& line) {
    constexpr size_t kBusChars = 10;  // "0000:3b:00"
    if (!bus_indexed_) {
      for (size_t i = 0; i < log_.processes().size(); ++i) {
        const std::string& id = log_.processes()[i].bus_id;
        if (id.size() >= kBusChars)
          by_bus_[absl::AsciiStrToLower(id.substr(0, kBusChars))].push_back(i);
      }
      bus_indexed_ = true;
    }
    auto at = by_bus_.find(absl::AsciiStrToLower(bus));
    if (bus.size() != kBusChars || at == by_bus_.end()) return -1;
    int found = -1, count = 0;
    for (size_t i : at->second) {
      const LogProcess& p = log_.processes()[i];
      if (!p.host.empty() && absl::StrContains(line, p.host)) return p.rank;
      found = p.rank;
      ++count;
    }
    return count == 1 ? found : -1;
  }

  void Add(Event e) { events_.push_back(std::move(e)); }

  // One warning of `kind` for what a line says (the catalogue's message
  // `id`, or the line itself when it has none), whatever the number of
  // ranks that print it: the ranks of the lines are added to the first.
  void Warn(FindingKind kind, LogCause cause, const char* id, const std::string& line, int rank) {
    for (Finding& n : notes_) {
      const auto* x = std::get_if<LogFacts>(&n.facts);
      if (x == nullptr || x->cause != cause || (id != nullptr ? x->message != id : x->line != line))
        continue;
      if (rank >= 0 && std::find(n.ranks.begin(), n.ranks.end(), rank) == n.ranks.end()) {
        n.ranks.push_back(rank);
        std::sort(n.ranks.begin(), n.ranks.end());
      }
      return;
    }
    Finding n;
    if (rank >= 0) n.ranks = {rank};
    n.kind = kind;
    n.role = FindingRole::kWarning;
    Facts(n).cause = cause;
    if (id != nullptr) Facts(n).message = id;
    Facts(n).line = line;
    notes_.push_back(n);
  }

  // A line that a message of the catalogue names: an event of the message's
  // cause (init causes are init forensics' to report, from the evidence).
  void Catalogued(const LogLine& l, int rank, int64_t when) {
    const std::string& t = l.text;
    const CatalogueMessage* m = l.message;
    if (m == nullptr) {
      // An NCCL notice the catalogue does not name: said, as a warning.
      if (l.level == LogLine::kNotice)
        Warn(FindingKind::kLogInsufficient, LogCause::kNotice, nullptr, t, rank);
      return;
    }
    if (m->error_only && l.level != LogLine::kWarn && !ErrorWords(t)) return;
    // A risk, not a failure (NCCL's notices are that too): a warning; the
    // job stays healthy on its account.
    if (WarningOnly(*m) || l.level == LogLine::kNotice) {
      Warn(FindingKindOf(m->cause), LogCause::kCatalogued, m->id, t, rank);
      return;
    }
    // A message of an init cause outside any init (a bad argument to a
    // collective, a plugin or topology warning under a running job): the
    // catalogue's words for it, as a note of what the logs show, after every
    // cause they explain.
    const FindingKind kind = FindingKindOf(m->cause) == FindingKind::kInitFailure
                                 ? FindingKind::kLogInsufficient
                                 : FindingKindOf(m->cause);
    if (m->cause == CatalogueCause::kTorchMismatch) {
      TorchMismatch(l, rank, when);
      return;
    }
    // The rank the message names ("Rank 0 exhausted all inputs.", "[PG 0
    // Rank 3]", "but Rank 1 has 42 params"), where no prefix or Init line did.
    static const LazyRE2 kRankWord = {R"(\bRank (\d+)\b)"};
    std::string rank_text;
    int named = -1;
    const CatalogueCause name = m->cause;
    // A monitored barrier's report names the rank that never came, not the
    // reporter ("Rank 1 failed to pass monitoredBarrier in 30000 ms").
    const bool names_missing = name == CatalogueCause::kTorchBarrier;
    if ((rank < 0 || names_missing) && RE2::PartialMatch(t, *kRankWord, &rank_text) &&
        absl::SimpleAtoi(rank_text, &named) && named >= 0 && named < kMaxRanks)
      rank = named;
    else if (names_missing)
      rank = -1;
    // Uneven inputs: one finding, naming only the ranks that ran out (the
    // others say that one did, not which; Join's skew warning names the rank
    // short of inputs, whoever prints it).
    if (name == CatalogueCause::kUneven && absl::string_view(m->id) == "torch.join.uneven")
      rank = -1;
    static const LazyRE2 kShortRank = {R"(rank (\d+) has at least)"};
    if (absl::string_view(m->id) == "torch.join.skew") {
      int short_rank = -1;
      rank = RE2::PartialMatch(t, *kShortRank, &rank_text) &&
                     absl::SimpleAtoi(rank_text, &short_rank) && short_rank >= 0 &&
                     short_rank < kMaxRanks
                 ? short_rank
                 : -1;
    }
    // A JAX barrier's timeout: the task that reports it waited; the ones that
    // never came are named on the lines after it, not by the reporter's tag.
    if (name == CatalogueCause::kJaxBarrier) rank = -1;
    const std::string address = MessageAddress(*m, t);
    const std::string key = name == CatalogueCause::kUneven
                                ? "uneven"
                                : absl::StrCat(CauseOf(*m).name, "/", m->id, "/", address);
    Event e{kind, key, rank, l.process, when, t};
    // The causes whose findings existed before the catalogue keep their own
    // facts; every other message is kCatalogued, described by the catalogue.
    static const struct {
      CatalogueCause cause;
      LogCause log_cause;
      const char* memory;
    } kOwnFacts[] = {
        {CatalogueCause::kFabric, LogCause::kFabric, nullptr},
        {CatalogueCause::kP2p, LogCause::kCudaIpc, nullptr},
        {CatalogueCause::kGpuFailed, LogCause::kGpuFailed, nullptr},
        {CatalogueCause::kGpuOom, LogCause::kGpuOutOfMemory, "gpu"},
        {CatalogueCause::kHostOom, LogCause::kHostOutOfMemory, "host"},
        {CatalogueCause::kKernel, LogCause::kKernelError, nullptr},
    };
    e.facts.cause = LogCause::kCatalogued;
    for (const auto& own : kOwnFacts) {
      if (name != own.cause) continue;
      e.facts.cause = own.log_cause;
      if (own.memory != nullptr) e.facts.memory = own.memory;
    }
    e.facts.message = m->id;
    if (!address.empty()) e.facts.address = address;
    // The OOM killer's victim, by its pid.
    static const LazyRE2 kVictim = {R"(Killed process (\d+)|\bpid=(\d+))"};
    std::string victim, victim2;
    int pid = -1;
    if (name == CatalogueCause::kHostOom && RE2::PartialMatch(t, *kVictim, &victim, &victim2) &&
        absl::SimpleAtoi(victim.empty() ? victim2 : victim, &pid) && pid > 0)
      e.facts.pid = pid;
    // A lost peer is what follows a death: after the deaths the logs name;
    // and one that names the peer (a task, an address) before one that only
    // relays that some peer failed.
    if (FindingKindOf(m->cause) == FindingKind::kRankDied)
      e.when = address.empty() ? INT64_MAX - 1 : INT64_MAX - 2;
    Add(e);
  }

  // PyTorch's own check (TORCH_DISTRIBUTED_DEBUG=DETAIL): "Rank 0 is running
  // collective: CollectiveFingerPrint(OpType=ALLREDUCE, ...), but Rank 2 is
  // running collective: CollectiveFingerPrint(OpType=BROADCAST, ...)".
  void TorchMismatch(const LogLine& l, int rank, int64_t when) {
    static const LazyRE2 kPair = {
        R"(Rank (\d+) is running collective: (.*?),? but Rank (\d+) is running collective: (.*))"};
    static const LazyRE2 kOp = {R"(OpType=(\w+))"};
    std::string a, what_a, b, what_b;
    Event e{FindingKind::kCollectiveMismatch, "torch_mismatch", rank, l.process, when, l.text};
    e.facts.cause = LogCause::kTorchMismatch;
    e.facts.message = "torch.debug.mismatch";
    int ra = -1, rb = -1;
    if (RE2::PartialMatch(l.text, *kPair, &a, &what_a, &b, &what_b) && absl::SimpleAtoi(a, &ra) &&
        absl::SimpleAtoi(b, &rb) && ra >= 0 && rb >= 0 && ra < kMaxRanks && rb < kMaxRanks) {
      auto op = [](const std::string& what) {
        std::string o;
        if (RE2::PartialMatch(what, *kOp, &o)) return o;
        return what.substr(0, 80);
      };
      e.facts.timeouts = {{{ra}, 0, op(what_a), ""}, {{rb}, 0, op(what_b), ""}};
      e.rank = rb;
    }
    Add(e);
  }

  // `stack_lines`: the lines of stacks (ascending), which Stacks() reads whole.
  void ScanLines(const std::vector<size_t>& stack_lines) {
    // RE2: linear in the line, whatever it holds. Numbers are taken as text
    // and converted with a check: digits that overflow are no number here.
    static const LazyRE2 kXid = {
        R"(Xid \((?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})[^)]*\): (\d+))"};
    static const LazyRE2 kRemote = {R"(Connection closed by remote peer ([^\s,]+))"};
    static const LazyRE2 kSignalRank = {
        R"(rank (\d+)\b.*?(?:died of|exited on|killed by) signal (\d+))"};
    static const LazyRE2 kTorchExit = {R"(exitcode\s*:\s*(-?\d+) \(pid: (\d+)\))"};
    static const LazyRE2 kTorchRank = {R"(^\s*rank\s*:\s*(\d+))"};
    static const LazyRE2 kSrun = {
        R"(srun: error: (\S+): tasks? ([0-9,\-]+): (Killed|Segmentation fault|Aborted|Bus error|Terminated))"};
    int torch_rank = -1;
    auto next_stack = stack_lines.begin();
    for (const LogLine& l : log_.lines()) {
      const size_t index = static_cast<size_t>(&l - log_.lines().data());
      while (next_stack != stack_lines.end() && *next_stack < index) ++next_stack;
      if (next_stack != stack_lines.end() && *next_stack == index) continue;
      const std::string& t = l.text;
      const int rank = RankOf(l);
      const int64_t when = When(l);
      std::string m1, m2, m3;
      // What a process reported while its NCCL init ran is init forensics' to explain.
      if (l.process >= 0 && InitEvidenceLine(log_.processes()[l.process], l)) continue;
      bool handled = false;  // by a reader below that measures more than the catalogue
      int xid = 0;
      if (absl::StrContains(t, "Xid") && RE2::PartialMatch(t, *kXid, &m1, &m2) &&
          absl::SimpleAtoi(m2, &xid)) {
        Event e{FindingKind::kGpuFault,
                absl::StrCat("xid", xid, m1),
                RankOfBus(m1, t),
                l.process,
                when,
                t};
        e.facts.xid = xid;
        e.facts.bus_id = m1;
        e.facts.cause = LogCause::kXid;
        Add(e);
        continue;
      }
      if (absl::StrContains(t, "Connection closed by remote peer") &&
          RE2::PartialMatch(t, *kRemote, &m1)) {
        remote_closed_.push_back({rank, m1});
        handled = true;
      }
      // The launcher's word on a rank that died.
      if (RE2::PartialMatch(t, *kTorchRank, &m1) && !absl::SimpleAtoi(m1, &torch_rank))
        torch_rank = -1;
      int dead = -1, signo = 0;
      int code = 0;
      if (RE2::PartialMatch(t, *kSignalRank, &m1, &m2)) {
        if (!absl::SimpleAtoi(m1, &dead) || !absl::SimpleAtoi(m2, &signo)) dead = -1;
      } else if (torch_rank >= 0 && RE2::PartialMatch(t, *kTorchExit, &m1) &&
                 absl::SimpleAtoi(m1, &code)) {
        if (code < 0 && code > -128) {  // killed by signal -code
          dead = torch_rank;
          signo = -code;
        }
        torch_rank = -1;
      } else if (RE2::PartialMatch(t, *kSrun, nullptr, &m2, &m3)) {
        int task = -1;
        if (absl::SimpleAtoi(m2, &task)) dead = task;
        signo = m3 == "Killed"               ? 9
                : m3 == "Segmentation fault" ? 11
                : m3 == "Aborted"            ? 6
                : m3 == "Bus error"          ? 7
                                             : 15;
      }
      if (dead >= kMaxRanks) dead = -1;  // no job has that rank
      if (dead >= 0 && signo != 15) {    // SIGTERM is how a launcher stops the others: not a cause
        Event e{FindingKind::kRankDied, absl::StrCat(dead, ":", signo), dead, -1, when, t};
        e.facts.signo = signo;
        e.facts.cause = LogCause::kLauncherDeath;
        Add(e);
        handled = true;
      }
      if (!handled) Catalogued(l, rank, when);
    }
  }

  void Watchdogs(std::vector<Finding>* causes) {
    // Whole or cut: a watchdog line may end anywhere after the op's name.
    static const LazyRE2 kWatchdog = {
        R"(Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)(?:, NumelIn=(-?\d+), NumelOut=(-?\d+))?(?:.*?Timeout\(ms\)=(\d+))?)"};
    // "[Rank 3]", "[PG 0 Rank 3]", "[PG ID 0 PG GUID 0(default_pg) Rank 3]"
    static const LazyRE2 kRankWord = {R"(\[(?:PG [^\]]*)?Rank (\d+)\])"};
    struct Timeout {
      uint64_t seq;
      std::string op;
      std::string numel;
      int64_t when;
      std::string timeout_ms;
    };
    std::map<int, Timeout> by_rank;
    for (const LogLine& l : log_.lines()) {
      std::string seq_text, op, numel, timeout_ms, rank_text;
      if (!absl::StrContains(l.text, "Watchdog caught") ||
          !RE2::PartialMatch(l.text, *kWatchdog, &seq_text, &op, &numel, nullptr, &timeout_ms)) {
        continue;
      }
      uint64_t seq = 0;
      if (!absl::SimpleAtoi(seq_text, &seq)) continue;  // a SeqNum past 2^64: not PyTorch's
      int rank = RankOf(l);
      if (RE2::PartialMatch(l.text, *kRankWord, &rank_text) && !absl::SimpleAtoi(rank_text, &rank))
        rank = -1;
      if (rank < 0 || rank >= kMaxRanks || by_rank.count(rank)) continue;
      by_rank[rank] = {seq, op, numel, When(l), timeout_ms};
    }
    if (by_rank.empty()) return;
    watchdog_read_ = true;
    std::map<std::tuple<uint64_t, std::string, std::string>, std::vector<int>> groups;
    int64_t first = INT64_MAX;
    for (const auto& [rank, t] : by_rank) {
      groups[{t.seq, t.op, t.numel}].push_back(rank);
      first = std::min(first, t.when);
    }
    auto timeout = [](const std::tuple<uint64_t, std::string, std::string>& g,
                      const std::vector<int>& ranks) {
      return LogFacts::Timeout{ranks, std::get<0>(g), std::get<1>(g), std::get<2>(g)};
    };
    // Different collectives at the same sequence number: a mismatch.
    std::map<uint64_t, std::vector<std::tuple<uint64_t, std::string, std::string>>> by_seq;
    for (const auto& [g, ranks] : groups) by_seq[std::get<0>(g)].push_back(g);
    for (const auto& [seq, gs] : by_seq) {
      if (gs.size() < 2) continue;
      Finding x;
      x.kind = FindingKind::kCollectiveMismatch;
      x.seq = seq;
      // The largest group did what the rest of the job expected; the others deviate.
      size_t majority = 0;
      for (size_t i = 1; i < gs.size(); ++i)
        if (groups[gs[i]].size() > groups[gs[majority]].size()) majority = i;
      bool op_differs = false;
      Facts(x).cause = LogCause::kWatchdogMismatch;
      for (size_t i = 0; i < gs.size(); ++i) {
        const auto& g = gs[i];
        const std::vector<int>& ranks = groups[g];
        if (i != majority) x.ranks.insert(x.ranks.end(), ranks.begin(), ranks.end());
        if (std::get<1>(g) != std::get<1>(gs.front())) op_differs = true;
        Facts(x).timeouts.push_back(timeout(g, ranks));
      }
      x.field = op_differs ? MismatchField::kOp : MismatchField::kCount;
      x.when_ns = first;
      causes->push_back(x);
      return;
    }
    // Ranks of the job that never timed out: they were not in the collective.
    const auto& [g0, r0] = *groups.begin();
    int nranks = -1;  // at most kMaxRanks (NcclLog believes no more)
    std::set<int> seen;
    for (const LogProcess& p : log_.processes()) {
      nranks = std::max(nranks, p.nranks);
      seen.insert(p.rank);
    }
    std::vector<int> silent, unseen;
    for (int r = 0; r < nranks; ++r) {
      if (by_rank.count(r)) continue;
      (seen.count(r) ? silent : unseen).push_back(r);
    }
    std::vector<int> timed_out;
    for (const auto& [rank, t] : by_rank) timed_out.push_back(rank);
    if (groups.size() == 1 && !silent.empty()) {
      Finding x;
      x.kind = FindingKind::kMissingRank;
      x.seq = std::get<0>(g0);
      x.ranks = silent;
      x.nranks = nranks;
      Facts(x).cause = LogCause::kWatchdogMissing;
      Facts(x).timeouts = {timeout(g0, r0)};
      Facts(x).timed_out = timed_out;
      x.when_ns = first;
      causes->push_back(x);
    }
    Finding w;
    w.kind = FindingKind::kWatchdogTimeout;
    w.seq = std::get<0>(g0);
    w.ranks = timed_out;
    w.nranks = nranks;
    Facts(w).cause = LogCause::kWatchdogTimeout;
    for (const auto& [g, ranks] : groups) Facts(w).timeouts.push_back(timeout(g, ranks));
    w.when_ns = first + 1;
    if (!by_rank.begin()->second.timeout_ms.empty())
      Facts(w).timeout_ms = by_rank.begin()->second.timeout_ms;
    causes->push_back(w);
    if (!unseen.empty()) {
      Finding n;
      n.kind = FindingKind::kLogInsufficient;
      n.role = FindingRole::kNote;
      n.ranks = unseen;
      Facts(n).cause = LogCause::kUnseenRanks;
      notes_.push_back(n);
    }
  }

  // The rank of the process with `pid` in the logs, when exactly one has it.
  int RankOfPid(int pid, int* process) const {
    int found = -1;
    for (size_t i = 0; i < log_.processes().size(); ++i) {
      if (log_.processes()[i].pid != pid) continue;
      if (found >= 0) return -1;
      found = static_cast<int>(i);
    }
    if (found < 0) return -1;
    *process = found;
    return log_.processes()[found].rank;
  }

  // A process's own report of its crash: a rank that died, with what it hit.
  void Crashes(const StackEvidence& ev) {
    for (const CrashReport& c : ev.crashes) {
      // SIGTERM and SIGINT are how a launcher or a user stops a job: no cause.
      if (c.signo == 0 || c.signo == SIGTERM || c.signo == SIGINT) continue;
      int rank = c.owner.rank, process = c.owner.process;
      if (rank < 0 && c.pid > 0) rank = RankOfPid(c.pid, &process);
      const LogLine& l = log_.lines()[c.line];
      Event e{
          FindingKind::kRankDied, absl::StrCat(rank, ":", c.signo), rank, process, When(l), l.text};
      e.facts.cause = LogCause::kCrash;
      e.facts.signo = c.signo;
      if (c.pid > 0) e.facts.pid = c.pid;
      e.facts.tool = c.tool;
      const StackPlace* place = nullptr;
      const StackFrame* placed = PlacedFrame(c.frames, &place);
      if (!c.module.empty()) {
        e.facts.hit = c.module;
        e.facts.subsystem = ModuleSubsystem(c.module);
      } else if (!c.exception.empty()) {
        e.facts.hit = absl::StrCat("an uncaught C++ exception (", c.exception, ")");
        e.facts.subsystem =
            absl::StrContains(c.exception, "DistBackendError") ? Area::kC10d : Area::kNone;
      } else if (!c.frames.empty()) {
        const StackFrame& top = c.frames.front();
        e.facts.hit = absl::StrCat(FrameName(top.function),
                                   top.where.empty() ? "" : absl::StrCat(" (", top.where, ")"));
        e.facts.subsystem = absl::StartsWith(FrameName(top.function), "nccl") ? Area::kNccl
                            : place != nullptr                                ? place->subsystem
                                                                              : Area::kNone;
      }
      if (placed != nullptr) e.phase = PhaseOf(place->phase);
      Add(e);
    }
  }

  // Where each rank's stack waits (the last dump of each): one finding, the
  // ranks grouped by the frame that says where.
  void Stacks(const StackEvidence& ev) {
    std::map<int, LogFacts::Wait> by_rank;  // -1 - n: the n-th process of unknown rank
    std::set<std::string> tools;
    int unknown = 0;
    for (const StackDump& d : ev.dumps) {
      const StackThread* chosen = nullptr;
      const StackFrame* frame = nullptr;
      const StackPlace* place = nullptr;
      for (int pass = 0; pass < 2 && frame == nullptr; ++pass) {
        for (const StackThread& t : d.threads) {
          if (pass == 0 && !t.main) continue;
          const StackPlace* p = nullptr;
          if (const StackFrame* f = PlacedFrame(t.frames, &p)) {
            chosen = &t;
            frame = f;
            place = p;
            break;
          }
        }
      }
      if (chosen == nullptr) {  // no frame says: the main thread's top frame, else any
        for (const StackThread& t : d.threads)
          if (!t.frames.empty() && (chosen == nullptr || (t.main && !chosen->main))) chosen = &t;
        if (chosen == nullptr) continue;
        frame = &chosen->frames.front();
      }
      int rank = d.owner.rank;
      int process = d.owner.process;
      if (rank < 0 && d.pid > 0) rank = RankOfPid(d.pid, &process);
      LogFacts::Wait w;
      w.frame = FrameName(frame->function);
      if (place != nullptr) {
        w.place = place->what;
        w.phase = PhaseOf(place->phase);
        w.subsystem = place->subsystem;
      }
      by_rank[rank >= 0 ? rank : -1 - unknown++] = std::move(w);
      tools.insert(d.tool);
    }
    if (by_rank.empty()) return;
    Finding x;
    x.kind = FindingKind::kHangUnexplained;
    LogFacts& facts = Facts(x);
    facts.cause = LogCause::kStacks;
    facts.tool = absl::StrJoin(tools, ", ");
    std::map<std::tuple<std::string, std::string, std::optional<HangPhase>>, size_t> group;
    std::set<std::optional<HangPhase>> phases;
    for (const auto& [rank, w] : by_rank) {
      if (rank >= 0) x.ranks.push_back(rank);
      phases.insert(w.phase);
      auto [it, fresh] =
          group.emplace(std::make_tuple(w.frame, w.place, w.phase), facts.waits.size());
      if (fresh) {
        facts.waits.push_back(w);
        facts.waits.back().ranks.clear();
      }
      facts.waits[it->second].ranks.push_back(rank >= 0 ? rank : -1);
    }
    // The phase, when every stack says the same one; every rank stuck in
    // its teardown is a teardown hang.
    if (phases.size() == 1 && phases.begin()->has_value()) {
      x.phase = *phases.begin();
      if (x.phase == HangPhase::kTeardown) x.kind = FindingKind::kTeardownHang;
    }
    x.when_ns = INT64_MAX;
    stacks_ = std::move(x);
  }

  void GroupEvents(std::vector<Finding>* causes) {
    std::map<std::pair<FindingKind, std::string>, std::vector<const Event*>> groups;
    for (const Event& e : events_) {
      // The watchdog's lines read whole say more than the catalogue's word for them.
      if (watchdog_read_ && e.kind == FindingKind::kWatchdogTimeout) continue;
      groups[{e.kind, e.key}].push_back(&e);
    }
    for (const auto& [key, es] : groups) {
      Finding x;
      x.kind = key.first;
      std::set<int> ranks;
      int64_t when = INT64_MAX;
      for (const Event* e : es) {
        if (e->rank >= 0) ranks.insert(e->rank);
        when = std::min(when, e->when);
      }
      x.ranks.assign(ranks.begin(), ranks.end());
      // The words of the first event that names its rank (it says more),
      // else of the first.
      // A crash's own report says what it hit: before the launcher's word on it.
      auto named = std::find_if(es.begin(), es.end(), [](const Event* e) {
        return e->rank >= 0 && e->facts.cause == LogCause::kCrash;
      });
      if (named == es.end())
        named = std::find_if(es.begin(), es.end(), [](const Event* e) { return e->rank >= 0; });
      if (named == es.end())  // the line that names the process (the OOM killer's victim)
        named = std::find_if(es.begin(), es.end(), [](const Event* e) { return e->facts.pid; });
      const Event& first = named != es.end() ? **named : *es.front();
      LogFacts facts = first.facts;
      facts.line = first.text;
      x.facts = std::move(facts);
      x.when_ns = when;
      for (const Event* e : es)
        if (!x.phase && e->phase) x.phase = e->phase;
      causes->push_back(x);
    }
    if (!remote_closed_.empty()) {
      // Peers that lost a connection name the address of the one that went away.
      std::set<std::string> peers;
      std::set<int> who;
      for (const auto& [rank, peer] : remote_closed_) {
        peers.insert(peer);
        if (rank >= 0) who.insert(rank);
      }
      bool death_known = false;
      for (const Finding& f : *causes) death_known |= f.kind == FindingKind::kRankDied;
      if (!death_known) {
        Finding x;
        x.kind = FindingKind::kRankDied;
        x.ranks = {};
        Facts(x).cause = LogCause::kLostPeer;
        Facts(x).who.assign(who.begin(), who.end());
        Facts(x).peers.assign(peers.begin(), peers.end());
        Facts(x).peer = *peers.begin();
        x.when_ns = INT64_MAX - 1;
        causes->push_back(x);
      }
    }
  }

  // What stands out in the hosts' GPU topologies (nvidia-smi topo -m): a
  // warning each; the same matrix printed twice (every rank of a node) once.
  void Topologies() {
    std::set<std::string> seen;
    for (const GpuTopology& t : FindGpuTopologies(log_)) {
      std::string key;
      for (const auto& row : t.links) key += absl::StrJoin(row, " ") + "\n";
      if (!seen.insert(absl::StrJoin(t.devices, " ") + "\n" + key).second) continue;
      const std::string where = absl::StrCat(log_.sources()[t.source], ":", t.line);
      if (std::optional<Finding> f = GpuTopologyWarning(t, where)) notes_.push_back(std::move(*f));
    }
  }

  void Conclude(std::vector<Finding>* causes) {
    std::stable_sort(causes->begin(), causes->end(), [](const Finding& a, const Finding& b) {
      const int pa = Priority(a), pb = Priority(b);
      return pa != pb ? pa < pb : a.when_ns < b.when_ns;
    });
    for (size_t i = 0; i < causes->size(); ++i)
      (*causes)[i].role = i == 0 ? FindingRole::kRootCause : FindingRole::kConsequence;
    // Where the stacks wait: the finding when nothing above explains the job,
    // else a note beside the causes (it says the phase they were in).
    if (stacks_) {
      if (causes->empty()) {
        stacks_->role = FindingRole::kRootCause;
        causes->push_back(*stacks_);
      } else {
        stacks_->role = FindingRole::kNote;
        notes_.push_back(*stacks_);
      }
    }
    out_.problem = !causes->empty();
    // Errors the logs show but nothing above explains.
    if (causes->empty()) {
      for (const LogLine& l : log_.lines()) {
        // NCCL's warnings, its errors in a framework's words, and any line
        // that names NCCL with an error word: never "healthy".
        if (l.message != nullptr && WarningOnly(*l.message)) continue;
        // Init evidence judged with the traces is explained there.
        if (l.process >= 0 && init_elsewhere_.count(l.process) > 0 &&
            InitEvidenceLine(log_.processes()[l.process], l))
          continue;
        if (l.level != LogLine::kWarn && !NcclErrorText(l.text) &&
            !(l.level == LogLine::kOther && ErrorWords(l.text) &&
              (absl::StrContains(l.text, "NCCL") || absl::StrContains(l.text, "nccl"))))
          continue;
        Finding x;
        x.kind = FindingKind::kLogInsufficient;
        x.role = FindingRole::kRootCause;
        const int rank = RankOf(l);
        if (rank >= 0) x.ranks = {rank};
        Facts(x).cause = LogCause::kUnexplainedError;
        Facts(x).line = l.text;
        // The part of NCCL that printed it, from its source location.
        if (const Area area = NcclSourceArea(l.location); area != Area::kNone)
          Facts(x).subsystem = area;
        causes->push_back(x);
        out_.problem = true;
        break;
      }
    }
    if (log_.nccl_lines() > 0) {
      bool info = false;
      for (const LogLine& l : log_.lines()) info |= l.level == LogLine::kInfo;
      if (!info) {
        Finding n;
        n.kind = FindingKind::kLogInsufficient;
        n.role = FindingRole::kNote;
        Facts(n).cause = LogCause::kNoInfoLines;
        notes_.push_back(n);
      }
    }
    out_.findings = *causes;
    for (Finding& n : notes_) out_.findings.push_back(n);
  }

  const NcclLog& log_;
  const std::set<int>& init_elsewhere_;
  bool bus_indexed_ = false;
  std::map<std::string, std::vector<size_t>>
      by_bus_;  // processes by the first 10 characters of their bus id
  LogDiagnosis out_;
  std::vector<Event> events_;
  std::vector<std::pair<int, std::string>> remote_closed_;
  std::vector<Finding> notes_;
  std::optional<Finding> stacks_;  // Stacks(): where the ranks' stacks wait
  bool watchdog_read_ = false;     // Watchdogs() read PyTorch's timeout lines
};

}  // namespace

LogDiagnosis DiagnoseLogs(const NcclLog& log, const std::set<int>& init_elsewhere,
                          std::vector<InitEvidence> evidence) {
  return LogDiagnoser(log, init_elsewhere).Run(std::move(evidence));
}

std::vector<InitEvidence> LogInitEvidence(const NcclLog& log) {
  // A log without timestamps orders its lines, no more: their order numbers.
  auto when = [&](const LogLine& l) {
    return log.timestamps() ? l.when_ns : static_cast<int64_t>(l.order);
  };
  std::vector<InitEvidence> out;
  const auto& procs = log.processes();
  for (size_t i = 0; i < procs.size(); ++i) {
    const LogProcess& p = procs[i];
    InitEvidence e;
    e.process = static_cast<int>(i);
    e.rank = p.rank;
    e.host = p.host;
    e.pid = p.pid < 0 ? 0 : static_cast<uint32_t>(p.pid);  // 0: no pid in the logs
    e.nccl_version = p.nccl_version;
    e.cuda_runtime_version = p.cuda_runtime;
    e.env = p.env;
    e.bootstrap_iface = p.bootstrap_iface;
    e.bootstrap_addr = p.bootstrap_addr;
    e.bus_id = p.bus_id;
    e.device = p.cuda_dev;
    bool last_error_next = false;
    for (size_t idx : p.lines) {
      const LogLine& l = log.lines()[idx];
      e.end_ns = std::max(e.end_ns, when(l));
      const bool evidence = InitEvidenceLine(p, l);
      if (l.level == LogLine::kWarn) {
        if (evidence) {
          e.warnings.push_back(l.text);
          e.failures.push_back({when(l), "", -1, l.text, false, l.location});
        }
      } else if (l.level == LogLine::kOther) {
        if (last_error_next) {
          e.warnings.push_back(l.text);
          last_error_next = false;
        }
        if (absl::StrContains(l.text, "Last error:")) last_error_next = true;
        if (evidence)
          e.failures.push_back({when(l), "", NcclResultFromText(l.text), l.text, false});
      }
    }
    e.init_succeeded = p.init_complete;
    e.init_pending = p.init_started && !p.init_complete && e.failures.empty();
    if (e.init_pending) e.pending_call = "NCCL init";
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace ncclwatch::decoder

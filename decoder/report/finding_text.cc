#include "report/finding_text.h"

#include <algorithm>
#include <map>
#include <set>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "knowledge/nccl_semantics.h"
#include "report/hang_text.h"
#include "report/init_text.h"
#include "report/log_text.h"
#include "report/names.h"
#include "report/rendezvous_text.h"
#include "report/straggler_text.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {
namespace {

std::string CommPhrase(uint64_t comm, int nranks) {
  return nranks > 0 ? absl::StrCat("communicator ", CommShort(comm), " (", nranks, " ranks)")
                    : absl::StrCat("communicator ", CommShort(comm));
}

std::string FieldHint(MismatchField field) {
  switch (field) {
    case MismatchField::kOp:
      return "one rank is in another phase of the program: a skipped or extra step, or a "
             "collective issued only on some branch";
    case MismatchField::kCount:
      return "tensor shapes differ between ranks: an uneven last batch, padding, or dynamic shapes";
    case MismatchField::kDatatype:
      return "precision differs between ranks: autocast or a dtype cast on one code path";
    case MismatchField::kRedop:
      return "the reduction differs between ranks: the same call must use the same operator "
             "everywhere";
    case MismatchField::kRoot:
      return "the root differs between ranks: compute it the same way on every rank";
    case MismatchField::kNone:
    case MismatchField::kOrder:
      break;
  }
  return "";
}

std::string SubsystemTitle(Area s) {
  switch (s) {
    case Area::kNetwork:
      return "network interface";
    case Area::kBootstrap:
      return "bootstrap connection";
    case Area::kShm:
      return "shared memory (/dev/shm)";
    case Area::kVersion:
      return "version skew";
    case Area::kGpu:
      return "two ranks on one GPU";
    case Area::kIb:
      return "InfiniBand";
    case Area::kFabric:
      return "NVLink fabric";
    case Area::kP2p:
      return "P2P / CUDA IPC";
    case Area::kIpc:
      return "sharing GPU memory between processes (CUDA IPC / cuMem handles)";
    case Area::kCuda:
      return "CUDA";
    case Area::kWaiting:
      return "waiting for another rank";
    case Area::kNone:
    case Area::kUnknown:
      return "cause unknown";
    default:
      // The other subsystems the message catalogue files NCCL's words under
      // (knowledge/message_catalogue.cc: usage, config, topology, plugin, ...).
      return std::string(AreaName(s));
  }
}

std::string Title(const Finding& f) {
  switch (f.kind) {
    case FindingKind::kInitFailure: {
      const auto* init = std::get_if<InitFailureFacts>(&f.facts);
      if (init == nullptr) return "NCCL initialisation failed";
      if (init->cause == InitCause::kNoDriver) return "NCCL initialisation failed: no CUDA driver";
      return absl::StrCat("NCCL initialisation failed: ", SubsystemTitle(init->subsystem),
                          init->err ? absl::StrCat(" (", ErrnoName(init->err), ")") : "");
    }
    case FindingKind::kCollectiveMismatch:
      return "collective mismatch";
    case FindingKind::kMissingRank:
      return "a rank is missing from a collective";
    case FindingKind::kRankDied:
      return "a rank died";
    case FindingKind::kP2pMismatch:
      return "send/receive mismatch";
    case FindingKind::kOrderInversion:
      return "communicators used in different orders";
    case FindingKind::kMissingTraces:
      return "missing traces";
    case FindingKind::kGpuFault:
      return "GPU fault";
    case FindingKind::kOutOfMemory:
      return "out of memory";
    case FindingKind::kNvlinkFabric:
      return "NVLink fabric (NVLS/NVSwitch) failure";
    case FindingKind::kCudaIpcFailure:
      return "P2P / CUDA IPC failure";
    case FindingKind::kCudaError:
      return "CUDA error in a kernel";
    case FindingKind::kWatchdogTimeout:
      return "PyTorch watchdog timeout";
    case FindingKind::kLogInsufficient:
      return "the logs cannot tell";
    case FindingKind::kNetworkError:
      return "the network failed under the job";
    case FindingKind::kRendezvousFailure:
      if (const auto* rv = std::get_if<RendezvousFacts>(&f.facts)) {
        if (rv->agents) {
          switch (rv->cause) {
            case RendezvousFacts::Cause::kSettingsDiffer:
              return "torchrun's agents never met: their settings differ";
            case RendezvousFacts::Cause::kRanksMissing:
              return "torchrun's agents never met: nodes never came";
            case RendezvousFacts::Cause::kPortInUse:
              return "torchrun's rendezvous failed: the master's port is in use";
            default:
              return "torchrun's agents never met";
          }
        }
        switch (rv->cause) {
          case RendezvousFacts::Cause::kSettingsDiffer:
            return "the framework's rendezvous failed: the ranks' settings differ";
          case RendezvousFacts::Cause::kPortInUse:
            return "the framework's rendezvous failed: the master's port is in use";
          case RendezvousFacts::Cause::kRefused:
            return "the framework's rendezvous failed: nothing listens at the master's address";
          case RendezvousFacts::Cause::kUnreachable:
            return "the framework's rendezvous failed: the master's address is unreachable";
          case RendezvousFacts::Cause::kRanksMissing:
            return "the framework's rendezvous failed: ranks never came";
        }
      }
      return "the framework's rendezvous failed";
    case FindingKind::kDdpUsage:
      return "DistributedDataParallel misused";
    case FindingKind::kTeardownHang:
      return "the job hung in teardown";
    case FindingKind::kUnreadableTraces:
      return "unreadable traces";
    case FindingKind::kDuplicateTraces:
      return "the same traces given twice";
    case FindingKind::kP2pPath:
      return "PCIe ACS redirects GPU peer traffic";
    case FindingKind::kConfigSkew:
      return "the ranks are set up differently";
    case FindingKind::kNcclNotVisible:
      return "NCCL the shim could not see";
    case FindingKind::kNeverCompleted:
      return "an operation every rank entered never completed";
    case FindingKind::kNcclAsyncError:
      return "NCCL reported an asynchronous error";
    case FindingKind::kRankFrozen:
      return "a rank froze";
    case FindingKind::kRankExitError:
      return "a rank exited with an error";
    case FindingKind::kHangUnexplained:
      return "hung, cause not visible";
    case FindingKind::kKilledWhileRunning:
      return "killed while it ran";
    case FindingKind::kTraceOverwritten:
      return "the traces lost the records that would show the cause";
    case FindingKind::kNcclCallsUnseen:
      return "NCCL calls not seen";
    case FindingKind::kStraggler:
      if (const auto* x = std::get_if<StragglerFacts>(&f.facts);
          x != nullptr && x->cause == StragglerFacts::Cause::kLink)
        return "a slow link holds the others back";
      return "a rank holds the others back";
    case FindingKind::kSummaryGap:
      return "the node summaries left out calls the diagnosis needed";
    case FindingKind::kGpuTopology:
      return "a host's GPU links are degraded";
  }
  return KindName(f.kind);
}

// ------------------------------------------------------------ per payload

void Render(const Finding& f, const CollectiveMismatchFacts& x, const CallSiteNamer& sites,
            FindingText* t) {
  if (x.groups.size() < 2) return;
  const uint64_t seq = f.seq.value_or(0);
  const CollectiveMismatchFacts::Group& majority = x.groups.front();
  std::vector<std::string> deviant;
  for (size_t i = 1; i < x.groups.size(); ++i)
    deviant.push_back(absl::StrCat(RanksNoun(x.groups[i].ranks), " called ",
                                   DescribeCollective(x.groups[i].call)));
  t->detail = absl::StrFormat("%s as collective #%u of %s where %s called %s",
                              absl::StrJoin(deviant, " and "), seq,
                              CommPhrase(f.comm.value_or(0), f.nranks), RanksNoun(majority.ranks),
                              DescribeCollective(majority.call));
  const std::string hint = FieldHint(f.field);
  t->fix = absl::StrFormat(
      "make every rank call the same collectives in the same order with the same arguments; %s "
      "took another path "
      "at collective #%u (see its call site)%s",
      RanksNoun(f.ranks), seq, hint.empty() ? "" : absl::StrCat(": ", hint));
  for (const CollectiveMismatchFacts::Group& g : x.groups)
    t->groups.push_back(
        {g.ranks, absl::StrCat(DescribeCollective(g.call), " #", seq, " (", sites(g.site), ")")});
  if (!x.not_reached.empty()) t->groups.push_back({x.not_reached, "had not reached it"});
}

// What a missing rank did instead, why, and the fix: DepartureText.
struct DepartureText {
  std::string did, reason, fix;
};

DepartureText Departed(const MissingRankFacts& x, const CallSiteNamer& sites) {
  const DepartureFacts& d = x.departure;
  const std::string after =
      x.last_seq ? absl::StrCat("after collective #", *x.last_seq) : "before its first collective";
  const std::string uneven =
      "make every rank run the same collectives the same number of times (uneven data per rank: "
      "drop the last "
      "uneven batch, pad the dataset, or use a join context such as "
      "torch.distributed.algorithms.Join)";
  const std::string signal = SignalName(d.signo);
  switch (d.how) {
    case Departure::kLeftCommunicator: {
      const std::string call = CallName(d.end_call);
      return {
          call == "ncclCommAbort"      ? "aborted the communicator"
          : call == "ncclCommRevoke"   ? "revoked the communicator"
          : call == "ncclCommFinalize" ? "finalized the communicator"
                                       : "destroyed the communicator",
          absl::StrCat("it called ", call, " on it ", after,
                       d.exit_code ? absl::StrCat(" and exited with code ", *d.exit_code) : ""),
          absl::StrCat("the rank left the communicator while the others still used it: ", uneven)};
    }
    case Departure::kExited: {
      const int code = d.exit_code.value_or(0);
      return {absl::StrCat("exited (code ", code, ")"),
              absl::StrCat("it exited with code ", code, " ", after, " without destroying it"),
              absl::StrCat("the rank's program ended early: ", uneven)};
    }
    case Departure::kOtherCommunicators:
      return {
          absl::StrCat("kept calling other communicators (last: ", DescribeCall(d.later_call), ")"),
          absl::StrCat("it was alive and kept calling other communicators ", after,
                       ": its last call was ", DescribeCall(d.later_call), " from ",
                       sites(d.later_site)),
          "the rank took another code path: it waits on another communicator while the others wait "
          "on this one; "
          "issue the collectives of all communicators in the same order on every rank"};
    case Departure::kDiedOfSignal:
      return {absl::StrCat("died of ", signal),
              absl::StrCat("its process died of ", signal, " ", after),
              "the others waited for a rank that was gone: read that rank's own error output "
              "(stack trace, core "
              "dump) for why it died"};
    case Departure::kAliveUntilSignal:
      return {absl::StrCat("was still alive, until ", signal, " ended it with the rest of the job"),
              absl::StrCat("it was alive but made no NCCL call on it ", after, " until ", signal,
                           " ended it with the rest of the job"),
              "the rank is stuck outside NCCL (a data loader, I/O, a CPU-side lock, a different "
              "branch): see where "
              "its program was after its last call, e.g. with py-spy dump or gdb on a hung job"};
    case Departure::kKilledUntraced:
      return {
          "died without a trace of why (SIGKILL or the out-of-memory killer)",
          absl::StrCat(
              "its trace ends ", after,
              " with neither an exit nor a signal, while the others' traces end with one: it was "
              "killed by SIGKILL or by the out-of-memory killer"),
          "check the node's kernel log (dmesg: oom-kill) and the container's memory limit, and the "
          "scheduler's "
          "log for a kill of that process"};
    case Departure::kAliveIdle: {
      const std::string until = d.until_signo ? absl::StrCat(" until ", SignalName(d.until_signo),
                                                             " ended it with the rest of the job")
                                : d.live      ? std::string(" (live when diagnosed)")
                                              : std::string(" until the others' traces end");
      return {absl::StrCat("alive, idle outside NCCL", until),
              absl::StrCat("it was alive", until, ", with no NCCL call pending, ", after,
                           ": it never came back to this communicator"),
              "the rank is stuck outside NCCL (a data loader, I/O, a CPU-side lock, a different "
              "branch): see where its program is, e.g. with py-spy dump or gdb on the hung job"};
    }
    case Departure::kDiedFirst:
      return {absl::StrCat("died first: its heartbeat stopped ", Seconds(d.stopped_before_ns),
                           " before the others' (no exit or signal recorded: SIGKILL or the "
                           "out-of-memory killer)"),
              absl::StrCat("its heartbeat stopped ", after, ", ", Seconds(d.stopped_before_ns),
                           " before the others', with no exit or signal recorded: it died first "
                           "(SIGKILL, the out-of-memory killer), and the others were killed later"),
              "check the node's kernel log (dmesg: oom-kill) and the container's memory limit, and "
              "the scheduler's log for a kill of that process"};
    case Departure::kFrozen: {
      const std::string state =
          d.proc_state == 'T' || d.proc_state == 't'
              ? absl::StrCat("its process is stopped (state ", std::string(1, d.proc_state), ")")
              : absl::StrCat("its heartbeat stopped ", Seconds(d.stopped_before_ns),
                             " before the others'");
      return {absl::StrCat("froze: ", state),
              absl::StrCat("it froze ", after, ": ", state, ", while the others are alive"),
              "a stopped process holds the whole job (SIGSTOP, Ctrl-Z job control, a debugger "
              "or tracer): continue it (kill -CONT PID) or detach the debugger, and find what "
              "stopped it"};
    }
    case Departure::kWentOn:
      return {absl::StrCat("went on to ", DescribeCall(d.later_call)),
              absl::StrCat("it went on without it: its last call was ", DescribeCall(d.later_call),
                           " from ", sites(d.later_site)),
              "the rank took another code path: it skipped the call the others made and waits "
              "elsewhere; make every rank of the communicator make the same calls on it in the "
              "same order (a communicator split is collective over its parent, like a "
              "collective)"};
    case Departure::kSuspended:
      return {"suspended the communicator and never resumed it",
              absl::StrCat("it called ncclCommSuspend on it ", after,
                           " and no ncclCommResume followed, so it could not join",
                           d.exit_code ? absl::StrCat("; it exited with code ", *d.exit_code) : ""),
              "a suspended communicator takes no collective: resume it (ncclCommResume) on that "
              "rank before the others' next collective, or suspend it on every rank at the same "
              "point (suspend and resume are for pauses every rank makes together)"};
    case Departure::kWaitingOnGpu:
      return {absl::StrCat("waited for its GPU to finish ", DescribeCall(d.later_call),
                           ", which never completed"),
              absl::StrCat("its GPU never finished ", DescribeCall(d.later_call), " (",
                           sites(d.later_site), "), so it never came back ", after),
              "see the operation that never completed: that rank's GPU or network did not "
              "finish it"};
    case Departure::kStopped:
      break;
  }
  return {"stopped: no exit or signal recorded",
          absl::StrCat("its trace stops ", after,
                       " with no exit or signal recorded, like every trace of this job: it was "
                       "either still alive "
                       "outside NCCL, or killed without a signal"),
          "see where the rank's program was (py-spy dump, gdb) if the job still hangs; otherwise "
          "check for a SIGKILL "
          "or an out-of-memory kill (dmesg) of that process"};
}

void Render(const Finding& f, const MissingRankFacts& x, const CallSiteNamer& sites,
            FindingText* t) {
  const DepartureText d = Departed(x, sites);
  if (x.creation_call != 0) {
    const std::string call = CallName(x.creation_call);
    t->detail = absl::StrFormat(
        "%s never called %s on %s (its split #%u), which %s entered and wait in; %s",
        RanksNoun(f.ranks), call, CommPhrase(f.comm.value_or(0), f.nranks), x.split_index,
        RanksNoun(x.entered), d.reason);
    t->fix = d.fix;
    t->groups.push_back({x.entered, absl::StrCat("entered ", call, " and waited")});
    t->groups.push_back({f.ranks, absl::StrCat("never called ", call, ", then ", d.did)});
    return;
  }
  const uint64_t seq = f.seq.value_or(0);
  t->detail = absl::StrFormat("%s never entered collective #%u of %s, %s, which %s entered; %s",
                              RanksNoun(f.ranks), seq, CommPhrase(f.comm.value_or(0), f.nranks),
                              DescribeCollective(x.call), RanksNoun(x.entered), d.reason);
  t->fix = d.fix;
  t->groups.push_back(
      {x.entered, absl::StrCat("entered ", DescribeCollective(x.call), " #", seq, " and waited")});
  t->groups.push_back({f.ranks, x.last_seq
                                    ? absl::StrCat("last entered #", *x.last_seq, " (",
                                                   sites(x.last_site), "), then ", d.did)
                                    : absl::StrCat("made no collective on it, then ", d.did)});
}

void Render(const Finding& f, const P2pMismatchFacts& x, const CallSiteNamer& sites,
            FindingText* t) {
  using Problem = P2pMismatchFacts::Problem;
  const uint64_t seq = f.seq.value_or(0);
  const std::string comm = CommPhrase(f.comm.value_or(0), f.nranks);
  const int sender = x.sender, receiver = x.receiver;
  auto op = [](const P2pMismatchFacts::Side& o) {
    return absl::StrCat(o.count, " x ", DatatypeName(o.datatype));
  };
  auto place = [](int64_t n) {
    return n == 0 ? std::string("before its first collective")
                  : absl::StrCat("after collective #", n - 1);
  };
  if (x.one_sided) {
    t->detail = absl::StrFormat(
        "rank %d waits (ncclWaitSignal) for signal #%u from rank %d on %s, which rank %d never "
        "sent: it sent rank %d %u signals (ncclPutSignal, ncclSignal), and rank %d's waits need %u",
        receiver, seq, sender, comm, sender, receiver, x.other_side_posted, receiver, x.awaited);
    t->groups.push_back({{receiver},
                         absl::StrCat("WaitSignal for signal #", seq, " from rank ", sender, " (",
                                      sites(x.receive.site), ")")});
    t->fix =
        "send every signal a peer waits for: each ncclPutSignal or ncclSignal to a peer is one "
        "signal, and an ncclWaitSignal for opCnt signals from it needs opCnt more; make both sides "
        "agree on the count at every step (a put skipped on one rank, a branch taken on one rank)";
    return;
  }
  switch (x.problem) {
    case Problem::kSizeMismatch:
      t->detail = absl::StrFormat(
          "rank %d sent %s to rank %d as its send #%u to that peer on %s, but rank %d posted its "
          "receive #%u "
          "from rank %d for %s",
          sender, op(x.send), receiver, seq, comm, receiver, seq, sender, op(x.receive));
      t->groups.push_back({{sender},
                           absl::StrCat("Send #", seq, " of ", op(x.send), " to rank ", receiver,
                                        " (", sites(x.send.site), ")")});
      t->groups.push_back({{receiver},
                           absl::StrCat("Recv #", seq, " of ", op(x.receive), " from rank ", sender,
                                        " (", sites(x.receive.site), ")")});
      break;
    case Problem::kOrderMismatch:
      t->detail = absl::StrFormat(
          "rank %d posted its send #%u to rank %d %s of %s, but rank %d posted the matching "
          "receive %s: both sides "
          "wait on the communicator's stream behind a collective the other has not reached",
          sender, seq, receiver, place(x.send.collectives_before), comm, receiver,
          place(x.receive.collectives_before));
      t->groups.push_back(
          {{sender},
           absl::StrCat("Send #", seq, " to rank ", receiver, " ", place(x.send.collectives_before),
                        " (", sites(x.send.site), ")")});
      t->groups.push_back(
          {{receiver},
           absl::StrCat("Recv #", seq, " from rank ", sender, " ",
                        place(x.receive.collectives_before), " (", sites(x.receive.site), ")")});
      break;
    case Problem::kSendNotReceived:
      t->detail = absl::StrFormat(
          "rank %d sent %s to rank %d as its send #%u to that peer on %s, and rank %d never posted "
          "the matching "
          "receive (it posted %u receives from rank %d)",
          sender, op(x.send), receiver, seq, comm, receiver, x.other_side_posted, sender);
      t->groups.push_back(
          {{sender},
           absl::StrCat("Send #", seq, " to rank ", receiver, " (", sites(x.send.site), ")")});
      break;
    case Problem::kReceiveNotSent:
      t->detail = absl::StrFormat(
          "rank %d posted receive #%u from rank %d (%s) on %s, and rank %d never sent it (it "
          "posted %u sends to "
          "rank %d)",
          receiver, seq, sender, op(x.receive), comm, sender, x.other_side_posted, receiver);
      t->groups.push_back(
          {{receiver},
           absl::StrCat("Recv #", seq, " from rank ", sender, " (", sites(x.receive.site), ")")});
      break;
  }
  t->fix =
      "post every send with a matching receive on the peer, in the same order, with the same count "
      "and "
      "datatype (grouped with ncclGroupStart/End when both directions run at once)";
}

void Render(const Finding& f, const OrderInversionFacts& x, const CallSiteNamer&, FindingText* t) {
  const std::string a =
      absl::StrCat("collective #", f.seq.value_or(0), " of ", CommShort(f.comm.value_or(0)));
  const std::string b = absl::StrCat("collective #", x.other_seq, " of ", CommShort(x.other_comm));
  const std::string& first = x.comm_first ? a : b;
  const std::string& second = x.comm_first ? b : a;
  t->detail = absl::StrFormat("rank %d issued %s before %s, and rank %d the reverse%s", x.rank,
                              first, second, x.reference_rank,
                              x.same_stream ? ", each on a single stream: each waits for the other"
                                            : ", on different streams");
  t->fix =
      "issue the collectives of different communicators in the same order on every rank (or, if "
      "they must "
      "overlap, on separate streams that never wait on each other)";
  t->groups.push_back({{x.rank}, absl::StrCat(first, " then ", second)});
  t->groups.push_back({{x.reference_rank}, absl::StrCat(second, " then ", first)});
}

void Render(const Finding& f, const MissingTracesFacts& x, const CallSiteNamer&, FindingText* t) {
  t->detail =
      absl::StrFormat("the traces of %s of %s are missing; the rest was diagnosed without them%s",
                      RanksNoun(f.ranks), CommPhrase(f.comm.value_or(0), f.nranks),
                      f.role == FindingRole::kRootCause
                          ? ", and nothing else was found, but without them the job cannot be "
                            "called healthy"
                          : "");
  if (x.grow_unjoined) {
    absl::StrAppend(&t->detail,
                    ". It was made by ncclCommGrow, and its two sides could not be joined: the "
                    "ranks it gained know it only by the grow id, the existing ones only by their "
                    "parent, and only the trace of the existing rank that made the grow id "
                    "(ncclCommGetUniqueId) links the two; that trace is not among the inputs, so "
                    "those ranks may well be there under the other identity, and whether the two "
                    "sides agree was not checked");
  }
  t->fix =
      "collect the trace folder (NCCLWATCH_DIR) of every node of the job and pass them all to "
      "ncclwatch diagnose";
  if (x.grow_unjoined) {
    absl::StrAppend(&t->fix,
                    "; above all the trace of the rank that called ncclCommGetUniqueId for the "
                    "grow (the grown communicator's root among its existing ranks)");
  }
}

// The first few of many (file names, each on one line), and how many more:
// a note on 20,000 files is a line, not a megabyte (--json lists them all).
std::string FirstFew(const std::vector<std::string>& items) {
  constexpr size_t kShown = 3;
  std::vector<std::string> shown;
  for (size_t i = 0; i < items.size() && i < kShown; ++i) shown.push_back(OneLine(items[i]));
  std::string text = absl::StrJoin(shown, "; ");
  if (items.size() > kShown)
    absl::StrAppend(&text, "; and ", items.size() - kShown, " more (listed in --json)");
  return text;
}

void Render(const Finding& f, const UnreadableTracesFacts& x, const CallSiteNamer&,
            FindingText* t) {
  std::vector<std::string> parts;
  if (!x.not_searched.empty()) {
    parts.push_back(absl::StrCat(
        x.not_searched.size(),
        " folder(s) or link(s) that may hold traces were not read: ", FirstFew(x.not_searched),
        f.role == FindingRole::kRootCause
            ? ", and nothing else was found, but without what they hold the job cannot be "
              "called healthy"
            : ""));
  }
  if (!x.errors.empty())
    parts.push_back(
        absl::StrCat(x.errors.size(), " file(s) could not be read: ", FirstFew(x.errors)));
  t->detail = absl::StrJoin(parts, "; also ");
  t->fix =
      x.not_searched.empty()
          ? "re-collect those files whole (a copy made while the job still wrote them can be "
            "torn); files of another ncclwatch version need that version to read them"
          : "make those folders readable to the user running ncclwatch, or name the traces they "
            "hold on the command line (inside a folder, a link is followed only when it belongs "
            "to that user or to the owner of the file it leads to)";
}

void Render(const Finding&, const DuplicateTracesFacts& x, const CallSiteNamer&, FindingText* t) {
  std::vector<std::string> pairs;
  for (const DuplicateTracesFacts::Duplicate& d : x.duplicates)
    pairs.push_back(absl::StrCat(d.path, " (as ", d.first, ")"));
  t->detail = absl::StrCat(
      x.duplicates.size(),
      " file(s) hold a process's trace that another file given also holds, and were read once: ",
      FirstFew(pairs));
  t->fix = "nothing to do: each process counts once; pass each trace folder once";
}

void Render(const Finding& f, const InitFailureFacts& x, const CallSiteNamer&, FindingText* t) {
  RenderInitFailure(f, x, t);
}

void Render(const Finding& f, const LogFacts& x, const CallSiteNamer&, FindingText* t) {
  RenderLogFinding(f, x, t);
}

void Render(const Finding& f, const SetupFacts& x, const CallSiteNamer&, FindingText* t) {
  if (f.kind == FindingKind::kP2pPath) {
    t->detail = absl::StrFormat(
        "on %s, PCIe ACS redirects peer-to-peer requests on %s %s above GPU%s %s%s: traffic "
        "between these GPUs goes up to the root complex%s, which makes P2P slow or hang "
        "(NVIDIA's troubleshooting guide names ACS first for P2P hangs)",
        x.host.empty() ? "a host" : x.host, x.bridges.size() == 1 ? "bridge" : "bridges",
        absl::StrJoin(x.bridges, ", "), x.gpus.size() == 1 ? "" : "s", absl::StrJoin(x.gpus, ", "),
        x.iommu ? " (an IOMMU is enabled)" : "",
        x.iommu ? " and through the IOMMU, which may block it" : "");
    t->fix =
        "on bare metal, disable ACS on the PCIe switches (setpci on each bridge's ACS control, or "
        "the BIOS setting) and boot with iommu=pt (or intel_iommu=off/amd_iommu=off); in a VM, "
        "keep ACS and use NCCL_P2P_DISABLE=1 or NCCL_P2P_LEVEL=NVL; check with nvidia-smi topo -m "
        "and the p2pBandwidthLatencyTest CUDA sample";
    return;
  }
  std::vector<std::string> parts;
  for (const SetupFacts::Setting& s : x.settings) {
    std::vector<std::string> values;
    for (const auto& [value, ranks] : s.values)
      values.push_back(absl::StrCat(value.empty() ? "unset" : value, " on ", RanksNoun(ranks)));
    parts.push_back(absl::StrCat(s.name, ": ", absl::StrJoin(values, ", ")));
  }
  t->detail = absl::StrCat("the ranks differ in how NCCL is set up: ", absl::StrJoin(parts, "; "));
  t->fix =
      "give every rank the same NCCL_* environment and the same NCCL and CUDA driver versions "
      "(export the variables to every node: srun --export=ALL, mpirun -x, the pod spec), and "
      "pin NCCL_SOCKET_IFNAME to an interface every node has";
}

void Render(const Finding&, const NcclNotVisibleFacts& x, const CallSiteNamer&, FindingText* t) {
  std::vector<std::string> parts;
  std::set<std::string> fixes;
  std::map<uint64_t, std::vector<int>> device;  // device-API communicators: their ranks
  for (const NcclNotVisibleFacts::Item& i : x.items) {
    const std::string who = absl::StrCat(i.rank >= 0 ? absl::StrCat("rank ", i.rank, " (") : "(",
                                         "pid ", i.pid, " on ", i.host, ")");
    switch (i.reason) {
      case 1:
        parts.push_back(absl::StrCat(who, ": NCCL is linked into ", i.path,
                                     ", whose own calls to it may never reach the shim"));
        fixes.insert(
            "link NCCL dynamically (libnccl.so.2; for PyTorch, the nvidia-nccl wheel, "
            "USE_SYSTEM_NCCL=1) so its calls can be seen");
        break;
      case 2:
        parts.push_back(absl::StrCat(who, ": ", i.path,
                                     " was loaded with RTLD_DEEPBIND, so its calls to NCCL may "
                                     "bind to NCCL directly"));
        fixes.insert("load it without RTLD_DEEPBIND");
        break;
      case 3:
        parts.push_back(absl::StrCat(who, ": a second NCCL library, ", i.path,
                                     ", is loaded; calls that reach it through the dynamic linker "
                                     "go to the first one's wrappers"));
        fixes.insert("load one libnccl.so.2 per process");
        break;
      case 4:
        parts.push_back(absl::StrCat(who, ": dlsym found NCCL in ", i.path,
                                     ", one library more than the shim keeps apart; its calls "
                                     "are not recorded"));
        fixes.insert("load fewer NCCL libraries in one process");
        break;
      case 5:
        parts.push_back(absl::StrCat(who, ": the code of ", i.path,
                                     " made system calls before the shim saw any NCCL call, so "
                                     "NCCL was reached some way the shim does not see"));
        fixes.insert(
            "call NCCL through the dynamic linker or a pointer from dlsym/dlvsym, not one found "
            "otherwise");
        break;
      case 6:  // one part per communicator, below
        device[i.comm].push_back(i.rank);
        fixes.insert(
            "nothing to change for the traces: a hang inside the program's own kernels that "
            "communicate through a device communicator shows only as their stream never "
            "completing; collect cuda-gdb backtraces of the hung kernels, or a GPU core dump "
            "(CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1)");
        break;
      default:
        parts.push_back(absl::StrCat(who, ": NCCL code the shim cannot see (", i.path, ")"));
        break;
    }
  }
  for (const auto& [comm, ranks] : device) {
    parts.push_back(absl::StrCat("communicator ", CommName(comm), " (", RanksNoun(ranks),
                                 ") has device-API communicators (ncclDevCommCreate): "
                                 "device-initiated communication in use: not visible"));
  }
  bool device_only = true;
  for (const NcclNotVisibleFacts::Item& i : x.items) device_only &= i.reason == 6;
  t->detail = absl::StrCat(
      device_only
          ? "the GPUs of these processes communicate on their own through NCCL's device API, "
            "which no host call shows, so a healthy verdict does not cover that traffic: "
          : "the shim could not see into all of the NCCL these processes used, so calls may be "
            "missing from their traces and a healthy verdict does not cover them: ",
      absl::StrJoin(parts, "; "));
  t->fix = absl::StrJoin(fixes, "; ");
  if (t->fix.empty()) t->fix = "run the job with an NCCL the shim can see";
}

void Render(const Finding& f, const NeverCompletedFacts& x, const CallSiteNamer& sites,
            FindingText* t) {
  RenderNeverCompleted(f, x, sites, t);
}
void Render(const Finding& f, const DeviceErrorFacts& x, const CallSiteNamer&, FindingText* t) {
  RenderDeviceError(f, x, t);
}
void Render(const Finding& f, const StoppedRankFacts& x, const CallSiteNamer& sites,
            FindingText* t) {
  RenderStoppedRank(f, x, sites, t);
}
void Render(const Finding& f, const HangFacts& x, const CallSiteNamer&, FindingText* t) {
  RenderHang(f, x, t);
}
void Render(const Finding& f, const KilledWhileRunningFacts& x, const CallSiteNamer&,
            FindingText* t) {
  RenderKilledWhileRunning(f, x, t);
}
void Render(const Finding& f, const ExitErrorFacts& x, const CallSiteNamer&, FindingText* t) {
  RenderExitError(f, x, t);
}
void Render(const Finding& f, const BlindSpotFacts& x, const CallSiteNamer&, FindingText* t) {
  RenderBlindSpot(f, x, t);
}

void Render(const Finding& f, const StragglerFacts& x, const CallSiteNamer&, FindingText* t) {
  t->detail = RenderStraggler(f, x);
  if (x.cause == StragglerFacts::Cause::kLink) {
    const std::string who = LinkRanks(x);
    t->fix = absl::StrCat(
        "look at the link of ", who,
        ": its NIC (ibstat: the port's state, rate and width against its peers'; ibdiagnet or "
        "perfquery for symbol and link-downed errors; ethtool -S for a RoCE port's drops and "
        "pauses), its NVLinks (nvidia-smi nvlink -s: each link's speed; nvidia-smi nvlink -e: "
        "errors), and which NIC NCCL gave it (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET: a "
        "rank on the wrong or a remote NIC; NCCL_IB_HCA); then run nccl-tests (all_reduce_perf, "
        "sendrecv_perf) between it and one of its peers and compare with another pair");
    t->groups.push_back(
        {x.link_ranks.empty() ? std::vector<int>{x.rank} : x.link_ranks,
         absl::StrCat("its link was slow, ", StragglerLate(x), " longer on median")});
    return;
  }
  if (x.cause == StragglerFacts::Cause::kGpu) {
    t->fix = absl::StrCat(
        "look at rank ", x.rank,
        "'s GPU: nvidia-smi -q -d PERFORMANCE,CLOCK,TEMPERATURE,POWER on its host (clocks "
        "throttled for power, heat or a slowdown; a lower SM clock than its peers'), its Xid and "
        "ECC history (nvidia-smi -q -d ECC, dmesg), a DCGM diagnostic (dcgmi diag -r 2) and "
        "its PCIe link (nvidia-smi -q -d PCIE); if the GPU is sound, compare its kernels' times "
        "with another rank's (nsys) for work the others do not have");
    t->groups.push_back(
        {{x.rank}, absl::StrCat("its GPU came last, ", StragglerLate(x), " on median")});
    return;
  }
  t->fix = absl::StrCat(
      "look at what rank ", x.rank,
      "'s host does between steps: its data loader, CPU (other processes, its CPU frequency and "
      "affinity), Python (py-spy dump --pid PID on it and on another rank, and compare); if its "
      "host waits on its own GPU before it issues the next collective (a synchronize, .item(), a "
      "copy to the host), its GPU may be the slow one: compare the GPUs' kernel times");
  t->groups.push_back({{x.rank}, absl::StrCat("came last, ", StragglerLate(x), " on median")});
}

void Render(const Finding& f, const RendezvousFacts& x, const CallSiteNamer&, FindingText* t) {
  RenderRendezvous(f, x, t);
}

void Render(const Finding&, const GpuTopologyFacts& x, const CallSiteNamer&, FindingText* t) {
  auto pairs = [](const std::vector<GpuTopologyFacts::Link>& v) {
    std::vector<std::string> out;
    const size_t shown = std::min<size_t>(v.size(), 8);
    for (size_t i = 0; i < shown; ++i)
      out.push_back(absl::StrCat(v[i].a, "-", v[i].b, " ", v[i].link));
    if (v.size() > shown) out.push_back(absl::StrCat(v.size() - shown, " more"));
    return absl::StrJoin(out, ", ");
  };
  std::vector<std::string> parts;
  std::vector<std::string> fixes;
  if (!x.weak.empty()) {
    const int all = x.gpus * (x.gpus - 1) / 2;
    parts.push_back(absl::StrCat(
        pairs(x.weak), " where ", x.usual_pairs, " of ", all, " GPU pairs have ", x.usual,
        ": NVLinks down or missing between them, so NCCL sends their traffic over PCIe and host "
        "memory (slow; a hang where that path is broken)"));
    fixes.push_back(
        "check the NVLinks (nvidia-smi nvlink -s: each link's state and speed; nvidia-smi nvlink "
        "-e: error counters; dmesg for Xid 74), and on NVSwitch systems the Fabric Manager "
        "(nvidia-smi -q | grep -A3 Fabric); drain the node until its links are all up");
  }
  if (!x.far_nics.empty()) {
    std::vector<std::string> nics;
    for (const GpuTopologyFacts::Link& n : x.far_nics)
      nics.push_back(absl::StrCat(n.a, " (nearest GPU ", n.b, ", ", n.link, ")"));
    parts.push_back(absl::StrCat(
        absl::StrJoin(nics, ", "), x.far_nics.size() == 1 ? " is" : " are",
        " beyond PXB from every GPU: NCCL uses GPU Direct RDMA only up to PXB by default "
        "(NCCL_NET_GDR_LEVEL), so every transfer through ",
        x.far_nics.size() == 1 ? "it" : "them", " is staged in host memory"));
    fixes.push_back(
        "check where the NICs sit (lspci -tv) and use the ones near the GPUs (NCCL_IB_HCA); raise "
        "NCCL_NET_GDR_LEVEL only where the platform supports GPU Direct RDMA across the root "
        "complex");
  }
  t->detail = absl::StrCat("the GPU topology printed at ", x.file, " (", x.gpus, " GPUs, ", x.nics,
                           " NICs): ", absl::StrJoin(parts, "; "));
  t->fix = absl::StrJoin(fixes, "; ");
}

void Render(const Finding& f, const SummaryGapFacts& x, const CallSiteNamer&, FindingText* t) {
  std::vector<std::string> parts;
  std::set<std::string> nodes;
  for (const SummaryGapFacts::Gap& g : x.gaps) {
    const std::string calls =
        g.sends ? absl::StrCat("sends #", g.first_seq, "-#", g.last_seq, " from rank ", g.sender,
                               " to rank ", g.receiver, " of ", CommShort(g.comm))
                : absl::StrCat("collectives #", g.first_seq, "-#", g.last_seq, " of ",
                               CommShort(g.comm));
    const std::string left = absl::StrCat(RanksNoun(g.left_out_ranks), " (summarized on ",
                                          absl::StrJoin(g.left_out_nodes, ", "), ")");
    if (g.differ && g.sends) {
      parts.push_back(absl::StrCat(calls, ": rank ", g.sender, "'s sends and rank ", g.receiver,
                                   "'s receives differ somewhere in that range (count or "
                                   "datatype): the summaries' digests of them disagree"));
    } else if (g.differ) {
      parts.push_back(absl::StrCat(calls, ": the calls of ", left, " differ from those of ",
                                   RanksNoun(g.other_ranks), " (",
                                   absl::StrJoin(g.other_nodes, ", "),
                                   ") somewhere in that range: the summaries' digests of them "
                                   "disagree"));
    } else {
      parts.push_back(absl::StrCat(
          calls, ": left out of the summaries of ", left, ", and not compared with ",
          RanksNoun(g.other_ranks), " (", absl::StrJoin(g.other_nodes, ", "), ")",
          g.ring_start ? absl::StrCat(", whose ring", g.other_ranks.size() == 1 ? "" : "s",
                                      " begin", g.other_ranks.size() == 1 ? "s" : "",
                                      " inside that range (older calls written over): the "
                                      "traces whole would compare only the calls from there on")
                       : ""));
    }
    nodes.insert(g.left_out_nodes.begin(), g.left_out_nodes.end());
  }
  if (x.more > 0) parts.push_back(absl::StrCat("and ", x.more, " more such ranges"));
  t->detail = absl::StrCat(
      "the diagnosis could not see calls the node summaries left out",
      f.role == FindingRole::kRootCause
          ? ", and nothing else was found, but without them the job cannot be called healthy"
          : "",
      ": ", absl::StrJoin(parts, "; "));
  t->fix = absl::StrCat(
      "read the full traces of ", absl::StrJoin(nodes, ", "),
      ": run ncclwatch diagnose on that node's trace folder with the other nodes' summaries, or "
      "summarize it again with a larger --window");
}

void Render(const Finding&, const std::monostate&, const CallSiteNamer&, FindingText*) {}

}  // namespace

CallSiteNamer NoCallSites() {
  return [](const CallSiteRef&) { return std::string("an unknown call site"); };
}

const char* KindName(FindingKind kind) {
  switch (kind) {
    case FindingKind::kCollectiveMismatch:
      return "collective_mismatch";
    case FindingKind::kMissingRank:
      return "missing_rank";
    case FindingKind::kRankDied:
      return "rank_died";
    case FindingKind::kP2pMismatch:
      return "p2p_mismatch";
    case FindingKind::kOrderInversion:
      return "order_inversion";
    case FindingKind::kInitFailure:
      return "init_failure";
    case FindingKind::kGpuFault:
      return "gpu_fault";
    case FindingKind::kOutOfMemory:
      return "out_of_memory";
    case FindingKind::kNvlinkFabric:
      return "nvlink_fabric";
    case FindingKind::kCudaIpcFailure:
      return "cuda_ipc_failure";
    case FindingKind::kCudaError:
      return "cuda_error";
    case FindingKind::kWatchdogTimeout:
      return "watchdog_timeout";
    case FindingKind::kLogInsufficient:
      return "log_insufficient";
    case FindingKind::kNetworkError:
      return "network_error";
    case FindingKind::kRendezvousFailure:
      return "rendezvous_failure";
    case FindingKind::kDdpUsage:
      return "ddp_usage";
    case FindingKind::kTeardownHang:
      return "teardown_hang";
    case FindingKind::kMissingTraces:
      return "missing_traces";
    case FindingKind::kUnreadableTraces:
      return "unreadable_traces";
    case FindingKind::kDuplicateTraces:
      return "duplicate_traces";
    case FindingKind::kP2pPath:
      return "p2p_path";
    case FindingKind::kConfigSkew:
      return "config_skew";
    case FindingKind::kNcclNotVisible:
      return "nccl_not_visible";
    case FindingKind::kNeverCompleted:
      return "never_completed";
    case FindingKind::kNcclAsyncError:
      return "nccl_async_error";
    case FindingKind::kRankFrozen:
      return "rank_frozen";
    case FindingKind::kRankExitError:
      return "rank_exit_error";
    case FindingKind::kHangUnexplained:
      return "hang_unexplained";
    case FindingKind::kKilledWhileRunning:
      return "killed_while_running";
    case FindingKind::kTraceOverwritten:
      return "trace_overwritten";
    case FindingKind::kNcclCallsUnseen:
      return "nccl_calls_unseen";
    case FindingKind::kStraggler:
      return "straggler";
    case FindingKind::kSummaryGap:
      return "summary_gap";
    case FindingKind::kGpuTopology:
      return "gpu_topology";
  }
  return "unknown";
}

const char* FieldName(MismatchField field) {
  switch (field) {
    case MismatchField::kNone:
      return "";
    case MismatchField::kOp:
      return "op";
    case MismatchField::kCount:
      return "count";
    case MismatchField::kDatatype:
      return "datatype";
    case MismatchField::kRedop:
      return "redop";
    case MismatchField::kRoot:
      return "root";
    case MismatchField::kOrder:
      return "order";
  }
  return "";
}

const char* RoleName(FindingRole role) {
  switch (role) {
    case FindingRole::kRootCause:
      return "root_cause";
    case FindingRole::kConsequence:
      return "consequence";
    case FindingRole::kWarning:
      return "warning";
    case FindingRole::kNote:
      return "note";
  }
  return "unknown";
}

FindingText RenderFinding(const Finding& f, const CallSiteNamer& sites) {
  FindingText t;
  t.title = Title(f);
  std::visit([&](const auto& facts) { Render(f, facts, sites, &t); }, f.facts);
  return t;
}

std::string Headline(const std::vector<Finding>& findings, bool problem) {
  auto count = [&](FindingRole role) {
    return std::count_if(findings.begin(), findings.end(),
                         [&](const Finding& f) { return f.role == role; });
  };
  auto plural = [](long n, const char* word) {
    return absl::StrCat(n, " ", word, n == 1 ? "" : "s");
  };
  if (!problem) {
    std::string line = "HEALTHY";
    if (const long w = count(FindingRole::kWarning))
      absl::StrAppend(&line, ", ", plural(w, "warning"));
    if (const long n = count(FindingRole::kNote)) absl::StrAppend(&line, ", ", plural(n, "note"));
    return line;
  }
  const Finding* root = nullptr;
  for (const Finding& f : findings)
    if (root == nullptr && f.role == FindingRole::kRootCause) root = &f;
  if (root == nullptr) return "PROBLEM";
  std::string line = absl::StrCat("PROBLEM: ", KindName(root->kind));
  if (const auto* init = std::get_if<InitFailureFacts>(&root->facts)) {
    absl::StrAppend(&line, " (", AreaName(init->subsystem),
                    init->err ? absl::StrCat(", ", ErrnoName(init->err)) : "", ")");
  }
  if (const auto* rv = std::get_if<RendezvousFacts>(&root->facts))
    absl::StrAppend(&line, " (", RendezvousCauseName(rv->cause), ")");
  if (const auto* killed = std::get_if<KilledWhileRunningFacts>(&root->facts))
    absl::StrAppend(&line, " (", SignalName(killed->signo), ")");
  if (root->comm) {
    absl::StrAppend(&line, " on communicator ", CommShort(*root->comm));
    if (root->seq) absl::StrAppend(&line, " #", *root->seq);
  } else if (root->seq) {
    absl::StrAppend(&line, " at #", *root->seq);
  }
  if (!root->ranks.empty()) absl::StrAppend(&line, " (", RanksNoun(root->ranks), ")");
  if (const long more = count(FindingRole::kRootCause) - 1; more > 0)
    absl::StrAppend(&line, "; and ", plural(more, "more job"), " with a problem");
  return line;
}

std::string PendingText(const PendingOperation& p) {
  std::string line = absl::StrCat(CallName(p.call.call), " #", p.seq, " on communicator ",
                                  CommShort(p.comm), " pending ", Seconds(p.pending_ns));
  if (!p.not_entered.empty())
    absl::StrAppend(&line, " (", RanksNoun(p.not_entered), " not entered)");
  else
    absl::StrAppend(&line, " (entered by every rank, not complete on the GPUs)");
  return line;
}

std::string RunningHeadline(const std::vector<Finding>& findings,
                            const std::vector<PendingOperation>& pending) {
  std::string line = Headline(findings, false);
  line.replace(0, std::string("HEALTHY").size(), "RUNNING");
  if (!pending.empty()) absl::StrAppend(&line, ": ", PendingText(pending.front()));
  return line;
}

std::string DidInstead(const MissingRankFacts& facts, const CallSiteNamer& sites) {
  return Departed(facts, sites).did;
}

int ExitCode(bool problem) { return problem ? 1 : 0; }

}  // namespace ncclwatch::decoder

#include "report/hang_text.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ncclwatch/trace_fields.h"
#include "report/names.h"

namespace ncclwatch::decoder {
namespace {

namespace f = ::ncclwatch::fields;

std::string CommPhrase(uint64_t comm, int nranks) {
  return nranks > 0 ? absl::StrCat("communicator ", CommShort(comm), " (", nranks, " ranks)")
                    : absl::StrCat("communicator ", CommShort(comm));
}

// "AllReduce(count=1024, float32, sum) #5", "Send #2 to 3 of 3fa9c1"
std::string OperationText(const NeverCompletedFacts& x) {
  if (x.collective) return absl::StrCat(DescribeCollective(*x.collective), " #", x.op.seq);
  if (x.op.valid && x.op.call != 0) return DescribeCall(x.op);
  return absl::StrCat("collective #", x.op.seq);
}

const char* kCollectStacks =
    "stacks of every rank (py-spy dump --pid PID, or gdb -p PID -batch -ex 'thread apply all "
    "bt'), NCCL's own view (rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL,NET) and each "
    "node's kernel log (dmesg: NVRM Xid, oom-kill)";

}  // namespace

const char* PhaseName(HangPhase phase) {
  switch (phase) {
    case HangPhase::kStartup:
      return "startup";
    case HangPhase::kStep:
      return "step";
    case HangPhase::kTeardown:
      return "teardown";
  }
  return "step";
}

std::string PhaseText(HangPhase phase) {
  switch (phase) {
    case HangPhase::kStartup:
      return "at startup (init, rendezvous, or the communicator's first collective, where NCCL "
             "connects the ranks)";
    case HangPhase::kStep:
      return "in a training step's collective or send/receive";
    case HangPhase::kTeardown:
      return "at teardown (finalize, destroy or abort)";
  }
  return "";
}

std::string Seconds(int64_t ns) {
  return absl::StrFormat("%.1f s", static_cast<double>(std::max<int64_t>(ns, 0)) / 1e9);
}

// The same for a span in seconds, which a crafted trace's time stamps can
// make longer than int64 nanoseconds hold (or NaN): saturated.
std::string SpanSeconds(double s) {
  if (!(s > 0)) return Seconds(0);
  if (s >= 9.2e9) return absl::StrFormat("%.1f s", s);
  return Seconds(static_cast<int64_t>(s * 1e9));
}

std::string RingSizeSetting(uint64_t bytes) {
  uint64_t size = 64 << 10;  // the smallest ring
  while (size < bytes && size < (64ull << 30)) size <<= 1;
  if (size >= (1ull << 30)) return absl::StrCat(size >> 30, "G");
  if (size >= (1ull << 20)) return absl::StrCat(size >> 20, "M");
  return absl::StrCat(size >> 10, "K");
}

std::string ActivityText(const HangFacts::Group& g) {
  const std::string call = g.call.valid ? DescribeCall(g.call) : "no NCCL call";
  switch (g.activity) {
    case RankActivity::kInCall:
      return absl::StrCat("inside ", call, " (the call had not returned)");
    case RankActivity::kGpuPending:
      return absl::StrCat("waiting on ", call, ": issued, its GPU work not complete");
    case RankActivity::kIdle:
      return absl::StrCat("alive, idle outside NCCL (last: ", call, ")");
    case RankActivity::kProgressing:
      return absl::StrCat("making progress (pending: ", call, ")");
    case RankActivity::kExited:
      return absl::StrCat("exited (code 0) after ", call);
    case RankActivity::kExitedError:
      return absl::StrCat("exited (code ", g.exit_code, ") after ", call);
    case RankActivity::kSignal:
      return absl::StrCat("ended by ", SignalName(g.signo), " after ", call);
    case RankActivity::kKilled:
      return absl::StrCat("killed: its trace stops with no exit or signal (last: ", call, ")");
  }
  return call;
}

void RenderNeverCompleted(const Finding& f, const NeverCompletedFacts& x,
                          const CallSiteNamer& sites, FindingText* t) {
  using By = NeverCompletedFacts::By;
  const std::string op = OperationText(x);
  const std::string comm = CommPhrase(f.comm.value_or(0), f.nranks);
  const std::string named = RanksNoun(f.ranks);
  std::string why;
  switch (x.by) {
    case By::kCompleted: {
      std::vector<std::string> others;
      for (const NeverCompletedFacts::Others& o : x.others)
        others.push_back(absl::StrCat(RanksNoun(o.ranks), " ", o.completed));
      why = absl::StrFormat(
          "%s stopped first: %s GPU completed %u collectives of it, the others more (%s)", named,
          f.ranks.size() == 1 ? "its" : "their", x.completed, absl::StrJoin(others, ", "));
      break;
    }
    case By::kLastProgress:
      why = absl::StrFormat(
          "%s stopped first: every rank had completed %u collectives of it, and %s last "
          "completion (or heartbeat) came before the others'",
          named, x.completed, f.ranks.size() == 1 ? "its" : "their");
      break;
    case By::kTie:
      why = absl::StrFormat(
          "every rank's GPU completed %u collectives of it and stopped at the same time: the "
          "traces cannot tell which rank held it up",
          x.completed);
      break;
  }
  std::string waited;
  if (x.waited_ns > 0)
    waited = absl::StrCat("; it had been pending for ", Seconds(x.waited_ns),
                          x.live ? " when diagnosed (live)" : " when the traces end");
  if (x.stall_record) absl::StrAppend(&waited, "; the shim's stall watchdog reported it");
  t->detail = absl::StrFormat("%s of %s was entered by %s and never completed on the GPUs; %s%s",
                              op, comm, RanksNoun(x.entered, "every rank"), why, waited);
  if (!x.arguments_lost.empty()) {
    // Without every rank's arguments a mismatch (which hangs the same way)
    // cannot be ruled out: no hardware is suspected.
    absl::StrAppend(&t->detail, "; but the ring of ", RanksNoun(x.arguments_lost),
                    " overwrote its record of it, so whether every rank called it with the same "
                    "arguments cannot be seen (a mismatch hangs the same way)");
    t->fix = absl::StrCat(
        "the operation's arguments were lost: rerun with a larger NCCLWATCH_RING_SIZE and "
        "diagnose again before suspecting hardware; meanwhile collect ",
        kCollectStacks);
  } else {
    t->fix = absl::StrCat(
        "every rank entered it, so the GPUs or the network did not finish it: on ",
        x.by == By::kTie ? "every node" : absl::StrCat(named, "'s node"),
        " look for a GPU or link fault (dmesg: NVRM Xid; nvidia-smi -q -d ECC,PAGE_RETIREMENT), a "
        "NIC or link that went down (ibstat, ip -s link), and rerun with NCCL_DEBUG=INFO "
        "NCCL_DEBUG_SUBSYS=INIT,NET to see the transport it used; if it still hangs, collect ",
        kCollectStacks);
  }
  t->groups.push_back(
      {f.ranks, absl::StrCat(x.by == By::kTie ? "" : "stopped first: ", "entered ", op, " (",
                             sites(x.site), "), GPU completed ", x.completed, " of it")});
  for (const NeverCompletedFacts::Others& o : x.others)
    t->groups.push_back({o.ranks, absl::StrCat("entered it and waited, GPU completed ", o.completed,
                                               " collectives of it")});
}

void RenderDeviceError(const Finding& f, const DeviceErrorFacts& x, FindingText* t) {
  const std::string rank = RanksNoun(f.ranks, "a process");
  const std::string where = f.comm ? absl::StrCat(" on ", CommPhrase(*f.comm, f.nranks),
                                                  f.seq ? absl::StrCat(" (in #", *f.seq, ")") : "")
                                   : "";
  const std::string waiting =
      x.waiting.empty()
          ? ""
          : absl::StrCat("; ", RanksNoun(x.waiting), " waited on it: their hangs are consequences");
  const std::string also =
      x.also.empty() ? "" : absl::StrCat("; ", RanksNoun(x.also), " reported errors after it");
  if (x.nccl) {
    t->detail = absl::StrFormat("%s: NCCL reported an asynchronous error%s: %s: %s%s%s", rank,
                                where, ResultName(x.result),
                                x.text.empty() ? "NCCL gave no text" : x.text, also, waiting);
    const bool remote = x.result == 6;
    const bool system = x.result == 2;
    t->fix = remote   ? "a peer or the network failed first: find the rank that died or lost its "
                        "link (the other findings, its node's dmesg and the launcher's log), and "
                        "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"
             : system ? "a system call or the network failed under NCCL on this rank: check its "
                        "NIC and links (ibstat, ip -s link, dmesg) and rerun with NCCL_DEBUG=INFO "
                        "NCCL_DEBUG_SUBSYS=INIT,NET to read NCCL's first WARN line"
                      : "read NCCL's text above; rerun with NCCL_DEBUG=INFO on this rank for the "
                        "first WARN line";
    t->groups.push_back({f.ranks, absl::StrCat("NCCL async error: ", ResultName(x.result))});
  } else {
    const std::string gpu =
        x.bus_id.empty() ? (x.device >= 0 ? absl::StrCat("GPU ", x.device) : std::string("GPU"))
                         : absl::StrCat("GPU ", x.bus_id);
    t->detail = absl::StrFormat("%s's %s%s reported %s (%s)%s%s%s", rank, gpu,
                                x.host.empty() ? "" : absl::StrCat(" on ", x.host), x.name,
                                x.text.empty() ? "no text" : x.text, where, also, waiting);
    t->fix = f.kind == FindingKind::kGpuFault
                 ? "take that GPU out of service and check it: dmesg for NVRM Xid lines, "
                   "nvidia-smi -q -d ECC,PAGE_RETIREMENT, a reset or replacement; the error is "
                   "sticky, so the job must restart without it"
                 : "a kernel on this rank failed (an illegal address, a launch failure, a "
                   "device-side assertion): rerun it with CUDA_LAUNCH_BLOCKING=1 or under "
                   "compute-sanitizer to find the kernel; the error is sticky, so the process "
                   "must restart";
    t->groups.push_back({f.ranks, absl::StrCat("its GPU reported ", x.name)});
  }
  if (!x.waiting.empty()) t->groups.push_back({x.waiting, "waited for it"});
}

void RenderStoppedRank(const Finding& f, const StoppedRankFacts& x, const CallSiteNamer& sites,
                       FindingText* t) {
  using State = StoppedRankFacts::State;
  const std::string rank = RanksNoun(f.ranks, "a process");
  const std::string doing = x.doing.valid
                                ? absl::StrCat(x.doing.pending ? "inside " : "after ",
                                               DescribeCall(x.doing), " (", sites(x.site), ")")
                                : "before any NCCL call";
  const std::string before = x.before_others_ns > 0
                                 ? absl::StrCat(Seconds(x.before_others_ns), " before the others'")
                                 : "";
  const std::string waiting =
      x.waiting.empty() ? "" : absl::StrCat("; ", RanksNoun(x.waiting), " waited for it");
  switch (x.state) {
    case State::kDead:
      t->detail =
          x.signo
              ? absl::StrFormat("%s died of %s %s%s%s", rank, SignalName(x.signo), doing,
                                before.empty() ? "" : absl::StrCat(", ", before, " end"), waiting)
          : x.teardown_signo
              ? absl::StrFormat(
                    "%s died %s with no exit or signal recorded (killed by SIGKILL or the "
                    "out-of-memory killer), while every other rank recorded the %s that ended "
                    "it %s later: the launcher's teardown after the first death%s",
                    rank, doing, SignalName(x.teardown_signo), Seconds(x.teardown_after_ns),
                    waiting)
              : absl::StrFormat(
                    "%s stopped living %s: its heartbeat ended %s with no exit or signal "
                    "recorded (it was killed, by SIGKILL or the out-of-memory killer, or "
                    "froze and was killed with the rest of the job)%s",
                    rank, doing, before.empty() ? "early" : before, waiting);
      t->fix =
          "read that rank's own error output (stack trace, core dump), the node's kernel log "
          "(dmesg: oom-kill, NVRM Xid) and the launcher's log for why it ended first";
      t->groups.push_back({f.ranks, x.signo ? absl::StrCat("died of ", SignalName(x.signo))
                                            : std::string("stopped living first")});
      break;
    case State::kStopped:
      t->detail = absl::StrFormat(
          "%s is frozen: its process exists and is stopped (state %c in /proc/PID/stat) %s%s%s",
          rank, x.proc_state ? x.proc_state : 'T', doing,
          before.empty() ? "" : absl::StrCat("; its heartbeat stopped ", before), waiting);
      t->fix =
          "a stopped process holds the whole job (SIGSTOP, Ctrl-Z job control, a debugger or "
          "tracer): continue it (kill -CONT PID) or detach the debugger, and find what stopped "
          "it";
      t->groups.push_back({f.ranks, "stopped (frozen)"});
      break;
    case State::kHeartbeatStale:
      t->detail = absl::StrFormat(
          "%s stopped living %s: its heartbeat stopped %s while the others' go on: the process "
          "is frozen (stopped, a frozen cgroup, a debugger) or gone",
          rank, doing, before.empty() ? "early" : before);
      t->fix =
          "look at the process on its host: ps -o stat,pid,cmd (T: stopped), py-spy dump or gdb "
          "for where it is, dmesg for a kill; continue it (kill -CONT) if it is stopped";
      t->groups.push_back({f.ranks, "heartbeat stopped"});
      break;
  }
  if (!x.waiting.empty()) t->groups.push_back({x.waiting, "waited for it"});
}

void RenderHang(const Finding& f, const HangFacts& x, FindingText* t) {
  std::vector<std::string> waiting;
  for (const HangFacts::Group& g : x.groups) {
    if (g.activity == RankActivity::kInCall || g.activity == RankActivity::kGpuPending)
      waiting.push_back(absl::StrCat(RanksNoun(g.ranks), " ", ActivityText(g)));
  }
  const std::string what =
      waiting.empty() ? "no rank was waiting in NCCL" : absl::StrJoin(waiting, "; ");
  t->detail = absl::StrFormat(
      "the job %s, and no trace shows why: %s%s",
      x.live ? "is not making progress" : "did not end cleanly (it hung, or was killed)", what,
      x.tracked ? ""
                : " (GPU completion was not tracked on every rank: what the GPUs finished is "
                  "not known)");
  t->fix =
      absl::StrCat("collect what the traces cannot show: ", kCollectStacks,
                   f.ranks.empty() ? "" : absl::StrCat(", starting with ", RanksNoun(f.ranks)));
  for (const HangFacts::Group& g : x.groups) t->groups.push_back({g.ranks, ActivityText(g)});
}

namespace {
// A short duration for a reader, to the millisecond below a second: "20 ms", "1.4 s".
std::string ShortSpan(int64_t ns) {
  if (ns < 1'000'000'000) return absl::StrCat(std::max<int64_t>(ns, 0) / 1'000'000, " ms");
  return Seconds(ns);
}
}  // namespace

void RenderKilledWhileRunning(const Finding&, const KilledWhileRunningFacts& x, FindingText* t) {
  int64_t longest = 0;
  std::vector<int> ended;
  for (const KilledWhileRunningFacts::Rank& r : x.ranks) {
    if (r.finished) continue;
    ended.push_back(r.rank);
    longest = std::max(longest, r.before_signal_ns);
  }
  t->detail = absl::StrFormat(
      "%s ended the job (%s, %s) while it was running: nothing was stuck (no NCCL operation or "
      "call had waited %s when it came), and every rank had made progress at most %s before it; "
      "no rank is to blame",
      SignalName(x.signo), RanksNoun(ended),
      x.spread_ns < 100'000'000 ? std::string("at once")
                                : absl::StrCat("within ", ShortSpan(x.spread_ns)),
      Seconds(1'000'000'000), ShortSpan(longest));
  t->fix =
      "nothing in NCCL failed: the launcher or scheduler ended the job (a time limit, a cancel, a "
      "preemption). If it should have finished, give it more time or checkpoint before the "
      "limit; look at the scheduler's log for why it was ended";
  for (const KilledWhileRunningFacts::Rank& r : x.ranks) {
    std::string doing =
        r.finished ? std::string("had finished (exited with code 0)")
                   : absl::StrCat("progressing; last progress ", ShortSpan(r.before_signal_ns),
                                  " before ", SignalName(x.signo));
    if (r.last.valid) absl::StrAppend(&doing, ", last call ", DescribeCall(r.last));
    t->groups.push_back({{r.rank}, doing});
  }
}

void RenderExitError(const Finding& f, const ExitErrorFacts& x, FindingText* t) {
  const std::string rank = RanksNoun(f.ranks, "a process");
  const std::string signal = x.signo ? absl::StrCat(" after ", SignalName(x.signo)) : std::string();
  const std::string work =
      x.work_done ? "every NCCL operation it issued had completed on its GPU"
      : x.tracked ? (f.comm && f.seq ? absl::StrCat("with #", *f.seq, " of communicator ",
                                                    CommShort(*f.comm), " not completed")
                                     : std::string("with NCCL work not completed"))
                  : std::string("its NCCL calls had returned (GPU completion not tracked)");
  const std::string after =
      x.ended_after.empty()
          ? ""
          : absl::StrCat("; ", RanksNoun(x.ended_after),
                         " did not end cleanly after it (killed, or left waiting): consequences");
  t->detail = absl::StrFormat("%s exited with code %d%s; %s, and no trace shows another cause%s",
                              rank, x.exit_code, signal, work, after);
  t->fix =
      "read that rank's own error output (the exception or message before it exited) and the "
      "launcher's log; the job is not healthy while a rank exits with an error";
  t->groups.push_back(
      {f.ranks, absl::StrCat("exited (code ", x.exit_code, ")",
                             x.last.valid ? absl::StrCat(" after ", DescribeCall(x.last)) : "")});
  if (!x.ended_after.empty()) t->groups.push_back({x.ended_after, "ended after it"});
}

void RenderBlindSpot(const Finding& f, const BlindSpotFacts& x, FindingText* t) {
  const std::string ranks = RanksNoun(f.ranks, "some processes");
  if (f.kind == FindingKind::kNcclCallsUnseen) {
    t->detail = absl::StrFormat(
        "%s loaded NCCL (%s) and the shim saw none of its calls: what %s did in NCCL cannot be "
        "judged, so the job cannot be called healthy",
        ranks, x.nccl_path.empty() ? "libnccl" : x.nccl_path, f.ranks.size() == 1 ? "it" : "they");
    t->fix =
        "make LD_PRELOAD=libncclwatch.so reach these processes before NCCL loads (a launcher "
        "that clears the environment, NCCL linked statically into the framework, or reached "
        "through dlsym, is not seen); meanwhile collect their NCCL_DEBUG=INFO logs and run "
        "ncclwatch explain on them";
    t->groups.push_back({f.ranks, "loaded NCCL, no call seen"});
    return;
  }
  t->detail = absl::StrFormat(
      "the job did not end cleanly and its cause is not in the traces: %s's ring of %s held only "
      "its newest records (%.0f records/s over %s); %u older slots were overwritten, and with "
      "them what happened first",
      ranks, Bytes(x.ring_bytes), x.records_per_s, SpanSeconds(x.span_s), x.overwritten);
  t->fix = absl::StrFormat(
      "rerun with NCCLWATCH_RING_SIZE=%s (a ring of %s holds this whole run) and diagnose again; "
      "meanwhile collect %s",
      RingSizeSetting(x.needed_bytes), Bytes(x.needed_bytes), kCollectStacks);
  t->groups.push_back({f.ranks, "ring overwritten"});
}

}  // namespace ncclwatch::decoder

// explain's findings in words, from the facts of the log lines.

#include "report/log_text.h"

#include <cctype>
#include <csignal>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "knowledge/message_catalogue.h"
#include "knowledge/nccl_semantics.h"
#include "report/hang_text.h"
#include "report/names.h"

namespace ncclwatch::decoder {
namespace {

std::string RanksOrUnknown(const std::vector<int>& ranks) {
  return RanksNoun(ranks, "a process of unknown rank");
}

struct XidInfo {
  const char* what;
  bool hardware;
};

// What an Xid means, and whether it is the hardware's doing.
XidInfo Xid(int xid) {
  switch (xid) {
    case 13:
      return {"a graphics engine exception (often the program's own kernel fault)", false};
    case 31:
      return {"a GPU memory page fault (often an illegal access by a kernel)", false};
    case 43:
      return {"a GPU stopped processing (a kernel was killed or faulted)", false};
    case 45:
      return {"preemptive cleanup after an earlier error", false};
    case 48:
      return {"an uncorrectable double-bit ECC error", true};
    case 61:
    case 62:
      return {"an internal micro-controller error", true};
    case 63:
    case 64:
      return {"ECC page retirement or row remapping", true};
    case 74:
      return {"an NVLink error", true};
    case 79:
      return {"the GPU fell off the bus", true};
    case 92:
      return {"a high single-bit ECC error rate", true};
    case 94:
      return {"a contained uncorrectable ECC error", true};
    case 95:
      return {"an uncontained uncorrectable ECC error", true};
    case 119:
    case 120:
      return {"a GSP firmware error", true};
    default:
      return {"a GPU error", true};
  }
}

// "ALLREDUCE(numel=4096) #17"
std::string Describe(const LogFacts::Timeout& t) {
  return absl::StrCat(t.op, t.numel.empty() ? "" : absl::StrCat("(numel=", t.numel, ")"), " #",
                      t.seq);
}

// What one line showed, after the ranks' noun, and its fix; false if the
// cause is not one of a line's.
bool LineWords(const LogFacts& x, std::string* head, std::string* fix) {
  switch (x.cause) {
    case LogCause::kXid: {
      const int xid = x.xid.value_or(0);
      const XidInfo info = Xid(xid);
      *head = absl::StrFormat("GPU %s reported Xid %d: %s", x.bus_id.value_or(""), xid, info.what);
      *fix = info.hardware
                 ? CauseOf(CatalogueCause::kGpuFailed).fix
                 : "this Xid usually follows a fault in the program's own kernel: run the failing "
                   "rank "
                   "under compute-sanitizer, and check dmesg for an Xid 79/48/94/95 before it";
      return true;
    }
    case LogCause::kGpuFailed:
      if (const CatalogueMessage* m = MessageById(x.message))  // "lost its GPU: the driver ..."
        *head = absl::StrCat(m->meaning, ": ", x.line);
      else
        *head = absl::StrCat("saw its GPU fail: ", x.line);
      *fix = CauseOf(CatalogueCause::kGpuFailed).fix;
      return true;
    case LogCause::kGpuOutOfMemory:
      *head = absl::StrCat("ran out of GPU memory: ", x.line);
      *fix = CauseOf(CatalogueCause::kGpuOom).fix;
      return true;
    case LogCause::kHostOutOfMemory:
      *head = absl::StrCat("was killed by the kernel's out-of-memory killer: ", x.line);
      *fix = CauseOf(CatalogueCause::kHostOom).fix;
      return true;
    case LogCause::kFabric:
      *head = absl::StrCat("NVLink fabric (NVLS/NVSwitch) setup failed: ", x.line);
      *fix = CauseOf(CatalogueCause::kFabric).fix;
      return true;
    case LogCause::kCudaIpc:
      *head = absl::StrCat("could not map another local GPU's memory (P2P/CUDA IPC): ", x.line);
      *fix = CauseOf(CatalogueCause::kP2p).fix;
      return true;
    case LogCause::kKernelError:
      *head = absl::StrCat("hit a CUDA error in a kernel: ", x.line);
      *fix = CauseOf(CatalogueCause::kKernel).fix;
      return true;
    case LogCause::kLauncherDeath: {
      const int signo = x.signo.value_or(0);
      *head = absl::StrCat("died of ", SignalName(signo), " (the launcher's report: ", x.line, ")");
      *fix = signo == SIGKILL ? "a SIGKILL is the out-of-memory killer or the scheduler: check "
                                "dmesg (oom-kill) and "
                                "the job's memory limit and time limit"
                              : "read that rank's own output just before it died (a traceback, a "
                                "core dump) for why";
      return true;
    }
    case LogCause::kCrash: {
      const int signo = x.signo.value_or(0);
      const Area sub = x.subsystem.value_or(Area::kNone);
      const std::string inside = sub == Area::kNccl      ? ", inside NCCL"
                                 : sub == Area::kCuda    ? ", inside the CUDA driver or runtime"
                                 : sub == Area::kC10d    ? ", under torch.distributed"
                                 : sub == Area::kPytorch ? ", inside PyTorch"
                                 : sub == Area::kNetIb   ? ", inside the InfiniBand libraries"
                                                         : "";
      *head = absl::StrCat("crashed with ", SignalName(signo),
                           x.hit ? absl::StrCat(" in ", *x.hit) : std::string(), inside,
                           " (its own report", x.tool ? absl::StrCat(", ", *x.tool) : "", ": ",
                           absl::StripSuffix(x.line, "."), ")");
      *fix = sub == Area::kNccl
                 ? "a crash inside NCCL: note its version and the frame, get the crash's "
                   "backtrace from a core dump (ulimit -c unlimited; gdb -batch -ex 'thread "
                   "apply all bt' python core), look for it in NVIDIA/nccl's issues and try the "
                   "newest NCCL release"
             : sub == Area::kCuda
                 ? "check that GPU and its driver: dmesg for an Xid, nvidia-smi, and that the "
                   "driver is new enough for the CUDA runtime the job loads"
                 : "read that rank's output just before the crash and get its backtrace from a "
                   "core dump (ulimit -c unlimited; gdb -batch -ex 'thread apply all bt' python "
                   "core): the frame names the code that crashed";
      return true;
    }
    default:
      return false;
  }
}

// "rank 0 and rank 1 wait in all_reduce (a torch.distributed collective)"
std::string DescribeWait(const LogFacts::Wait& w) {
  std::vector<int> known;
  for (int r : w.ranks)
    if (r >= 0) known.push_back(r);
  const size_t unknown = w.ranks.size() - known.size();
  std::string who = known.empty() ? "" : RanksNoun(known, "");
  if (unknown > 0)
    absl::StrAppend(&who, who.empty() ? "" : " and ", unknown,
                    unknown == 1 ? " process of unknown rank" : " processes of unknown rank");
  return absl::StrCat(
      who, w.ranks.size() == 1 ? " waits in " : " wait in ", w.frame,
      w.place.empty() ? " (no frame of NCCL or torch.distributed)"
                      : absl::StrCat(" (", w.place, ", ", w.phase ? PhaseName(*w.phase) : "", ")"));
}

}  // namespace

void RenderLogFinding(const Finding& f, const LogFacts& x, FindingText* t) {
  std::string head;
  if (LineWords(x, &head, &t->fix)) {
    t->detail = absl::StrCat(RanksOrUnknown(f.ranks), " ", head);
    t->detail[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t->detail[0])));
    if (!f.ranks.empty()) t->groups.push_back({f.ranks, KindName(f.kind)});
    return;
  }
  switch (x.cause) {
    case LogCause::kCatalogued: {
      // The catalogue's words for the message (knowledge/message_catalogue.h).
      const CatalogueMessage* m = MessageById(x.message);
      if (m == nullptr) return;
      // The report ends the sentence; the line's own full stop would double it.
      t->detail = absl::StrCat(RanksOrUnknown(f.ranks), " ", m->meaning,
                               x.address ? absl::StrCat(" (", *x.address, ")") : "", ": ",
                               absl::StripSuffix(x.line, "."));
      t->detail[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t->detail[0])));
      t->fix = CauseOf(*m).fix;
      if (!f.ranks.empty()) t->groups.push_back({f.ranks, KindName(f.kind)});
      return;
    }
    case LogCause::kTorchMismatch: {
      std::vector<std::string> parts;
      for (const LogFacts::Timeout& g : x.timeouts) {
        parts.push_back(absl::StrCat(RanksOrUnknown(g.ranks), " ran ", g.op));
        t->groups.push_back({g.ranks, absl::StrCat("ran ", g.op)});
      }
      t->detail = absl::StrCat(
          "PyTorch's own check (TORCH_DISTRIBUTED_DEBUG=DETAIL) found the ranks in different "
          "collectives",
          parts.empty() ? "" : absl::StrCat(": ", absl::StrJoin(parts, "; ")), " (", x.line, ")");
      t->fix = CauseOf(CatalogueCause::kTorchMismatch).fix;
      return;
    }
    case LogCause::kStacks: {
      std::vector<std::string> parts;
      for (const LogFacts::Wait& w : x.waits) {
        parts.push_back(DescribeWait(w));
        std::vector<int> known;
        for (int r : w.ranks)
          if (r >= 0) known.push_back(r);
        if (!known.empty()) t->groups.push_back({known, absl::StrCat("waits in ", w.frame)});
      }
      const bool one_place = x.waits.size() == 1;
      t->detail = absl::StrCat(
          "From their stacks (", x.tool.value_or("stacks"), "): ", absl::StrJoin(parts, "; "),
          one_place ? ". They show where the job stopped, not why: no rank's stack is elsewhere"
                    : ". The ranks are not all in the same place: the ones apart from the others "
                      "took another path (a skipped or extra collective, an early exit or "
                      "teardown) or are behind them");
      t->fix =
          one_place
              ? "collect every rank's stack (py-spy dump --pid PID, or gdb -batch -ex 'thread "
                "apply all bt' -p PID) and its NCCL_DEBUG=INFO log; a rank missing here is "
                "likely the one holding the others; or run the job under libncclwatch.so and "
                "use ncclwatch diagnose for the sequence numbers"
              : "look at the code path of the ranks that are elsewhere: every rank must make the "
                "same collectives in the same order, and leave (destroy or abort) together";
      return;
    }
    case LogCause::kLostPeer:
      t->detail =
          absl::StrCat(RanksOrUnknown(x.who), " lost the connection to a peer (",
                       absl::StrJoin(x.peers, ", "), "): the process there died or was killed");
      t->fix =
          "find the rank at that address and read its own output and the node's dmesg for why it "
          "ended";
      return;
    case LogCause::kWatchdogMismatch: {
      std::vector<std::string> parts;
      for (const LogFacts::Timeout& g : x.timeouts) {
        parts.push_back(absl::StrCat(RanksOrUnknown(g.ranks), " in ", Describe(g)));
        t->groups.push_back({g.ranks, absl::StrCat("timed out in ", Describe(g))});
      }
      t->detail = absl::StrCat(
          "PyTorch's watchdog timed out with the ranks in different collectives at sequence "
          "number ",
          f.seq.value_or(0),
          " (PyTorch's numbering of the process group's operations): ", absl::StrJoin(parts, "; "));
      t->fix =
          "make every rank call the same collectives in the same order with the same shapes; the "
          "ranks that "
          "differ took another code path at that point";
      return;
    }
    case LogCause::kWatchdogMissing: {
      const std::string where = x.timeouts.empty() ? "" : Describe(x.timeouts.front());
      t->detail = absl::StrCat(
          RanksOrUnknown(f.ranks), " never timed out in ", where, ", where ",
          RanksOrUnknown(x.timed_out),
          " waited until PyTorch's watchdog fired: ", f.ranks.size() == 1 ? "it was" : "they were",
          " not in that collective (a skipped or extra step, another branch, or dead)");
      t->fix =
          "see what those ranks did instead (their own output, py-spy dump of a hung job); make "
          "every rank run "
          "the same collectives";
      t->groups = {{x.timed_out, absl::StrCat("timed out in ", where)},
                   {f.ranks, "never entered it"}};
      return;
    }
    case LogCause::kWatchdogTimeout: {
      std::vector<std::string> parts;
      for (const LogFacts::Timeout& g : x.timeouts) {
        parts.push_back(absl::StrCat(RanksOrUnknown(g.ranks), " in ", Describe(g)));
        t->groups.push_back({g.ranks, absl::StrCat("timed out in ", Describe(g))});
      }
      t->detail = absl::StrCat("PyTorch's watchdog timed out after ", x.timeout_ms.value_or("?"),
                               " ms: ", absl::StrJoin(parts, "; "));
      t->fix =
          "a timeout is a symptom: a rank stopped calling collectives (it died, hung, or took "
          "another path); see "
          "the findings before this one";
      return;
    }
    case LogCause::kUnseenRanks:
      t->detail =
          absl::StrCat("these logs hold nothing of ", RanksOrUnknown(f.ranks),
                       ", which never timed out: one of them is likely where the job stopped");
      t->fix =
          "collect every rank's output (NCCL_DEBUG=INFO NCCL_DEBUG_FILE=/shared/nccl.%h.%p.log, "
          "and the "
          "launcher's per-rank logs)";
      return;
    case LogCause::kUnexplainedError:
      t->detail = absl::StrCat(
          "the logs show an NCCL error",
          x.subsystem ? absl::StrCat(" (from NCCL's ", AreaName(*x.subsystem), ")") : std::string(),
          " that they do not explain: ", x.line);
      t->fix =
          "collect more: every rank's NCCL_DEBUG=INFO log (NCCL_DEBUG_FILE=/shared/nccl.%h.%p.log, "
          "NCCL_DEBUG_SUBSYS=INIT,NET,ENV), dmesg from every node, or run the job under "
          "libncclwatch.so "
          "and use ncclwatch diagnose";
      return;
    case LogCause::kNotice:
      t->detail = absl::StrCat("NCCL printed a notice (NCCL ATTN): ", x.line);
      t->fix =
          "read it: NCCL 2.32 and later print notices for what they work around or give up on; "
          "one that names a failure is read as NCCL's warnings are";
      return;
    case LogCause::kNoInfoLines:
      t->detail =
          "the logs have NCCL's warnings but no INFO lines, so ranks, versions and interfaces are "
          "unknown";
      t->fix = "run with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET,ENV keeps it short)";
      return;
    default:
      return;
  }
}

}  // namespace ncclwatch::decoder

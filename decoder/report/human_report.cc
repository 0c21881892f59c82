// One screen, rendered from a Report (report/report.h): the verdict, the
// root cause in a sentence with what each group of ranks did and the fix,
// then consequences, what every rank did last, and notes.

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report/finding_text.h"
#include "report/hang_text.h"
#include "report/names.h"
#include "report/report.h"
#include "report/report_parts.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {
namespace {

std::string Ago(int64_t when_ns, int64_t end_ns) {
  if (when_ns <= 0 || end_ns <= 0) return "";
  const double s = static_cast<double>(end_ns - when_ns) / 1e9;
  return s < 0.05 ? "at the end of the trace"
                  : absl::StrFormat("%.1f s before the end of the trace", s);
}

std::string FateText(const Fate& f) {
  switch (f.kind) {
    case Fate::kExited:
      return f.signo ? absl::StrCat("got ", SignalName(f.signo), ", then exited (code ",
                                    f.exit_code, ")")
                     : absl::StrCat("exited (code ", f.exit_code, ")");
    case Fate::kSignal:
      return absl::StrCat("ended by ", SignalName(f.signo));
    default:
      return "no exit or signal recorded";
  }
}

void WriteGroups(const std::vector<RankGroup>& groups, std::ostream& out) {
  size_t width = 0;
  for (const RankGroup& g : groups) width = std::max(width, RanksNoun(g.ranks).size());
  for (const RankGroup& g : groups) {
    const std::string r = RanksNoun(g.ranks);
    out << "    " << r << std::string(width - r.size() + 2, ' ') << g.doing << "\n";
  }
}

}  // namespace

void WriteFindingsHuman(const std::vector<Finding>& findings, const CallSiteNamer& sites,
                        std::ostream& out) {
  // One root cause per job that went wrong.
  std::vector<const Finding*> roots;
  for (const Finding& f : findings)
    if (f.role == FindingRole::kRootCause) roots.push_back(&f);
  for (const Finding* root : roots) {
    const FindingText t = RenderFinding(*root, sites);
    out << "\nRoot cause" << (roots.size() > 1 ? absl::StrCat(" in job ", root->job + 1) : "")
        << ": " << t.title << "\n";
    out << "  " << t.detail << ".\n";
    if (root->phase) out << "  Where: " << PhaseText(*root->phase) << ".\n";
    if (!t.groups.empty()) {
      out << "\n  What each group of ranks did:\n";
      WriteGroups(t.groups, out);
    }
    out << "\n  Fix: " << t.fix << ".\n";
  }

  std::vector<const Finding*> rest;
  for (const Finding& f : findings)
    if (f.role == FindingRole::kConsequence || f.role == FindingRole::kWarning) rest.push_back(&f);
  if (!rest.empty()) {
    out << (roots.empty() ? "\nWarnings:\n" : "\nThen:\n");
    for (size_t i = 0; i < rest.size() && i < 5; ++i) {
      const FindingText t = RenderFinding(*rest[i], sites);
      if (roots.empty()) {  // warnings only: each with its fix
        out << "  - " << t.detail << ".\n    Fix: " << t.fix << ".\n";
      } else {
        out << "  - " << (rest[i]->role == FindingRole::kWarning ? "warning: " : "") << t.detail
            << ".\n";
      }
    }
    if (rest.size() > 5) out << "  - and " << rest.size() - 5 << " more (see --json)\n";
  }
}

void WriteNotesHuman(const std::vector<Finding>& findings, const CallSiteNamer& sites,
                     std::ostream& out) {
  for (const Finding& f : findings) {
    if (f.role != FindingRole::kNote) continue;
    const FindingText t = RenderFinding(f, sites);
    out << "\nNote: " << t.detail << ".\n  " << t.fix << ".\n";
  }
}

void WriteNotReadHuman(const UnreadableFiles& unreadable, std::ostream& out) {
  // The first few, each on one line whatever its name holds; all in --json.
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < unreadable.size() && i < kShown; ++i)
    out << "\nNot read: " << OneLine(unreadable[i].second) << "\n";
  if (unreadable.size() > kShown)
    out << "\nNot read: " << unreadable.size() - kShown << " more (listed in --json)\n";
}

namespace {

// diagnose's face: the job as its traces showed it.
void WriteTraced(const Report& r, const TracesSeen& seen, std::ostream& out) {
  const std::vector<TracedProcess>& procs = seen.processes;
  const CallSiteNamer sites = r.Sites();
  const bool running = r.verdict == Verdict::kRunning;
  const bool problem = r.verdict == Verdict::kProblem;
  out << (running ? RunningHeadline(r.findings, r.pending) : Headline(r.findings, problem)) << "\n";
  out << absl::StrFormat("ncclwatch: %d process%s on %d host%s, %d communicator%s", procs.size(),
                         procs.size() == 1 ? "" : "es", seen.hosts, seen.hosts == 1 ? "" : "s",
                         seen.communicators, seen.communicators == 1 ? "" : "s");
  if (seen.jobs > 1) out << ", " << seen.jobs << " separate jobs";
  out << "\n";
  if (running) {
    out << "\nLive: the job is running, and nothing is certain or stuck yet: every rank made the "
           "same collectives so far, every send it has met its receive, and no operation has "
           "waited long enough to call it stuck.\n";
    if (!r.pending.empty()) {
      out << "\nPending now:\n";
      for (const PendingOperation& p : r.pending) out << "  " << PendingText(p) << "\n";
    }
    out << "Run diagnose again to see whether it moves; a wait that lasts becomes a finding.\n";
  } else if (!problem) {
    out << "\nEvery rank made the same collectives, every send met its receive"
        << (seen.tracked ? ", and the GPUs completed every operation" : "") << ".\n";
  }
  WriteFindingsHuman(r.findings, sites, out);

  // What every rank did last, ranks with the same story together.
  std::map<std::string, std::vector<int>> last, last_unranked;
  for (const TracedProcess& p : procs) {
    std::string story = p.last.valid ? DescribeCall(p.last) : "no NCCL call";
    if (p.last.pending) absl::StrAppend(&story, " (still inside it)");
    const std::string ago = Ago(p.last.when_ns, seen.end_ns);
    if (!ago.empty()) absl::StrAppend(&story, ", ", ago);
    absl::StrAppend(&story, "; ", FateText(p.end));
    if (p.end.kind == Fate::kNoEnd && p.last_beat_ns > 0) {
      const std::string beat = Ago(p.last_beat_ns, seen.end_ns);
      if (!beat.empty()) absl::StrAppend(&story, "; last heartbeat ", beat);
    }
    // A process with no rank (torchrun's agent, a helper that imported
    // torch) is named by its pid, never as a rank.
    (p.rank >= 0 ? last : last_unranked)[story].push_back(p.rank >= 0 ? p.rank
                                                                      : static_cast<int>(p.pid));
  }
  if (problem) {
    out << "\nWhat each rank did last:\n";
    std::vector<RankGroup> groups;
    for (auto& [story, ranks] : last) groups.push_back({ranks, story});
    std::sort(groups.begin(), groups.end(), [](const RankGroup& a, const RankGroup& b) {
      return a.ranks.front() < b.ranks.front();
    });
    std::vector<std::pair<std::string, std::string>> lines;
    for (const RankGroup& g : groups) lines.push_back({RanksNoun(g.ranks), g.doing});
    for (auto& [story, pids] : last_unranked) {
      std::sort(pids.begin(), pids.end());
      lines.push_back(
          {absl::StrCat(pids.size() == 1 ? "process " : "processes ", absl::StrJoin(pids, ",")),
           story});
    }
    size_t width = 0;
    for (const auto& [who, story] : lines) width = std::max(width, who.size());
    for (const auto& [who, story] : lines)
      out << "    " << who << std::string(width - who.size() + 2, ' ') << story << "\n";
  }

  WriteNotesHuman(r.findings, sites, out);
  uint64_t records = 0, torn = 0, overwritten = 0;
  for (const TracedProcess& p : procs) {
    records += p.records;
    torn += p.torn_slots;
    overwritten += p.overwritten_slots;
  }
  out << absl::StrFormat(
      "\nTraces: %d file%s, %d records, %d torn slots, %d ring slots overwritten\n", procs.size(),
      procs.size() == 1 ? "" : "s", records, torn, overwritten);
  WriteNotReadHuman(r.logs_not_read, out);
}

// explain's face: the processes as the logs showed them.
void WriteLogged(const Report& r, const LogsSeen& seen, std::ostream& out) {
  std::set<std::string> hosts;
  for (const LoggedProcess& p : seen.processes)
    if (!p.host.empty()) hosts.insert(p.host);  // lines without NCCL's prefix name none
  const bool problem = r.verdict == Verdict::kProblem;
  out << Headline(r.findings, problem) << "\n";
  const size_t files = seen.files, processes = seen.processes.size();
  out << absl::StrFormat("ncclwatch explain: %d file%s, ", files, files == 1 ? "" : "s");
  // Hosts and processes as the lines name them: a log of other tools
  // (a kernel log, nvidia-smi, a traceback) names neither.
  if (!hosts.empty()) {
    out << absl::StrFormat("%d NCCL process%s on %d host%s\n", processes,
                           processes == 1 ? "" : "es", hosts.size(), hosts.size() == 1 ? "" : "s");
  } else if (processes > 0) {
    out << absl::StrFormat(
        "%d process%s, no host named (no line with NCCL's host:pid:tid prefix)\n", processes,
        processes == 1 ? "" : "es");
  } else {
    out << "no NCCL process named (no line with NCCL's host:pid:tid prefix)\n";
  }
  if (!problem) out << "\nThe logs show no NCCL error.\n";
  const CallSiteNamer sites = r.Sites();
  WriteFindingsHuman(r.findings, sites, out);
  WriteNotesHuman(r.findings, sites, out);
  WriteNotReadHuman(r.logs_not_read, out);
}

}  // namespace

void WriteHuman(const Report& r, std::ostream& out) {
  std::ostringstream human;
  if (const auto* traces = std::get_if<TracesSeen>(&r.seen))
    WriteTraced(r, *traces, human);
  else
    WriteLogged(r, std::get<LogsSeen>(r.seen), human);
  out << TerminalSafe(human.str());
}

}  // namespace ncclwatch::decoder

// explain's two faces: the same findings as diagnose, with the processes the
// logs showed instead of traces.

#include <set>

#include "absl/strings/str_format.h"
#include "report/json_writer.h"
#include "report/names.h"
#include "report/reports.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {
namespace {

std::string InitState(const LogProcess& p) {
  if (p.init_complete) return "complete";
  if (p.init_started) return "started";
  return "unknown";
}

}  // namespace

void WriteExplainJsonReport(const NcclLog& log, const Diagnosis& d,
                            const UnreadableFiles& unreadable, std::ostream& out) {
  // Each process as the logs showed it: where its lines came from, who it
  // was, how far its init got.
  auto processes = [&](JsonWriter& w) {
    for (const LogProcess& p : log.processes()) {
      w.BeginObject();
      w.Key("source").String(log.sources()[p.source]);
      w.Key("host").String(p.host);
      w.Key("pid").Integer(p.pid);
      w.Key("rank").Integer(p.rank);
      w.Key("nccl_version");
      if (p.nccl_version)
        w.String(NcclVersionString(p.nccl_version));
      else
        w.Null();
      w.Key("bus_id");
      if (p.bus_id.empty())
        w.Null();
      else
        w.String(p.bus_id);
      w.Key("init").String(InitState(p));
      w.Key("lines").Integer(p.lines.size());
      w.EndObject();
    }
  };
  WriteJsonEnvelope(d.problem, d.findings, NoCallSites(), processes, unreadable, out);
}

void WriteExplainHumanReport(const NcclLog& log, const Diagnosis& d,
                             const UnreadableFiles& unreadable, std::ostream& out) {
  std::set<std::string> hosts;
  for (const LogProcess& p : log.processes())
    if (!p.host.empty()) hosts.insert(p.host);  // lines without NCCL's prefix name none
  out << Headline(d.findings, d.problem) << "\n";
  const size_t files = log.sources().size(), processes = log.processes().size();
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
  if (!d.problem) out << "\nThe logs show no NCCL error.\n";
  WriteFindingsHuman(d.findings, NoCallSites(), out);
  WriteNotesHuman(d.findings, NoCallSites(), out);
  WriteNotReadHuman(unreadable, out);
}

}  // namespace ncclwatch::decoder

#include "commands/explain.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "commands/input_files.h"
#include "logs/log_diagnosis.h"
#include "logs/nccl_log.h"
#include "report/json.h"
#include "report/names.h"
#include "report/reports.h"

namespace ncclwatch::decoder {
namespace {

namespace fs = std::filesystem;

std::string InitState(const LogProcess& p) {
  if (p.init_complete) return "complete";
  if (p.init_started) return "started";
  return "unknown";
}

void WriteJson(const NcclLog& log, const LogDiagnosis& d, const std::vector<std::pair<std::string, std::string>>& bad,
               std::ostream& out) {
  out << "{\"ncclwatch\":\"0.1.0\",\"verdict\":" << (d.problem ? "\"problem\"" : "\"healthy\"") << ",\"findings\":[";
  for (size_t i = 0; i < d.findings.size(); ++i) {
    if (i) out << ",";
    WriteFindingJson(d.findings[i], out);
  }
  out << "],\"processes\":[";
  const auto& procs = log.processes();
  for (size_t i = 0; i < procs.size(); ++i) {
    const LogProcess& p = procs[i];
    out << (i ? "," : "") << "{\"source\":" << JsonString(log.sources()[p.source]) << ",\"host\":" << JsonString(p.host)
        << ",\"pid\":" << p.pid << ",\"rank\":" << p.rank
        << ",\"nccl_version\":" << (p.nccl_version ? JsonString(NcclVersionString(p.nccl_version)) : "null")
        << ",\"bus_id\":" << (p.bus_id.empty() ? "null" : JsonString(p.bus_id)) << ",\"init\":" << JsonString(InitState(p))
        << ",\"lines\":" << p.lines.size() << "}";
  }
  out << "],\"unreadable\":[";
  for (size_t i = 0; i < bad.size(); ++i) {
    out << (i ? "," : "") << "{\"path\":" << JsonString(bad[i].first) << ",\"error\":" << JsonString(bad[i].second)
        << "}";
  }
  out << "]}\n";
}

void WriteHuman(const NcclLog& log, const LogDiagnosis& d, const std::vector<std::pair<std::string, std::string>>& bad,
                std::ostream& out) {
  std::set<std::string> hosts;
  for (const LogProcess& p : log.processes()) hosts.insert(p.host);
  out << absl::StrFormat("ncclwatch explain: %d file%s, %d NCCL process%s on %d host%s\n\n", log.sources().size(),
                         log.sources().size() == 1 ? "" : "s", log.processes().size(),
                         log.processes().size() == 1 ? "" : "es", hosts.size(), hosts.size() == 1 ? "" : "s");
  if (!d.problem) {
    out << "NO PROBLEM FOUND: the logs show no NCCL error.\n";
  } else {
    WriteFindingsHuman(d.findings, d.problem, out);
  }
  WriteNotesHuman(d.findings, out);
  for (const auto& [path, why] : bad) out << "\nNot read: " << why << "\n";
}

}  // namespace

int RunExplain(const std::vector<std::string>& paths, bool json, std::ostream& out, std::ostream& err) {
  // In folders, everything but traces; a file named on the command line, whatever it is.
  absl::StatusOr<std::vector<std::string>> found =
      InputFiles(paths, [](const fs::path& p) { return p.extension() != ".trace"; });
  if (!found.ok()) {
    err << "ncclwatch: " << found.status().message() << "\n";
    return 2;
  }
  const std::vector<std::string>& files = *found;
  if (files.empty()) {
    err << "ncclwatch: no log files under " << paths.front() << "\n";
    return 2;
  }
  NcclLog log;
  std::vector<std::pair<std::string, std::string>> bad;
  for (const std::string& f : files) {
    absl::Status s = log.AddFile(f);
    if (!s.ok()) bad.push_back({f, std::string(s.message())});
  }
  log.Finish();
  if (log.sources().empty()) {
    err << "ncclwatch: none of the " << files.size() << " file(s) can be read; first: " << bad.front().second << "\n";
    return 2;
  }
  const LogDiagnosis d = DiagnoseLogs(log);
  if (log.nccl_lines() == 0 && !d.problem) {
    err << "ncclwatch: nothing in " << (files.size() == 1 ? files.front() : absl::StrCat(files.size(), " files"))
        << " looks like an NCCL log (NCCL_DEBUG=INFO or WARN) or a job's NCCL error output\n";
    return 2;
  }
  if (json) {
    WriteJson(log, d, bad, out);
  } else {
    WriteHuman(log, d, bad, out);
  }
  return d.problem ? 1 : 0;
}

}  // namespace ncclwatch::decoder

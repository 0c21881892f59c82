// The JSON contract (stable; documented in README.md):
//
// {"verdict": "healthy"|"problem",
//  "findings": [{"kind", "role", "comm", "seq", "ranks", "detail", "fix", ...}],
//  "processes": [...], "unreadable": [...]}

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "report/json.h"
#include "report/names.h"
#include "report/reports.h"

namespace ncclwatch::decoder {
namespace {

std::string Ints(const std::vector<int>& v) { return absl::StrCat("[", absl::StrJoin(v, ","), "]"); }

std::string FateJson(const Fate& f) {
  switch (f.kind) {
    case Fate::kExited:
      return absl::StrCat("{\"how\":\"exit\",\"exit_code\":", f.exit_code,
                          f.signo ? absl::StrCat(",\"signal\":", JsonString(SignalName(f.signo))) : "", "}");
    case Fate::kSignal:
      return absl::StrCat("{\"how\":\"signal\",\"signal\":", JsonString(SignalName(f.signo)), "}");
    default:
      return "{\"how\":\"none\"}";
  }
}

}  // namespace

void WriteFindingJson(const Finding& f, std::ostream& out) {
  out << "{\"kind\":" << JsonString(f.kind) << ",\"role\":" << JsonString(f.role) << ",\"job\":" << f.job
      << ",\"comm\":" << (f.comm ? JsonString(CommName(*f.comm)) : "null")
      << ",\"seq\":" << (f.seq ? absl::StrCat(*f.seq) : "null") << ",\"ranks\":" << Ints(f.ranks);
  if (f.kind == "collective_mismatch" || !f.field.empty()) out << ",\"field\":" << JsonString(f.field);
  out << ",\"nranks\":" << (f.nranks > 0 ? absl::StrCat(f.nranks) : "null");
  out << ",\"detail\":" << JsonString(f.detail) << ",\"fix\":" << JsonString(f.fix);
  out << ",\"rank_groups\":[";
  for (size_t g = 0; g < f.groups.size(); ++g) {
    out << (g ? "," : "") << "{\"ranks\":" << Ints(f.groups[g].ranks) << ",\"doing\":" << JsonString(f.groups[g].doing)
        << "}";
  }
  out << "]";
  for (const auto& [key, value] : f.extra) out << "," << JsonString(key) << ":" << value;
  out << "}";
}

void WriteJsonReport(const JobAnalysis& job, const Diagnosis& d, std::ostream& out) {
  out << "{\"ncclwatch\":\"0.1.0\",\"verdict\":" << (d.problem ? "\"problem\"" : "\"healthy\"") << ",\"findings\":[";
  for (size_t i = 0; i < d.findings.size(); ++i) {
    if (i) out << ",";
    WriteFindingJson(d.findings[i], out);
  }
  out << "],\"processes\":[";
  const auto& procs = job.processes();
  for (size_t i = 0; i < procs.size(); ++i) {
    const ProcessFacts& p = procs[i];
    out << (i ? "," : "") << "{\"path\":" << JsonString(p.path) << ",\"host\":" << JsonString(p.host)
        << ",\"pid\":" << p.pid << ",\"rank\":" << p.rank << ",\"rank_source\":" << JsonString(p.rank_source)
        << ",\"nccl_version\":" << (p.nccl_version > 0 ? JsonString(NcclVersionString(p.nccl_version)) : "null")
        << ",\"end\":" << FateJson(p.fate) << ",\"last_call\":" << (p.last.valid ? JsonString(p.last.what) : "null")
        << ",\"last_call_pending\":" << (p.last.pending ? "true" : "false") << ",\"records\":" << p.records
        << ",\"torn_slots\":" << p.stats.torn_slots + p.unparsed
        << ",\"overwritten_slots\":" << p.stats.ring_overwritten << "}";
  }
  out << "],\"unreadable\":[";
  for (size_t i = 0; i < job.unreadable().size(); ++i) {
    const UnreadableTrace& u = job.unreadable()[i];
    out << (i ? "," : "") << "{\"path\":" << JsonString(u.path) << ",\"error\":" << JsonString(u.error) << "}";
  }
  out << "]}\n";
}

}  // namespace ncclwatch::decoder

#include "support/traced_job.h"

#include <google/protobuf/util/json_util.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>

#include "model/process_trace.h"
#include "report/names.h"
#include "support/json_schema.h"

namespace jobs {

TempDir::TempDir() {
  char tmpl[] = "/tmp/ncclwatch-test-XXXXXX";
  path_ = mkdtemp(tmpl) ? tmpl : "/tmp/ncclwatch-test-failed";
}

TempDir::~TempDir() {
  // NCCLWATCH_TEST_KEEP=1 keeps it, for a failure to be looked at after
  // (scripts/soak-timing.sh): its path on standard error.
  const char* keep = std::getenv("NCCLWATCH_TEST_KEEP");
  if (keep != nullptr && std::string(keep) == "1") {
    std::fprintf(stderr, "kept %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ShimPath() {
  const char* v = std::getenv("NCCLWATCH_SHIM");
#ifdef NCCLWATCH_SHIM_DEFAULT
  return v ? v : NCCLWATCH_SHIM_DEFAULT;
#else
  return v ? v : "";
#endif
}

std::string NcclwatchPath() { return BinDir() + "/ncclwatch"; }

std::vector<std::string> LauncherEnv() {
  return {"LD_LIBRARY_PATH=" + SimLibDir(),
          "LD_PRELOAD",
          "NCCLWATCH_DIR",
          "RANK",
          "WORLD_SIZE",
          "LOCAL_RANK",
          "LOCAL_WORLD_SIZE",
          "JOBRUN_RENDEZVOUS"};
}

JobSpec TracedJobSpec(int nranks, const std::string& program, const std::vector<std::string>& args,
                      const std::string& dir) {
  JobSpec spec;
  spec.nranks = nranks;
  spec.argv.push_back(BinDir() + "/" + program);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = {"LD_LIBRARY_PATH=" + SimLibDir(), "LD_PRELOAD=" + ShimPath(), "NCCLWATCH_DIR=" + dir,
              "NCCL_DEBUG=WARN"};
  spec.timeout_s = 120;
  return spec;
}

std::string FindingView::String(const std::string& key) const {
  auto it = raw.fields().find(key);
  return it != raw.fields().end() && it->second.has_string_value() ? it->second.string_value() : "";
}

bool FindingView::Bool(const std::string& key) const {
  auto it = raw.fields().find(key);
  return it != raw.fields().end() && it->second.has_bool_value() && it->second.bool_value();
}

const FindingView* DiagnosisView::Root() const {
  for (const FindingView& f : findings)
    if (f.role == "root_cause") return &f;
  return nullptr;
}

const FindingView* DiagnosisView::First(const std::string& kind) const {
  for (const FindingView& f : findings)
    if (f.kind == kind) return &f;
  return nullptr;
}

DiagnosisView Diagnose(const std::vector<std::string>& paths, bool json) {
  return RunNcclwatch("diagnose", paths, json);
}
DiagnosisView Explain(const std::vector<std::string>& paths, bool json) {
  return RunNcclwatch("explain", paths, json);
}

DiagnosisView RunNcclwatch(const std::string& command, const std::vector<std::string>& paths,
                           bool json) {
  JobSpec spec;
  spec.argv = {NcclwatchPath(), command};
  if (json) spec.argv.push_back("--json");
  spec.argv.insert(spec.argv.end(), paths.begin(), paths.end());
  spec.timeout_s = 120;
  JobResult r = RunJob(spec);
  DiagnosisView d;
  if (r.ranks.empty()) return d;
  d.exit_code = r.ranks[0].exit_code;
  d.output = r.ranks[0].output;
  if (!json) return d;
  d.parsed = google::protobuf::util::JsonStringToMessage(d.output, &d.raw).ok();
  if (!d.parsed) return d;
  // Every report a job test reads conforms to the documented schema: one
  // that does not is not parsed, and says why.
  if (const std::vector<std::string> broken = ValidateReport(d.output); !broken.empty()) {
    d.parsed = false;
    d.output += "\n[this report breaks decoder/report/report.schema.json]";
    for (const std::string& b : broken) d.output += "\n  " + b;
    return d;
  }
  d.verdict = d.raw.fields().at("verdict").string_value();
  for (const auto& v : d.raw.fields().at("findings").list_value().values()) {
    FindingView f;
    f.raw = v.struct_value();
    const auto& m = f.raw.fields();
    f.kind = f.String("kind");
    f.role = f.String("role");
    f.comm = f.String("comm");
    f.field = f.String("field");
    f.detail = f.String("detail");
    f.fix = f.String("fix");
    if (m.count("seq") && m.at("seq").has_number_value())
      f.seq = static_cast<int64_t>(m.at("seq").number_value());
    if (m.count("ranks")) {
      for (const auto& x : m.at("ranks").list_value().values())
        f.ranks.push_back(static_cast<int>(x.number_value()));
    }
    d.findings.push_back(f);
  }
  return d;
}

std::string TraceOf(const std::string& dir, int rank) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    auto t = ncclwatch::decoder::LoadProcessTrace(e.path().string());
    if (t.ok() && t->DisplayRank() == rank) return e.path().string();
  }
  return "";
}

std::string CommId(const std::string& dir, int rank, const std::string& call, int index) {
  auto t = ncclwatch::decoder::LoadProcessTrace(TraceOf(dir, rank));
  if (!t.ok()) return "";
  int seen = 0;
  for (const auto& m : t->comms) {
    if (ncclwatch::decoder::CallName(m.init_call) == call && seen++ == index) {
      return ncclwatch::decoder::CommName(m.comm);
    }
  }
  return "";
}

}  // namespace jobs

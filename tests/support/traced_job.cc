#include "support/traced_job.h"

#include <google/protobuf/util/json_util.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "commands/input_files.h"
#include "model/process_trace.h"
#include "ncclwatch/ring_format.h"
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

namespace {

bool IsTracePath(const std::string& path) {
  if (ncclwatch::decoder::IsTraceFile(path)) return true;
  char magic[8] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  const bool whole = std::fread(magic, 1, sizeof(magic), f) == sizeof(magic);
  std::fclose(f);
  return whole && std::memcmp(magic, NCCLWATCH_RING_MAGIC, sizeof(magic)) == 0;
}

// The window the job suite's summaries are made with: NCCLWATCH_TEST_SUMMARY_WINDOW
// (ctest runs diagnose_jobs, timing_jobs and hang_jobs a second time with 16),
// else summarize's default (0).
int TestSummaryWindow() {
  const char* w = std::getenv("NCCLWATCH_TEST_SUMMARY_WINDOW");
  int window = 0;
  if (w != nullptr && !absl::SimpleAtoi(w, &window)) window = 0;
  return window;
}

// `paths` with their traces summarized into `into`: a folder or a trace file
// becomes its summary (and a folder's logs, named one by one); anything
// `summarize` refuses (a folder of summaries or of logs, a file that is not
// a trace) stays as it is. Sets *summarized to how many summaries it wrote.
std::vector<std::string> Summarized(const std::vector<std::string>& paths, const std::string& into,
                                    int* summarized) {
  std::vector<std::string> out;
  *summarized = 0;
  for (const std::string& path : paths) {
    std::error_code ec;
    const bool folder = std::filesystem::is_directory(path, ec);
    if (!folder && !IsTracePath(path)) {
      out.push_back(path);
      continue;
    }
    const std::string summary = into + "/node" + std::to_string(out.size()) + ".ncws";
    std::vector<std::string> args = {path, "-o", summary};
    if (const int window = TestSummaryWindow(); window > 0) {
      args.push_back("--window");
      args.push_back(std::to_string(window));
    }
    const DiagnosisView s = RunNcclwatch("summarize", args, false);
    if (s.exit_code != 0) {
      out.push_back(path);
      continue;
    }
    out.push_back(summary);
    ++*summarized;
    if (!folder) continue;
    std::vector<std::string> logs;
    for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && ncclwatch::decoder::IsLogFile(it->path()))
        logs.push_back(it->path().string());
    }
    std::sort(logs.begin(), logs.end());
    out.insert(out.end(), logs.begin(), logs.end());
  }
  return out;
}

// Issue 25: the same diagnosis from node summaries as from the traces.
void AlsoFromSummaries(const std::vector<std::string>& paths, DiagnosisView* d) {
  const char* off = std::getenv("NCCLWATCH_TEST_ONE_WAY");
  if (off != nullptr && std::string(off) == "1") return;
  if (!d->parsed || (d->exit_code != 0 && d->exit_code != 1)) return;
  TempDir tmp;
  int summarized = 0;
  const std::vector<std::string> inputs = Summarized(paths, tmp.path(), &summarized);
  if (summarized == 0) return;  // no traces to summarize (summaries or logs alone)
  const DiagnosisView summed = RunNcclwatch("diagnose", inputs, true);
  std::vector<std::string> differ;
  if (!summed.parsed) {
    differ.push_back("the summaries' diagnosis was not read (exit code " +
                     std::to_string(summed.exit_code) + "):\n" + summed.output);
  } else {
    differ = Differences(*d, summed);
    // A live job may have moved on between the two: the traces again.
    if (!differ.empty()) {
      const DiagnosisView again = RunNcclwatch("diagnose", paths, true);
      if (again.parsed && !Differences(*d, again).empty()) {
        std::fprintf(stderr,
                     "diagnosed both ways: the live job moved between the two, not compared\n");
        differ.clear();
      }
    }
  }
  if (differ.empty()) return;
  d->parsed = false;
  d->output += "\n[the diagnosis from summaries of these traces differs]";
  for (const std::string& why : differ) d->output += "\n  " + why;
  if (summed.parsed) d->output += "\nfrom the summaries:\n" + summed.output;
}

std::string Words(const std::optional<int64_t>& seq) { return seq ? std::to_string(*seq) : "none"; }

std::string Words(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s + "]";
}

}  // namespace

DiagnosisView Diagnose(const std::vector<std::string>& paths, bool json) {
  DiagnosisView d = RunNcclwatch("diagnose", paths, json);
  if (json) AlsoFromSummaries(paths, &d);
  return d;
}

std::vector<std::string> Differences(const DiagnosisView& a, const DiagnosisView& b) {
  std::vector<std::string> out;
  if (a.verdict != b.verdict) out.push_back("verdict " + a.verdict + " against " + b.verdict);
  if (a.exit_code != b.exit_code) {
    out.push_back("exit code " + std::to_string(a.exit_code) + " against " +
                  std::to_string(b.exit_code));
  }
  if (a.findings.size() != b.findings.size()) {
    out.push_back(std::to_string(a.findings.size()) + " findings against " +
                  std::to_string(b.findings.size()));
  }
  for (size_t i = 0; i < std::min(a.findings.size(), b.findings.size()); ++i) {
    const FindingView& x = a.findings[i];
    const FindingView& y = b.findings[i];
    auto differs = [&](const std::string& what, const std::string& u, const std::string& v) {
      if (u != v)
        out.push_back("finding " + std::to_string(i) + " (" + x.kind + ") " + what + " " + u +
                      " against " + v);
    };
    differs("kind", x.kind, y.kind);
    differs("role", x.role, y.role);
    differs("comm", x.comm, y.comm);
    // A straggler judged on fewer calls than the traces hold (summary_kept:
    // a summary's window, or the GPU times it keeps) is dated from the first
    // it kept, and says so: its number may differ, nothing else.
    if (!y.raw.fields().contains("summary_kept")) differs("seq", Words(x.seq), Words(y.seq));
    differs("ranks", Words(x.ranks), Words(y.ranks));
    differs("field", x.field, y.field);
  }
  return out;
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

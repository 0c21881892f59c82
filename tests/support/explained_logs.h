// A test's logs, written to files and read as `ncclwatch explain` reads
// them: the fixture of the tests of the log reader and of explain's
// findings (nccl_log_test, stacks_log_test). Header-only, for Catch2 tests.

#ifndef NCCLWATCH_TESTS_SUPPORT_EXPLAINED_LOGS_H_
#define NCCLWATCH_TESTS_SUPPORT_EXPLAINED_LOGS_H_

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/log_diagnosis.h"
#include "logs/nccl_log.h"
#include "report/finding_text.h"
#include "support/traced_job.h"

namespace jobs {

struct ExplainedLogs {
  TempDir dir;
  ncclwatch::decoder::NcclLog log;
  ncclwatch::decoder::LogDiagnosis d;
  std::vector<std::string> paths;

  // One more log file holding `text`.
  void File(const std::string& text) {
    const std::string path = dir.path() + "/log" + std::to_string(paths.size()) + ".txt";
    std::ofstream(path) << text;
    REQUIRE(log.AddFile(path).ok());
    paths.push_back(path);
  }
  // The diagnosis of every file, which must be a problem: its root cause,
  // with words and a fix.
  const ncclwatch::decoder::Finding& Root() {
    log.Finish();
    d = ncclwatch::decoder::DiagnoseLogs(log);
    REQUIRE(d.problem);
    REQUIRE_FALSE(d.findings.empty());
    const ncclwatch::decoder::Finding& f = d.findings.front();
    CHECK(f.role == ncclwatch::decoder::FindingRole::kRootCause);
    const auto text = ncclwatch::decoder::RenderFinding(f, ncclwatch::decoder::NoCallSites());
    INFO(text.detail);
    CHECK_FALSE(text.detail.empty());
    CHECK_FALSE(text.fix.empty());
    return f;
  }
};

}  // namespace jobs

#endif  // NCCLWATCH_TESTS_SUPPORT_EXPLAINED_LOGS_H_

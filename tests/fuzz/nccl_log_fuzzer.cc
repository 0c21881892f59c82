// Fuzzes `ncclwatch explain` below the command line: NcclLog reading a log
// file (decoder/logs/nccl_log.h), then DiagnoseLogs and the findings'
// human and JSON forms. The input is the text of up to three log files,
// separated by form feeds ('\f'), so that a process's lines may be spread
// over files as a job's are.
//
// Seeds: seeds/logs/, lines from NCCL, PyTorch, launchers and dmesg as the
// unit tests quote them, and files of the corpus of real text
// (tests/data/logs/) without their header lines; nccl_log.dict holds the
// message catalogue's words.

#include <stddef.h>
#include <stdint.h>

#include <sstream>
#include <string>

#include "analysis/log_diagnosis.h"
#include "fuzz_support.h"
#include "logs/nccl_log.h"
#include "report/reports.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ncclwatch::fuzz::ScratchDir dir;
  ncclwatch::decoder::NcclLog log;
  size_t begin = 0;
  for (int file = 0; begin <= size && file < 3; ++file) {
    size_t end = begin;
    while (end < size && (data[end] != '\f' || file == 2)) ++end;
    const std::string path = dir.Write("log" + std::to_string(file), data + begin, end - begin);
    const absl::Status s = log.AddFile(path);
    if (!s.ok() && s.message().empty()) abort();  // a refusal must say why
    begin = end + 1;
  }
  log.Finish();
  const ncclwatch::decoder::LogDiagnosis d = ncclwatch::decoder::DiagnoseLogs(log);
  // Both reports, as `explain` writes them.
  std::ostringstream human, json;
  ncclwatch::decoder::WriteExplainHumanReport(log, d, {}, human);
  ncclwatch::decoder::WriteExplainJsonReport(log, d, {}, json);
  return 0;
}

// Fuzzes `ncclwatch explain` below the command line: DiagnoseEvidence
// (analysis/diagnose_evidence.h) over log files alone, as explain calls it
// (NcclLog reading each file, then DiagnoseLogs), and the report's human
// and JSON forms. The input is the text of up to three log files,
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

#include "analysis/diagnose_evidence.h"
#include "fuzz_support.h"
#include "report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ncclwatch::fuzz::ScratchDir dir;
  ncclwatch::decoder::JobEvidence evidence;
  size_t begin = 0;
  for (int file = 0; begin <= size && file < 3; ++file) {
    size_t end = begin;
    while (end < size && (data[end] != '\f' || file == 2)) ++end;
    evidence.logs.push_back(dir.Write("log" + std::to_string(file), data + begin, end - begin));
    begin = end + 1;
  }
  const absl::StatusOr<ncclwatch::decoder::EvidenceDiagnosis> d =
      ncclwatch::decoder::DiagnoseEvidence(evidence);
  if (!d.ok()) {
    if (d.status().message().empty()) abort();  // a refusal must say why
    return 0;
  }
  for (const auto& [path, why] : d->logs_not_read)
    if (why.empty()) abort();
  // Both reports, as `explain` writes them.
  std::ostringstream human, json;
  ncclwatch::decoder::WriteReport(*d, false, human);
  ncclwatch::decoder::WriteReport(*d, true, json);
  return 0;
}

#include "summary/job_inputs.h"

#include <memory>

#include "model/trace_loader.h"
#include "summary/summary_reader.h"

namespace ncclwatch::decoder {

absl::Status LoadJobInputs(const std::vector<std::string>& files, unsigned threads,
                           const OnJobInput& fn) {
  std::vector<std::string> traces;  // the run of trace files before the next summary
  auto flush = [&] {
    if (traces.empty()) return;
    LoadProcessTraces(traces, threads, fn);
    traces.clear();
  };
  ProcessTrace trace;
  for (const std::string& file : files) {
    if (!IsSummaryFile(file)) {
      traces.push_back(file);
      continue;
    }
    flush();
    absl::StatusOr<std::unique_ptr<SummaryReader>> reader = SummaryReader::Open(file);
    if (!reader.ok()) return reader.status();
    for (const auto& [name, why] : (*reader)->unreadable())
      fn(name, absl::InvalidArgumentError(why), ProcessTrace());
    for (;;) {
      absl::StatusOr<bool> more = (*reader)->Next(&trace);
      if (!more.ok()) return more.status();
      if (!*more) break;
      fn(trace.path, absl::OkStatus(), trace);
    }
  }
  flush();
  return absl::OkStatus();
}

}  // namespace ncclwatch::decoder

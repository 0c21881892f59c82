#include "model/trace_loader.h"

#include "model/ordered_pipeline.h"

namespace ncclwatch::decoder {
namespace {

// One file's trace and status, reused for a later file once handed out
// (workers keep their copy buffers, TraceFile's per thread, from file to
// file: they live for the whole call).
struct Loaded {
  ProcessTrace trace;
  absl::Status status;
};

}  // namespace

void LoadProcessTraces(const std::vector<std::string>& files, unsigned threads,
                       const std::function<void(const std::string& file, const absl::Status& status,
                                                const ProcessTrace& trace)>& fn) {
  LoadInOrder<Loaded>(
      files.size(), threads,
      [&](size_t i, Loaded* l) { l->status = LoadProcessTraceInto(files[i], &l->trace); },
      [&](size_t i, Loaded& l) {
        fn(files[i], l.status, l.trace);
        return true;
      });
}

}  // namespace ncclwatch::decoder

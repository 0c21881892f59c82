// LoadProcessTraces: many trace files, loaded on several cores, handed to
// the caller one at a time in the order given.
//
// A job's traces are independent until the analyses join them, so they are
// decoded in parallel by worker threads that live for the whole call, each
// taking the next file as soon as a trace is free to load it into; the
// callback sees them in file order on the calling thread (while the workers
// load the next ones), so results never depend on scheduling, and at most
// `threads` + 1 decoded traces are in memory at once (memory stays flat in
// the number of ranks).
//
// Thread-safety: call from one thread; `fn` runs on that thread.

#ifndef NCCLWATCH_DECODER_MODEL_TRACE_LOADER_H_
#define NCCLWATCH_DECODER_MODEL_TRACE_LOADER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

// `threads` 0: one per available core.
// `fn` gets each file with its status and, when that is OK, its trace; the
// trace's memory is reused for a later file once `fn` returns.
void LoadProcessTraces(const std::vector<std::string>& files, unsigned threads,
                       const std::function<void(const std::string& file, const absl::Status& status,
                                                const ProcessTrace& trace)>& fn);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_TRACE_LOADER_H_

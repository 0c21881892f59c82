#include "model/trace_loader.h"

#include <sched.h>

#include <algorithm>
#include <system_error>
#include <thread>
#include <utility>

namespace ncclwatch::decoder {
namespace {

unsigned AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

void LoadProcessTraces(const std::vector<std::string>& files, unsigned threads,
                       const std::function<void(const std::string& file, const absl::Status& status,
                                                const ProcessTrace& trace)>& fn) {
  if (threads == 0) threads = AvailableCores();
  threads = std::max(1u, std::min<unsigned>(threads, 64));
  // One trace and status per worker, reused batch after batch.
  std::vector<ProcessTrace> traces(threads);
  std::vector<absl::Status> status(threads);
  for (size_t begin = 0; begin < files.size(); begin += threads) {
    const size_t n = std::min<size_t>(threads, files.size() - begin);
    std::vector<std::thread> workers;
    workers.reserve(n);
    // The calling thread loads the first file of the batch itself.
    size_t started = 1;
    for (; started < n; ++started) {
      try {
        workers.emplace_back(
            [&, i = started] { status[i] = LoadProcessTraceInto(files[begin + i], &traces[i]); });
      } catch (const std::system_error&) {
        break;  // no thread to be had (a limit): the rest of the batch is loaded here
      }
    }
    status[0] = LoadProcessTraceInto(files[begin], &traces[0]);
    for (size_t i = started; i < n; ++i)
      status[i] = LoadProcessTraceInto(files[begin + i], &traces[i]);
    for (std::thread& w : workers) w.join();
    for (size_t i = 0; i < n; ++i) fn(files[begin + i], status[i], traces[i]);
  }
}

}  // namespace ncclwatch::decoder

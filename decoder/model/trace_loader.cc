#include "model/trace_loader.h"

#include <sched.h>

#include <algorithm>
#include <optional>
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
                       const std::function<void(const std::string& file, absl::StatusOr<ProcessTrace> trace)>& fn) {
  if (threads == 0) threads = AvailableCores();
  threads = std::max(1u, std::min<unsigned>(threads, 64));
  std::vector<std::optional<absl::StatusOr<ProcessTrace>>> batch(threads);
  for (size_t begin = 0; begin < files.size(); begin += threads) {
    const size_t n = std::min<size_t>(threads, files.size() - begin);
    std::vector<std::thread> workers;
    workers.reserve(n);
    // The calling thread loads the first file of the batch itself.
    for (size_t i = 1; i < n; ++i) {
      workers.emplace_back([&, i] { batch[i].emplace(LoadProcessTrace(files[begin + i])); });
    }
    batch[0].emplace(LoadProcessTrace(files[begin]));
    for (std::thread& w : workers) w.join();
    for (size_t i = 0; i < n; ++i) {
      fn(files[begin + i], std::move(*batch[i]));
      batch[i].reset();
    }
  }
}

}  // namespace ncclwatch::decoder

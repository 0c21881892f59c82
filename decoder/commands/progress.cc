#include "commands/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace ncclwatch::decoder {
namespace {

// Nothing is shown for work that ends within this long
// (NCCLWATCH_PROGRESS_DELAY_MS changes it, for tests).
constexpr auto kQuietStart = std::chrono::milliseconds(300);

std::chrono::milliseconds QuietStart() {
  if (const char* v = std::getenv("NCCLWATCH_PROGRESS_DELAY_MS"); v && *v) {
    char* end = nullptr;
    const long ms = std::strtol(v, &end, 10);
    if (*end == '\0' && ms >= 0 && ms <= 60000) return std::chrono::milliseconds(ms);
  }
  return kQuietStart;
}
constexpr auto kRefresh = std::chrono::milliseconds(100);

}  // namespace

Progress::Progress(std::string what, size_t total)
    : what_(std::move(what)),
      total_(total),
      enabled_(isatty(STDERR_FILENO) == 1),
      quiet_(QuietStart()),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { Done(); }

void Progress::Step() {
  ++done_;
  // A node's summary holds many processes: more steps than files counted.
  if (done_ > total_) total_ = done_;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < quiet_ || (shown_ && now - last_ < kRefresh)) return;
  last_ = now;
  shown_ = true;
  std::fprintf(stderr, "\rncclwatch: %s %zu/%zu (%zu%%)\x1b[K", what_.c_str(), done_, total_,
               total_ ? done_ * 100 / total_ : 100);
  std::fflush(stderr);
}

void Progress::Done() {
  if (!shown_) return;
  shown_ = false;
  std::fputs("\r\x1b[K", stderr);
  std::fflush(stderr);
}

}  // namespace ncclwatch::decoder

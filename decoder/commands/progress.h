// Progress of a long read, on a terminal: "ncclwatch: reading traces 1200/4096"
// rewritten in place on stderr, at most ten times a second, and erased when
// done. Nothing is printed when stderr is not a terminal (a pipe, a file, a
// test), so reports and logs never hold progress lines. Nothing is printed
// for work done within 300 ms either (NCCLWATCH_PROGRESS_DELAY_MS, for tests).
//
// Thread-safety: one per command, used from the thread that reads.

#ifndef NCCLWATCH_DECODER_COMMANDS_PROGRESS_H_
#define NCCLWATCH_DECODER_COMMANDS_PROGRESS_H_

#include <chrono>
#include <cstddef>
#include <string>

namespace ncclwatch::decoder {

class Progress {
 public:
  // `what`: "reading traces". `total`: how many items. Shown only when
  // stderr is a terminal and the work lasts longer than a moment.
  Progress(std::string what, size_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // One more item done.
  void Step();
  // Erases the line (also done by the destructor).
  void Done();

 private:
  std::string what_;
  size_t total_;
  size_t done_ = 0;
  bool enabled_;
  bool shown_ = false;
  std::chrono::milliseconds quiet_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_PROGRESS_H_

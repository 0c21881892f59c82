// OutputCopy: `ncclwatch run`'s copy of the job's output. The job's stdout
// and stderr pass through ncclwatch, written on at once to where they went,
// and a bounded copy is kept in a file beside the traces
// (job-output.HOST.PID.log, one per run: a folder may hold several runs'),
// which the diagnosis reads with them (analysis/diagnose_evidence.h).
//
// Only a stream that is not a terminal is copied: a terminal stays the
// job's own (isatty, its size, colours and job control unchanged), and the
// report says its output was not kept. A job whose stdout and stderr are
// one file (2>&1) writes both into one pipe, so their order is kept. When
// the stream's reader goes away (EPIPE), ncclwatch stops reading that pipe
// and the job gets its SIGPIPE on its next write, as it would without it.
//
// What is kept: the first kHeadBytes as they come, and the last kTailBytes,
// written when the job ends, after a line that says how much was left out.
//
// Thread-safety: Start, InChild, InParent and Finish are called in that
// order from one thread; a pump thread runs between InParent and Finish.

#ifndef NCCLWATCH_DECODER_RUN_OUTPUT_COPY_H_
#define NCCLWATCH_DECODER_RUN_OUTPUT_COPY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace ncclwatch::decoder {

class OutputCopy {
 public:
  static constexpr size_t kHeadBytes = size_t{1} << 20;
  static constexpr size_t kTailBytes = size_t{4} << 20;

  OutputCopy() = default;
  OutputCopy(const OutputCopy&) = delete;
  OutputCopy& operator=(const OutputCopy&) = delete;
  ~OutputCopy();

  // Before the fork: the pipes for the streams that are not terminals, and
  // the file `path`. False (and `why`) when nothing is copied: both are
  // terminals, or the file or the pipes cannot be made.
  bool Start(const std::string& path, std::string* why);
  // In the child, before exec: the pipes become its stdout and stderr.
  void InChild() const;
  // In the parent, after the fork: starts passing the output through.
  void InParent();
  // After the job ended: what is still in the pipes (until they close, or
  // a second passes with nothing: a process the job left behind may hold
  // them), then the tail, to the file.
  void Finish();

  uint64_t bytes() const { return total_; }

 private:
  struct Stream {
    int read_fd = -1;
    int write_fd = -1;         // the child's end
    std::vector<int> targets;  // the job's own fds it replaces (1, 2, or both)
  };
  void Pump();
  void Keep(const char* data, size_t n);

  std::vector<Stream> streams_;
  int file_ = -1;
  std::thread pump_;
  std::atomic<bool> ending_{false};
  size_t head_ = 0;
  std::vector<char> tail_;  // a ring of the last kTailBytes past the head
  size_t tail_at_ = 0;      // where the next byte goes
  uint64_t total_ = 0;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_RUN_OUTPUT_COPY_H_

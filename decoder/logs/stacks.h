// Stacks and crash reports in a job's output, read from the lines NcclLog
// kept as "other": where each process was, and what a crash hit.
//
// Stacks, most recent call first, as the tools people paste print them:
//   gdb (thread apply all bt):   Thread 1 (Thread 0x7f.. (LWP 42) "python"):
//                                #1  0x7f.. in ncclCommAbort () from /lib/libnccl.so.2
//   py-spy dump:                 Thread 42 (idle): "MainThread"
//                                    all_reduce (torch/distributed/distributed_c10d.py:2501)
//   Python's faulthandler:       Current thread 0x7f.. (most recent call first):
//                                  File "train.py", line 40 in step
// Crashes, with what they hit:
//   Fatal Python error: Segmentation fault   (faulthandler; its stack follows)
//   *** SIGSEGV (@0x0) received by PID 42 (TID 0x7f..) from PID 0; stack trace: ***
//       @     0x7f.. ncclProxyProgress       (glog, c10's FatalSignalHandler)
//   python3[42]: segfault at 0 ip .. sp .. error 4 in libnccl.so.2[7f..+1a000]   (dmesg)
//   bash: line 1:    42 Segmentation fault      (core dumped) python3 train.py
//   terminate called after throwing an instance of 'std::runtime_error'
// A stack belongs to the process (or launcher rank tag) of its lines, one
// per file where a file holds one process; frames of other processes'
// lines interleaved with it do not end it. Thread-safety: single-threaded.

#ifndef NCCLWATCH_DECODER_LOGS_STACKS_H_
#define NCCLWATCH_DECODER_LOGS_STACKS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "logs/nccl_log.h"

namespace ncclwatch::decoder {

// Bounds on what is kept of hostile input: frames per thread, threads per
// dump (what follows is read and dropped).
constexpr size_t kMaxStackFrames = 256;
constexpr size_t kMaxStackThreads = 4096;

struct StackFrame {
  std::string function;  // "ncclCommAbort", "c10d::ProcessGroupNCCL::abort(...)", "all_reduce"
  std::string where;     // "torch/distributed/distributed_c10d.py:2501", "/lib/libnccl.so.2", ""
};

struct StackThread {
  std::string name;   // "MainThread", "Thread 1", "Current thread 0x7f.."
  bool main = false;  // the main thread (py-spy's MainThread, gdb's Thread 1), or the one
                      // that crashed (faulthandler's "Current thread")
  std::vector<StackFrame> frames;  // most recent first
};

// Who printed lines: the process NcclLog attributed them to, else the
// launcher's rank tag, in the file they are in.
struct StackOwner {
  int source = -1;
  int process = -1;  // into NcclLog::processes(), -1 unknown
  int rank = -1;     // the rank tag or the process's rank, -1 unknown
  bool operator<(const StackOwner& o) const;
  bool operator==(const StackOwner& o) const;
};

struct StackDump {
  StackOwner owner;
  const char* tool = "";  // "gdb", "py-spy", "faulthandler"
  int pid = -1;           // py-spy's "Process 42:", gdb's LWP of Thread 1
  size_t first_line = 0;  // into NcclLog::lines()
  std::vector<StackThread> threads;
};

struct CrashReport {
  StackOwner owner;
  const char* tool = "";  // "faulthandler", "glog", "kernel", "shell", "c++"
  int signo = 0;
  int pid = -1;                    // the pid the report names, -1 none
  std::string module;              // what the kernel says it hit: "libnccl.so.2"
  std::string exception;           // c++: the type thrown
  std::vector<StackFrame> frames;  // its stack, most recent first (signal machinery dropped)
  size_t line = 0;                 // into NcclLog::lines()
};

struct StackEvidence {
  std::vector<StackDump> dumps;
  std::vector<CrashReport> crashes;
  // The lines read as a stack's (thread lines and frames, a crash's frames):
  // into NcclLog::lines(), ascending. What they say is the stacks' to say.
  std::vector<size_t> stack_lines;
};

StackEvidence ReadStacks(const NcclLog& log);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_LOGS_STACKS_H_

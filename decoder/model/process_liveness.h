// LivenessObservation: what the machine running `ncclwatch diagnose` sees,
// now, of the processes whose traces it reads: the wall-clock time, and for
// each traced process on this host whether it still exists and in which
// state (/proc/PID/stat). It is the one place the diagnosis learns about the
// environment; the analyses read it and never look at the system themselves,
// so tests inject an observation (a time, a process stopped, a pid gone).
//
// A pid is a number in a pid namespace: a rank in a container may be pid 1
// there, and pid 1 here is another process. A traced process is looked up in
// this host's /proc by the pid namespace its trace names (the inode of its
// /proc/self/ns/pid): in ncclwatch's own namespace by its pid; in another
// (a container's, seen from the host) by scanning /proc for the process of
// that namespace whose innermost pid (status's NSpid) is the traced one.
// Not found there (its namespace may be a sibling container's, whose
// processes this /proc does not show), and for a trace that names no
// namespace (an older shim), it is not looked at: as one on another host,
// its heartbeat decides. Never is another process taken for it.
//
// A pid may have been reused since the trace was written: a process counts as
// the traced one only if it started no later than the trace was created (its
// start time from /proc against the trace's creation time, with two seconds
// of slack for the kernel's boot-time rounding). A process that is not the
// traced one is reported gone.
//
// Post-mortem (a folder of traces copied elsewhere, or a test) is an
// observation with no time (now_ns 0) and no processes: nothing is live.
//
// Thread-safety: a LivenessObservation is a plain value; ObserveLiveness reads
// /proc and is safe to call from any thread.

#ifndef NCCLWATCH_DECODER_MODEL_PROCESS_LIVENESS_H_
#define NCCLWATCH_DECODER_MODEL_PROCESS_LIVENESS_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace ncclwatch::decoder {

// One traced process as seen on this host.
struct ProcessObservation {
  enum class State {
    kGone,     // no such process (or the pid now belongs to another one)
    kRunning,  // exists: running, sleeping or in uninterruptible sleep (R, S, D, I)
    kStopped,  // exists, stopped by a signal or a tracer (T, t): frozen
    kZombie,   // exited, not yet reaped (Z, X)
  };
  State state = State::kGone;
  char letter = 0;  // the state letter of /proc/PID/stat, 0 when gone
};

// A traced process's identity: its host, pid, and when its trace was created;
// and the pid namespace its pid is a number in (not part of the identity).
struct TracedProcessId {
  std::string host;
  uint32_t pid = 0;
  uint64_t created_ns = 0;     // CLOCK_REALTIME
  uint64_t pid_namespace = 0;  // the inode of its /proc/self/ns/pid, 0 unknown
  bool operator<(const TracedProcessId& o) const {
    return std::tie(host, pid, created_ns) < std::tie(o.host, o.pid, o.created_ns);
  }
};

struct LivenessObservation {
  int64_t now_ns = 0;  // CLOCK_REALTIME when observed; 0: post-mortem, nothing is live
  std::string host;    // this machine's host name ("" unknown)
  std::map<TracedProcessId, ProcessObservation> processes;  // the traced processes on this host

  // What was seen of `id`, or nullptr when it was not looked at (another
  // host, or no observation).
  const ProcessObservation* Find(const TracedProcessId& id) const {
    auto it = processes.find(id);
    return it == processes.end() ? nullptr : &it->second;
  }
};

// Looks at `pid` under `proc` ("/proc"): its state, and whether it is the
// process that created a trace at `created_ns` (realtime).
ProcessObservation ObserveProcess(uint32_t pid, uint64_t created_ns,
                                  const std::string& proc = "/proc");

// The observation now: the time, this host's name, and each of `ids` on
// this host looked at under `proc`, as above.
LivenessObservation ObserveLiveness(const std::vector<TracedProcessId>& ids,
                                    const std::string& proc = "/proc");

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_PROCESS_LIVENESS_H_

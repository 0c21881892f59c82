#include "logs/stacks.h"

#include <csignal>
#include <map>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "re2/re2.h"

namespace ncclwatch::decoder {

bool StackOwner::operator<(const StackOwner& o) const {
  return std::tie(source, process, rank) < std::tie(o.source, o.process, o.rank);
}
bool StackOwner::operator==(const StackOwner& o) const {
  return source == o.source && process == o.process && rank == o.rank;
}

namespace {

int SignalNamed(absl::string_view name) {
  static const struct {
    const char* name;
    int signo;
  } kSignals[] = {
      {"SIGSEGV", SIGSEGV}, {"SIGABRT", SIGABRT}, {"SIGBUS", SIGBUS},   {"SIGFPE", SIGFPE},
      {"SIGILL", SIGILL},   {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL}, {"SIGTRAP", SIGTRAP},
      {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT},
  };
  for (const auto& s : kSignals)
    if (name == s.name) return s.signo;
  return 0;
}

// The signal a fatal error's words name (faulthandler's, the shell's).
int SignalWorded(absl::string_view words) {
  if (words == "Segmentation fault") return SIGSEGV;
  if (words == "Aborted") return SIGABRT;
  if (words == "Bus error") return SIGBUS;
  if (words == "Floating point exception") return SIGFPE;
  if (words == "Illegal instruction") return SIGILL;
  return 0;
}

int Number(const std::string& digits) {
  int n = -1;
  return absl::SimpleAtoi(digits, &n) && n >= 0 ? n : -1;
}

// The frames a crash report shows of the signal's own handling, before the
// frame it hit.
bool SignalMachinery(absl::string_view function) {
  return function.empty() || function == "(unknown)" ||
         absl::StrContains(function, "__restore_rt") ||
         absl::StrContains(function, "signal handler called") ||
         absl::StrContains(function, "SignalHandler") ||
         absl::StrContains(function, "FatalSignal") || absl::StartsWith(function, "raise") ||
         absl::StartsWith(function, "gsignal") || absl::StartsWith(function, "abort") ||
         absl::StartsWith(function, "__GI_") || absl::StrContains(function, "pthread_kill") ||
         absl::StartsWith(function, "killpg");
}

class Reader {
 public:
  explicit Reader(const NcclLog& log) : log_(log) {}

  StackEvidence Run() {
    const auto& lines = log_.lines();
    for (size_t i = 0; i < lines.size(); ++i) Line(i, lines[i]);
    return std::move(out_);
  }

 private:
  struct State {
    int dump = -1;              // the dump its frames go to
    int thread = -1;            // ... and the thread, -1 none open
    int crash = -1;             // a crash whose frames come next (faulthandler) or now (glog)
    bool crash_frames = false;  // frames go to `crash` now
    int since_crash = 0;        // lines read since the crash, before its stack began
  };

  StackOwner OwnerOf(const LogLine& l) const {
    StackOwner o;
    o.source = l.source;
    o.process = l.process;
    o.rank = l.process >= 0 && log_.processes()[l.process].rank >= 0
                 ? log_.processes()[l.process].rank
                 : l.tagged_rank;
    return o;
  }

  int NewDump(const StackOwner& owner, const char* tool, size_t line, int pid) {
    StackDump d;
    d.owner = owner;
    d.tool = tool;
    d.first_line = line;
    d.pid = pid;
    out_.dumps.push_back(std::move(d));
    return static_cast<int>(out_.dumps.size()) - 1;
  }

  void OpenThread(State& s, const StackOwner& owner, const char* tool, size_t line,
                  std::string name, bool main) {
    if (s.dump < 0 || out_.dumps[s.dump].tool != tool) s.dump = NewDump(owner, tool, line, -1);
    StackDump& d = out_.dumps[s.dump];
    if (d.threads.size() >= kMaxStackThreads) {
      s.thread = -1;
      return;
    }
    d.threads.push_back({std::move(name), main, {}});
    s.thread = static_cast<int>(d.threads.size()) - 1;
  }

  void Consumed(size_t index) { out_.stack_lines.push_back(index); }

  void AddFrame(State& s, StackFrame f) {
    std::vector<StackFrame>* frames = nullptr;
    if (s.crash_frames && s.crash >= 0) {
      frames = &out_.crashes[s.crash].frames;
      if (frames->empty() && SignalMachinery(f.function)) return;
    } else if (s.dump >= 0 && s.thread >= 0) {
      frames = &out_.dumps[s.dump].threads[s.thread].frames;
    }
    if (frames != nullptr && frames->size() < kMaxStackFrames) frames->push_back(std::move(f));
  }

  int NewCrash(State& s, const StackOwner& owner, const char* tool, int signo, size_t line) {
    CrashReport c;
    c.owner = owner;
    c.tool = tool;
    c.signo = signo;
    c.line = line;
    out_.crashes.push_back(std::move(c));
    s.crash = static_cast<int>(out_.crashes.size()) - 1;
    s.crash_frames = false;
    s.since_crash = 0;
    s.thread = -1;
    return s.crash;
  }

  void Line(size_t index, const LogLine& l) {
    StackOwner owner = OwnerOf(l);
    // A line with neither a process nor a rank tag goes on with the last
    // owner of its file (a stack printed without the launcher's tag after a
    // tagged line, a continuation).
    if (owner.process < 0 && owner.rank < 0) {
      if (auto last = last_owner_.find(l.source); last != last_owner_.end()) owner = last->second;
    } else {
      last_owner_[l.source] = owner;
    }
    State& s = state_[owner];
    if (l.level != LogLine::kOther) {  // NCCL's own line: no stack goes on through it
      s.thread = -1;
      s.crash_frames = false;
      return;
    }
    const std::string& t = l.text;
    // A line that was only a launcher's tag: as the blank line it was.
    if (absl::StripAsciiWhitespace(t).empty()) return;
    std::string a, b, c;
    // RE2: linear in the line, whatever it holds.
    static const LazyRE2 kFatalPython = {
        R"(Fatal Python error: (Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction))"};
    static const LazyRE2 kGlog = {R"(\*\*\* (SIG[A-Z]+) \(@[^)]*\) received by PID (\d+))"};
    static const LazyRE2 kKernel = {
        R"((\S+)\[(\d+)\]: segfault at \S+ ip \S+ sp \S+ error \S+(?: cpu \d+)? in ([^\[\s]+)\[)"};
    static const LazyRE2 kTrap = {
        R"(traps: (\S+)\[(\d+)\] (general protection fault|trap divide error|trap invalid opcode)\b.*? in ([^\[\s]+)\[)"};
    static const LazyRE2 kShellJob = {
        R"(line \d+:\s+(\d+)\s+(Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction)\b)"};
    static const LazyRE2 kShellBare = {
        R"(^\s*(Segmentation fault|Bus error|Floating point exception|Illegal instruction|Aborted)(?: \(core dumped\))?\s*$)"};
    static const LazyRE2 kTerminate = {
        R"(terminate called after throwing an instance of '([^']+)')"};
    static const LazyRE2 kFaultThread = {
        R"(^\s*(Current thread|Thread) (0x[0-9a-fA-F]+) \(most recent call first\):)"};
    static const LazyRE2 kFaultStack = {R"(^\s*Stack \(most recent call first\):)"};
    static const LazyRE2 kFaultFrame = {R"re(^\s*File "([^"]+)", line (\d+) in (\S+))re"};
    static const LazyRE2 kSpyProcess = {R"(^Process (\d+): )"};
    static const LazyRE2 kSpyThread = {
        R"re(^Thread (0x[0-9a-fA-F]+|\d+) \((?:idle|active|gil)[^)]*\)(?::\s*"([^"]*)")?)re"};
    static const LazyRE2 kSpyFrame = {R"(^\s+(\S.*?) \(([^()\s]+):(\d+)\)\s*$)"};
    static const LazyRE2 kGdbThread = {R"(^Thread (\d+) \(.*\):\s*$)"};
    static const LazyRE2 kGdbLwp = {R"(\(LWP (\d+)\))"};
    static const LazyRE2 kGdbFrame = {R"(^#\d+\s+(?:0x[0-9a-fA-F]+ in )?(.+)$)"};
    static const LazyRE2 kGdbWhere = {R"( (?:from|at) (\S+)\s*$)"};
    static const LazyRE2 kGlogFrame = {R"(^\s*@\s+0x[0-9a-fA-F]+\s+(.+)$)"};

    // Crashes.
    if (absl::StrContains(t, "Fatal Python error") && RE2::PartialMatch(t, *kFatalPython, &a)) {
      NewCrash(s, owner, "faulthandler", SignalWorded(a), index);
      return;
    }
    if (absl::StrContains(t, "received by PID") && RE2::PartialMatch(t, *kGlog, &a, &b)) {
      out_.crashes[NewCrash(s, owner, "glog", SignalNamed(a), index)].pid = Number(b);
      s.crash_frames = true;  // its frames follow, without a thread line
      return;
    }
    if (absl::StrContains(t, "segfault at") && RE2::PartialMatch(t, *kKernel, nullptr, &b, &c)) {
      CrashReport& r = out_.crashes[NewCrash(s, owner, "kernel", SIGSEGV, index)];
      r.pid = Number(b);
      r.module = c;
      return;
    }
    std::string d;
    if (absl::StrContains(t, "traps:") && RE2::PartialMatch(t, *kTrap, nullptr, &b, &c, &d)) {
      const int signo = c == "trap divide error"     ? SIGFPE
                        : c == "trap invalid opcode" ? SIGILL
                                                     : SIGSEGV;
      CrashReport& r = out_.crashes[NewCrash(s, owner, "kernel", signo, index)];
      r.pid = Number(b);
      r.module = d;
      return;
    }
    if (!absl::StrContains(t, "srun:")) {  // srun's report is the launcher's (log_diagnosis)
      if (RE2::PartialMatch(t, *kShellJob, &a, &b)) {
        out_.crashes[NewCrash(s, owner, "shell", SignalWorded(b), index)].pid = Number(a);
        return;
      }
      if (RE2::FullMatch(t, *kShellBare, &a)) {
        NewCrash(s, owner, "shell", SignalWorded(a), index);
        return;
      }
    }
    if (absl::StrContains(t, "terminate called") && RE2::PartialMatch(t, *kTerminate, &a)) {
      out_.crashes[NewCrash(s, owner, "c++", SIGABRT, index)].exception = a;
      return;
    }

    // Thread lines.
    if (RE2::PartialMatch(t, *kFaultThread, &a, &b) || RE2::PartialMatch(t, *kFaultStack)) {
      const bool current = a == "Current thread" || a.empty();
      // A crash's own stack is its current thread's (or, without one, the first printed).
      if (s.crash >= 0 && out_.crashes[s.crash].tool == absl::string_view("faulthandler") &&
          s.since_crash >= 0 && (current || out_.crashes[s.crash].frames.empty())) {
        out_.crashes[s.crash].frames.clear();
        s.crash_frames = true;
        s.thread = -1;
        Consumed(index);
        return;
      }
      s.crash_frames = false;
      if (s.crash >= 0 && out_.crashes[s.crash].tool == absl::string_view("faulthandler") &&
          s.since_crash >= 0) {
        s.thread = -1;  // another thread of the crashed process: not where it was
        return;
      }
      OpenThread(s, owner, "faulthandler", index, a.empty() ? "Stack" : absl::StrCat(a, " ", b),
                 current);
      Consumed(index);
      return;
    }
    if (RE2::PartialMatch(t, *kSpyProcess, &a)) {
      s.dump = NewDump(owner, "py-spy", index, Number(a));
      s.thread = -1;
      s.crash_frames = false;
      Consumed(index);
      return;
    }
    if (RE2::PartialMatch(t, *kSpyThread, &a, &b)) {
      s.crash_frames = false;
      OpenThread(s, owner, "py-spy", index, b.empty() ? absl::StrCat("Thread ", a) : b,
                 b == "MainThread");
      Consumed(index);
      return;
    }
    if (absl::StartsWith(t, "Thread ") && RE2::FullMatch(t, *kGdbThread, &a)) {
      s.crash_frames = false;
      OpenThread(s, owner, "gdb", index, absl::StrCat("Thread ", a), a == "1");
      if (s.dump >= 0 && a == "1" && RE2::PartialMatch(t, *kGdbLwp, &b))
        out_.dumps[s.dump].pid = Number(b);
      Consumed(index);
      return;
    }

    // Frames.
    if (RE2::PartialMatch(t, *kFaultFrame, &a, &b, &c)) {
      Consumed(index);
      if (!s.crash_frames &&
          (s.thread < 0 || out_.dumps[s.dump].tool != absl::string_view("faulthandler")))
        return;  // a frame of a thread this reader does not keep
      AddFrame(s, {c, absl::StrCat(a, ":", b)});
      return;
    }
    if (s.crash_frames && out_.crashes[s.crash].tool == absl::string_view("glog")) {
      if (RE2::PartialMatch(t, *kGlogFrame, &a)) {
        // "ncclProxyProgress(void*)" or "ncclProxyProgress" (glog); "PC: @" is the same frame.
        AddFrame(s, {std::string(absl::StripAsciiWhitespace(a)), ""});
        Consumed(index);
        return;
      }
      if (absl::StrContains(t, "PC: @")) return;
    }
    if (absl::StartsWith(t, "#") && RE2::FullMatch(t, *kGdbFrame, &a)) {
      if (s.thread < 0 || out_.dumps[s.dump].tool != absl::string_view("gdb"))
        OpenThread(s, owner, "gdb", index, "Thread", true);  // a bare backtrace
      StackFrame f;
      f.function = a;
      if (RE2::PartialMatch(a, *kGdbWhere, &b)) f.where = b;
      AddFrame(s, std::move(f));
      Consumed(index);
      return;
    }
    if (s.thread >= 0 && s.dump >= 0 && out_.dumps[s.dump].tool == absl::string_view("py-spy") &&
        RE2::FullMatch(t, *kSpyFrame, &a, &b, &c)) {
      AddFrame(s, {a, absl::StrCat(b, ":", c)});
      Consumed(index);
      return;
    }
    // Anything else ends a thread; a crash's stack may still come (faulthandler
    // prints a line or two of its own before it).
    s.thread = -1;
    if (s.crash_frames) {
      s.crash_frames = false;
      s.since_crash = -1;  // its stack is over
    } else if (s.crash >= 0 && s.since_crash >= 0 && ++s.since_crash > 8) {
      s.since_crash = -1;
    }
  }

  const NcclLog& log_;
  StackEvidence out_;
  std::map<StackOwner, State> state_;
  std::map<int, StackOwner> last_owner_;  // by file: the last line's owner with a process or tag
};

}  // namespace

StackEvidence ReadStacks(const NcclLog& log) { return Reader(log).Run(); }

}  // namespace ncclwatch::decoder

#include "logs/nccl_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "knowledge/message_catalogue.h"
#include "logs/fragments.h"
#include "re2/re2.h"
#include "util/pseudo_file_system.h"

namespace ncclwatch::decoder {
namespace {

// Patterns on log text go through RE2: linear time, and no recursion that a
// long line could drive through the stack (std::regex's did, at ~40 KiB).

// Launcher prefixes that give a rank. Anywhere in the line: whatever
// precedes one (a timestamp, a Kubernetes or Ray prefix, the file name grep
// -r adds) is a prefix too, and several may stack ("[default3]:[rank3]:").
// SGLang's logger puts the tensor-parallel rank after its time stamp
// ("[2025-06-01 10:00:09 TP3] "): the process's rank when nothing else (a
// data- or pipeline-parallel rank: "DP0 TP3", "PP1 TP3") comes before it.
// The source file of NCCL's location before a line's level ("misc/socket.cc"
// of "host:1:2 [0] misc/socket.cc:484 NCCL WARN"), "" when none.
std::string SourceLocation(absl::string_view before) {
  static const LazyRE2 kLocation = {R"(([\w./+-]+\.(?:cc|cu|cpp|c|h)):\d+)"};
  std::string file;
  if (before.find('.') == absl::string_view::npos ||
      !RE2::PartialMatch(re2::StringPiece(before.data(), before.size()), *kLocation, &file))
    return "";
  return file;
}

bool StripTag(std::string* line, int* rank) {
  static const LazyRE2 kTags = {
      R"(\[rank ?(\d+)\]:? ?|\[default(\d+)\]:|\[\d+,(\d+)\]<std(?:out|err)>: ?|)"
      R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? TP(\d+)(?: EP\d+)?\] ?)"};
  static const LazyRE2 kSrun = {R"((\d+): )"};  // srun --label, at the start only
  if (line->find('[') != std::string::npos) {
    re2::StringPiece text(*line), groups[5];
    if (kTags->Match(text, 0, text.size(), RE2::UNANCHORED, groups, 5)) {
      const re2::StringPiece digits = !groups[1].empty()   ? groups[1]
                                      : !groups[2].empty() ? groups[2]
                                      : !groups[3].empty() ? groups[3]
                                                           : groups[4];
      int r = -1;
      if (absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()), &r) && r < kMaxRanks)
        *rank = r;
      const size_t end = static_cast<size_t>(groups[0].data() - line->data()) + groups[0].size();
      line->erase(0, end);
      return true;
    }
  }
  if (line->empty() || !std::isdigit(static_cast<unsigned char>(line->front()))) return false;
  re2::StringPiece rest(*line), digits;
  if (!RE2::Consume(&rest, *kSrun, &digits)) return false;
  int r = -1;
  if (absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()), &r) && r < kMaxRanks)
    *rank = r;
  *line = std::string(rest.data(), rest.size());
  return true;
}

// A date and time anywhere in the line ("[2025-01-31 12:00:00]", NCCL's
// default since 2.23; "2025-01-31T12:00:00.123Z" from Kubernetes or a
// launcher; "2025-01-31 12:00:00,123" from Python's logging), as UTC
// nanoseconds; 0 when none.
int64_t Timestamp(const std::string& line) {
  if (line.find('-') == std::string::npos) return 0;
  static const LazyRE2 kTs = {
      R"((\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?)"};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  std::string frac;
  // Every field has at most 9 digits: they cannot overflow.
  if (!RE2::PartialMatch(line, *kTs, &year, &month, &day, &hour, &minute, &second, &frac)) return 0;
  // Not a time ("[0000-99-00 ...]"), or past what int64 nanoseconds hold
  // (2262): no timestamp, rather than one that overflows.
  if (year < 1970 || year > 2200 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 ||
      minute > 59 || second > 60) {
    return 0;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  int64_t ns = static_cast<int64_t>(timegm(&tm)) * 1000000000;
  if (!frac.empty()) {
    frac.resize(9, '0');
    int64_t f = 0;
    if (absl::SimpleAtoi(frac, &f)) ns += f;
  }
  return ns;
}

// "5d000" (NCCL's busId) as "0000:5d:00.0".
std::string BusIdText(const std::string& hex) {
  uint64_t v = 0;
  if (!absl::SimpleHexAtoi(hex, &v)) return "";
  return absl::StrFormat("%04x:%02x:%02x.%01x", v >> 20, (v >> 12) & 0xff, (v >> 4) & 0xff,
                         v & 0xf);
}

// A number in a log, or nullopt where the digits do not make one of type T
// (too many of them): then it is not a number we can use.
template <typename T>
std::optional<T> Number(absl::string_view digits) {
  T v;
  if (!absl::SimpleAtoi(digits, &v)) return std::nullopt;
  return v;
}

}  // namespace

// The ncclResult_t named in a framework's error text ("unhandled system
// error", "ncclSystemError"), or -1.
int32_t NcclResultFromText(const std::string& t) {
  static const struct {
    const char* text;
    int result;
  } kResults[] = {
      {"unhandled cuda error", 1}, {"ncclUnhandledCudaError", 1}, {"unhandled system error", 2},
      {"ncclSystemError", 2},      {"internal error", 3},         {"ncclInternalError", 3},
      {"invalid argument", 4},     {"ncclInvalidArgument", 4},    {"invalid usage", 5},
      {"ncclInvalidUsage", 5},     {"remote process exited", 6},  {"ncclRemoteError", 6}};
  for (const auto& r : kResults)
    if (absl::StrContains(t, r.text)) return r.result;
  return -1;
}

bool NcclErrorText(const std::string& t) {
  return absl::StrContains(t, "NCCL error") || absl::StrContains(t, "NCCL failure") ||
         absl::StrContains(t, "DistBackendError") ||
         (NcclResultFromText(t) >= 0 &&
          (absl::StrContains(t, "nccl") || absl::StrContains(t, "NCCL")));
}

bool LooksLikeError(const LogLine& l) {
  if (l.message != nullptr && CauseOf(*l.message).init_failure) return true;
  return NcclErrorText(l.text);
}

int32_t ParseNcclVersion(const std::string& text) {
  static const LazyRE2 kVersion = {R"((\d+)\.(\d+)\.(\d+))"};
  std::string a, b, c;
  if (!RE2::PartialMatch(text, *kVersion, &a, &b, &c)) return 0;
  const std::optional<int> major = Number<int>(a), minor = Number<int>(b), patch = Number<int>(c);
  if (!major || !minor || !patch || *major != 2 || *minor > 99 || *patch > 99) return 0;
  return *minor >= 9 ? *major * 10000 + *minor * 100 + *patch
                     : *major * 1000 + *minor * 100 + *patch;
}

absl::Status NcclLog::AddFile(const std::string& path) {
  // Never blocks (a FIFO, a terminal) and never reads without end (/dev/zero,
  // /proc/self/pagemap): only regular files on ordinary file systems, and at
  // most kMaxLogBytes of them in all, counted across every file, refused or not.
  if (++files_opened_ > kMaxLogFiles) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": the logs pass ", kMaxLogFiles, " files, the most ncclwatch reads"));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(err)));
    if (err == ELOOP)
      return absl::InvalidArgumentError(absl::StrCat(path, ": a symbolic link, not followed"));
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot be read: ", std::strerror(err)));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0)
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (S_ISDIR(st.st_mode))
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a folder, not a log file"));
  if (!S_ISREG(st.st_mode))
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  if (const char* pseudo = PseudoFileSystem(fd)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": on ", pseudo, ", a pseudo file system, not a log"));
  }
  const std::string budget = max_bytes_ % (uint64_t{1} << 30) == 0
                                 ? absl::StrCat(max_bytes_ >> 30, " GiB")
                                 : absl::StrCat(max_bytes_, " bytes");
  if (bytes_read_ + static_cast<uint64_t>(st.st_size) > max_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": the logs pass ", budget,
                     ", the most ncclwatch reads; give it fewer or smaller files"));
  }
  const int source = static_cast<int>(sources_.size());
  const size_t lines_before = lines_.size(), processes_before = processes_.size(),
               nccl_lines_before = nccl_lines_;
  sources_.push_back(path);
  auto refuse = [&](absl::Status why) {
    // Nothing of a refused file stays: its lines and processes come last.
    sources_.pop_back();
    lines_.resize(lines_before);
    processes_.resize(processes_before);
    for (auto it = by_host_pid_.begin(); it != by_host_pid_.end();) {
      it = static_cast<size_t>(it->second) >= processes_before ? by_host_pid_.erase(it)
                                                               : std::next(it);
    }
    for (LogProcess& p : processes_) {
      while (!p.lines.empty() && p.lines.back() >= lines_before) p.lines.pop_back();
    }
    nccl_lines_ = nccl_lines_before;
    return why;  // what was read still counts against the budget
  };
  std::string raw;           // the line so far, at most kMaxLine bytes of it
  last_error_open_ = false;  // a file's first line follows nothing
  int number = 0;
  int64_t last_ts = 0;
  size_t binary = 0;
  auto line_done = [&]() {
    ++number;
    AddLine(source, number, std::move(raw), &last_ts);
    raw.clear();
  };
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return refuse(
          absl::DataLossError(absl::StrCat(path, ": read failed: ", std::strerror(errno))));
    if (n == 0) break;
    bytes_read_ += static_cast<uint64_t>(n);
    if (bytes_read_ > max_bytes_) {
      return refuse(absl::ResourceExhaustedError(
          absl::StrCat(path, ": the logs pass ", budget,
                       ", the most ncclwatch reads (the file grew, or holds more than its size "
                       "says)")));
    }
    for (ssize_t i = 0; i < n; ++i) {
      char c = buf[i];
      if (c == '\n') {
        if (lines_.size() >= kMaxLogLines) {
          return refuse(absl::ResourceExhaustedError(absl::StrCat(
              path, ": the logs pass ", kMaxLogLines, " lines, the most ncclwatch keeps")));
        }
        line_done();
        if (number == 64 && binary > 16)
          return refuse(absl::InvalidArgumentError(absl::StrCat(path, ": not a text file")));
        continue;
      }
      if (c == '\r' || raw.size() >= kMaxLine)
        continue;  // CRLF; a longer line keeps its first kMaxLine bytes
      if (c == '\0') ++binary;
      if (static_cast<unsigned char>(c) >= 0x80 ||
          (c != '\t' && static_cast<unsigned char>(c) < 0x20))
        c = '?';
      raw.push_back(c);
    }
  }
  if (!raw.empty()) line_done();
  return absl::OkStatus();
}

int NcclLog::ProcessFor(const std::string& host, int pid, int source) {
  auto [it, fresh] =
      by_host_pid_.emplace(std::make_pair(host, pid), static_cast<int>(processes_.size()));
  if (fresh) {
    LogProcess p;
    p.host = host;
    p.pid = pid;
    p.source = source;
    processes_.push_back(p);
  }
  return it->second;
}

void NcclLog::NoteInfo(LogProcess& p, const std::string& text, uint64_t order) {
  if (absl::StrContains(text, "Init START") || absl::StrContains(text, "Init COMPLETE")) {
    static const LazyRE2 kInit = {
        R"(rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev \d+)? busId ([0-9a-fA-F]+))"};
    std::string rank, nranks, dev, bus;
    if (RE2::PartialMatch(text, *kInit, &rank, &nranks, &dev, &bus)) {
      if (!p.init_started) {  // the first communicator: the world, whose rank users know
        const std::optional<int> r = Number<int>(rank), n = Number<int>(nranks),
                                 d = Number<int>(dev);
        // A count no job has is not believed: every loop over the ranks stays bounded.
        if (n && *n > 0 && *n <= kMaxRanks) p.nranks = *n;
        if (r && *r >= 0 && *r < kMaxRanks) p.rank = *r;
        if (d) p.cuda_dev = *d;
        p.bus_id = BusIdText(bus);
      }
      p.init_started = true;
    }
    if (absl::StrContains(text, "Init COMPLETE") && !p.init_complete) {
      p.init_complete = true;
      p.init_complete_order = order;
    }
    return;
  }
  if (absl::StrContains(text, "NCCL version")) {
    if (int32_t v = ParseNcclVersion(text)) p.nccl_version = v;
    static const LazyRE2 kCuda = {R"(\+cuda(\d+)\.(\d+))"};
    std::string major, minor;
    if (RE2::PartialMatch(text, *kCuda, &major, &minor)) {
      const std::optional<int> a = Number<int>(major), b = Number<int>(minor);
      if (a && b && *a <= 99 && *b <= 99) p.cuda_runtime = *a * 1000 + *b * 10;
    }
    return;
  }
  if (absl::StrContains(text, "Bootstrap") && absl::StrContains(text, "Using")) {
    static const LazyRE2 kBoot = {R"(Using \[?\d*\]?([A-Za-z0-9_.\-]+):([0-9a-fA-F:.%]+)<)"};
    std::string iface, addr;
    if (RE2::PartialMatch(text, *kBoot, &iface, &addr)) {
      p.bootstrap_iface = iface;
      p.bootstrap_addr = ParseSocketAddressText(addr);
    }
    return;
  }
  if (absl::StrContains(text, "set by environment to")) {
    static const LazyRE2 kEnv = {R"((NCCL_\w+) set by environment to (\S*))"};
    std::string name, value;
    if (RE2::PartialMatch(text, *kEnv, &name, &value)) p.env[name] = value;
  }
}

namespace {

// "host:pid:tid [dev] file.cc:12 (func) " just before NCCL's level word: the
// prefix NCCL prints, every part optional except host:pid:tid. A pid or tid
// may be redacted ("<pid>", "XXXX"): then the host is kept, the pid is -1.
bool NcclPrefix(absl::string_view before, std::string* host, int* pid) {
  static const LazyRE2 kPrefix = {
      R"(([^\s\[\]:]+):(\d+|<?[A-Za-z_*-]+>?):(?:\d+|<?[A-Za-z_*-]+>?) (?:\[-?\d*\] )?(?:\S+:\d+ )?(?:\(\S*\) )?$)"};
  std::string pid_text;
  if (!RE2::PartialMatch(re2::StringPiece(before.data(), before.size()), *kPrefix, host, &pid_text))
    return false;
  if (!absl::SimpleAtoi(pid_text, pid) || *pid < 0) *pid = -1;
  return true;
}

}  // namespace

void NcclLog::AddLine(int source, int number, std::string raw, int64_t* last_ts) {
  while (!raw.empty() && (raw.back() == '\r' || raw.back() == ' ')) raw.pop_back();
  if (raw.empty()) return;
  LogLine line;
  line.source = source;
  line.number = number;
  line.order = lines_.size();
  if (int64_t ts = Timestamp(raw)) {
    *last_ts = ts;
    timestamps_ = true;
  }
  line.when_ns = *last_ts;
  for (int i = 0; i < 3 && StripTag(&raw, &line.tagged_rank); ++i) {
  }
  // NCCL's lines: "NCCL WARN"/"NCCL INFO" anywhere, with host:pid:tid before
  // it when the line kept it; before 2.4 (and in NCCL's forks) the level
  // came without the NCCL word, after "host:pid:tid [dev]" or a source file.
  // 2.32's "NCCL ATTN" is a level below WARN, for notices, some of them WARN
  // messages of earlier releases ("cleanup comm ... failed in
  // destroy/abort", "Failed to initialize NET plugin"): one that names a
  // failure is read as a WARN line, the others as notices (LogLine::kNotice).
  static const LazyRE2 kLevel = {R"(\bNCCL (WARN|INFO|CALL|TRACE|ABORT|ATTN)\b ?)"};
  static const LazyRE2 kLegacy = {
      R"((?:[^\s\[\]:]+:\d+:\d+ \[-?\d+\] (?:\S+:\d+ )?(WARN|INFO)|(?:^|\s)[\w./+-]+\.(?:cu|cc|c|cpp|h):\d+ (WARN))\b ?)"};
  re2::StringPiece text(raw), groups[3];
  bool found = false;
  if (raw.find("NCCL ") != std::string::npos &&
      kLevel->Match(text, 0, text.size(), RE2::UNANCHORED, groups, 2)) {
    found = true;
  } else if ((raw.find("WARN") != std::string::npos || raw.find("INFO") != std::string::npos) &&
             kLegacy->Match(text, 0, text.size(), RE2::UNANCHORED, groups, 3)) {
    if (groups[1].empty()) groups[1] = groups[2];
    found = true;
  }
  if (found) {
    const size_t level_at = static_cast<size_t>(groups[1].data() - raw.data());
    const size_t end = static_cast<size_t>(groups[0].data() - raw.data()) + groups[0].size();
    std::string host;
    int pid = -1;
    absl::string_view before = absl::string_view(raw).substr(0, level_at);
    absl::ConsumeSuffix(&before, "NCCL ");
    const bool prefixed = NcclPrefix(before, &host, &pid);
    line.location = SourceLocation(before);
    line.text = raw.substr(end);
    if (groups[1] == "WARN" || groups[1] == "ABORT")
      line.level = LogLine::kWarn;
    else if (groups[1] == "ATTN")
      line.level = ErrorWords(line.text) ? LogLine::kWarn : LogLine::kNotice;
    else
      line.level = LogLine::kInfo;
    // INFO lines are most of a log and none is an error; NCCL's RAS reports
    // the peers it declares dead in them.
    if (line.level != LogLine::kInfo || absl::StartsWith(line.text, "RAS "))
      line.message = FindMessage(line.text);
    ++nccl_lines_;
    if (prefixed) {
      line.process = ProcessFor(host, pid, source);
      LogProcess& p = processes_[line.process];
      if (line.tagged_rank >= 0 && p.rank < 0) p.rank = line.tagged_rank;
      if (line.level == LogLine::kInfo) NoteInfo(p, line.text, line.order);
      p.lines.push_back(lines_.size());
    }
    lines_.push_back(std::move(line));
    return;
  }
  // A bare NCCL message without its WARN marker (fragments.h): a WARN line
  // that lost its prefix, kept as one.
  const bool after_last_error = last_error_open_;
  last_error_open_ = false;
  if (std::optional<NcclFragment> fragment = FindNcclFragment(raw, after_last_error)) {
    line.level = LogLine::kWarn;
    line.location = SourceLocation(absl::string_view(raw).substr(0, fragment->message_at));
    line.text = raw.substr(fragment->message_at);
    line.message = fragment->message;
    ++nccl_lines_;
    lines_.push_back(std::move(line));
    return;
  }
  // PyTorch prints NCCL's last WARN text on the line after this one.
  last_error_open_ = absl::EndsWith(raw, "Last error:");
  line.text = std::move(raw);
  line.message = FindMessageInOtherText(line.text);
  lines_.push_back(std::move(line));
}

void NcclLog::Finish() {
  // A process that failed before NCCL printed its rank (interface selection
  // and the bootstrap come first) is the one rank of the job left over.
  int nranks = -1;
  std::vector<bool> known;
  std::vector<int> unknown;
  for (const LogProcess& p : processes_) nranks = std::max(nranks, p.nranks);
  if (nranks > 0 && nranks <= kMaxRanks) {
    known.assign(static_cast<size_t>(nranks), false);
    for (size_t i = 0; i < processes_.size(); ++i) {
      if (processes_[i].rank >= 0 && processes_[i].rank < nranks) known[processes_[i].rank] = true;
      if (processes_[i].rank < 0) unknown.push_back(static_cast<int>(i));
    }
    const int missing = static_cast<int>(std::count(known.begin(), known.end(), false));
    if (unknown.size() == 1 && missing == 1) {
      processes_[unknown[0]].rank =
          static_cast<int>(std::find(known.begin(), known.end(), false) - known.begin());
    }
  }

  // Each pass below is linear (or n log n) in the lines: a log of millions
  // of lines, or of as many processes, must not take hours.
  // Which process each file holds, when it holds one (-2 when several).
  std::map<int, int> only_process;
  for (const LogLine& l : lines_)
    if (l.process >= 0) {
      auto [it, fresh] = only_process.emplace(l.source, l.process);
      if (!fresh && it->second != l.process) it->second = -2;
    }
  // The process of the next NCCL line in the same file, for every line.
  std::vector<int> next_process(lines_.size(), -1);
  for (size_t i = lines_.size(); i-- > 1;) {
    const bool same_file = lines_[i].source == lines_[i - 1].source;
    next_process[i - 1] = !same_file               ? -1
                          : lines_[i].process >= 0 ? lines_[i].process
                                                   : next_process[i];
  }
  // Which process has each rank, when exactly one has it (-2 when several).
  std::map<int, int> by_rank;
  for (size_t p = 0; p < processes_.size(); ++p) {
    if (processes_[p].rank < 0) continue;
    auto [it, fresh] = by_rank.emplace(processes_[p].rank, static_cast<int>(p));
    if (!fresh) it->second = -2;
  }
  for (size_t i = 0; i < lines_.size(); ++i) {
    LogLine& l = lines_[i];
    if (l.process >= 0) continue;
    // "NCCL version ..." without a prefix (2.19 on): the process whose NCCL
    // lines follow it in the same file.
    const bool version = l.level == LogLine::kOther && absl::StrContains(l.text, "NCCL version ");
    if (version) l.process = next_process[i];
    if (l.process < 0 && l.tagged_rank >= 0) {
      auto it = by_rank.find(l.tagged_rank);
      if (it != by_rank.end() && it->second >= 0) l.process = it->second;
    }
    if (l.process < 0) {
      auto it = only_process.find(l.source);
      if (it != only_process.end() && it->second >= 0) l.process = it->second;
    }
    if (l.process >= 0) {
      LogProcess& p = processes_[l.process];
      p.lines.push_back(i);
      if (version || l.level == LogLine::kInfo) NoteInfo(p, l.text, l.order);
    }
  }
  // A log with no NCCL prefix at all (a pasted fragment, a framework's error
  // output): its WARN lines and errors still belong to some process. One is
  // made for each launcher rank (or file, when untagged), with no host or pid.
  if (by_host_pid_.empty()) {
    std::map<std::pair<int, int>, int> anonymous;  // (file, rank) -> process
    bool after_last_error = false;  // PyTorch puts NCCL's last error on the line after
    for (size_t i = 0; i < lines_.size(); ++i) {
      LogLine& l = lines_[i];
      const bool last_error = absl::StrContains(l.text, "Last error:");
      const bool take = l.level == LogLine::kWarn || l.level == LogLine::kInfo ||
                        LooksLikeError(l) || last_error || after_last_error;
      after_last_error = last_error;
      if (l.process >= 0 || !take) continue;
      auto [it, fresh] = anonymous.emplace(std::make_pair(l.source, l.tagged_rank),
                                           static_cast<int>(processes_.size()));
      if (fresh) {
        LogProcess p;
        p.source = l.source;
        p.rank = l.tagged_rank;
        processes_.push_back(p);
      }
      l.process = it->second;
      processes_[l.process].lines.push_back(i);
      if (l.level == LogLine::kInfo) NoteInfo(processes_[l.process], l.text, l.order);
    }
  }
  for (LogProcess& p : processes_) std::sort(p.lines.begin(), p.lines.end());
}

}  // namespace ncclwatch::decoder

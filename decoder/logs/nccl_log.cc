#include "logs/nccl_log.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ncclwatch::decoder {
namespace {

constexpr size_t kMaxLine = 64 * 1024;

// Launcher prefixes, each giving a rank; several may stack ("[default3]:[rank3]:").
bool StripTag(std::string* line, int* rank) {
  static const std::regex kTags[] = {
      std::regex(R"(^\[rank ?(\d+)\]:? ?)"),                  // PyTorch "[rank3]:", jobrun "[rank 3] "
      std::regex(R"(^\[default(\d+)\]:)"),                    // torchrun --tee
      std::regex(R"(^\[\d+,(\d+)\]<std(?:out|err)>: ?)"),     // mpirun --tag-output
      std::regex(R"(^(\d+): )"),                              // srun --label
  };
  if (line->empty() || !(line->front() == '[' || std::isdigit(static_cast<unsigned char>(line->front())))) return false;
  for (const std::regex& re : kTags) {
    std::smatch m;
    if (std::regex_search(*line, m, re)) {
      int r = -1;
      if (absl::SimpleAtoi(std::string(m[1]), &r)) *rank = r;
      *line = m.suffix();
      return true;
    }
  }
  return false;
}

// "[2025-01-31 12:00:00]" or "[2025-01-31 12:00:00.123456]", as UTC nanoseconds.
int64_t Timestamp(const std::string& line) {
  if (line.find('[') == std::string::npos) return 0;
  static const std::regex kTs(R"(\[(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\])");
  std::smatch m;
  if (!std::regex_search(line, m, kTs)) return 0;
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  int64_t ns = static_cast<int64_t>(timegm(&tm)) * 1000000000;
  if (m[7].matched) {
    std::string frac = m[7];
    frac.resize(9, '0');
    ns += std::stoll(frac);
  }
  return ns;
}

// "5d000" (NCCL's busId) as "0000:5d:00.0".
std::string BusIdText(const std::string& hex) {
  uint64_t v = 0;
  if (!absl::SimpleHexAtoi(hex, &v)) return "";
  return absl::StrFormat("%04x:%02x:%02x.%01x", v >> 20, (v >> 12) & 0xff, (v >> 4) & 0xff, v & 0xf);
}

}  // namespace

int32_t ParseNcclVersion(const std::string& text) {
  static const std::regex kVersion(R"((\d+)\.(\d+)\.(\d+))");
  std::smatch m;
  if (!std::regex_search(text, m, kVersion)) return 0;
  const int major = std::stoi(m[1]), minor = std::stoi(m[2]), patch = std::stoi(m[3]);
  if (major != 2 || minor > 99 || patch > 99) return 0;
  return minor >= 9 ? major * 10000 + minor * 100 + patch : major * 1000 + minor * 100 + patch;
}

absl::Status NcclLog::AddFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": is a folder, not a log file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot be read: ", std::strerror(errno)));
  const int source = static_cast<int>(sources_.size());
  sources_.push_back(path);
  std::string raw;
  int number = 0;
  int64_t last_ts = 0;
  size_t binary = 0;
  while (std::getline(in, raw)) {
    ++number;
    if (raw.size() > kMaxLine) raw.resize(kMaxLine);
    for (char& c : raw) {
      if (c == '\0') ++binary;
      if (static_cast<unsigned char>(c) >= 0x80 || (c != '\t' && static_cast<unsigned char>(c) < 0x20)) c = '?';
    }
    if (number == 64 && binary > 16) {
      sources_.pop_back();
      lines_.erase(std::remove_if(lines_.begin(), lines_.end(), [&](const LogLine& l) { return l.source == source; }),
                   lines_.end());
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a text file"));
    }
    AddLine(source, number, std::move(raw), &last_ts);
  }
  return absl::OkStatus();
}

int NcclLog::ProcessFor(const std::string& host, int pid, int source) {
  auto [it, fresh] = by_host_pid_.emplace(std::make_pair(host, pid), static_cast<int>(processes_.size()));
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
    static const std::regex kInit(R"(rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev \d+)? busId ([0-9a-fA-F]+))");
    std::smatch m;
    if (std::regex_search(text, m, kInit)) {
      if (!p.init_started) {  // the first communicator: the world, whose rank users know
        p.rank = std::stoi(m[1]);
        p.nranks = std::stoi(m[2]);
        p.cuda_dev = std::stoi(m[3]);
        p.bus_id = BusIdText(m[4]);
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
    static const std::regex kCuda(R"(\+cuda(\d+)\.(\d+))");
    std::smatch m;
    if (std::regex_search(text, m, kCuda)) p.cuda_runtime = std::stoi(m[1]) * 1000 + std::stoi(m[2]) * 10;
    return;
  }
  if (absl::StrContains(text, "Bootstrap") && absl::StrContains(text, "Using")) {
    static const std::regex kBoot(R"(Using \[?\d*\]?([A-Za-z0-9_.\-]+):([0-9a-fA-F:.%]+)<)");
    std::smatch m;
    if (std::regex_search(text, m, kBoot)) {
      p.bootstrap_iface = m[1];
      p.bootstrap_addr = ParseSocketAddressText(std::string(m[2]));
    }
    return;
  }
  if (absl::StrContains(text, "set by environment to")) {
    static const std::regex kEnv(R"((NCCL_\w+) set by environment to (\S*))");
    std::smatch m;
    if (std::regex_search(text, m, kEnv)) p.env[m[1]] = m[2];
  }
}

void NcclLog::AddLine(int source, int number, std::string raw, int64_t* last_ts) {
  while (!raw.empty() && (raw.back() == '\r' || raw.back() == ' ')) raw.pop_back();
  if (raw.empty()) return;
  LogLine line;
  line.source = source;
  line.number = number;
  line.order = lines_.size();
  for (int i = 0; i < 3 && StripTag(&raw, &line.tagged_rank); ++i) {
  }
  if (int64_t ts = Timestamp(raw)) {
    *last_ts = ts;
    timestamps_ = true;
  }
  line.when_ns = *last_ts;
  const size_t at = raw.find(" NCCL ");
  if (at != std::string::npos) {
    static const std::regex kNccl(
        R"(([^\s\[\]]+):(\d+):(\d+) (?:\[(\d+)\] )?(?:[^\s]+:\d+ )?NCCL (WARN|INFO|CALL|TRACE)(?: (.*))?$)");
    std::smatch m;
    if (std::regex_search(raw, m, kNccl)) {
      int pid = -1;
      (void)absl::SimpleAtoi(std::string(m[2]), &pid);
      line.process = ProcessFor(m[1], pid, source);
      line.level = m[5] == "WARN" ? LogLine::kWarn : LogLine::kInfo;
      line.text = m[6].matched ? std::string(m[6]) : "";
      ++nccl_lines_;
      LogProcess& p = processes_[line.process];
      if (line.tagged_rank >= 0 && p.rank < 0) p.rank = line.tagged_rank;
      if (line.level == LogLine::kInfo) NoteInfo(p, line.text, line.order);
      p.lines.push_back(lines_.size());
      lines_.push_back(std::move(line));
      return;
    }
  }
  line.text = std::move(raw);
  lines_.push_back(std::move(line));
}

void NcclLog::Finish() {
  // A process that failed before NCCL printed its rank (interface selection
  // and the bootstrap come first) is the one rank of the job left over.
  int nranks = -1;
  std::vector<bool> known;
  std::vector<int> unknown;
  for (const LogProcess& p : processes_) nranks = std::max(nranks, p.nranks);
  if (nranks > 0 && nranks <= (1 << 20)) {
    known.assign(static_cast<size_t>(nranks), false);
    for (size_t i = 0; i < processes_.size(); ++i) {
      if (processes_[i].rank >= 0 && processes_[i].rank < nranks) known[processes_[i].rank] = true;
      if (processes_[i].rank < 0) unknown.push_back(static_cast<int>(i));
    }
    const int missing = static_cast<int>(std::count(known.begin(), known.end(), false));
    if (unknown.size() == 1 && missing == 1) {
      processes_[unknown[0]].rank = static_cast<int>(std::find(known.begin(), known.end(), false) - known.begin());
    }
  }

  // Which processes each file holds.
  std::map<int, std::vector<int>> in_source;
  for (const LogLine& l : lines_)
    if (l.process >= 0) {
      auto& v = in_source[l.source];
      if (std::find(v.begin(), v.end(), l.process) == v.end()) v.push_back(l.process);
    }
  for (size_t i = 0; i < lines_.size(); ++i) {
    LogLine& l = lines_[i];
    if (l.process >= 0) continue;
    // "NCCL version ..." without a prefix (2.19 on): the process whose NCCL
    // lines follow it in the same file.
    const bool version = absl::StartsWith(l.text, "NCCL version ");
    if (version) {
      for (size_t j = i + 1; j < lines_.size() && lines_[j].source == l.source; ++j) {
        if (lines_[j].process >= 0) {
          l.process = lines_[j].process;
          break;
        }
      }
    }
    if (l.process < 0 && l.tagged_rank >= 0) {
      int found = -1, count = 0;
      for (size_t p = 0; p < processes_.size(); ++p)
        if (processes_[p].rank == l.tagged_rank) {
          found = static_cast<int>(p);
          ++count;
        }
      if (count == 1) l.process = found;
    }
    if (l.process < 0) {
      auto it = in_source.find(l.source);
      if (it != in_source.end() && it->second.size() == 1) l.process = it->second.front();
    }
    if (l.process >= 0) {
      LogProcess& p = processes_[l.process];
      p.lines.push_back(i);
      if (version) NoteInfo(p, l.text, l.order);
    }
  }
  for (LogProcess& p : processes_) std::sort(p.lines.begin(), p.lines.end());
}

}  // namespace ncclwatch::decoder

#include "nccl/debug.h"

#include <cuda_runtime_api.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

namespace ncclsim::nccl {
namespace {

struct DebugState {
  std::mutex mu;
  int level = kLogNone;
  uint64_t mask = kInit | kBootstrap | kEnv;  // NCCL's default subsystems
  uint32_t timestamp_levels = 1u << kLogWarn;
  FILE* file = stdout;
  char host[256] = {0};
  char last_error[1024] = {0};
};

uint64_t ParseSubsys(const char* s) {
  struct Name {
    const char* name;
    uint64_t bit;
  };
  static const Name kNames[] = {{"INIT", kInit},
                                {"COLL", kColl},
                                {"P2P", kP2p},
                                {"SHM", kShm},
                                {"NET", kNet},
                                {"GRAPH", kGraph},
                                {"TUNING", kTuning},
                                {"ENV", kEnv},
                                {"ALLOC", kAlloc},
                                {"CALL", kCall},
                                {"PROXY", kProxy},
                                {"NVLS", kNvls},
                                {"BOOTSTRAP", kBootstrap},
                                {"REG", kReg},
                                {"PROFILE", kProfile},
                                {"RAS", kRas},
                                {"ALL", kAll}};
  const bool invert = s[0] == '^';
  if (invert) ++s;
  uint64_t mask = invert ? static_cast<uint64_t>(kAll) : 0;
  std::string list(s);
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos);
    for (const Name& n : kNames) {
      if (strcasecmp(item.c_str(), n.name) == 0) mask = invert ? (mask & ~n.bit) : (mask | n.bit);
    }
    pos = comma + 1;
  }
  return mask;
}

uint32_t ParseTimestampLevels(const char* s) {
  const bool invert = s[0] == '^';
  if (invert) ++s;
  uint32_t levels = 0;
  std::string list(s);
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos);
    if (strcasecmp(item.c_str(), "VERSION") == 0) levels |= 1u << kLogVersion;
    if (strcasecmp(item.c_str(), "WARN") == 0) levels |= 1u << kLogWarn;
    if (strcasecmp(item.c_str(), "INFO") == 0) levels |= 1u << kLogInfo;
    if (strcasecmp(item.c_str(), "ABORT") == 0) levels |= 1u << kLogAbort;
    if (strcasecmp(item.c_str(), "TRACE") == 0) levels |= 1u << kLogTrace;
    if (strcasecmp(item.c_str(), "ALL") == 0) levels = ~0u;
    pos = comma + 1;
  }
  return invert ? ~levels : levels;
}

FILE* OpenDebugFile(const char* pattern, const char* host) {
  std::string name;
  for (const char* p = pattern; *p; ++p) {
    if (p[0] == '%' && p[1] == 'h') {
      name += host;
      ++p;
    } else if (p[0] == '%' && p[1] == 'p') {
      name += std::to_string(getpid());
      ++p;
    } else {
      name += *p;
    }
  }
  FILE* f = std::fopen(name.c_str(), "w");
  if (f != nullptr) setvbuf(f, nullptr, _IONBF, 0);
  return f != nullptr ? f : stdout;
}

DebugState& State() {
  static DebugState* st = [] {
    auto* s = new DebugState();
    gethostname(s->host, sizeof(s->host) - 1);
    if (char* dot = std::strchr(s->host, '.')) *dot = '\0';
    if (const char* lvl = getenv("NCCL_DEBUG")) {
      if (strcasecmp(lvl, "VERSION") == 0)
        s->level = kLogVersion;
      else if (strcasecmp(lvl, "WARN") == 0)
        s->level = kLogWarn;
      else if (strcasecmp(lvl, "INFO") == 0)
        s->level = kLogInfo;
      else if (strcasecmp(lvl, "ABORT") == 0)
        s->level = kLogAbort;
      else if (strcasecmp(lvl, "TRACE") == 0)
        s->level = kLogTrace;
    }
    if (const char* sub = getenv("NCCL_DEBUG_SUBSYS")) s->mask = ParseSubsys(sub);
    if (const char* ts = getenv("NCCL_DEBUG_TIMESTAMP_LEVELS"))
      s->timestamp_levels = ParseTimestampLevels(ts);
    if (const char* f = getenv("NCCL_DEBUG_FILE")) {
      if (s->level > kLogVersion) s->file = OpenDebugFile(f, s->host);
    }
    return s;
  }();
  return *st;
}

}  // namespace

const char* HostName() { return State().host; }

int DebugLevel() { return State().level; }

const char* LastError() { return State().last_error; }

void Log(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...) {
  DebugState& st = State();
  if (level == kLogWarn) {
    std::lock_guard<std::mutex> lock(st.mu);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st.last_error, sizeof(st.last_error), fmt, ap);
    va_end(ap);
  }
  if (st.level < level || (subsys & st.mask) == 0) return;

  char buf[2048];
  size_t len = 0;
  auto clamp = [&] { len = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1; };
  if (level == kLogWarn) buf[len++] = '\n';
  if (st.timestamp_levels & (1u << level)) {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tm now;
    localtime_r(&ts.tv_sec, &now);
    len += strftime(buf + len, sizeof(buf) - len, "[%F %T] ", &now);
    clamp();
  }
  if (level != kLogVersion) {
    len += snprintf(buf + len, sizeof(buf) - len, "%s:%d:%ld ", st.host, getpid(),
                    syscall(SYS_gettid));
    clamp();
  }
  int dev = 0;
  (void)cudaGetDevice(&dev);
  if (level == kLogWarn) {
    len += snprintf(buf + len, sizeof(buf) - len, "[%d] %s:%d NCCL WARN ", dev, file, line);
  } else if (level == kLogInfo) {
    len += snprintf(buf + len, sizeof(buf) - len, "[%d] NCCL INFO ", dev);
  }
  clamp();
  va_list ap;
  va_start(ap, fmt);
  len += vsnprintf(buf + len, sizeof(buf) - len, fmt, ap);
  va_end(ap);
  clamp();
  buf[len++] = '\n';
  std::lock_guard<std::mutex> lock(st.mu);
  fwrite(buf, 1, len, st.file);
  fflush(st.file);
}

}  // namespace ncclsim::nccl

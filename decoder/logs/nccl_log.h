// NcclLog: plain NCCL_DEBUG logs and a job's error output, read as hostile
// input, into lines attributed to processes.
//
// What it understands, across NCCL 2.0 to 2.32:
//   host:pid:tid [dev] NCCL INFO message
//   host:pid:tid [dev] file.cc:123 NCCL WARN message       (a blank line before it)
//   host:pid:tid [dev] file.cc:123 (function) NCCL WARN ... (2.32)
//   [2025-01-31 12:00:00] host:pid:tid ...                 (NCCL_DEBUG_TIMESTAMP_*, WARN by
//                                                           default since 2.23)
//   host:pid:tid [dev] misc/ibvwrap.cu:61 WARN message     (before 2.4: no NCCL word)
//   NCCL version 2.28.9+cuda13.0                           (no prefix since 2.19; INFO before)
// and what people paste of it: "NCCL WARN" found anywhere in a line,
// host:pid:tid optional (a pid redacted to "<pid>" keeps the host, pid -1),
// "file.cu:61 WARN ..." alone, a line cut anywhere. Whatever precedes a line
// is a prefix: launchers' rank tags ("[rank3]:" PyTorch, "[default3]:"
// torchrun --tee, "3: " srun --label, "[1,3]<stderr>:" mpirun --tag-output,
// "[rank 3] " jobrun) are found after timestamps in any ISO form and after
// Kubernetes, Ray or grep -r prefixes. Lines that are not NCCL's (a Python
// traceback, PyTorch's watchdog, the launcher's exit report, dmesg) are kept
// as "other" lines, attributed to a process by their prefix or, in a file
// that holds one process's lines, to that process. A log with no NCCL
// prefix at all (a fragment) gets one process per rank tag (or file), with
// no host or pid, for its WARN lines and errors. Each WARN and other line is
// matched once against the message catalogue (message_catalogue.h).
//
// Several ranks may be interleaved in one file or spread over many.
// Thread-safety: single-threaded.

#ifndef NCCLWATCH_DECODER_LOGS_NCCL_LOG_H_
#define NCCLWATCH_DECODER_LOGS_NCCL_LOG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "knowledge/message_catalogue.h"
#include "trace/socket_address.h"

namespace ncclwatch::decoder {

// What explain reads at most: the logs of all files together (in bytes read,
// those of files refused on the way included, so the budget is one for the
// whole command; in files; and in non-empty lines, whose memory short lines
// would multiply), the bytes kept
// of one line (a longer one is cut there; what follows is ignored up to its
// end), and the ranks a job may have: a rank or rank count beyond it in a
// log is not believed, so that no loop or table over ranks grows with a
// number a log made up.
constexpr uint64_t kMaxLogBytes = uint64_t{1} << 30;
constexpr size_t kMaxLogFiles = size_t{1} << 18;
constexpr size_t kMaxLogLines = size_t{1} << 24;  // lines kept (~100 bytes each in memory)
constexpr size_t kMaxLine = 64 * 1024;
constexpr int kMaxRanks = 1 << 20;

struct LogLine {
  // kNotice: NCCL 2.32's "NCCL ATTN" line that names no failure (one that
  // does, "failed", "error", ..., is read as a WARN line: 2.32 moved some of
  // its WARN messages there).
  enum Level { kWarn, kInfo, kNotice, kOther };
  Level level = kOther;
  int source = 0;        // index into NcclLog::sources()
  int number = 0;        // 1-based line number in its file
  int64_t when_ns = 0;   // from a timestamp on it (or an earlier line of its file); 0 when none
  uint64_t order = 0;    // position among all lines read
  int process = -1;      // index into NcclLog::processes(), -1 when unknown
  int tagged_rank = -1;  // from a launcher prefix
  std::string text;      // the message (after "NCCL WARN "), or the whole line without its prefix
  std::string location;  // NCCL's source file the line names before its level
                         // ("transport/net_ib.cc"), "" when none
  // The catalogue's message the text holds (knowledge/message_catalogue.h), found
  // once as the line is read; never looked for in INFO lines (NCCL's INFO
  // lines are most of a log, and none of them is an error).
  const CatalogueMessage* message = nullptr;
};

struct LogProcess {
  std::string host;
  int pid = -1;
  int source = -1;  // the first file it appears in
  int rank = -1;    // its rank in the first communicator it made (Init lines), else a launcher tag
  int nranks = -1;
  int32_t nccl_version = 0;  // 22809
  int32_t cuda_runtime = 0;  // from "+cuda13.0": 13000
  std::string bus_id;        // "0000:18:00.0", from its Init line
  int cuda_dev = -1;
  bool init_started = false;
  bool init_complete = false;
  uint64_t init_complete_order = 0;
  std::string bootstrap_iface;  // "Bootstrap : Using eth0:10.0.0.1<0>"
  std::optional<SocketAddress> bootstrap_addr;
  std::map<std::string, std::string> env;  // "NCCL_X set by environment to Y"
  std::vector<size_t> lines;               // indices into NcclLog::lines()
};

class NcclLog {
 public:
  // `max_bytes`: the read budget (tests make it small).
  explicit NcclLog(uint64_t max_bytes = kMaxLogBytes) : max_bytes_(max_bytes) {}

  // Reads one file; a file that cannot be read gets a one-line reason, and
  // so do one that is not a regular file (a FIFO, a device: never opened
  // for blocking reads), a symbolic link, one on a pseudo file system (/proc,
  // /sys: refused unread, their sizes are made up), and one that would take
  // the logs past kMaxLogBytes, kMaxLogFiles or kMaxLogLines.
  absl::Status AddFile(const std::string& path);
  // After the last file: attributes lines without host:pid where it can.
  void Finish();

  const std::vector<std::string>& sources() const { return sources_; }
  const std::vector<LogLine>& lines() const { return lines_; }
  const std::vector<LogProcess>& processes() const { return processes_; }
  // NCCL lines (WARN/INFO) seen in all files.
  size_t nccl_lines() const { return nccl_lines_; }
  // Whether any line carried a timestamp (then when_ns orders lines).
  bool timestamps() const { return timestamps_; }

 private:
  void AddLine(int source, int number, std::string raw, int64_t* last_ts);
  int ProcessFor(const std::string& host, int pid, int source);
  void NoteInfo(LogProcess& p, const std::string& text, uint64_t order);

  std::vector<std::string> sources_;
  std::vector<LogLine> lines_;
  std::vector<LogProcess> processes_;
  std::map<std::pair<std::string, int>, int> by_host_pid_;
  size_t nccl_lines_ = 0;
  bool timestamps_ = false;
  bool last_error_open_ = false;  // the last line read ended with PyTorch's "Last error:"
  uint64_t max_bytes_;
  uint64_t bytes_read_ = 0;  // of all files, refused ones too: at most max_bytes_
  size_t files_opened_ = 0;  // at most kMaxLogFiles
};

// The ncclResult_t a framework's error text names ("unhandled system error",
// "ncclSystemError"), or -1.
int32_t NcclResultFromText(const std::string& text);
// Whether a line that is not NCCL's reports an NCCL error ("NCCL error in:
// ...", DistBackendError, XLA's "NCCL operation ... failed: ...").
bool NcclErrorText(const std::string& text);
// The same, or a message of the catalogue that init forensics explains.
bool LooksLikeError(const LogLine& line);

// 21803 from "2.18.3"; 0 when not a version.
int32_t ParseNcclVersion(const std::string& text);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_LOGS_NCCL_LOG_H_

#include "commands/summarize.h"

#include <cerrno>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "commands/input_files.h"
#include "commands/output_file.h"
#include "report/terminal_text.h"
#include "summary/summary_writer.h"

namespace ncclwatch::decoder {

const char kSummarizeUsage[] =
    "usage: ncclwatch summarize DIR... -o FILE [--window N] [--host NAME]\n"
    "  Reads this node's traces (*.trace under the folders and files given) and writes one\n"
    "  summary file: every record but the per-call ones, and of each communicator rank's\n"
    "  collectives, and of its sends and receives to each peer, the first and last N (the\n"
    "  middle as digests). Run it on\n"
    "  every node (srun --ntasks-per-node=1, pdsh, mpirun, kubectl exec), then\n"
    "  `ncclwatch diagnose` (or status, timeline) over the summaries.\n"
    "  -o FILE      the summary to write (made whole or not at all)\n"
    "  --window N   collectives kept at each end of a communicator rank's (default 4096);\n"
    "               sends and receives to each peer, and group calls, at most 256 of them\n"
    "  --host NAME  the node's name in the verdicts (default: this machine's host name)\n"
    "  Exit codes: 0 written, 2 bad usage or input.\n";

namespace {

// "PATH: why" of what a node could not read; a folder not searched or a
// link not followed says its path first already.
std::string FirstUnreadable(const SummaryUnreadable& u) {
  if (u.why.rfind(u.path + ":", 0) == 0) return u.why;
  return u.path + ": " + u.why;
}

int Fail(std::ostream& err, const std::string& why) {
  err << "ncclwatch: " << OneLine(why) << "\n";
  return 2;
}

}  // namespace

int RunSummarize(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> paths;
  std::string output;
  SummaryOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) return false;
      *v = args[++i];
      return true;
    };
    std::string v;
    if (a == "-o" || a == "--output") {
      if (!value(&output)) return Fail(err, a + " needs a file name");
    } else if (a.rfind("--output=", 0) == 0) {
      output = a.substr(9);
    } else if (a == "--window") {
      if (!value(&v)) return Fail(err, "--window needs a number");
      char* end = nullptr;
      errno = 0;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0 || n < 1 || n > (1u << 30))
        return Fail(err, "--window needs a number from 1 to 1073741824, not " + v);
      options.window = static_cast<uint32_t>(n);
    } else if (a == "--host") {
      if (!value(&options.host) || options.host.empty()) return Fail(err, "--host needs a name");
    } else if (a.size() > 1 && a[0] == '-') {
      return Fail(err, "unknown option " + a);
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) return Fail(err, "summarize needs at least one folder or trace file");
  if (output.empty()) return Fail(err, "summarize needs -o FILE");
  std::vector<SkippedInput> skipped;
  absl::StatusOr<std::vector<std::string>> files = InputFiles(paths, IsTraceFile, &skipped);
  if (!files.ok()) return Fail(err, std::string(files.status().message()));
  if (files->empty())
    return Fail(err, absl::StrCat("no trace files (*.trace) under ", paths.front(),
                                  paths.size() > 1 ? " and the rest" : ""));
  OutputFile file;
  if (absl::Status s = file.Open(output, *files); !s.ok())
    return Fail(err, std::string(s.message()));
  for (const SkippedInput& s : skipped)
    if (s.may_hold_input) options.not_read.emplace_back(s.path, s.why);
  SummaryStats stats;
  absl::StatusOr<std::string> summary = BuildSummary(*files, options, &stats);
  if (!summary.ok()) return Fail(err, std::string(summary.status().message()));
  file.stream().write(summary->data(), static_cast<std::streamsize>(summary->size()));
  if (absl::Status s = file.Commit(); !s.ok()) return Fail(err, std::string(s.message()));
  out << "wrote " << TerminalSafe(output) << ": " << stats.traces << " trace(s), "
      << summary->size() << " bytes; " << stats.entries_kept << " of " << stats.records
      << " records kept (" << stats.records_as_differences << " as differences), "
      << stats.collectives_left_out << " collectives and " << stats.p2p_left_out
      << " sends and receives left out as digests (window " << options.window << "), "
      << stats.groups_left_out << " group calls and " << stats.progress_left_out
      << " progress records left out\n";
  if (!stats.unreadable.empty()) {
    err << "ncclwatch: " << stats.unreadable.size()
        << " trace(s) or folder(s) not read (listed in the summary); first: "
        << OneLine(FirstUnreadable(stats.unreadable.front())) << "\n";
  }
  return 0;
}

}  // namespace ncclwatch::decoder

// The files a command reads: the paths given, each a file or a folder
// searched recursively for the files `wanted` accepts, sorted, each once.
//
// A path given is taken as named: a symbolic link there is followed (and
// the file is returned by the path it leads to). Inside a folder, the walk
// follows no link to a folder (they can loop, or lead anywhere), and a link
// to a file only when it belongs to the caller, or to the owner of the file
// it leads to: traces collected as links read as before, while a link that
// another user planted in a folder they may write to, leading to a file of
// root's they could not read themselves, is not followed for root (and its
// target never reaches a report). Each link not followed, each folder that
// cannot be read, and each folder on a pseudo file system (/proc, /sys:
// never descended into) is returned in `skipped`, with why.
//
// The walk is bounded whatever the tree: at most kMaxWalkEntries entries in
// all (beyond that, an error: the command exits 2 with it), and folders
// deeper than kMaxWalkDepth are not searched (and said so). A path given that lies on a pseudo file
// system is refused without being read.
//
// Thread-safety: none needed; plain functions over the file system.

#ifndef NCCLWATCH_DECODER_COMMANDS_INPUT_FILES_H_
#define NCCLWATCH_DECODER_COMMANDS_INPUT_FILES_H_

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/job_analysis.h"

namespace ncclwatch::decoder {

// Entries (files, folders, links) looked at in all the folders of one walk,
// and how deep it goes below a path given.
constexpr size_t kMaxWalkEntries = size_t{4} << 20;
constexpr int kMaxWalkDepth = 64;
struct WalkBounds {
  size_t entries = kMaxWalkEntries;
  int depth = kMaxWalkDepth;
};

// What a walk met and did not read.
struct SkippedInput {
  std::string path;
  std::string why;  // one line, the path first
  // Whether it may hold a file the command reads (a folder not read, a link
  // to a file not followed), so that a verdict must not be called healthy
  // without it; false for what cannot (a link leading nowhere, /proc).
  bool may_hold_input = false;
};

// NotFound, with "PATH: no such file or folder", for a path that is not there;
// InvalidArgument, with a one-line reason, for one that is neither a regular
// file nor a folder (a FIFO, a device, a socket), that lies on a pseudo file
// system, or under which the walk passes its bounds. Within folders, only
// regular files are taken. What a folder held and the walk did not read goes
// to `skipped` (when given).
absl::StatusOr<std::vector<std::string>> InputFiles(
    const std::vector<std::string>& paths,
    const std::function<bool(const std::filesystem::path&)>& wanted,
    std::vector<SkippedInput>* skipped = nullptr, const WalkBounds& bounds = {});

// Whether a file is named as a trace (*.trace).
bool IsTraceFile(const std::filesystem::path& p);

// Whether a file is a trace by its name, or a node's summary by its magic
// (`ncclwatch summarize`, summary/summary_reader.h).
bool IsTraceOrSummary(const std::filesystem::path& p);

// Whether a file holds traces: named *.trace, or opening with a trace's or
// a summary's magic; one that cannot be opened, `unopened`. explain's test
// for every file it is given, SplitLogs's for the files named.
bool HoldsTraces(const std::filesystem::path& p, bool unopened = false);

// Whether a file in a folder is a log to read beside traces: a job's
// output or NCCL's log, named *.log, *.out or *.err (ncclwatch run keeps
// the job's output as job-output.log beside its traces).
bool IsLogFile(const std::filesystem::path& p);

// The paths given, split: files named on the command line that hold no
// trace (not *.trace, not opening with a trace's or a summary's magic) are
// logs, taken as InputFiles takes files named (a link followed, a file on
// a pseudo file system refused); the rest (folders, traces, summaries) go
// on to the search for traces. Logs inside the folders are added too
// (IsLogFile); each log once, in order. An error as InputFiles gives one.
absl::Status SplitLogs(const std::vector<std::string>& paths, std::vector<std::string>* trace_paths,
                       std::vector<std::string>* logs);

// The trace files and summaries under `paths` (InputFiles with
// IsTraceOrSummary), or NotFound "no trace files (*.trace) under PATH"
// when there are none.
absl::StatusOr<std::vector<std::string>> TraceFiles(const std::vector<std::string>& paths,
                                                    std::vector<SkippedInput>* skipped = nullptr);

// What a walk for traces passed over, as the job's unreadable inputs
// (JobEvidence::not_read).
std::vector<UnreadableTrace> NotRead(const std::vector<SkippedInput>& skipped);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_INPUT_FILES_H_

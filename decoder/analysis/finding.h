// A Finding: one thing ncclwatch concluded about a job, as the reports and
// the JSON contract carry it (see README.md, "JSON output").

#ifndef NCCLWATCH_DECODER_ANALYSIS_FINDING_H_
#define NCCLWATCH_DECODER_ANALYSIS_FINDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ncclwatch::decoder {

// Ranks that did the same thing, and what.
struct RankGroup {
  std::vector<int> ranks;
  std::string doing;
};

struct Finding {
  // collective_mismatch, missing_rank, rank_died, p2p_mismatch,
  // order_inversion, missing_traces, unreadable_traces.
  std::string kind;
  // root_cause (the first cause, one per job), consequence, warning, note.
  std::string role;
  std::optional<uint64_t> comm;
  std::optional<uint64_t> seq;  // per-communicator collective (or p2p) number
  std::vector<int> ranks;       // the global ranks that deviate
  std::string field;            // collective_mismatch: op|count|datatype|redop|root
  std::string detail;           // the finding in one or two sentences
  std::string fix;
  int nranks = -1;              // the communicator's size
  std::vector<RankGroup> groups;
  int64_t when_ns = 0;          // realtime of the event it starts from
  int job = 0;
  // Further, kind-specific facts for the JSON output (values are JSON).
  std::vector<std::pair<std::string, std::string>> extra;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_FINDING_H_

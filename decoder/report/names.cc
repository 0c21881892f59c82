#include "report/names.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder {

std::string Bytes(uint64_t n) {
  if (n >= (1ull << 30)) return absl::StrFormat("%.1f GiB", static_cast<double>(n) / (1ull << 30));
  if (n >= (1ull << 20)) return absl::StrFormat("%.1f MiB", static_cast<double>(n) / (1ull << 20));
  if (n >= (1ull << 10)) return absl::StrFormat("%.1f KiB", static_cast<double>(n) / (1ull << 10));
  return absl::StrCat(n, " B");
}

std::string CommShort(uint64_t comm) { return CommName(comm).substr(0, 6); }
std::string Hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

std::string RankList(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? absl::StrCat(ranks[i]) : absl::StrCat(ranks[i], "-", ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string RanksNoun(std::vector<int> ranks, const std::string& none) {
  ranks.erase(std::remove(ranks.begin(), ranks.end(), -1), ranks.end());
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.empty()) return none;
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", RankList(ranks));
}

std::string DescribeCall(const LastCall& c) {
  if (c.call == fields::kSend || c.call == fields::kRecv) {
    return absl::StrCat(c.send ? "Send #" : "Recv #", c.seq, c.send ? " to " : " from ", c.peer,
                        " of ", CommShort(c.comm));
  }
  if (c.has_seq) return absl::StrCat(CallName(c.call), " #", c.seq, " of ", CommShort(c.comm));
  if (c.comm != 0) return absl::StrCat(CallName(c.call), " of ", CommShort(c.comm));
  return CallName(c.call);
}

std::string DescribeCollective(const CollectiveSignature& s) {
  std::string out =
      absl::StrCat(CallName(s.call), "(count=", s.count, ", ", DatatypeName(s.datatype));
  if (s.redop >= 0) absl::StrAppend(&out, ", ", RedopName(s.redop));
  if (s.root >= 0) absl::StrAppend(&out, ", root=", s.root);
  return out + ")";
}

}  // namespace ncclwatch::decoder

#include "logs/fragments.h"

#include "absl/strings/ascii.h"
#include "re2/re2.h"

namespace ncclwatch::decoder {
namespace {

// Rule 2: NCCL's source location, then its text. Lower-case paths only
// (NCCL's tree: misc/, transport/, graph/, plugin/, ...), a space after the
// number, an optional "(function) " of 2.32.
const LazyRE2 kLocation = {
    R"((?:^|\s)(?:src/)?(?:[a-z0-9_]+/)*[a-z0-9_]+\.(?:cc|cu|h):\d+ (?:\(\w+\) )?)"};
// Rule 3: the tags NCCL's own WARN texts open with.
const LazyRE2 kTag = {
    R"(NET/(?:IB|Socket|Plugin|OFI|IBext\w*)\s*:|\[Proxy Service(?: UDS)?(?: \d+)?\]|)"
    R"(\[Service thread\]|P2P/IPC|\bCuda failure\b)"};

// The text from `at` on is NCCL's, given that it names a message or reads as
// an error.
std::optional<NcclFragment> Take(absl::string_view line, size_t at, bool always) {
  const absl::string_view text = line.substr(at);
  if (absl::StripAsciiWhitespace(text).empty()) return std::nullopt;
  const CatalogueMessage* m = FindMessage(text);
  if (m == nullptr && !always && !ErrorWords(text)) return std::nullopt;
  return NcclFragment{at, m};
}

}  // namespace

std::optional<NcclFragment> FindNcclFragment(absl::string_view line, bool after_last_error) {
  if (after_last_error) return Take(line, 0, true);
  const re2::StringPiece piece(line.data(), line.size());
  re2::StringPiece match;
  constexpr absl::string_view kLastError = "Last error: ";
  if (const size_t at = line.find(kLastError); at != absl::string_view::npos)
    return Take(line, at + kLastError.size(), true);
  if (line.find(':') == absl::string_view::npos && line.find('[') == absl::string_view::npos &&
      line.find('/') == absl::string_view::npos && line.find("Cuda") == absl::string_view::npos)
    return std::nullopt;  // neither a location nor a tag (cheaply)
  if (kLocation->Match(piece, 0, piece.size(), RE2::UNANCHORED, &match, 1)) {
    const size_t end = static_cast<size_t>(match.data() - line.data()) + match.size();
    return Take(line, end, false);
  }
  if (kTag->Match(piece, 0, piece.size(), RE2::UNANCHORED, &match, 1))
    return Take(line, static_cast<size_t>(match.data() - line.data()), false);
  return std::nullopt;
}

}  // namespace ncclwatch::decoder

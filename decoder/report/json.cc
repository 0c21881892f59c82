#include "report/json.h"

#include "absl/strings/str_format.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {

std::string JsonString(const std::string& s) {
  // JSON text must be UTF-8: a byte that does not start a valid sequence
  // (the OS's strings are bytes) is written as the code point of that byte
  // (\u00NN), so the output always parses.
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      out += absl::StrFormat("\\u%04x", c);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const size_t n = Utf8SequenceAt(s, i)) {
      out.append(s, i, n);
      i += n;
    } else {
      out += absl::StrFormat("\\u%04x", c);
      ++i;
    }
  }
  return out + "\"";
}

}  // namespace ncclwatch::decoder

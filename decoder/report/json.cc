#include "report/json.h"

#include "absl/strings/str_format.h"

namespace ncclwatch::decoder {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20)
          out += absl::StrFormat("\\u%04x", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace ncclwatch::decoder

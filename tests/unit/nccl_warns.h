// NCCL's WARN format strings of every release (tests/data/nccl_warns.tsv,
// written by scripts/extract-nccl-warns.py from NCCL's git history), read
// back, and each made into the line NCCL would print: its printf conversions
// filled with plausible values.
//
// The values are neutral on purpose: a number, a hex word, a pointer, and
// "abc" for a string, so that what matches a line of the catalogue is NCCL's
// own fixed text, never a word the filling brought.

#ifndef NCCLWATCH_TESTS_UNIT_NCCL_WARNS_H_
#define NCCLWATCH_TESTS_UNIT_NCCL_WARNS_H_

#include <cctype>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace nccl_warns {

struct Format {
  std::string first;   // "2.4.2": the first release that prints it
  std::string last;    // the last release read that prints it
  std::string file;    // src/... in the last
  std::string format;  // unescaped
};

inline std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

// Every format of the file; the header lines in *header.
inline std::vector<Format> Read(const std::string& path, std::string* header) {
  std::vector<Format> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      *header += line + "\n";
      continue;
    }
    std::vector<std::string> cols;
    size_t start = 0;
    for (int i = 0; i < 3; ++i) {
      const size_t tab = line.find('\t', start);
      if (tab == std::string::npos) break;
      cols.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    if (cols.size() != 3) continue;  // the test counts the lines it read
    out.push_back({cols[0], cols[1], cols[2], Unescape(line.substr(start))});
  }
  return out;
}

// The format with each conversion replaced by a plausible value; NCCL's
// trailing newlines dropped (its logger ends the line itself).
inline std::string Fill(const std::string& format) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    size_t j = i + 1;
    while (j < format.size() && std::strchr("-+ #0", format[j]) != nullptr) ++j;
    while (j < format.size() && (std::isdigit(static_cast<unsigned char>(format[j])) ||
                                 format[j] == '*' || format[j] == '.'))
      ++j;
    std::string length;
    while (j < format.size() && std::strchr("hlzjtL", format[j]) != nullptr) length += format[j++];
    if (j >= format.size()) break;
    switch (format[j]) {
      case '%':
        out += '%';
        break;
      case 'd':
      case 'i':
        out += "3";
        break;
      case 'u':
        out += length.empty() ? "3" : "4096";
        break;
      case 'x':
      case 'X':
        out += "7f3a";
        break;
      case 'p':
        out += "0x7f3a2c000000";
        break;
      case 's':
        out += "abc";
        break;
      case 'c':
        out += 'c';
        break;
      case 'f':
      case 'g':
      case 'e':
        out += "1.5";
        break;
      default:
        out += format.substr(i, j - i + 1);  // not a conversion printf knows: kept as is
    }
    i = j;
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace nccl_warns

#endif  // NCCLWATCH_TESTS_UNIT_NCCL_WARNS_H_

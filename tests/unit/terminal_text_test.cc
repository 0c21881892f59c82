// Text from traces and logs reaches a terminal escaped and JSON as valid
// UTF-8, whatever bytes it holds.

#include "report/terminal_text.h"

#include <catch2/catch.hpp>
#include <string>

#include "report/json.h"

using ncclwatch::decoder::JsonString;
using ncclwatch::decoder::TerminalSafe;

TEST_CASE("escape sequences and stray bytes never reach the terminal", "[report][hostile]") {
  // A host name that would retitle the terminal (OSC 0) and clear it (CSI 2J).
  CHECK(TerminalSafe("node\x1b]0;pwned\x07-3\x1b[2J") == "node\\x1b]0;pwned\\x07-3\\x1b[2J");
  CHECK(TerminalSafe("a\x7f"
                     "b") == "a\\x7fb");
  CHECK(TerminalSafe("line\nnext\tcol") == "line\nnext\tcol");
  // UTF-8 text is kept; a C1 control (U+009B, CSI) and bytes that are not
  // UTF-8 are escaped byte by byte.
  CHECK(TerminalSafe("r\xc3\xa9seau \xe2\x9c\x93") == "r\xc3\xa9seau \xe2\x9c\x93");
  CHECK(TerminalSafe("x\xc2\x9b"
                     "2J") == "x\\xc2\\x9b2J");
  CHECK(TerminalSafe("\xff\xfe\xc3") == "\\xff\\xfe\\xc3");
  CHECK(TerminalSafe("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate is not UTF-8
  CHECK(TerminalSafe("\xc0\xaf") == "\\xc0\\xaf");           // nor an overlong '/'
}

TEST_CASE("JSON strings are valid UTF-8 whatever the bytes", "[report][hostile]") {
  CHECK(JsonString("a\"b\\c\n") == "\"a\\\"b\\\\c\\n\"");
  CHECK(JsonString("\x1b[2J") == "\"\\u001b[2J\"");
  CHECK(JsonString("r\xc3\xa9seau") == "\"r\xc3\xa9seau\"");
  CHECK(JsonString(std::string("\xff\x00\x7f", 3)) == "\"\\u00ff\\u0000\\u007f\"");
}

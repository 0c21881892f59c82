// JsonWriter: the one way ncclwatch prints JSON. Every --json output
// (diagnose's and explain's report, dump's records) is written through it, as
// data: the caller says "an object, this key, this number", and the writer
// puts the braces, the colons, the commas and the quotes. No caller pastes
// JSON text it built itself, so no output can come out unbalanced or with a
// comma missing, and strings are always escaped (JsonString, report/json.h).
//
// Streaming: each call writes straight to the std::ostream; nothing is held
// but the stack of open containers (one small frame per level). The output is
// compact, with no space anywhere:
//
//   w.BeginObject().Key("verdict").String("healthy").Key("ranks").BeginArray()
//       .Int(0).Int(1).EndArray().EndObject();   // {"verdict":"healthy","ranks":[0,1]}
//
// With JsonLayout::kLines each complete top-level value is followed by a
// newline, so one writer can print a stream of values, one a line (JSON
// Lines): dump's records, or the one report object diagnose prints.
//
// Misuse (a value in an object with no key before it, a key in an array, an
// end that does not match its begin, a second top-level value in the compact
// layout) is a bug in the caller: the writer notes the first one (ok(),
// error()) and writes nothing more, rather than print JSON that does not parse.
//
// Not thread-safe: one writer, one thread, like the stream under it.

#ifndef NCCLWATCH_DECODER_REPORT_JSON_WRITER_H_
#define NCCLWATCH_DECODER_REPORT_JSON_WRITER_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ncclwatch::decoder {

enum class JsonLayout {
  kCompact,  // one value, nothing after it
  kLines,    // any number of top-level values, each ended by '\n'
};

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out, JsonLayout layout = JsonLayout::kCompact);
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // The name of the next member of the object open now.
  JsonWriter& Key(std::string_view name);

  JsonWriter& String(std::string_view s);  // escaped by JsonString
  JsonWriter& Int(int64_t v);
  JsonWriter& Uint(uint64_t v);
  // As absl::StrCat prints a double: six significant digits, no trailing
  // zeros ("0.25", "1.5e-07"). A NaN or an infinity, which JSON cannot
  // hold, is written as null.
  JsonWriter& Double(double v);
  // With exactly `decimals` digits after the point, as printf's "%.*f"
  // ("1.500"); NaN and infinities as null.
  JsonWriter& Fixed(double v, int decimals);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  // `json`, a whole JSON value made elsewhere, written as it is (only for a
  // value another library printed, such as protobuf's JSON mapping of a
  // message). The writer does not check it.
  JsonWriter& Raw(std::string_view json);

  // An integer of any type, as Int (signed) or Uint (unsigned): a char or
  // a bool is not taken for a number.
  template <typename T>
  JsonWriter& Integer(T v) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>,
                  "Integer takes whole numbers; Bool a bool, String a char's text");
    if constexpr (std::is_signed_v<T>)
      return Int(static_cast<int64_t>(v));
    else
      return Uint(static_cast<uint64_t>(v));
  }
  // An array of integers, each as Integer.
  template <typename Ints>
  JsonWriter& IntArray(const Ints& values) {
    BeginArray();
    for (const auto& v : values) Integer(v);
    return EndArray();
  }
  // An array of strings.
  JsonWriter& StringArray(const std::vector<std::string>& values);

  // True while every call so far was well placed.
  bool ok() const { return error_.empty(); }
  // The first misuse, in words ("" while ok()).
  const std::string& error() const { return error_; }
  // True when every container opened has been closed and at least one
  // top-level value has been written.
  bool complete() const { return ok() && stack_.empty() && values_ > 0; }

 private:
  struct Frame {
    bool object = false;
    bool empty = true;     // no member or element written yet
    bool has_key = false;  // an object's key written, its value not yet
  };

  // Writes what goes before a value here (a comma), or notes a misuse and
  // returns false.
  bool BeforeValue(const char* what);
  // After a value: ends a top-level value's line in the kLines layout.
  void AfterValue();
  void Fail(std::string why);

  std::ostream& out_;
  const JsonLayout layout_;
  std::vector<Frame> stack_;
  uint64_t values_ = 0;  // complete top-level values written
  std::string error_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_JSON_WRITER_H_

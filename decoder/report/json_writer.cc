#include "report/json_writer.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/json.h"

namespace ncclwatch::decoder {

JsonWriter::JsonWriter(std::ostream& out, JsonLayout layout) : out_(out), layout_(layout) {}

void JsonWriter::Fail(std::string why) {
  if (error_.empty()) error_ = std::move(why);
}

bool JsonWriter::BeforeValue(const char* what) {
  if (!ok()) return false;
  if (stack_.empty()) {
    if (layout_ == JsonLayout::kCompact && values_ > 0) {
      Fail(absl::StrCat(what, " after the one top-level value"));
      return false;
    }
    return true;
  }
  Frame& f = stack_.back();
  if (f.object) {
    if (!f.has_key) {
      Fail(absl::StrCat(what, " in an object with no key before it"));
      return false;
    }
    f.has_key = false;  // the key wrote the comma
    return true;
  }
  if (!f.empty) out_ << ',';
  f.empty = false;
  return true;
}

void JsonWriter::AfterValue() {
  if (!stack_.empty()) return;
  ++values_;
  if (layout_ == JsonLayout::kLines) out_ << '\n';
}

JsonWriter& JsonWriter::BeginObject() {
  if (!BeforeValue("an object")) return *this;
  out_ << '{';
  stack_.push_back(Frame{true});
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  if (!ok()) return *this;
  if (stack_.empty() || !stack_.back().object) {
    Fail("the end of an object where none is open");
  } else if (stack_.back().has_key) {
    Fail("the end of an object after a key with no value");
  } else {
    out_ << '}';
    stack_.pop_back();
    AfterValue();
  }
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  if (!BeforeValue("an array")) return *this;
  out_ << '[';
  stack_.push_back(Frame{false});
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  if (!ok()) return *this;
  if (stack_.empty() || stack_.back().object) {
    Fail("the end of an array where none is open");
  } else {
    out_ << ']';
    stack_.pop_back();
    AfterValue();
  }
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view name) {
  if (!ok()) return *this;
  if (stack_.empty() || !stack_.back().object) {
    Fail(absl::StrCat("the key \"", std::string(name), "\" outside an object"));
    return *this;
  }
  Frame& f = stack_.back();
  if (f.has_key) {
    Fail(absl::StrCat("the key \"", std::string(name), "\" after a key with no value"));
    return *this;
  }
  if (!f.empty) out_ << ',';
  f.empty = false;
  f.has_key = true;
  out_ << JsonString(std::string(name)) << ':';
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view s) {
  if (!BeforeValue("a string")) return *this;
  out_ << JsonString(std::string(s));
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t v) {
  if (!BeforeValue("a number")) return *this;
  out_ << v;
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t v) {
  if (!BeforeValue("a number")) return *this;
  out_ << v;
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Double(double v) {
  if (!std::isfinite(v)) return Null();
  if (!BeforeValue("a number")) return *this;
  out_ << absl::StrCat(v);
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Fixed(double v, int decimals) {
  if (!std::isfinite(v)) return Null();
  if (!BeforeValue("a number")) return *this;
  out_ << absl::StrFormat("%.*f", decimals, v);
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Bool(bool v) {
  if (!BeforeValue("a boolean")) return *this;
  out_ << (v ? "true" : "false");
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Null() {
  if (!BeforeValue("null")) return *this;
  out_ << "null";
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  if (!BeforeValue("a value")) return *this;
  out_ << json;
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::StringArray(const std::vector<std::string>& values) {
  BeginArray();
  for (const std::string& s : values) String(s);
  return EndArray();
}

}  // namespace ncclwatch::decoder

// JsonWriter: commas, nesting, escaping and numbers come from the writer,
// and a misplaced call is caught instead of printed.

#include "report/json_writer.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using ncclwatch::decoder::JsonLayout;
using ncclwatch::decoder::JsonWriter;

TEST_CASE("objects and arrays nest, with commas between members only", "[report][json]") {
  std::ostringstream out;
  JsonWriter w(out);
  w.BeginObject()
      .Key("a")
      .Int(1)
      .Key("b")
      .BeginArray()
      .Int(2)
      .BeginObject()
      .Key("c")
      .BeginArray()
      .EndArray()
      .EndObject()
      .BeginArray()
      .Null()
      .Bool(true)
      .Bool(false)
      .EndArray()
      .EndArray()
      .Key("d")
      .BeginObject()
      .EndObject()
      .EndObject();
  CHECK(out.str() == R"({"a":1,"b":[2,{"c":[]},[null,true,false]],"d":{}})");
  CHECK(w.ok());
  CHECK(w.complete());
}

TEST_CASE("empty containers and a lone scalar are whole values", "[report][json]") {
  std::ostringstream objects, arrays, scalar;
  JsonWriter(objects).BeginObject().EndObject();
  JsonWriter(arrays).BeginArray().EndArray();
  JsonWriter(scalar).String("x");
  CHECK(objects.str() == "{}");
  CHECK(arrays.str() == "[]");
  CHECK(scalar.str() == "\"x\"");
}

TEST_CASE("strings and keys are escaped", "[report][json][hostile]") {
  std::ostringstream out;
  JsonWriter w(out);
  w.BeginObject().Key("k\"ey").String("a\"b\\c\n\x1b[2J").Key("bytes");
  w.String(std::string("\xff\x00", 2)).EndObject();
  CHECK(out.str() == R"({"k\"ey":"a\"b\\c\n\u001b[2J","bytes":"\u00ff\u0000"})");
}

TEST_CASE("numbers: integers whole, doubles as StrCat or fixed, NaN as null", "[report][json]") {
  std::ostringstream out;
  JsonWriter w(out);
  w.BeginArray()
      .Int(-3)
      .Int(std::numeric_limits<int64_t>::min())
      .Uint(std::numeric_limits<uint64_t>::max())
      .Double(0.25)
      .Double(1.5e-7)
      .Double(123456789.0)
      .Fixed(1.5, 3)
      .Fixed(0.0004, 3)
      .Fixed(2.0, 9)
      .Double(std::nan(""))
      .Fixed(std::numeric_limits<double>::infinity(), 3)
      .EndArray();
  CHECK(out.str() ==
        "[-3,-9223372036854775808,18446744073709551615,0.25,1.5e-07,1.23457e+08,1.500,0.000,"
        "2.000000000,null,null]");
}

TEST_CASE("integer and string arrays", "[report][json]") {
  std::ostringstream out;
  JsonWriter w(out);
  w.BeginObject()
      .Key("ranks")
      .IntArray(std::vector<int>{0, -1, 7})
      .Key("pids")
      .IntArray(std::vector<uint32_t>{4000000000u})
      .Key("none")
      .IntArray(std::vector<int>{})
      .Key("names")
      .StringArray({"a", "b\"c"})
      .EndObject();
  CHECK(out.str() == R"({"ranks":[0,-1,7],"pids":[4000000000],"none":[],"names":["a","b\"c"]})");
}

TEST_CASE("a raw value takes its place among the others", "[report][json]") {
  std::ostringstream out;
  JsonWriter w(out);
  w.BeginObject().Key("a").Raw(R"({"x":1})").Key("b").Int(2).EndObject();
  CHECK(out.str() == R"({"a":{"x":1},"b":2})");
}

TEST_CASE("the lines layout ends each top-level value with a newline", "[report][json]") {
  std::ostringstream out;
  JsonWriter w(out, JsonLayout::kLines);
  w.BeginObject().Key("i").Int(0).EndObject();
  w.BeginObject().Key("i").Int(1).EndObject();
  w.Int(2);
  CHECK(out.str() == "{\"i\":0}\n{\"i\":1}\n2\n");
  CHECK(w.complete());
}

TEST_CASE("a misplaced call is noted and nothing more is written", "[report][json]") {
  struct Case {
    const char* name;
    void (*write)(JsonWriter&);
    const char* printed;
  };
  const Case cases[] = {
      {"a value with no key", [](JsonWriter& w) { w.BeginObject().Int(1).EndObject(); }, "{"},
      {"a key in an array", [](JsonWriter& w) { w.BeginArray().Key("k").EndArray(); }, "["},
      {"a key outside any container", [](JsonWriter& w) { w.Key("k"); }, ""},
      {"two keys in a row",
       [](JsonWriter& w) { w.BeginObject().Key("a").Key("b").Int(1).EndObject(); }, "{\"a\":"},
      {"an object ended after a key", [](JsonWriter& w) { w.BeginObject().Key("a").EndObject(); },
       "{\"a\":"},
      {"an array ended as an object", [](JsonWriter& w) { w.BeginArray().EndObject(); }, "["},
      {"an object ended as an array", [](JsonWriter& w) { w.BeginObject().EndArray(); }, "{"},
      {"an end with nothing open", [](JsonWriter& w) { w.EndArray(); }, ""},
      {"a second top-level value", [](JsonWriter& w) { w.Int(1).Int(2); }, "1"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::ostringstream out;
    JsonWriter w(out);
    c.write(w);
    CHECK_FALSE(w.ok());
    CHECK_FALSE(w.complete());
    CHECK_FALSE(w.error().empty());
    CHECK(out.str() == c.printed);
  }
}

TEST_CASE("an unfinished value is not complete", "[report][json]") {
  std::ostringstream out;
  JsonWriter w(out);
  CHECK_FALSE(w.complete());  // nothing yet
  w.BeginObject().Key("a").BeginArray();
  CHECK(w.ok());
  CHECK_FALSE(w.complete());
  w.EndArray().EndObject();
  CHECK(w.complete());
}

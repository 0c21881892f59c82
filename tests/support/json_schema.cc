#include "support/json_schema.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace jobs {
namespace {

namespace gp = ::google::protobuf;

const std::set<std::string>& Keywords() {
  static const std::set<std::string> k = {
      "$schema", "$id",     "$defs",    "title",      "description",          "type",
      "enum",    "const",   "required", "properties", "additionalProperties", "items",
      "anyOf",   "pattern", "minimum",  "$ref"};
  return k;
}

bool IsType(const gp::Value& v, const std::string& type) {
  switch (v.kind_case()) {
    case gp::Value::kNullValue:
      return type == "null";
    case gp::Value::kBoolValue:
      return type == "boolean";
    case gp::Value::kStringValue:
      return type == "string";
    case gp::Value::kStructValue:
      return type == "object";
    case gp::Value::kListValue:
      return type == "array";
    case gp::Value::kNumberValue: {
      const double d = v.number_value();
      return type == "number" || (type == "integer" && std::isfinite(d) && std::floor(d) == d);
    }
    default:
      return false;
  }
}

bool Equal(const gp::Value& a, const gp::Value& b) {
  return a.SerializeAsString() == b.SerializeAsString();
}

class Validator {
 public:
  explicit Validator(const gp::Value& root) : root_(root) {}

  void Check(const gp::Value& v, const gp::Value& schema, const std::string& where) {
    if (schema.kind_case() != gp::Value::kStructValue) {
      errors_.push_back(where + ": the schema here is not an object");
      return;
    }
    const auto& s = schema.struct_value().fields();
    for (const auto& [key, value] : s)
      if (!Keywords().count(key)) errors_.push_back(where + ": unknown schema keyword " + key);
    if (auto ref = s.find("$ref"); ref != s.end()) {
      const std::string& r = ref->second.string_value();
      const std::string prefix = "#/$defs/";
      const auto& defs = root_.struct_value().fields();
      auto d = defs.find("$defs");
      if (r.rfind(prefix, 0) != 0 || d == defs.end() ||
          !d->second.struct_value().fields().count(r.substr(prefix.size()))) {
        errors_.push_back(where + ": unresolved $ref " + r);
        return;
      }
      Check(v, d->second.struct_value().fields().at(r.substr(prefix.size())), where);
    }
    if (auto type = s.find("type"); type != s.end()) {
      bool ok = false;
      if (type->second.has_list_value()) {
        for (const auto& t : type->second.list_value().values()) ok |= IsType(v, t.string_value());
      } else {
        ok = IsType(v, type->second.string_value());
      }
      if (!ok) {
        errors_.push_back(where + ": not of the type the schema says");
        return;
      }
    }
    if (auto e = s.find("enum"); e != s.end()) {
      bool found = false;
      for (const auto& x : e->second.list_value().values()) found |= Equal(v, x);
      if (!found) errors_.push_back(where + ": not one of the enum's values");
    }
    if (auto c = s.find("const"); c != s.end() && !Equal(v, c->second))
      errors_.push_back(where + ": not the constant the schema says");
    if (auto p = s.find("pattern");
        p != s.end() && v.has_string_value() &&
        !std::regex_search(v.string_value(), std::regex(p->second.string_value())))
      errors_.push_back(where + ": \"" + v.string_value() + "\" does not match " +
                        p->second.string_value());
    if (auto m = s.find("minimum");
        m != s.end() && v.has_number_value() && v.number_value() < m->second.number_value())
      errors_.push_back(where + ": below the minimum");
    if (auto any = s.find("anyOf"); any != s.end()) {
      bool one = false;
      for (const auto& option : any->second.list_value().values()) {
        Validator sub(root_);
        sub.Check(v, option, where);
        one |= sub.errors_.empty();
      }
      if (!one) errors_.push_back(where + ": matches none of anyOf's schemas");
    }
    if (v.has_struct_value()) CheckObject(v.struct_value(), s, where);
    if (v.has_list_value()) {
      if (auto items = s.find("items"); items != s.end()) {
        int i = 0;
        for (const auto& x : v.list_value().values())
          Check(x, items->second, where + "[" + std::to_string(i++) + "]");
      }
    }
  }

  std::vector<std::string> errors_;

 private:
  void CheckObject(const gp::Struct& o, const gp::Map<std::string, gp::Value>& s,
                   const std::string& where) {
    if (auto r = s.find("required"); r != s.end()) {
      for (const auto& name : r->second.list_value().values())
        if (!o.fields().count(name.string_value()))
          errors_.push_back(where + ": lacks " + name.string_value());
    }
    const gp::Struct* properties = nullptr;
    if (auto p = s.find("properties"); p != s.end()) properties = &p->second.struct_value();
    auto additional = s.find("additionalProperties");
    for (const auto& [name, value] : o.fields()) {
      const std::string at = where + "." + name;
      if (properties != nullptr && properties->fields().count(name)) {
        Check(value, properties->fields().at(name), at);
      } else if (additional != s.end()) {
        if (additional->second.has_bool_value()) {
          if (!additional->second.bool_value()) errors_.push_back(at + ": not in the schema");
        } else {
          Check(value, additional->second, at);
        }
      }
    }
  }

  const gp::Value& root_;
};

}  // namespace

std::vector<std::string> ValidateJson(const gp::Value& document, const gp::Value& schema) {
  Validator v(schema);
  v.Check(document, schema, "$");
  return v.errors_;
}

const gp::Value& ReportSchema() {
  static const gp::Value* schema = [] {
    auto* s = new gp::Value;
    std::ifstream in(NCCLWATCH_REPORT_SCHEMA);
    std::stringstream text;
    text << in.rdbuf();
    if (!in || !gp::util::JsonStringToMessage(text.str(), s).ok()) s->Clear();
    return s;
  }();
  return *schema;
}

std::vector<std::string> ValidateReport(const std::string& json) {
  const gp::Value& schema = ReportSchema();
  if (!schema.has_struct_value())
    return {std::string("cannot read the report schema ") + NCCLWATCH_REPORT_SCHEMA};
  gp::Value doc;
  if (!gp::util::JsonStringToMessage(json, &doc).ok()) return {"not JSON"};
  return ValidateJson(doc, schema);
}

}  // namespace jobs

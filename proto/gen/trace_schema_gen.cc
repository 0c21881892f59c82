// trace_schema_gen: writes what can be generated from trace.proto, so that
// the schema is written once. Run by the build (proto/CMakeLists.txt):
//
//   trace_schema_gen fields OUT.h   ncclwatch/trace_fields.h: every field
//                                   number and enum value, the record bodies,
//                                   and the names of NCCL's calls
//
// It reads the descriptors protoc compiled into ncclwatch_trace_proto
// (libprotobuf), not the .proto's text, so what it writes is what libprotobuf
// reads. The header it writes is freestanding: the shim's hand encoder
// includes it, and needs nothing at run time beyond glibc.
//
// Naming, so that a name follows from the schema alone:
//   - a message's fields are constants k<Field> (snake_case to CamelCase) in
//     a namespace named after the message: a body of Record by its field in
//     Record (PointToPoint is `p2p`), any other message by its own name in
//     snake_case, nested messages inside their parent's;
//   - an enum is a plain enum of uint32_t with its values k<Value>
//     (UPPER_CASE to CamelCase), beside its message's constants (a
//     top-level enum directly in ncclwatch::fields); an enum nested in a
//     message names each value a second time with the enum's name before
//     it, k<Enum><Value> (process_end::kHowExit beside kExit);
//   - two names that would clash fail the build here.

#include <google/protobuf/descriptor.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ncclwatch/trace.pb.h"

namespace {

namespace gp = ::google::protobuf;
namespace pb = ::ncclwatch::trace::v1;

std::string Camel(const std::string& name) {
  std::string out;
  bool up = true;
  for (char c : name) {
    if (c == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
              : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    up = false;
  }
  return out;
}

std::string Snake(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (std::isupper(c) && i > 0) out += '_';
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}

// Fails the generation: a clash or a schema this generator cannot name.
[[noreturn]] void Fail(const std::string& why) {
  std::cerr << "trace_schema_gen: " << why << "\n";
  std::exit(1);
}

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}

  // Declares `name` in the current namespace; a second declaration fails.
  void Declare(const std::string& scope, const std::string& name) {
    if (!declared_[scope].insert(name).second)
      Fail("two declarations of " + name + " in namespace " + scope);
  }

  // `prefixed`: each value is declared a second time with its enum's name
  // before it (process_end::kHowExit beside kExit), as constexpr uint32_t.
  void Enum(const std::string& scope, const gp::EnumDescriptor* e, const std::string& indent,
            bool prefixed = false) {
    Declare(scope, e->name());
    out_ << indent << "// enum " << e->full_name() << "\n";
    out_ << indent << "enum " << e->name() << " : uint32_t {\n";
    for (int i = 0; i < e->value_count(); ++i) {
      const gp::EnumValueDescriptor* v = e->value(i);
      if (v->number() < 0) Fail(v->full_name() + " is negative");
      const std::string name = "k" + Camel(v->name());
      Declare(scope, name);
      out_ << indent << "  " << name << " = " << v->number() << ",\n";
    }
    out_ << indent << "};\n";
    if (!prefixed) return;
    for (int i = 0; i < e->value_count(); ++i) {
      const gp::EnumValueDescriptor* v = e->value(i);
      const std::string name = "k" + e->name() + Camel(v->name());
      if (Camel(v->name()).rfind(e->name(), 0) == 0) continue;  // HOW_UNKNOWN: kHowUnknown already
      Declare(scope, name);
      out_ << indent << "constexpr uint32_t " << name << " = " << v->number() << ";\n";
    }
  }

  void Message(const std::string& scope, const gp::Descriptor* m, const std::string& ns,
               const std::string& indent) {
    const std::string inner = scope + "::" + ns;
    Declare(scope, ns);
    out_ << indent << "// message " << m->full_name() << "\n";
    out_ << indent << "namespace " << ns << " {\n";
    for (int i = 0; i < m->field_count(); ++i) {
      const gp::FieldDescriptor* f = m->field(i);
      const std::string name = "k" + Camel(f->name());
      Declare(inner, name);
      out_ << indent << "constexpr uint32_t " << name << " = " << f->number() << ";\n";
    }
    for (int i = 0; i < m->enum_type_count(); ++i)
      Enum(inner, m->enum_type(i), indent, /*prefixed=*/true);
    for (int i = 0; i < m->nested_type_count(); ++i)
      Message(inner, m->nested_type(i), Snake(m->nested_type(i)->name()), indent);
    out_ << indent << "}  // namespace " << ns << "\n";
  }

 private:
  std::ostream& out_;
  std::map<std::string, std::set<std::string>> declared_;
};

std::string CString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void WriteFields(std::ostream& out) {
  const gp::Descriptor* record = pb::Record::descriptor();
  const gp::FileDescriptor* file = record->file();
  const gp::OneofDescriptor* body = record->FindOneofByName("body");
  if (body == nullptr) Fail("Record has no oneof body");

  out << "// Generated from " << file->name()
      << " by proto/gen/trace_schema_gen.cc. Do not edit: change trace.proto.\n"
         "//\n"
         "// The field numbers and enum values of trace.proto, for the shim's hand\n"
         "// encoder (which must not depend on libprotobuf) and the decoder's own\n"
         "// wire reader: ncclwatch::fields::MESSAGE::kFIELD, where a body of Record\n"
         "// is named by its field in Record (PointToPoint is p2p), any other message\n"
         "// by its own name; enums are plain enums of uint32_t with values kVALUE\n"
         "// (an enum nested in a message also kENUMVALUE: process_end::kHowExit).\n"
         "// Freestanding: no C++ standard library.\n\n"
         "#ifndef NCCLWATCH_PROTO_NCCLWATCH_TRACE_FIELDS_H_\n"
         "#define NCCLWATCH_PROTO_NCCLWATCH_TRACE_FIELDS_H_\n\n"
         "#include <stdint.h>\n\n"
         "namespace ncclwatch::fields {\n\n";

  Writer w(out);
  const std::string top = "fields";
  for (int i = 0; i < file->enum_type_count(); ++i) {
    w.Enum(top, file->enum_type(i), "");
    out << "\n";
  }

  // The names of NCCL's entry points, from trace.proto's (nccl_name) option.
  const gp::EnumDescriptor* call = pb::Call_descriptor();
  out << "// The name of a Call: what NCCL calls an operation (\"AllReduce\", \"Send\"),\n"
         "// the entry point's name for the rest (\"ncclCommInitRank\"); nullptr for a\n"
         "// value this header does not know. (trace.proto's nccl_name option.)\n"
         "constexpr const char* CallName(uint32_t call) {\n"
         "  switch (call) {\n";
  for (int i = 0; i < call->value_count(); ++i) {
    const gp::EnumValueDescriptor* v = call->value(i);
    const std::string& name = v->options().GetExtension(pb::nccl_name);
    if (v->number() == 0) continue;
    if (name.empty()) Fail(v->full_name() + " has no (nccl_name)");
    out << "    case k" << Camel(v->name()) << ":\n      return " << CString(name) << ";\n";
  }
  out << "    default:\n      return nullptr;\n  }\n}\n\n";

  // Record, and its bodies in field order.
  std::map<const gp::Descriptor*, std::string> body_names;
  for (int i = 0; i < body->field_count(); ++i) {
    const gp::FieldDescriptor* f = body->field(i);
    if (f->message_type() == nullptr) Fail(f->full_name() + " is not a message");
    if (!body_names.emplace(f->message_type(), f->name()).second)
      Fail(f->message_type()->full_name() + " is two bodies of Record");
  }
  w.Message(top, record, "record", "");
  out << "namespace record {\n"
         "// Whether a field of Record is one of its bodies (oneof body).\n"
         "constexpr bool IsBody(uint32_t field) {\n"
         "  switch (field) {\n";
  for (int i = 0; i < body->field_count(); ++i)
    out << "    case k" << Camel(body->field(i)->name()) << ":\n";
  out << "      return true;\n    default:\n      return false;\n  }\n}\n"
         "// A body's field name in Record (\"collective\", \"nccl_not_seen\"), nullptr\n"
         "// for a field that is not a body.\n"
         "constexpr const char* BodyName(uint32_t field) {\n"
         "  switch (field) {\n";
  for (int i = 0; i < body->field_count(); ++i) {
    out << "    case k" << Camel(body->field(i)->name()) << ":\n      return "
        << CString(body->field(i)->name()) << ";\n";
  }
  out << "    default:\n      return nullptr;\n  }\n}\n"
         "// Every body, in the order trace.proto declares them.\n"
         "constexpr uint32_t kBodies[] = {";
  for (int i = 0; i < body->field_count(); ++i)
    out << (i ? ", " : "") << "k" << Camel(body->field(i)->name());
  out << "};\n}  // namespace record\n\n";

  for (int i = 0; i < file->message_type_count(); ++i) {
    const gp::Descriptor* m = file->message_type(i);
    if (m == record) continue;
    auto named = body_names.find(m);
    w.Message(top, m, named != body_names.end() ? named->second : Snake(m->name()), "");
    out << "\n";
  }
  out << "}  // namespace ncclwatch::fields\n\n#endif  // "
         "NCCLWATCH_PROTO_NCCLWATCH_TRACE_FIELDS_H_\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "fields") != 0) {
    std::cerr << "usage: trace_schema_gen fields OUT.h\n";
    return 2;
  }
  std::ostringstream text;
  WriteFields(text);
  // Written only when it changed, so that what includes it is not rebuilt.
  std::ifstream old(argv[2], std::ios::binary);
  std::ostringstream was;
  if (old) was << old.rdbuf();
  if (old && was.str() == text.str()) return 0;
  old.close();
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  out << text.str();
  out.close();
  if (!out) {
    std::cerr << "trace_schema_gen: cannot write " << argv[2] << "\n";
    return 1;
  }
  return 0;
}

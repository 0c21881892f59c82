// ValidateJson: a JSON document against a JSON Schema, for the tests: every
// job test's report goes through it (traced_job.cc), against the schema the
// repository documents (decoder/report/report.schema.json).
//
// The keywords that schema uses, and only those: type (a name or a list),
// enum, const, required, properties, additionalProperties (true, false or a
// schema), items, anyOf, pattern (ECMAScript, searched), minimum, and $ref
// to "#/$defs/NAME". An unknown keyword is reported, so the schema cannot
// use one this validator silently ignores.
//
// Thread-safety: pure functions.

#ifndef NCCLWATCH_TESTS_SUPPORT_JSON_SCHEMA_H_
#define NCCLWATCH_TESTS_SUPPORT_JSON_SCHEMA_H_

#include <google/protobuf/struct.pb.h>

#include <string>
#include <vector>

namespace jobs {

// Where `document` breaks `schema` ("$.findings[0].kind: not one of the
// enum's values"), empty when it conforms.
std::vector<std::string> ValidateJson(const google::protobuf::Value& document,
                                      const google::protobuf::Value& schema);

// The report schema (NCCLWATCH_REPORT_SCHEMA), read once; a test fails
// loudly (the error is returned) when it cannot be read.
const google::protobuf::Value& ReportSchema();

// ValidateJson of a report's text against ReportSchema(); a text that is not
// JSON is one error.
std::vector<std::string> ValidateReport(const std::string& json);

}  // namespace jobs

#endif  // NCCLWATCH_TESTS_SUPPORT_JSON_SCHEMA_H_

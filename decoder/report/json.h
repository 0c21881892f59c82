// JSON text for the --json outputs: strings escaped per RFC 8259.

#ifndef NCCLWATCH_DECODER_REPORT_JSON_H_
#define NCCLWATCH_DECODER_REPORT_JSON_H_

#include <string>

namespace ncclwatch::decoder {

// `s` as a JSON string literal, quotes included.
std::string JsonString(const std::string& s);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_JSON_H_

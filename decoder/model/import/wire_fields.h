// Field accessors for the importers (model/import/): a field whose wire type
// is not its declared one is an unknown field, skipped, as libprotobuf does.
//
// Thread-safety: pure functions.

#ifndef NCCLWATCH_DECODER_MODEL_IMPORT_WIRE_FIELDS_H_
#define NCCLWATCH_DECODER_MODEL_IMPORT_WIRE_FIELDS_H_

#include <string>

#include "trace/wire_reader.h"

namespace ncclwatch::decoder::importing {

inline bool Varint(const WireField& x) { return x.wire_type == 0; }
inline bool Fixed64(const WireField& x) { return x.wire_type == 1; }
inline bool Fixed32(const WireField& x) { return x.wire_type == 5; }
inline bool Bytes(const WireField& x) { return x.wire_type == 2; }

inline std::string Str(const WireField& x) { return std::string(x.AsString()); }

}  // namespace ncclwatch::decoder::importing

#endif  // NCCLWATCH_DECODER_MODEL_IMPORT_WIRE_FIELDS_H_

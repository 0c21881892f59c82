// Collectives decoded from protobuf (trace.proto Collective), the hottest
// record of a format-1 trace: inline, so that RecordImporter reaches it
// without the table's indirect call, and the calls family (calls.cc)
// registers the same function.
//
// Thread-safety: as the importers' (model/import/body_importer.h).

#ifndef NCCLWATCH_DECODER_MODEL_IMPORT_COLLECTIVE_IMPORT_H_
#define NCCLWATCH_DECODER_MODEL_IMPORT_COLLECTIVE_IMPORT_H_

#include <cstdint>

#include "absl/types/span.h"
#include "model/import/body_importer.h"
#include "model/process_trace.h"
#include "ncclwatch/trace_fields.h"
#include "trace/wire_reader.h"

namespace ncclwatch::decoder::importing {
namespace collective_internal {

namespace f = ::ncclwatch::fields;

// The hottest records: a switch on the whole one-byte tag (field number
// and wire type at once), so a field of the declared type costs one
// comparison and one read. Any other tag (another wire type, a field a newer
// shim added) is skipped as libprotobuf skips unknown fields.
constexpr uint8_t Tag(uint32_t field, uint32_t wire_type) {
  return static_cast<uint8_t>(field << 3 | wire_type);
}

// One field of a collective, its tag just read: the value into `e`, or
// skipped when the tag is not one of ours. Inlined with a constant tag, the
// switch folds away.
__attribute__((always_inline)) inline bool CollectiveField(uint8_t tag, const uint8_t*& p,
                                                           const uint8_t* end, CollectiveEvent* e) {
  namespace c = f::collective;
  uint64_t v = 0;
  uint32_t w = 0;
  switch (tag) {
    case Tag(c::kResult, 5):
      if (!ReadFixed32(p, end, &w)) return false;
      e->result = static_cast<int32_t>(w);
      return true;
    case Tag(c::kComm, 1):
      return ReadFixed64(p, end, &e->comm);
    case Tag(c::kSeq, 0):
      return ReadVarint(p, end, &e->seq);
    case Tag(c::kCall, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->call = static_cast<uint32_t>(v);
      return true;
    case Tag(c::kCount, 0):
      return ReadVarint(p, end, &e->count);
    case Tag(c::kDatatype, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->datatype = ZigzagDecode32(v);
      return true;
    case Tag(c::kRedop, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->redop = ZigzagDecode32(v);
      return true;
    case Tag(c::kRoot, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->root = ZigzagDecode32(v);
      return true;
    case Tag(c::kStream, 1):
      return ReadFixed64(p, end, &e->stream);
    case Tag(c::kGroup, 0):
      return ReadVarint(p, end, &e->group);
    case Tag(c::kCaller, 1):
      return ReadFixed64(p, end, &e->caller);
    case Tag(c::kRank, 0):
      if (!ReadVarint(p, end, &v)) return false;
      e->rank = ZigzagDecode32(v);
      return true;
    default:  // sendbuff, recvbuff, and fields a newer shim added
      return (tag >> 3) != 0 && SkipValue(p, end, tag & 7);
  }
}

// The shim writes a collective's fields in ascending order, the optional
// ones (redop, root, group) only when set: read them in that order first,
// with one well-predicted comparison each, then whatever is left (another
// writer's order, unknown fields, a tag of several bytes) in any order.
inline bool DecodeCollective(absl::Span<const uint8_t> b, CollectiveEvent* e) {
  namespace c = f::collective;
  e->result = 0;
  e->rank = 0;
  const uint8_t* p = b.data();
  const uint8_t* const end = p + b.size();
  static constexpr uint8_t kInOrder[] = {
      Tag(c::kResult, 5), Tag(c::kComm, 1),     Tag(c::kSeq, 0),      Tag(c::kCall, 0),
      Tag(c::kCount, 0),  Tag(c::kDatatype, 0), Tag(c::kRedop, 0),    Tag(c::kRoot, 0),
      Tag(c::kStream, 1), Tag(c::kSendbuff, 1), Tag(c::kRecvbuff, 1), Tag(c::kGroup, 0),
      Tag(c::kCaller, 1), Tag(c::kRank, 0)};
  // Unrolled, so that each CollectiveField call gets a constant tag.
#pragma GCC unroll 16
  for (const uint8_t tag : kInOrder) {
    if (p < end && *p == tag) {
      ++p;
      if (!CollectiveField(tag, p, end, e)) return false;
    }
  }
  while (p < end) {
    const uint8_t tag = *p;
    if (tag & 0x80) {  // a tag of two or more bytes: not one of ours
      uint64_t long_tag;
      if (!ReadVarint(p, end, &long_tag) || (long_tag >> 3) == 0 ||
          !SkipValue(p, end, long_tag & 7)) {
        return false;
      }
      continue;
    }
    ++p;
    if (!CollectiveField(tag, p, end, e)) return false;
  }
  return true;
}

}  // namespace collective_internal

// The common case: copied from a blank row (plain moves, where
// value-initialising the row in place compiles to a slow `rep stos`).
inline bool ImportCollective(ImportContext& c, absl::Span<const uint8_t> body) {
  ProcessTrace& p = *c.trace;
  static const CollectiveEvent kBlank{};
  p.MakeRoom(p.collectives);
  CollectiveEvent& e = p.collectives.emplace_back(kBlank);
  e.order = c.order;
  e.t = c.t;
  e.thread = c.thread;
  if (!collective_internal::DecodeCollective(body, &e)) {
    p.collectives.pop_back();
    return false;
  }
  c.streams->AddCollective(p.collectives.size() - 1, e);
  return true;
}

}  // namespace ncclwatch::decoder::importing

#endif  // NCCLWATCH_DECODER_MODEL_IMPORT_COLLECTIVE_IMPORT_H_

#include "summary/record_delta.h"

#include <cstring>

#include "ncclwatch/ring_format.h"
#include "trace/wire_reader.h"

namespace ncclwatch::decoder {
namespace {

bool KnownWire(uint32_t wire) { return wire == 0 || wire == 1 || wire == 2 || wire == 5; }

size_t VarintBytes(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

// Appends the fields of one message level (no body inside).
bool ParseLevel(absl::Span<const uint8_t> bytes, bool in_body, std::vector<FlatField>* out) {
  const uint8_t* p = bytes.data();
  const uint8_t* const end = p + bytes.size();
  while (p < end) {
    uint64_t tag;
    if (!ReadVarint(p, end, &tag) || tag > 0xffffffffu || (tag >> 3) == 0) return false;
    FlatField x;
    x.number = static_cast<uint32_t>(tag >> 3);
    x.wire = static_cast<uint8_t>(tag & 7);
    x.in_body = in_body;
    bool read = false;
    switch (x.wire) {
      case 0:
        read = ReadVarint(p, end, &x.value);
        break;
      case 1:
        read = ReadFixed64(p, end, &x.value);
        break;
      case 5: {
        uint32_t v;
        read = ReadFixed32(p, end, &v);
        x.value = v;
        break;
      }
      case 2: {
        const uint8_t* length_at = p;
        uint64_t n;
        if (!ReadVarint(p, end, &n) || n > static_cast<uint64_t>(end - p)) return false;
        x.padded = static_cast<size_t>(p - length_at) == VarintBytes(n) + 1;
        x.bytes.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
        p += n;
        read = true;
        break;
      }
      default:
        return false;
    }
    if (!read || out->size() >= kMaxFlatFields) return false;
    out->push_back(std::move(x));
  }
  return true;
}

const FlatField kNone;

void PutVarint(uint64_t v, std::string* out) { ByteSink(out).Varint(v); }

// A length, one byte longer than it needs where `padded` (the shim's
// nested messages: WireWriter::BeginMessage reserves two bytes).
void PutLength(uint64_t n, bool padded, std::string* out) {
  if (!padded) return PutVarint(n, out);
  for (; n >= 0x80; n >>= 7) out->push_back(static_cast<char>(n | 0x80));
  out->push_back(static_cast<char>(n | 0x80));
  out->push_back('\0');
}

void PutField(const FlatField& f, std::string* out) {
  PutVarint((uint64_t{f.number} << 3) | f.wire, out);
  switch (f.wire) {
    case 0:
      PutVarint(f.value, out);
      break;
    case 1:
      ByteSink(out).U64(f.value);
      break;
    case 5:
      ByteSink(out).U32(static_cast<uint32_t>(f.value));
      break;
    default:
      PutLength(f.bytes.size(), f.padded, out);
      out->append(f.bytes);
      break;
  }
}

// A field's shape as written in a delta: its tag, then whether it is in the
// body and whether it is the body.
uint64_t ShapeOf(const FlatField& f) {
  return (((uint64_t{f.number} << 3) | f.wire) << 3) | (f.padded ? 4u : 0u) |
         (f.in_body ? 2u : 0u) | (f.body ? 1u : 0u);
}

// For each field of `now`, the field of `prev` it is diffed against (the
// same number, type and place, and occurrence among those), or -1.
std::vector<int> References(const FlatRecord& prev, const FlatRecord& now) {
  const std::vector<FlatField>& a = prev.fields();
  const std::vector<FlatField>& b = now.fields();
  std::vector<int> out(b.size(), -1);
  if (prev.SameShape(now)) {
    for (size_t i = 0; i < b.size(); ++i) out[i] = static_cast<int>(i);
    return out;
  }
  std::map<uint64_t, std::vector<int>> of_prev;
  for (size_t i = 0; i < a.size(); ++i) of_prev[ShapeOf(a[i])].push_back(static_cast<int>(i));
  std::map<uint64_t, size_t> seen;
  for (size_t i = 0; i < b.size(); ++i) {
    const uint64_t key = ShapeOf(b[i]);
    const size_t k = seen[key]++;
    auto it = of_prev.find(key);
    if (it != of_prev.end() && k < it->second.size()) out[i] = it->second[k];
  }
  return out;
}

}  // namespace

bool FlatRecord::Parse(absl::Span<const uint8_t> record) {
  fields_.clear();
  std::vector<FlatField> top;
  if (!ParseLevel(record, false, &top)) return false;
  bool have_body = false;
  for (FlatField& f : top) {
    const bool is_body = !have_body && f.wire == 2 && f.number >= 16;
    if (!is_body) {
      fields_.push_back(std::move(f));
      continue;
    }
    have_body = true;
    const std::string inner = std::move(f.bytes);
    f.bytes.clear();
    f.body = true;
    fields_.push_back(std::move(f));
    if (!ParseLevel(
            absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(inner.data()), inner.size()), true,
            &fields_))
      return false;
  }
  if (fields_.size() > kMaxFlatFields) return false;
  // As the shim writes it: shortest varints, nothing the fields do not say.
  const std::string again = Serialize();
  return again.size() == record.size() &&
         std::memcmp(again.data(), record.data(), again.size()) == 0;
}

std::string FlatRecord::Serialize() const {
  std::string out;
  for (size_t i = 0; i < fields_.size(); ++i) {
    const FlatField& f = fields_[i];
    if (!f.body) {
      PutField(f, &out);
      continue;
    }
    std::string inner;
    size_t j = i + 1;
    for (; j < fields_.size() && fields_[j].in_body; ++j) PutField(fields_[j], &inner);
    PutVarint((uint64_t{f.number} << 3) | 2, &out);
    PutLength(inner.size(), f.padded, &out);
    out.append(inner);
    i = j - 1;
  }
  return out;
}

std::pair<uint32_t, uint64_t> FlatRecord::ContextKey() const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (!fields_[i].body) continue;
    uint64_t comm = 0;
    if (i + 1 < fields_.size() && fields_[i + 1].in_body && fields_[i + 1].number == 1 &&
        fields_[i + 1].wire == 1)
      comm = fields_[i + 1].value;
    return {fields_[i].number, comm};
  }
  return {0, 0};
}

bool FlatRecord::SameShape(const FlatRecord& other) const {
  if (fields_.size() != other.fields_.size()) return false;
  for (size_t i = 0; i < fields_.size(); ++i)
    if (ShapeOf(fields_[i]) != ShapeOf(other.fields_[i])) return false;
  return true;
}

RecordContexts::RecordContexts(const FlatRecord* node_inventory)
    : records_(1), filled_(1, node_inventory != nullptr) {
  if (node_inventory != nullptr) records_[0] = *node_inventory;
}

int RecordContexts::Find(const FlatRecord& record) const {
  const std::pair<uint32_t, uint64_t> key = record.ContextKey();
  if (key.first == kInventoryBody) return 0;
  auto it = index_.find(key);
  return it == index_.end() ? -1 : static_cast<int>(it->second);
}

const FlatRecord* RecordContexts::At(size_t index) const {
  return index < records_.size() && filled_[index] ? &records_[index] : nullptr;
}

void RecordContexts::Remember(FlatRecord record) {
  int i = Find(record);
  if (i < 0) {
    if (records_.size() >= kMaxRecordContexts) return;
    i = static_cast<int>(records_.size());
    index_.emplace(record.ContextKey(), records_.size());
    records_.emplace_back();
    filled_.push_back(false);
  }
  records_[i] = std::move(record);
  filled_[i] = true;
}

void WriteRecordDelta(const FlatRecord& prev, const FlatRecord& now, ByteSink* out) {
  const std::vector<FlatField>& b = now.fields();
  const bool same = prev.SameShape(now);
  out->U8(same ? 1 : 0);
  if (!same) {
    out->Varint(b.size());
    for (const FlatField& f : b) out->Varint(ShapeOf(f));
  }
  const std::vector<int> ref = References(prev, now);
  std::string mask((b.size() + 7) / 8, '\0');
  for (size_t i = 0; i < b.size(); ++i) {
    const FlatField& r = ref[i] < 0 ? kNone : prev.fields()[ref[i]];
    if (b[i].value != r.value || b[i].bytes != r.bytes)
      mask[i / 8] |= static_cast<char>(1 << (i % 8));
  }
  out->Raw(mask.data(), mask.size());
  for (size_t i = 0; i < b.size(); ++i) {
    if ((mask[i / 8] & (1 << (i % 8))) == 0) continue;
    const FlatField& r = ref[i] < 0 ? kNone : prev.fields()[ref[i]];
    if (b[i].wire == 2) {
      out->String(b[i].bytes);
    } else {
      out->Zigzag(static_cast<int64_t>(b[i].value - r.value));
    }
  }
}

bool ReadRecordDelta(const FlatRecord& prev, ByteCursor* in, FlatRecord* now) {
  std::vector<FlatField>& b = now->mutable_fields();
  b.clear();
  const uint8_t same = in->U8();
  if (!in->ok() || same > 1) return false;
  if (same == 1) {
    b = prev.fields();
  } else {
    const uint64_t n = in->Varint();
    if (!in->ok() || n > kMaxFlatFields || n > in->left()) return false;
    bool body_seen = false;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t shape = in->Varint();
      FlatField f;
      f.body = (shape & 1) != 0;
      f.in_body = (shape & 2) != 0;
      f.padded = (shape & 4) != 0;
      f.wire = static_cast<uint8_t>((shape >> 3) & 7);
      const uint64_t number = shape >> 6;
      if (!in->ok() || !KnownWire(f.wire) || number == 0 || number >= (uint64_t{1} << 29) ||
          (f.padded && f.wire != 2))
        return false;
      f.number = static_cast<uint32_t>(number);
      // One body at most, a length-delimited Record field; its fields
      // right after it.
      if (f.body && (f.in_body || f.wire != 2 || body_seen)) return false;
      if (f.in_body && (b.empty() || !(b.back().body || b.back().in_body))) return false;
      body_seen |= f.body;
      b.push_back(std::move(f));
    }
  }
  // The values start as what they are diffed against.
  const std::vector<int> ref = References(prev, *now);
  for (size_t i = 0; i < b.size(); ++i) {
    const FlatField& r = ref[i] < 0 ? kNone : prev.fields()[ref[i]];
    b[i].value = r.value;
    b[i].bytes = r.bytes;
  }
  std::string mask((b.size() + 7) / 8, '\0');
  in->Raw(mask.data(), mask.size());
  if (!in->ok()) return false;
  for (size_t i = 0; i < b.size(); ++i) {
    if ((mask[i / 8] & (1 << (i % 8))) == 0) continue;
    if (b[i].body) return false;  // the body has no value of its own
    if (b[i].wire == 2) {
      b[i].bytes = std::string(in->String(NCCLWATCH_MAX_RECORD_BYTES));
    } else {
      b[i].value += static_cast<uint64_t>(in->Zigzag());
      if (b[i].wire == 5 && b[i].value > UINT32_MAX) return false;
    }
    if (!in->ok()) return false;
  }
  return true;
}

}  // namespace ncclwatch::decoder

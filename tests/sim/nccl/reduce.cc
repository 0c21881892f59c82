#include "nccl/reduce.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace ncclsim::nccl {
namespace {

// A binary floating format with `exp_bits` exponent and `man_bits` fraction
// bits. `ieee` formats keep their top exponent for inf/NaN; E4M3 keeps only
// the all-ones pattern for NaN and uses the rest of the top exponent.
struct FloatFormat {
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee;
  bool saturate;  // overflow gives the largest finite value instead of inf
  uint32_t nan_bits;
};

constexpr FloatFormat kHalf{5, 10, 15, true, false, 0x7e00};
constexpr FloatFormat kBf16{8, 7, 127, true, false, 0x7fc0};
constexpr FloatFormat kE4M3{4, 3, 7, false, true, 0x7f};
constexpr FloatFormat kE5M2{5, 2, 15, true, true, 0x7e};

double MaxFinite(const FloatFormat& f) {
  const int top = (1 << f.exp_bits) - 1;
  if (f.ieee) return (2.0 - std::ldexp(1.0, -f.man_bits)) * std::ldexp(1.0, top - 1 - f.bias);
  return (2.0 - std::ldexp(1.0, 1 - f.man_bits)) * std::ldexp(1.0, top - f.bias);
}

double Decode(uint32_t bits, const FloatFormat& f) {
  const uint32_t sign = (bits >> (f.exp_bits + f.man_bits)) & 1u;
  const int e = static_cast<int>((bits >> f.man_bits) & ((1u << f.exp_bits) - 1));
  const uint32_t m = bits & ((1u << f.man_bits) - 1);
  const int top = (1 << f.exp_bits) - 1;
  double v;
  if (f.ieee && e == top) {
    v = m ? std::nan("") : INFINITY;
  } else if (!f.ieee && e == top && m == (1u << f.man_bits) - 1) {
    v = std::nan("");
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.man_bits), e - f.bias);
  }
  return sign ? -v : v;
}

uint32_t Encode(double v, const FloatFormat& f) {
  if (std::isnan(v)) return f.nan_bits;
  const uint32_t sign = std::signbit(v) ? 1u << (f.exp_bits + f.man_bits) : 0u;
  const uint32_t inf_bits = ((1u << f.exp_bits) - 1) << f.man_bits;
  const double max_finite = MaxFinite(f);
  const double a = std::fabs(v);
  auto overflow = [&] { return sign | (f.saturate ? Encode(max_finite, f) : inf_bits); };
  if (std::isinf(a)) return overflow();
  if (a == 0.0) return sign;
  const int emin = 1 - f.bias;
  int e2 = 0;
  std::frexp(a, &e2);
  int exp = e2 - 1;
  const double quantum = std::ldexp(1.0, (exp < emin ? emin : exp) - f.man_bits);
  const double r = std::nearbyint(a / quantum) * quantum;  // ties to even
  if (r > max_finite) return overflow();
  if (r == 0.0) return sign;
  std::frexp(r, &e2);
  exp = e2 - 1;
  uint32_t fe, fm;
  if (exp < emin) {
    fe = 0;
    fm = static_cast<uint32_t>(r / std::ldexp(1.0, emin - f.man_bits));
  } else {
    fe = static_cast<uint32_t>(exp + f.bias);
    fm = static_cast<uint32_t>((r / std::ldexp(1.0, exp) - 1.0) * std::ldexp(1.0, f.man_bits));
  }
  return sign | (fe << f.man_bits) | fm;
}

// Integers: wrapping sum and product (computed unsigned), min and max.
template <typename T>
void ReduceIntegers(const Reduction& r, T* out, const void* const* in, int n, size_t count) {
  using U = std::make_unsigned_t<T>;
  const U factor = static_cast<U>(static_cast<T>(r.scalar));
  for (size_t i = 0; i < count; ++i) {
    T acc = 0;
    for (int j = 0; j < n; ++j) {
      T x = static_cast<const T*>(in[j])[i];
      if (r.premultiply) x = static_cast<T>(static_cast<U>(x) * factor);
      if (j == 0) {
        acc = x;
        continue;
      }
      switch (r.op) {
        case ncclProd:
          acc = static_cast<T>(static_cast<U>(acc) * static_cast<U>(x));
          break;
        case ncclMax:
          acc = acc > x ? acc : x;
          break;
        case ncclMin:
          acc = acc < x ? acc : x;
          break;
        default:
          acc = static_cast<T>(static_cast<U>(acc) + static_cast<U>(x));
          break;  // sum, avg
      }
    }
    if (r.op == ncclAvg) acc = static_cast<T>(acc / static_cast<T>(r.divisor));
    out[i] = acc;
  }
}

// float and double: the hardware's own arithmetic.
template <typename T>
void ReduceNativeFloats(const Reduction& r, T* out, const void* const* in, int n, size_t count) {
  const T factor = static_cast<T>(r.scalar);
  for (size_t i = 0; i < count; ++i) {
    T acc = 0;
    for (int j = 0; j < n; ++j) {
      T x = static_cast<const T*>(in[j])[i];
      if (r.premultiply) x = x * factor;
      if (j == 0) {
        acc = x;
        continue;
      }
      switch (r.op) {
        case ncclProd:
          acc = acc * x;
          break;
        case ncclMax:
          acc = std::fmax(acc, x);
          break;
        case ncclMin:
          acc = std::fmin(acc, x);
          break;
        default:
          acc = acc + x;
          break;
      }
    }
    out[i] = acc;
  }
}

// Narrow floats: widen, operate, round back after every operation.
template <typename Bits>
void ReduceNarrowFloats(const Reduction& r, const FloatFormat& f, Bits* out, const void* const* in,
                        int n, size_t count) {
  auto round = [&f](double v) { return Decode(Encode(v, f), f); };
  const double factor = round(r.scalar);
  for (size_t i = 0; i < count; ++i) {
    double acc = 0;
    for (int j = 0; j < n; ++j) {
      double x = Decode(static_cast<const Bits*>(in[j])[i], f);
      if (r.premultiply) x = round(x * factor);
      if (j == 0) {
        acc = x;
        continue;
      }
      switch (r.op) {
        case ncclProd:
          acc = round(acc * x);
          break;
        case ncclMax:
          acc = std::fmax(acc, x);
          break;
        case ncclMin:
          acc = std::fmin(acc, x);
          break;
        default:
          acc = round(acc + x);
          break;
      }
    }
    out[i] = static_cast<Bits>(Encode(acc, f));
  }
}

}  // namespace

size_t DataTypeSize(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

void ReduceInto(const Reduction& r, void* out, const void* const* in, int n, size_t count) {
  // Each element is folded over all inputs before it is written, so `out`
  // may alias an input at the same index (in-place collectives).
  switch (r.type) {
    case ncclInt8:
      ReduceIntegers(r, static_cast<int8_t*>(out), in, n, count);
      break;
    case ncclUint8:
      ReduceIntegers(r, static_cast<uint8_t*>(out), in, n, count);
      break;
    case ncclInt32:
      ReduceIntegers(r, static_cast<int32_t*>(out), in, n, count);
      break;
    case ncclUint32:
      ReduceIntegers(r, static_cast<uint32_t*>(out), in, n, count);
      break;
    case ncclInt64:
      ReduceIntegers(r, static_cast<int64_t*>(out), in, n, count);
      break;
    case ncclUint64:
      ReduceIntegers(r, static_cast<uint64_t*>(out), in, n, count);
      break;
    case ncclFloat32:
      ReduceNativeFloats(r, static_cast<float*>(out), in, n, count);
      break;
    case ncclFloat64:
      ReduceNativeFloats(r, static_cast<double*>(out), in, n, count);
      break;
    case ncclFloat16:
      ReduceNarrowFloats(r, kHalf, static_cast<uint16_t*>(out), in, n, count);
      break;
    case ncclBfloat16:
      ReduceNarrowFloats(r, kBf16, static_cast<uint16_t*>(out), in, n, count);
      break;
    case ncclFloat8e4m3:
      ReduceNarrowFloats(r, kE4M3, static_cast<uint8_t*>(out), in, n, count);
      break;
    case ncclFloat8e5m2:
      ReduceNarrowFloats(r, kE5M2, static_cast<uint8_t*>(out), in, n, count);
      break;
    default:
      break;
  }
}

float HalfToFloat(uint16_t h) { return static_cast<float>(Decode(h, kHalf)); }
uint16_t FloatToHalf(float f) { return static_cast<uint16_t>(Encode(f, kHalf)); }
float Bfloat16ToFloat(uint16_t b) { return static_cast<float>(Decode(b, kBf16)); }
uint16_t FloatToBfloat16(float f) { return static_cast<uint16_t>(Encode(f, kBf16)); }
float Fp8E4M3ToFloat(uint8_t v) { return static_cast<float>(Decode(v, kE4M3)); }
uint8_t FloatToFp8E4M3(float f) { return static_cast<uint8_t>(Encode(f, kE4M3)); }
float Fp8E5M2ToFloat(uint8_t v) { return static_cast<float>(Decode(v, kE5M2)); }
uint8_t FloatToFp8E5M2(float f) { return static_cast<uint8_t>(Encode(f, kE5M2)); }

}  // namespace ncclsim::nccl

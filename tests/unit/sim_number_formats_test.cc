// The simulator's narrow-float arithmetic against the CUDA headers' own host
// conversions: every half, bfloat16 and fp8 bit pattern, and rounding of
// floats into each.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "nccl/reduce.h"

using namespace ncclsim::nccl;

namespace {

bool SameFloat(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

std::vector<float> Probes() {
  std::vector<float> v = {0.0f,     -0.0f,    1.0f,      -1.0f,    0.5f,          65504.0f,
                          65519.0f, 65520.0f, 1e-8f,     6e-8f,    3e-5f,         448.0f,
                          449.0f,   464.0f,   500.0f,    57344.0f, 60000.0f,      1e30f,
                          -1e30f,   INFINITY, -INFINITY, NAN,      3.3895314e38f, 1.17549435e-38f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> exp(-30, 20);
  for (int i = 0; i < 200000; ++i) {
    float x = std::ldexp(mant(rng), exp(rng));
    v.push_back(i % 2 ? x : -x);
  }
  return v;
}

}  // namespace

TEST_CASE("half: every bit pattern decodes and floats round as CUDA does", "[sim][reduce]") {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    __half h;
    uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(static_cast<void*>(&h), &b, 2);
    INFO("bits " << bits);
    REQUIRE(SameFloat(HalfToFloat(b), __half2float(h)));
  }
  for (float f : Probes()) {
    __half h = __float2half_rn(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    INFO("float " << f);
    if (std::isnan(f))
      REQUIRE(std::isnan(HalfToFloat(FloatToHalf(f))));
    else
      REQUIRE(FloatToHalf(f) == want);
  }
}

TEST_CASE("bfloat16: every bit pattern decodes and floats round as CUDA does", "[sim][reduce]") {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    __nv_bfloat16 h;
    uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(static_cast<void*>(&h), &b, 2);
    INFO("bits " << bits);
    REQUIRE(SameFloat(Bfloat16ToFloat(b), __bfloat162float(h)));
  }
  for (float f : Probes()) {
    __nv_bfloat16 h = __float2bfloat16_rn(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    INFO("float " << f);
    if (std::isnan(f))
      REQUIRE(std::isnan(Bfloat16ToFloat(FloatToBfloat16(f))));
    else
      REQUIRE(FloatToBfloat16(f) == want);
  }
}

TEST_CASE("fp8 e4m3 and e5m2: every bit pattern, and saturating rounding", "[sim][reduce]") {
  for (uint32_t bits = 0; bits < 256; ++bits) {
    __nv_fp8_e4m3 a;
    __nv_fp8_e5m2 b;
    uint8_t v = static_cast<uint8_t>(bits);
    std::memcpy(&a, &v, 1);
    std::memcpy(&b, &v, 1);
    INFO("bits " << bits);
    REQUIRE(SameFloat(Fp8E4M3ToFloat(v), static_cast<float>(a)));
    REQUIRE(SameFloat(Fp8E5M2ToFloat(v), static_cast<float>(b)));
  }
  for (float f : Probes()) {
    if (std::isnan(f)) continue;
    __nv_fp8_e4m3 a(f);
    __nv_fp8_e5m2 b(f);
    uint8_t wa, wb;
    std::memcpy(&wa, &a, 1);
    std::memcpy(&wb, &b, 1);
    INFO("float " << f);
    REQUIRE(FloatToFp8E4M3(f) == wa);
    REQUIRE(FloatToFp8E5M2(f) == wb);
  }
}

TEST_CASE("reductions fold in rank order with the type's own arithmetic", "[sim][reduce]") {
  SECTION("integers wrap like two's complement hardware") {
    int8_t a[2] = {100, -128}, b[2] = {100, -1}, out[2];
    const void* in[2] = {a, b};
    Reduction r;
    r.type = ncclInt8;
    r.op = ncclSum;
    ReduceInto(r, out, in, 2, 2);
    CHECK(out[0] == static_cast<int8_t>(200));
    CHECK(out[1] == 127);
    r.op = ncclMin;
    ReduceInto(r, out, in, 2, 2);
    CHECK(out[0] == 100);
    CHECK(out[1] == -128);
  }
  SECTION("integer average divides the sum") {
    uint32_t a[1] = {7}, b[1] = {8}, c[1] = {10}, out[1];
    const void* in[3] = {a, b, c};
    Reduction r;
    r.type = ncclUint32;
    r.op = ncclAvg;
    r.divisor = 3;
    ReduceInto(r, out, in, 3, 1);
    CHECK(out[0] == 8);
  }
  SECTION("floating average is a pre-multiplied sum") {
    float a[1] = {1.0f}, b[1] = {2.0f}, c[1] = {4.0f}, out[1];
    const void* in[3] = {a, b, c};
    Reduction r;
    r.type = ncclFloat32;
    r.op = ncclSum;
    r.premultiply = true;
    r.scalar = 1.0 / 3;
    ReduceInto(r, out, in, 3, 1);
    const float third = static_cast<float>(1.0 / 3);
    CHECK(out[0] == (1.0f * third + 2.0f * third) + 4.0f * third);
  }
  SECTION("half sums round after every addition") {
    // 2048 + 1 + 1 in half: each +1 is lost (spacing is 2 above 2048).
    uint16_t a[1] = {FloatToHalf(2048)}, b[1] = {FloatToHalf(1)}, c[1] = {FloatToHalf(1)}, out[1];
    const void* in[3] = {a, b, c};
    Reduction r;
    r.type = ncclFloat16;
    r.op = ncclSum;
    ReduceInto(r, out, in, 3, 1);
    CHECK(HalfToFloat(out[0]) == 2048.0f);
  }
  SECTION("the output may alias an input") {
    double a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    const void* in[2] = {a, b};
    Reduction r;
    r.type = ncclFloat64;
    r.op = ncclMax;
    ReduceInto(r, a, in, 2, 3);
    CHECK(a[0] == 10);
    CHECK(a[2] == 30);
  }
}

// Element-wise reductions over every NCCL datatype, in a fixed rank order so
// that every rank of an AllReduce computes bit-identical results.
//
// Half, bfloat16 and the two fp8 formats are reduced as the GPU does, one
// pairwise operation at a time, each result rounded back to the storage type
// (round-to-nearest-even; fp8 overflow saturates to the largest finite value).
// ncclAvg is, as in NCCL, a pre-multiplied sum by 1/nranks for floating types
// and a sum divided by nranks for integers.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_REDUCE_H_
#define NCCLWATCH_TESTS_SIM_NCCL_REDUCE_H_

#include <nccl.h>

#include <cstddef>
#include <cstdint>

namespace ncclsim::nccl {

size_t DataTypeSize(ncclDataType_t type);  // 0 for an invalid type

// What one reduction does. For ncclAvg `scalar` is 1/nranks (floating types)
// and `divisor` nranks (integer types); for a PreMulSum op, `scalar` is its
// factor and op is ncclSum.
struct Reduction {
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  bool premultiply = false;
  double scalar = 1.0;
  int divisor = 1;
};

// out[i] = in[0][i] op in[1][i] op ... op in[n-1][i], for i < count.
// `out` may alias any input at the same index.
void ReduceInto(const Reduction& r, void* out, const void* const* in, int n, size_t count);

// Conversions used by the reductions, exposed for tests.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float Bfloat16ToFloat(uint16_t b);
uint16_t FloatToBfloat16(float f);
float Fp8E4M3ToFloat(uint8_t v);
uint8_t FloatToFp8E4M3(float f);
float Fp8E5M2ToFloat(uint8_t v);
uint8_t FloatToFp8E5M2(float f);

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_REDUCE_H_

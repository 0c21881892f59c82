// The names CUDA gives the calls and results a trace records: the memory-
// sharing functions of trace.proto's CudaFunction, and the results they give
// with the driver's name (CUDA_ERROR_*), the runtime's (cudaError*) and
// cuGetErrorString's text. Facts about CUDA, read by the analyses, the
// reports and dump alike.
//
// Thread-safety: every function is pure and thread-safe.

#ifndef NCCLWATCH_DECODER_KNOWLEDGE_CUDA_NAMES_H_
#define NCCLWATCH_DECODER_KNOWLEDGE_CUDA_NAMES_H_

#include <cstdint>
#include <string>

namespace ncclwatch::decoder {

// "cuMemImportFromShareableHandle"; "CudaFunction 99" when unknown.
std::string CudaFunctionName(uint32_t function);
// Whether `function` is a runtime (cuda*) function rather than a driver one.
bool CudaRuntimeFunction(uint32_t function);
// "CUDA_ERROR_NOT_PERMITTED" (driver) or "cudaErrorNotPermitted" (runtime);
// "CUDA error 1234" when unknown.
std::string CudaResultName(int32_t result, bool runtime);
// The driver's text for a result ("operation not permitted"), "" when unknown.
std::string CudaResultText(int32_t result);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_KNOWLEDGE_CUDA_NAMES_H_

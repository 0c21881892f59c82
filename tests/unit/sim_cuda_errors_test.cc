// The simulator's CUDA error names and texts, checked against the real
// libcudart.so.13's: cudaGetErrorName/cudaGetErrorString need no driver.

#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/cuda_errors.h"

TEST_CASE("every simulated CUDA error reads as the real runtime prints it", "[sim][cuda]") {
  void* real = dlopen(REAL_CUDART_PATH, RTLD_NOW | RTLD_LOCAL);
  INFO("real runtime: " << REAL_CUDART_PATH);
  REQUIRE(real != nullptr);
  using Fn = const char* (*)(int);
  auto real_name = reinterpret_cast<Fn>(dlsym(real, "cudaGetErrorName"));
  auto real_text = reinterpret_cast<Fn>(dlsym(real, "cudaGetErrorString"));
  REQUIRE(real_name != nullptr);
  REQUIRE(real_text != nullptr);
  for (const ncclsim::CudaErrorInfo& e : ncclsim::kCudaErrors) {
    INFO("code " << e.code);
    CHECK(std::string(e.runtime_name) == real_name(e.code));
    CHECK(std::string(e.text) == real_text(e.code));
  }
  CHECK(ncclsim::FindCudaError(123456) == nullptr);
  CHECK(std::string(real_text(123456)) == "unrecognized error code");
}

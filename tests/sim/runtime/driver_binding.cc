#include "runtime/driver_binding.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

namespace ncclsim::runtime {
namespace {

struct Binding {
  DriverTable table;
  cudaError_t error = cudaSuccess;
};

// The driver's name for an entry point, without the version suffix cuda.h's
// macros add to the identifier ("cuMemAlloc" for cuMemAlloc_v2).
void StripVersion(const char* in, char* out, size_t n) {
  std::snprintf(out, n, "%s", in);
  char* v = std::strstr(out, "_v");
  if (v != nullptr && v[2] >= '0' && v[2] <= '9') *v = '\0';
}

Binding* Bind() {
  auto* b = new Binding();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    b->error = cudaErrorInsufficientDriver;
    return b;
  }
  using GetProc =
      CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    b->error = cudaErrorInsufficientDriver;
    return b;
  }
  bool complete = true;
  char base[128];
#define SIM_DRIVER_FN(name)                                                                   \
  StripVersion(#name, base, sizeof(base));                                                    \
  if (get_proc(base, reinterpret_cast<void**>(&b->table.name), CUDART_VERSION, 0, nullptr) != \
      CUDA_SUCCESS)                                                                           \
    complete = false;
#include "runtime/driver_functions.inc"
#undef SIM_DRIVER_FN
  if (!complete) {
    b->error = cudaErrorInsufficientDriver;
    return b;
  }
  int version = 0;
  if (b->table.cuDriverGetVersion(&version) != CUDA_SUCCESS || version < CUDART_VERSION) {
    b->error = cudaErrorInsufficientDriver;
    return b;
  }
  CUresult rc = b->table.cuInit(0);
  if (rc == CUDA_ERROR_NO_DEVICE) {
    b->error = cudaErrorNoDevice;
  } else if (rc != CUDA_SUCCESS) {
    b->error = cudaErrorInitializationError;
  }
  return b;
}

}  // namespace

int InstalledDriverVersion() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) return 0;
  using GetVersion = CUresult (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(lib, "cuDriverGetVersion"));
  int version = 0;
  if (get_version == nullptr || get_version(&version) != CUDA_SUCCESS) return 0;
  return version;
}

const DriverTable* Driver(cudaError_t* error) {
  static Binding* binding = Bind();
  *error = binding->error;
  return binding->error == cudaSuccess ? &binding->table : nullptr;
}

}  // namespace ncclsim::runtime

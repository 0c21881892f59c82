// cuda_probe: small CUDA runtime checks that need a process of their own.
//
//   cuda_probe devices          device count, driver version and bus ids
//   cuda_probe ipc-import HEX   opens a CUDA IPC memory handle (128 hex digits),
//                               checks the exporter's pattern (byte i == i % 251),
//                               writes its own (255 - i % 251) and exits 0
//   cuda_probe ipc-event HEX    opens an IPC event handle and waits on it
//
// Written only against the public CUDA runtime API.

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool FromHex(const char* hex, void* out, size_t n) {
  if (std::strlen(hex) != 2 * n) return false;
  auto* p = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < n; ++i) {
    unsigned v = 0;
    if (std::sscanf(hex + 2 * i, "%2x", &v) != 1) return false;
    p[i] = static_cast<unsigned char>(v);
  }
  return true;
}

int Fail(const char* what, cudaError_t e) {
  std::printf("%s: %s (%d)\n", what, cudaGetErrorString(e), e);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "devices";
  if (mode == "devices") {
    int driver = -1;
    cudaDriverGetVersion(&driver);
    std::printf("driver %d\n", driver);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    std::printf("count %d %s\n", e == cudaSuccess ? n : -1, cudaGetErrorString(e));
    for (int d = 0; e == cudaSuccess && d < n; ++d) {
      char bus[32];
      cudaDeviceGetPCIBusId(bus, sizeof(bus), d);
      std::printf("device %d %s\n", d, bus);
    }
    return 0;
  }
  if (mode == "ipc-import" && argc > 2) {
    cudaIpcMemHandle_t h;
    if (!FromHex(argv[2], &h, sizeof(h))) return Fail("bad handle", cudaErrorInvalidValue);
    void* p = nullptr;
    cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) return Fail("cudaIpcOpenMemHandle", e);
    const size_t n = static_cast<size_t>(std::atol(argc > 3 ? argv[3] : "4096"));
    std::vector<unsigned char> host(n);
    if ((e = cudaMemcpy(host.data(), p, n, cudaMemcpyDeviceToHost)) != cudaSuccess)
      return Fail("cudaMemcpy", e);
    for (size_t i = 0; i < n; ++i) {
      if (host[i] != i % 251) {
        std::printf("byte %zu is %u, expected %zu\n", i, host[i], i % 251);
        return 1;
      }
    }
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(255 - i % 251);
    if ((e = cudaMemcpy(p, host.data(), n, cudaMemcpyHostToDevice)) != cudaSuccess)
      return Fail("cudaMemcpy", e);
    if ((e = cudaIpcCloseMemHandle(p)) != cudaSuccess) return Fail("cudaIpcCloseMemHandle", e);
    std::printf("imported %zu bytes\n", n);
    return 0;
  }
  if (mode == "ipc-event" && argc > 2) {
    cudaIpcEventHandle_t h;
    if (!FromHex(argv[2], &h, sizeof(h))) return Fail("bad handle", cudaErrorInvalidValue);
    cudaEvent_t ev;
    cudaError_t e = cudaIpcOpenEventHandle(&ev, h);
    if (e != cudaSuccess) return Fail("cudaIpcOpenEventHandle", e);
    if ((e = cudaEventSynchronize(ev)) != cudaSuccess) return Fail("cudaEventSynchronize", e);
    std::printf("event query %d\n", cudaEventQuery(ev));
    return 0;
  }
  std::printf("usage: cuda_probe devices | ipc-import HEX [BYTES] | ipc-event HEX\n");
  return 2;
}

// Simulated GPUs, their PCI identities, and the per-thread current context.

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "common/sim_env.h"
#include "driver/driver_state.h"

namespace ncclsim::driver {
namespace {

// PCI buses of the eight GPUs of a DGX H100, so that logs look like one; a
// host with more simulated GPUs continues from 0xe0.
constexpr int kDgxBuses[] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
constexpr int kMaxGpus = 64;

uint64_t Fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::vector<Device*> BuildVisibleDevices() {
  const int host_gpus = static_cast<int>(EnvInt("NCCLSIM_GPUS", 8, 0, kMaxGpus));
  std::vector<int> physical;
  const char* visible = EnvRaw("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) {
    for (int i = 0; i < host_gpus; ++i) physical.push_back(i);
  } else {
    // As CUDA does: a comma-separated list of indices, read up to the first
    // entry that is not a valid, unused index.
    const char* p = visible;
    while (*p != '\0') {
      char* end = nullptr;
      long v = std::strtol(p, &end, 10);
      if (end == p || v < 0 || v >= host_gpus) break;
      bool dup = false;
      for (int q : physical) dup |= (q == v);
      if (dup) break;
      physical.push_back(static_cast<int>(v));
      p = end;
      while (*p == ' ') ++p;
      if (*p != ',') break;
      ++p;
    }
  }

  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::vector<Device*> devices;
  for (size_t ord = 0; ord < physical.size(); ++ord) {
    const int phys = physical[ord];
    auto* d = new Device();
    d->ordinal = static_cast<int>(ord);
    d->physical = phys;
    d->pci_bus = phys < 8 ? kDgxBuses[phys] : 0xe0 + (phys - 8);
    d->total_memory = 80ull << 30;
    d->name = "NVIDIA H100 80GB HBM3 [ncclsim]";
    uint64_t h1 = Fnv1a(host, std::strlen(host));
    h1 = Fnv1a(&phys, sizeof(phys), h1);
    uint64_t h2 = Fnv1a(&h1, sizeof(h1));
    std::memcpy(d->uuid.bytes, &h1, 8);
    std::memcpy(d->uuid.bytes + 8, &h2, 8);
    devices.push_back(d);
  }
  return devices;
}

}  // namespace

int DriverVersion() {
  static const int version =
      static_cast<int>(EnvInt("NCCLSIM_DRIVER_VERSION", CUDA_VERSION, 1000, 99999));
  return version;
}

std::vector<Device*>& VisibleDevices() {
  static auto* devices = new std::vector<Device*>(BuildVisibleDevices());
  return *devices;
}

Device* DeviceAt(int ordinal) {
  auto& devs = VisibleDevices();
  if (ordinal < 0 || ordinal >= static_cast<int>(devs.size())) return nullptr;
  return devs[ordinal];
}

std::string PciBusIdString(const Device& dev) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.0", dev.pci_domain, dev.pci_bus, dev.pci_device);
  return buf;
}

CUctx_st* PrimaryContext(int ordinal) {
  static auto* contexts = [] {
    auto* v = new std::vector<CUctx_st*>();
    for (Device* d : VisibleDevices()) {
      auto* c = new CUctx_st();
      c->device = d->ordinal;
      v->push_back(c);
    }
    return v;
  }();
  if (ordinal < 0 || ordinal >= static_cast<int>(contexts->size())) return nullptr;
  return (*contexts)[ordinal];
}

CUctx_st*& CurrentContext() {
  thread_local CUctx_st* current = nullptr;
  return current;
}

CUresult CurrentDevice(int* ordinal) {
  CUctx_st* ctx = CurrentContext();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *ordinal = ctx->device;
  return CUDA_SUCCESS;
}

}  // namespace ncclsim::driver

#include "nccl/params.h"

#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/sim_env.h"
#include "nccl/debug.h"

namespace ncclsim::nccl {

uint64_t Fnv1a(const void* data, size_t n, uint64_t h) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int NcclVersionCode() {
  static const int code = [] {
    const char* v = EnvRaw("NCCLSIM_NCCL_VERSION");
    int c = NCCL_VERSION_CODE;
    if (v != nullptr && *v != '\0' && !ParseNcclVersion(v, &c)) {
      std::fprintf(stderr,
                   "ncclsim: NCCLSIM_NCCL_VERSION='%s' is not a version like 2.27.3; using %d\n", v,
                   NCCL_VERSION_CODE);
      c = NCCL_VERSION_CODE;
    }
    return c;
  }();
  return code;
}

std::string NcclVersionString() {
  const int c = NcclVersionCode();
  int major, minor, patch;
  if (c < 10000) {  // the pre-2.9 encoding
    major = c / 1000;
    minor = (c % 1000) / 100;
    patch = c % 100;
  } else {
    major = c / 10000;
    minor = (c % 10000) / 100;
    patch = c % 100;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%d.%d.%d", major, minor, patch);
  return buf;
}

size_t SimpleBufferBytes() {
  // 8 steps of at least 4 KiB, a multiple of 64 so every datatype divides a step.
  static const size_t bytes =
      static_cast<size_t>(EnvInt("NCCL_BUFFSIZE", 1 << 22, 1 << 15, 1ll << 30)) / 512 * 512;
  return bytes;
}

bool ShmDisabled() { return EnvInt("NCCL_SHM_DISABLE", 0, 0, 1) == 1; }
bool P2pDisabled() { return EnvInt("NCCL_P2P_DISABLE", 0, 0, 1) == 1; }

uint64_t HostHash() {
  static const uint64_t hash = [] {
    std::string id;
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    id = host;
    if (const char* host_id = EnvRaw("NCCL_HOSTID")) {
      INFO(kEnv, "NCCL_HOSTID set by environment to %s", host_id);
      id = host_id;
    } else if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
      char boot[64] = {0};
      if (std::fscanf(f, "%63s", boot) == 1) id += boot;
      std::fclose(f);
    }
    return Fnv1a(id.data(), id.size());
  }();
  return hash;
}

const GpuFault& GpuFaultKnob() {
  static const GpuFault fault = [] {
    GpuFault g;
    const char* v = EnvRaw("NCCLSIM_GPU_FAULT");
    if (v == nullptr || *v == '\0') return g;
    char kind[32] = "ecc";
    long long n = -1;
    int got = std::sscanf(v, "%lld:%31s", &n, kind);
    if (got < 1 || n < 0) {
      std::fprintf(
          stderr,
          "ncclsim: NCCLSIM_GPU_FAULT='%s' is not N[:ecc|xid79|launch]; no fault injected\n", v);
      return g;
    }
    if (std::strcmp(kind, "ecc") == 0) {
      g.error = CUDA_ERROR_ECC_UNCORRECTABLE;
    } else if (std::strcmp(kind, "xid79") == 0) {
      g.error = CUDA_ERROR_DEVICE_UNAVAILABLE;  // the GPU fell off the bus
    } else if (std::strcmp(kind, "launch") == 0) {
      g.error = CUDA_ERROR_LAUNCH_FAILED;
    } else {
      std::fprintf(stderr,
                   "ncclsim: NCCLSIM_GPU_FAULT kind '%s' is not ecc, xid79 or launch; using ecc\n",
                   kind);
    }
    g.armed = true;
    g.at_collective = n;
    return g;
  }();
  return fault;
}

const NetStall& NetStallKnob() {
  static const NetStall stall = [] {
    NetStall n;
    const char* v = EnvRaw("NCCLSIM_NET_STALL");
    if (v == nullptr || *v == '\0') return n;
    char* end = nullptr;
    const long long at = std::strtoll(v, &end, 10);
    if (end == v || *end != '\0' || at < 0) {
      std::fprintf(stderr,
                   "ncclsim: NCCLSIM_NET_STALL='%s' is not N (an operation index); no stall\n", v);
      return n;
    }
    n.armed = true;
    n.at_operation = at;
    return n;
  }();
  return stall;
}

namespace {
std::atomic<bool> g_net_receive_dead{false};
}  // namespace

const SlowLink& SlowLinkKnob() {
  static const SlowLink knob = [] {
    SlowLink k;
    const char* v = EnvRaw("NCCLSIM_SLOW_LINK");
    if (v == nullptr || *v == '\0') return k;
    int device = -1;
    long long from = -1, ms = -1, us = 0;
    char tail = 0;
    const int got = std::sscanf(v, "%d:%lld:%lld:%lld%c", &device, &from, &ms, &us, &tail);
    if ((got != 3 && got != 4) || device < 0 || from < 0 || ms < 0 || ms > 60000 || us < 0 ||
        us > 60000000) {
      std::fprintf(stderr,
                   "ncclsim: NCCLSIM_SLOW_LINK='%s' is not DEVICE:FROM:MS[:US_PER_MIB] (MS up to "
                   "60000); no link slowed\n",
                   v);
      return k;
    }
    k.armed = true;
    k.physical = device;
    k.from = from;
    k.ms = ms;
    k.us_per_mib = us;
    return k;
  }();
  return knob;
}

int64_t SlowLinkHoldNs(int ordinal, int64_t index, size_t bytes) {
  const SlowLink& k = SlowLinkKnob();
  if (!k.armed || index < k.from) return 0;
  using PhysicalFn = int (*)(int);
  static const auto physical =
      reinterpret_cast<PhysicalFn>(dlsym(RTLD_DEFAULT, "ncclsimPhysicalDevice"));
  const int here = physical != nullptr ? physical(ordinal) : ordinal;
  if (here != k.physical) return 0;
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  return k.ms * 1000000 + static_cast<int64_t>(mib * static_cast<double>(k.us_per_mib) * 1000.0);
}

bool NetReceiveDead() { return g_net_receive_dead.load(std::memory_order_relaxed); }
void KillNetReceive() { g_net_receive_dead.store(true); }

}  // namespace ncclsim::nccl

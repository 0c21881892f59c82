#include "core/inventory.h"

#include <fcntl.h>
#include <ifaddrs.h>
#include <link.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/env_filter.h"
#include "core/record_builder.h"
#include "ncclwatch/trace_fields.h"

extern char** environ;

namespace ncclwatch::shim {
namespace {

namespace f = fields::inventory;

int g_inventory_done = 0;

int PrefixLen(const unsigned char* mask, int bytes) {
  int n = 0;
  for (int i = 0; i < bytes; ++i) n += __builtin_popcount(mask[i]);
  return n;
}

void WriteInterfaces(wire::WireWriter& w) {
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return;
  int n = 0;
  for (struct ifaddrs* a = list; a != nullptr && n < 48; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_name == nullptr) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    const size_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (w.remaining() < len + strlen(a->ifa_name) + 32) break;
    int prefix = 0;
    if (a->ifa_netmask != nullptr) {
      prefix =
          family == AF_INET
              ? PrefixLen(reinterpret_cast<const unsigned char*>(
                              &reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr),
                          4)
              : PrefixLen(reinterpret_cast<const unsigned char*>(
                              &reinterpret_cast<const sockaddr_in6*>(a->ifa_netmask)->sin6_addr),
                          16);
    }
    const size_t at = w.BeginMessage(f::kInterfaces);
    w.String(f::interface::kName, a->ifa_name);
    w.Varint(f::interface::kFlags, a->ifa_flags);
    w.Bytes(f::interface::kAddr, a->ifa_addr, len);
    w.Varint(f::interface::kPrefixLen, static_cast<uint64_t>(prefix));
    w.EndMessage(at);
    ++n;
  }
  freeifaddrs(list);
}

void WriteEnvironment(wire::WireWriter& w) {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = strchr(*e, '=');
    if (eq == nullptr) continue;
    const int name_len = static_cast<int>(eq - *e);
    if (!RecordableVariable(*e, name_len)) continue;
    char value[256];  // at most 256 bytes of it, credentials redacted
    const size_t value_len = RedactValue(eq + 1, strlen(eq + 1), value, sizeof(value));
    if (w.remaining() < static_cast<size_t>(name_len) + value_len + 16) break;
    const size_t at = w.BeginMessage(f::kEnv);
    w.Bytes(f::variable::kName, *e, static_cast<size_t>(name_len));
    w.Bytes(f::variable::kValue, value, value_len);
    w.EndMessage(at);
  }
}

// The first line of a small file, without its newline.
bool FirstLine(const char* path, char* out, size_t n) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t got = read(fd, out, n - 1);
  close(fd);
  if (got <= 0) return false;
  out[got] = '\0';
  if (char* nl = strchr(out, '\n')) *nl = '\0';
  return true;
}

struct Framework {
  const char* name = nullptr;
  char path[512] = {0};
};

int FindFramework(dl_phdr_info* info, size_t, void* data) {
  auto* fw = static_cast<Framework*>(data);
  const char* path = info->dlpi_name;
  if (fw->name != nullptr || path == nullptr || path[0] == '\0') return 0;
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  struct {
    const char* prefix;
    const char* name;
  } const kKnown[] = {{"libtorch_cuda", "pytorch"},  {"libtorch.so", "pytorch"},
                      {"libc10.so", "pytorch"},      {"libtensorflow_framework", "tensorflow"},
                      {"xla_extension", "jax"},      {"libjax", "jax"},
                      {"libpaddle", "paddlepaddle"}, {"libmxnet", "mxnet"}};
  for (const auto& k : kKnown) {
    if (strncmp(base, k.prefix, strlen(k.prefix)) == 0) {
      fw->name = k.name;
      if (strlen(path) < sizeof(fw->path)) strcpy(fw->path, path);
      return 1;
    }
  }
  return 0;
}

// "pytorch 2.5.1+cu124": a PyTorch wheel keeps its version in
// torch/version.py next to torch/lib/.
void FrameworkName(const Framework& fw, char* out, size_t n) {
  snprintf(out, n, "%s", fw.name);
  const char* lib = strstr(fw.path, "/torch/lib/");
  if (strcmp(fw.name, "pytorch") != 0 || lib == nullptr) return;
  char version_py[600];
  snprintf(version_py, sizeof(version_py), "%.*s/torch/version.py", static_cast<int>(lib - fw.path),
           fw.path);
  const int fd = open(version_py, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char text[2048];
  const ssize_t got = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (got <= 0) return;
  text[got] = '\0';
  const char* v = strstr(text, "__version__");
  if (v == nullptr) return;
  const char* q = strpbrk(v, "'\"");
  if (q == nullptr) return;
  const char* end = strchr(q + 1, *q);
  if (end == nullptr || end - q > 64) return;
  snprintf(out, n, "%s %.*s", fw.name, static_cast<int>(end - q - 1), q + 1);
}

}  // namespace

void RecordInventoryOnce(const LoadedVersions& v) {
  if (__atomic_exchange_n(&g_inventory_done, 1, __ATOMIC_ACQ_REL) != 0) return;
  LargeRecordBuilder r(fields::record::kInventory);
  wire::WireWriter& w = r.w();
  w.Sint(f::kNcclVersion, v.nccl);
  if (v.nccl_path != nullptr) w.String(f::kNcclPath, v.nccl_path);
  w.Sint(f::kCudaDriverVersion, v.cuda_driver);
  w.Sint(f::kCudaRuntimeVersion, v.cuda_runtime);

  Framework fw;
  dl_iterate_phdr(FindFramework, &fw);
  if (fw.name != nullptr) {
    char name[128];
    FrameworkName(fw, name, sizeof(name));
    w.String(f::kFramework, name);
    w.String(f::kFrameworkPath, fw.path);
  }

  struct statvfs shm;
  if (statvfs("/dev/shm", &shm) == 0) {
    w.Varint(f::kShmKnown, 1);
    w.Varint(f::kShmSize, static_cast<uint64_t>(shm.f_blocks) * shm.f_frsize);
    w.Varint(f::kShmFree, static_cast<uint64_t>(shm.f_bavail) * shm.f_frsize);
  }
  struct rlimit memlock;
  if (getrlimit(RLIMIT_MEMLOCK, &memlock) == 0) {
    w.Varint(f::kMemlockSoft, memlock.rlim_cur == RLIM_INFINITY ? UINT64_MAX : memlock.rlim_cur);
    w.Varint(f::kMemlockHard, memlock.rlim_max == RLIM_INFINITY ? UINT64_MAX : memlock.rlim_max);
  }
  char line[256];
  if (FirstLine("/proc/self/cgroup", line, sizeof(line))) w.String(f::kCgroup, line);
  const char* container = "";
  if (access("/.dockerenv", F_OK) == 0)
    container = "docker";
  else if (access("/run/.containerenv", F_OK) == 0)
    container = "podman";
  else if (getenv("KUBERNETES_SERVICE_HOST") != nullptr)
    container = "kubernetes";
  else if (const char* c = getenv("container"))
    container = c;
  if (container[0] != '\0') w.String(f::kContainer, container);

  WriteInterfaces(w);
  WriteEnvironment(w);
  r.Append(Region::kPinned);
}

}  // namespace ncclwatch::shim

#include "core/inventory.h"

#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <link.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
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

uint32_t g_inventory_done = 0;       // FirstForThisFile
uint32_t g_load_inventory_done = 0;  // the same, for RecordLoadInventory

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

// The command line, as the Inventory message says: /proc/self/cmdline's
// NULs as blanks, credentials redacted, cut to 2 KiB.
void WriteCommandLine(wire::WireWriter& w) {
  const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char raw[4096];
  size_t n = 0;
  for (ssize_t got = 1; got > 0 && n < sizeof(raw);) {
    got = read(fd, raw + n, sizeof(raw) - n);
    if (got > 0) n += static_cast<size_t>(got);
  }
  close(fd);
  while (n > 0 && raw[n - 1] == '\0') --n;
  if (n == 0) return;
  for (size_t i = 0; i < n; ++i)
    if (raw[i] == '\0') raw[i] = ' ';
  char line[2048];
  const size_t len = RedactValue(raw, n, line, sizeof(line));
  if (w.remaining() < len + 16) return;
  w.Bytes(f::kCommandLine, line, len);
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
  } const kKnown[] = {{"libtorch_cuda", "pytorch"},
                      {"libtorch.so", "pytorch"},
                      {"libc10.so", "pytorch"},
                      // what `import torch` loads first, and NCCL with it
                      {"libtorch_global_deps", "pytorch"},
                      {"libtensorflow_framework", "tensorflow"},
                      {"xla_extension", "jax"},
                      {"libjax", "jax"},
                      {"libpaddle", "paddlepaddle"},
                      {"libmxnet", "mxnet"}};
  for (const auto& k : kKnown) {
    if (strncmp(base, k.prefix, strlen(k.prefix)) == 0) {
      fw->name = k.name;
      if (strlen(path) < sizeof(fw->path)) strcpy(fw->path, path);
      return 1;
    }
  }
  return 0;
}

// The value of `name = '...'` (or "...") on a line of its own in a Python
// source, or nullptr: `__version__ = '2.5.1'`, not the '__version__' an
// `__all__ = [...]` line lists first.
const char* PythonStringAssignment(const char* text, const char* name, int* len) {
  const size_t n = strlen(name);
  for (const char* line = text; line != nullptr && *line != '\0';) {
    const char* next = strchr(line, '\n');
    if (strncmp(line, name, n) == 0) {
      const char* p = line + n;
      while (*p == ' ' || *p == '\t') ++p;
      if (*p == ':') {  // an annotation: `__version__: str = '...'`
        while (*p != '\0' && *p != '=' && *p != '\n') ++p;
      }
      if (*p == '=') {
        ++p;
        while (*p == ' ' || *p == '\t') ++p;
        if (*p == '\'' || *p == '"') {
          const char* end = strchr(p + 1, *p);
          if (end != nullptr && (next == nullptr || end < next) && end - p - 1 <= 64) {
            *len = static_cast<int>(end - p - 1);
            return p + 1;
          }
        }
      }
    }
    line = next != nullptr ? next + 1 : nullptr;
  }
  return nullptr;
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
  int len = 0;
  const char* v = PythonStringAssignment(text, "__version__", &len);
  if (v == nullptr || len == 0) return;
  snprintf(out, n, "%s %.*s", fw.name, len, v);
}

// ------------------------------------------------------------ P2P path
//
// What NVIDIA's troubleshooting guide checks when P2P between GPUs hangs or
// crawls: whether the PCIe bridges between them have ACS redirection on
// (peer traffic then goes up to the root complex, or is blocked by the
// IOMMU), the GPUs' IOMMU groups, and NVSwitches. Read from sysfs only:
// the bridges' extended config space (ACS lives there) needs CAP_SYS_ADMIN,
// so an unprivileged process records the ACS state as unknown.

constexpr int kMaxGpus = 32;
constexpr int kMaxBridges = 8;

// sysfs, or the folder a test points NCCLWATCH_TEST_SYSFS at.
const char* SysfsRoot() {
  const char* t = getenv("NCCLWATCH_TEST_SYSFS");
  return t != nullptr && t[0] != '\0' ? t : "/sys";
}

// A hexadecimal sysfs attribute ("0x10de\n").
bool HexAttribute(const char* dir, const char* name, unsigned long* out) {
  char path[512], line[64];
  if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= static_cast<int>(sizeof(path)))
    return false;
  if (!FirstLine(path, line, sizeof(line))) return false;
  char* end = nullptr;
  *out = strtoul(line, &end, 16);
  return end != line;
}

bool IsBdf(const char* s) {  // "0000:18:00.0"
  return strlen(s) == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.';
}

// The ACS control word of the PCI function whose sysfs folder is `dir`:
// -1 when its extended config space cannot be read, -2 without ACS.
int AcsControl(const char* dir) {
  char path[512];
  if (snprintf(path, sizeof(path), "%s/config", dir) >= static_cast<int>(sizeof(path))) return -1;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  unsigned char config[4096];
  const ssize_t got = pread(fd, config, sizeof(config), 0);
  close(fd);
  if (got < 0x104) return -1;
  int at = 0x100;
  for (int hops = 0; hops < 64 && at >= 0x100 && at + 8 <= got; ++hops) {
    const uint32_t header = static_cast<uint32_t>(config[at]) | config[at + 1] << 8 |
                            config[at + 2] << 16 | static_cast<uint32_t>(config[at + 3]) << 24;
    if (header == 0 || header == 0xffffffffu) return -2;
    if ((header & 0xffff) == 0x000d) return config[at + 6] | config[at + 7] << 8;  // ACS
    at = static_cast<int>(header >> 20) & 0xffc;
  }
  return -2;
}

void WriteGpu(wire::WireWriter& w, const char* root, const char* bdf) {
  char dir[512], link[600], target[1024];
  if (snprintf(dir, sizeof(dir), "%s/bus/pci/devices/%s", root, bdf) >=
      static_cast<int>(sizeof(dir)))
    return;
  const size_t at = w.BeginMessage(f::kGpus);
  w.String(f::gpu::kBdf, bdf);
  int group = -1;
  const bool fits =
      snprintf(link, sizeof(link), "%s/iommu_group", dir) < static_cast<int>(sizeof(link));
  const ssize_t n = fits ? readlink(link, target, sizeof(target) - 1) : -1;
  if (n > 0) {
    target[n] = '\0';
    const char* base = strrchr(target, '/');
    group = atoi(base != nullptr ? base + 1 : target);
  }
  w.Sint(f::gpu::kIommuGroup, group);
  // The bridges above it: the PCI functions its sysfs path goes through,
  // nearest first.
  if (realpath(dir, target) != nullptr) {
    char* end = strrchr(target, '/');
    int bridges = 0;
    while (end != nullptr && bridges < kMaxBridges) {
      *end = '\0';
      const char* name = strrchr(target, '/');
      if (name == nullptr || !IsBdf(name + 1)) break;
      char bridge_dir[512];
      if (snprintf(bridge_dir, sizeof(bridge_dir), "%s/bus/pci/devices/%s", root, name + 1) >=
          static_cast<int>(sizeof(bridge_dir)))
        break;
      const size_t b = w.BeginMessage(f::gpu::kBridges);
      w.String(f::pci_bridge::kBdf, name + 1);
      w.Sint(f::pci_bridge::kAcsCtrl, AcsControl(bridge_dir));
      w.EndMessage(b);
      ++bridges;
      end = strrchr(target, '/');
    }
  }
  w.EndMessage(at);
}

void WriteP2pPath(wire::WireWriter& w) {
  const char* root = SysfsRoot();
  char path[512];
  if (snprintf(path, sizeof(path), "%s/class/iommu", root) >= static_cast<int>(sizeof(path)))
    return;
  if (DIR* d = opendir(path)) {
    bool any = false;
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') any = true;
    closedir(d);
    if (any) w.Varint(f::kIommuEnabled, 1);
  }
  if (snprintf(path, sizeof(path), "%s/bus/pci/devices", root) >= static_cast<int>(sizeof(path)))
    return;
  DIR* d = opendir(path);
  if (d == nullptr) return;
  int gpus = 0;
  uint32_t nvswitches = 0;
  while (dirent* e = readdir(d)) {
    if (!IsBdf(e->d_name)) continue;
    char dir[512];
    if (snprintf(dir, sizeof(dir), "%s/%s", path, e->d_name) >= static_cast<int>(sizeof(dir)))
      continue;
    unsigned long vendor = 0, klass = 0;
    if (!HexAttribute(dir, "vendor", &vendor) || vendor != 0x10de) continue;
    if (!HexAttribute(dir, "class", &klass)) continue;
    if ((klass >> 8) == 0x0680) {
      ++nvswitches;
    } else if (((klass >> 8) == 0x0302 || (klass >> 8) == 0x0300) && gpus < kMaxGpus &&
               w.remaining() > 400) {
      WriteGpu(w, root, e->d_name);
      ++gpus;
    }
  }
  closedir(d);
  if (nvswitches != 0) w.Varint(f::kNvswitches, nvswitches);
}

}  // namespace

namespace {

void WriteInventory(const LoadedVersions& v, bool at_load) {
  LargeRecordBuilder r(fields::record::kInventory);
  wire::WireWriter& w = r.w();
  w.Sint(f::kNcclVersion, v.nccl);
  if (v.nccl_path != nullptr && v.nccl_path[0] != '\0') w.String(f::kNcclPath, v.nccl_path);
  w.Sint(f::kCudaDriverVersion, v.cuda_driver);
  w.Sint(f::kCudaRuntimeVersion, v.cuda_runtime);
  if (at_load) w.Varint(f::kAtLoad, 1);

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
  WriteCommandLine(w);
  WriteP2pPath(w);
  r.Append(Region::kPinned);
}

}  // namespace

void RecordInventoryOnce(const LoadedVersions& v) {
  if (!FirstForThisFile(&g_inventory_done)) return;
  WriteInventory(v, false);
}

void RecordLoadInventory(const char* nccl_path) {
  if (!FirstForThisFile(&g_load_inventory_done)) return;
  LoadedVersions v;
  v.nccl_path = nccl_path;
  WriteInventory(v, true);
}

}  // namespace ncclwatch::shim

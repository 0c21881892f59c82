#include "util/pseudo_file_system.h"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cstdint>

namespace ncclwatch::decoder {
namespace {

struct Kind {
  uint64_t magic;
  const char* name;
};

// From <linux/magic.h>; the last few as numbers, for older headers.
constexpr Kind kPseudo[] = {
    {PROC_SUPER_MAGIC, "proc"}, {SYSFS_MAGIC, "sysfs"},           {DEBUGFS_MAGIC, "debugfs"},
    {0x74726163, "tracefs"},    {SECURITYFS_MAGIC, "securityfs"}, {CGROUP_SUPER_MAGIC, "cgroup"},
    {0x63677270, "cgroup2"},    {0x62656570, "configfs"},         {0xcafe4a11, "bpf"},
    {0x6165676C, "pstore"},     {0xde5e81e4, "efivarfs"},         {DEVPTS_SUPER_MAGIC, "devpts"},
    {0xf97cff8c, "selinuxfs"},  {0x65735543, "fusectl"},          {0x42494e4d, "binfmt_misc"},
    {0x6e736673, "nsfs"},
};

}  // namespace

const char* PseudoFileSystem(int fd) {
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0) return nullptr;
  for (const Kind& k : kPseudo)
    if (static_cast<uint64_t>(static_cast<uint32_t>(fs.f_type)) == k.magic) return k.name;
  return nullptr;
}

}  // namespace ncclwatch::decoder

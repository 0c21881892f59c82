// The inventory: once per process, when it first creates an NCCL id or
// communicator, what a person debugging an init failure would collect by
// hand: the launcher's and NCCL's environment (allow-listed, secrets never),
// the NCCL, CUDA driver and runtime versions actually loaded, the framework,
// every network interface with its flags and addresses, /dev/shm's size and
// free space, RLIMIT_MEMLOCK, the cgroup and container; and the P2P hardware
// path from sysfs: each NVIDIA GPU's IOMMU group and the PCIe bridges above
// it with their ACS control word (extended config space: readable with
// CAP_SYS_ADMIN, else recorded as unknown), whether an IOMMU is on, how many
// NVSwitches the host has. (A test points NCCLWATCH_TEST_SYSFS at a crafted
// tree instead of /sys.)
//
// Not on the hot path: it reads files and asks the kernel (getifaddrs,
// statvfs, getrlimit, opendir), and runs once inside the first NCCL init
// call, and once when the shim finds NCCL loaded (core/tracer.h).

#ifndef NCCLWATCH_SHIM_CORE_INVENTORY_H_
#define NCCLWATCH_SHIM_CORE_INVENTORY_H_

namespace ncclwatch::shim {

struct LoadedVersions {
  int nccl = 0;  // ncclGetVersion
  const char* nccl_path = nullptr;
  int cuda_driver = 0;
  int cuda_runtime = 0;
};

// Writes the Inventory record the first time it is called; later calls do
// nothing.
void RecordInventoryOnce(const LoadedVersions& versions);

// Writes the inventory as it is when NCCL is found loaded, before any NCCL
// call (Inventory.at_load: the versions are not asked; `nccl_path`, the NCCL
// library found, may be null). RecordInventoryOnce writes it again, whole,
// at the first NCCL init call. Once per trace file.
void RecordLoadInventory(const char* nccl_path);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_INVENTORY_H_

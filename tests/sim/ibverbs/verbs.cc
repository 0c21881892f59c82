// libibverbs.so.1 of the simulator: one HCA when NCCLSIM_IB_HCA names it,
// none otherwise. Registering memory pins it for real (mlock), as
// ibv_reg_mr pins it through the kernel's verbs driver: a real
// RLIMIT_MEMLOCK (without CAP_IPC_LOCK) refuses it with ENOMEM, as it
// refuses ibv_reg_mr. Symbols carry the verbs library's version IBVERBS_1.1,
// which NCCL asks dlvsym for.

#include "ibverbs/verbs.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

extern "C" {

struct ibv_device** ibv_get_device_list(int* num_devices) {
  const char* hca = std::getenv("NCCLSIM_IB_HCA");
  const bool one = hca != nullptr && *hca != '\0';
  auto** list = static_cast<struct ibv_device**>(std::calloc(2, sizeof(struct ibv_device*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  if (one) {
    list[0] = static_cast<struct ibv_device*>(std::calloc(1, sizeof(struct ibv_device)));
    std::strncpy(list[0]->name, hca, sizeof(list[0]->name) - 1);
  }
  if (num_devices != nullptr) *num_devices = one ? 1 : 0;
  return list;
}

void ibv_free_device_list(struct ibv_device** list) {
  if (list == nullptr) return;
  for (struct ibv_device** d = list; *d != nullptr; ++d) std::free(*d);
  std::free(list);
}

const char* ibv_get_device_name(struct ibv_device* device) {
  return device ? device->name : nullptr;
}

struct ibv_context* ibv_open_device(struct ibv_device* device) {
  if (device == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  auto* ctx = new (std::nothrow) ibv_context{device};
  if (ctx == nullptr) errno = ENOMEM;
  return ctx;
}

int ibv_close_device(struct ibv_context* context) {
  delete context;
  return 0;
}

struct ibv_pd* ibv_alloc_pd(struct ibv_context* context) {
  auto* pd = new (std::nothrow) ibv_pd{context};
  if (pd == nullptr) errno = ENOMEM;
  return pd;
}

int ibv_dealloc_pd(struct ibv_pd* pd) {
  delete pd;
  return 0;
}

struct ibv_mr* ibv_reg_mr(struct ibv_pd* pd, void* addr, size_t length, int) {
  if (pd == nullptr || addr == nullptr || length == 0) {
    errno = EINVAL;
    return nullptr;
  }
  if (mlock(addr, length) != 0) return nullptr;  // errno: ENOMEM over RLIMIT_MEMLOCK, EPERM at 0
  static uint32_t next_key = 1;
  const uint32_t key = __atomic_fetch_add(&next_key, 1u, __ATOMIC_RELAXED);
  auto* mr = new (std::nothrow) ibv_mr{pd->context, pd, addr, length, key, key, key};
  if (mr == nullptr) {
    munlock(addr, length);
    errno = ENOMEM;
  }
  return mr;
}

int ibv_dereg_mr(struct ibv_mr* mr) {
  if (mr == nullptr) return EINVAL;
  munlock(mr->addr, mr->length);
  delete mr;
  return 0;
}

}  // extern "C"

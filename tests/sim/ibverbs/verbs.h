// The part of the verbs API (libibverbs) the simulator provides: the
// functions NCCL's IB transport looks up with dlvsym at init, with their
// public signatures. The structures are the simulator's own and opaque to
// callers beyond the fields named here.

#ifndef NCCLWATCH_TESTS_SIM_IBVERBS_VERBS_H_
#define NCCLWATCH_TESTS_SIM_IBVERBS_VERBS_H_

#include <cstddef>
#include <cstdint>

extern "C" {

struct ibv_device {
  char name[64];
};
struct ibv_context {
  struct ibv_device* device;
};
struct ibv_pd {
  struct ibv_context* context;
};
struct ibv_mr {
  struct ibv_context* context;
  struct ibv_pd* pd;
  void* addr;
  size_t length;
  uint32_t handle;
  uint32_t lkey;
  uint32_t rkey;
};

struct ibv_device** ibv_get_device_list(int* num_devices);
void ibv_free_device_list(struct ibv_device** list);
const char* ibv_get_device_name(struct ibv_device* device);
struct ibv_context* ibv_open_device(struct ibv_device* device);
int ibv_close_device(struct ibv_context* context);
struct ibv_pd* ibv_alloc_pd(struct ibv_context* context);
int ibv_dealloc_pd(struct ibv_pd* pd);
struct ibv_mr* ibv_reg_mr(struct ibv_pd* pd, void* addr, size_t length, int access);
int ibv_dereg_mr(struct ibv_mr* mr);

}  // extern "C"

#endif  // NCCLWATCH_TESTS_SIM_IBVERBS_VERBS_H_

// HOT PATH (Find, FindOrAdopt, Claim): no allocation, no lock, no system
// call, async-signal-safe. Register maps memory for point-to-point counters.

#include "core/comm_registry.h"

#include <sys/mman.h>
#include <unistd.h>

#include "core/tracer.h"

namespace ncclwatch::shim {

CommRegistry g_comms;

namespace {

size_t Slot(uintptr_t key) {
  return static_cast<size_t>(((key >> 4) * 0x9e3779b97f4a7c15ull) >> 52) &
         (CommRegistry::kEntries - 1);
}

}  // namespace

CommState* CommRegistry::Find(const void* handle) {
  const uintptr_t key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return nullptr;
  for (size_t i = 0, s = Slot(key); i < kEntries; ++i, s = (s + 1) & (kEntries - 1)) {
    const uintptr_t k = __atomic_load_n(&entries_[s].handle, __ATOMIC_ACQUIRE);
    if (k == 0) return nullptr;
    if (k == key)
      return __atomic_load_n(&entries_[s].ready, __ATOMIC_ACQUIRE) ? &entries_[s] : nullptr;
  }
  return nullptr;
}

CommState* CommRegistry::Claim(uintptr_t key, bool* fresh) {
  for (size_t i = 0, s = Slot(key); i < kEntries; ++i, s = (s + 1) & (kEntries - 1)) {
    uintptr_t k = __atomic_load_n(&entries_[s].handle, __ATOMIC_ACQUIRE);
    if (k == key) {
      *fresh = false;
      return &entries_[s];
    }
    if (k == 0 && __atomic_compare_exchange_n(&entries_[s].handle, &k, key, false, __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE)) {
      *fresh = true;
      return &entries_[s];
    }
    if (k == key) {  // lost the race to a claim of the same handle
      *fresh = false;
      return &entries_[s];
    }
  }
  return nullptr;  // table full: calls on this communicator go unnumbered
}

CommState* CommRegistry::FindOrAdopt(const void* handle) {
  if (CommState* c = Find(handle)) return c;
  const uintptr_t key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return nullptr;
  bool fresh = false;
  CommState* c = Claim(key, &fresh);
  if (c == nullptr) return nullptr;
  if (fresh) {
    const uint64_t pid = g_pid;  // captured at start-up: getpid() is a system call
    c->id = HashBytes(&key, sizeof(key), HashBytes(&pid, sizeof(pid)));
    c->rank = -1;
    c->nranks = -1;
    __atomic_store_n(&c->ready, 1u, __ATOMIC_RELEASE);
  } else {
    // Another thread is completing this entry.
    while (!__atomic_load_n(&c->ready, __ATOMIC_ACQUIRE)) {
    }
  }
  return c;
}

CommState* CommRegistry::Register(const void* handle, uint64_t id, int rank, int nranks) {
  const uintptr_t key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return nullptr;
  bool fresh = false;
  CommState* c = Claim(key, &fresh);
  if (c == nullptr) return nullptr;
  __atomic_store_n(&c->ready, 0u, __ATOMIC_RELEASE);
  uint64_t* p2p = nullptr;
  if (nranks > 0) {
    void* m = mmap(nullptr, sizeof(uint64_t) * 2 * static_cast<size_t>(nranks),
                   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) p2p = static_cast<uint64_t*>(m);
  }
  // A reused address keeps its old counters' memory mapped: it may still be read.
  c->id = id;
  c->rank = rank;
  c->nranks = nranks;
  c->last_async = 0;
  __atomic_store_n(&c->completion, nullptr, __ATOMIC_RELEASE);
  __atomic_store_n(&c->next_seq, 0ull, __ATOMIC_RELAXED);
  __atomic_store_n(&c->split_count, 0u, __ATOMIC_RELAXED);
  __atomic_store_n(&c->p2p_seq, p2p, __ATOMIC_RELAXED);
  __atomic_store_n(&c->ready, 1u, __ATOMIC_RELEASE);
  return c;
}

}  // namespace ncclwatch::shim

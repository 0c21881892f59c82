// HOT PATH (Find, FindOrAdopt, and Claim without mapping): no allocation, no
// lock, no system call, no waiting, async-signal-safe. Register and Remove
// map and unmap memory (tables, point-to-point counters).

#include "core/comm_registry.h"

#include <sys/mman.h>
#include <unistd.h>

#include "core/tracer.h"

namespace ncclwatch::shim {

CommRegistry g_comms;

namespace {

constexpr size_t kMask = CommRegistry::kEntries - 1;
constexpr size_t kTableBytes = sizeof(CommState) * CommRegistry::kEntries;

size_t Slot(uintptr_t key) {
  return static_cast<size_t>(((key >> 4) * 0x9e3779b97f4a7c15ull) >> 52) & kMask;
}

// Per peer: sends, receives, one-sided signals sent and signals awaited.
size_t P2pBytes(int nranks) { return sizeof(uint64_t) * 4 * static_cast<size_t>(nranks); }

}  // namespace

CommState* CommRegistry::TableAt(size_t t) const {
  if (t == 0) return const_cast<CommState*>(first_);
  return t < kTables ? __atomic_load_n(&more_[t], __ATOMIC_ACQUIRE) : nullptr;
}

CommState* CommRegistry::Find(const void* handle) {
  const uintptr_t key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0 || key == kRemoved) return nullptr;
  for (size_t t = 0; t < kTables; ++t) {
    CommState* table = TableAt(t);
    if (table == nullptr) return nullptr;
    for (size_t i = 0, s = Slot(key); i < kEntries; ++i, s = (s + 1) & kMask) {
      const uintptr_t k = __atomic_load_n(&table[s].handle, __ATOMIC_ACQUIRE);
      if (k == 0) return nullptr;  // never used: the key is nowhere further
      if (k == key) return __atomic_load_n(&table[s].ready, __ATOMIC_ACQUIRE) ? &table[s] : nullptr;
    }
  }
  return nullptr;
}

CommState* CommRegistry::Claim(uintptr_t key, bool* fresh, bool may_map) {
  *fresh = false;
  // A claim that loses its entry to another handle's looks again: a few
  // times at most (each loss is another claim that succeeded).
  for (int attempt = 0; attempt < 64; ++attempt) {
    // The key's entry, ready or not, wherever it is: a freed entry in an
    // earlier table must not give it a second one.
    for (size_t t = 0; t < kTables; ++t) {
      CommState* table = TableAt(t);
      if (table == nullptr) break;
      bool end = false;
      for (size_t i = 0, s = Slot(key); i < kEntries; ++i, s = (s + 1) & kMask) {
        const uintptr_t k = __atomic_load_n(&table[s].handle, __ATOMIC_ACQUIRE);
        if (k == key) return &table[s];
        if (k == 0) {
          end = true;
          break;
        }
      }
      if (end) break;
    }
    // Then the first free entry on the key's path (a freed one, or the never
    // used one that ends the path), table by table.
    bool lost = false;
    for (size_t t = 0; t < kTables && !lost; ++t) {
      CommState* table = TableAt(t);
      if (table == nullptr) {
        if (!may_map) return nullptr;  // the hot path maps nothing
        void* m =
            mmap(nullptr, kTableBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return nullptr;
        CommState* expected = nullptr;
        if (!__atomic_compare_exchange_n(&more_[t], &expected, static_cast<CommState*>(m), false,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
          munmap(m, kTableBytes);  // another thread mapped it first
        }
        table = TableAt(t);
      }
      CommState* free_entry = nullptr;
      uintptr_t free_was = 0;
      for (size_t i = 0, s = Slot(key); i < kEntries; ++i, s = (s + 1) & kMask) {
        const uintptr_t k = __atomic_load_n(&table[s].handle, __ATOMIC_ACQUIRE);
        if (k == key) return &table[s];  // claimed meanwhile by another thread
        if (k == kRemoved) {
          free_entry = &table[s];
          free_was = kRemoved;
          break;
        }
        if (k == 0) {
          free_entry = &table[s];
          break;
        }
      }
      if (free_entry == nullptr) continue;  // full of live ones: the next table
      uintptr_t expected = free_was;
      if (__atomic_compare_exchange_n(&free_entry->handle, &expected, key, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
        *fresh = true;
        return free_entry;
      }
      if (expected == key) return free_entry;  // lost the race to a claim of the same handle
      lost = true;                             // another handle took it: look again
    }
    if (!lost) return nullptr;  // every table full
  }
  return nullptr;
}

CommState* CommRegistry::FindOrAdopt(const void* handle) {
  if (CommState* c = Find(handle)) return c;
  const uintptr_t key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0 || key == kRemoved) return nullptr;
  bool fresh = false;
  CommState* c = Claim(key, &fresh, false);
  if (c == nullptr) return nullptr;
  if (!fresh) {
    // Another thread (or the code a signal handler interrupted) is
    // completing this entry: this call goes unnumbered rather than wait.
    return __atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) ? c : nullptr;
  }
  const uint64_t pid = g_pid;  // captured at start-up: getpid() is a system call
  c->id = HashBytes(&key, sizeof(key), HashBytes(&pid, sizeof(pid)));
  c->rank = -1;
  c->nranks = -1;
  c->last_async = 0;
  __atomic_store_n(&c->completion, nullptr, __ATOMIC_RELAXED);
  __atomic_store_n(&c->next_seq, 0ull, __ATOMIC_RELAXED);
  __atomic_store_n(&c->split_count, 0u, __ATOMIC_RELAXED);
  __atomic_store_n(&c->p2p_seq, static_cast<uint64_t*>(nullptr), __ATOMIC_RELAXED);
  __atomic_store_n(&c->ready, 1u, __ATOMIC_RELEASE);
  __atomic_add_fetch(&adopted_, 1u, __ATOMIC_RELEASE);
  return c;
}

CommState* CommRegistry::Register(const void* handle, uint64_t id, int rank, int nranks) {
  const uintptr_t key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0 || key == kRemoved) return nullptr;
  bool fresh = false;
  CommState* c = Claim(key, &fresh, true);
  if (c == nullptr) return nullptr;
  __atomic_store_n(&c->ready, 0u, __ATOMIC_RELEASE);
  uint64_t* p2p = nullptr;
  if (nranks > 0) {
    void* m =
        mmap(nullptr, P2pBytes(nranks), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) p2p = static_cast<uint64_t*>(m);
  }
  // A reused address whose communicator was not seen destroyed keeps its
  // old counters' memory mapped: a thread may still be reading them.
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

void CommRegistry::Remove(const void* handle) {
  CommState* c = Find(handle);
  if (c == nullptr) return;
  __atomic_store_n(&c->ready, 0u, __ATOMIC_RELEASE);
  uint64_t* p2p =
      __atomic_exchange_n(&c->p2p_seq, static_cast<uint64_t*>(nullptr), __ATOMIC_ACQ_REL);
  // NCCL forbids using a communicator while it is destroyed, so nothing
  // reads these counters any more.
  if (p2p != nullptr && c->nranks > 0) munmap(p2p, P2pBytes(c->nranks));
  __atomic_store_n(&c->completion, nullptr, __ATOMIC_RELEASE);
  __atomic_store_n(&c->handle, kRemoved, __ATOMIC_RELEASE);
}

size_t CommRegistry::LiveEntries() const {
  size_t n = 0;
  for (size_t t = 0; t < kTables; ++t) {
    const CommState* table = TableAt(t);
    if (table == nullptr) break;
    for (size_t s = 0; s < kEntries; ++s) {
      const uintptr_t k = __atomic_load_n(&table[s].handle, __ATOMIC_ACQUIRE);
      n += k != 0 && k != kRemoved;
    }
  }
  return n;
}

}  // namespace ncclwatch::shim

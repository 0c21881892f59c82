// CommRegistry: what the shim knows about each ncclComm_t of the process.
//
// HOT PATH: Find() and FindOrAdopt() allocate nothing, take no lock, make no
// system call, never wait for another thread and are async-signal-safe.
// Register() runs when a communicator is created (after the init call
// returned) and Remove() when it is destroyed; both may map or unmap memory.
//
// Tables of 4096 entries, open addressing by handle (linear probing): the
// first in .bss, more mapped by Register when the ones before are full of
// live communicators (up to kTables of them). An entry never moves, so a
// pointer to one stays valid for the life of the process. Per entry:
//
//   id         the communicator's identity, the same on all its ranks
//   next_seq   the number the next collective gets (as NCCL matches them)
//   p2p_seq    per peer, the number the next send / receive gets, and the
//              one-sided signals sent to it and awaited from it (NCCL 2.29)
//   completion how its GPU completion is followed (core/completion.h)
//
// Entries are freed (Remove, after ncclCommDestroy or ncclCommAbort): the
// handle becomes kRemoved, which lookups probe past and claims reuse, so a
// process that makes and destroys communicators forever keeps a table of
// the ones alive. An empty entry (handle 0) is never made again, so a
// lookup stops at the first one it meets: a key goes to a later table only
// when every entry of the earlier ones was live, and stays that way.
//
// Thread-safety: any thread may Find while another Registers or Removes; an
// entry is visible only once complete (its `ready` flag is set with release
// ordering). A lookup that meets an entry another thread is completing (two
// threads adopting one unknown handle at once, or a signal handler that
// interrupted its own thread's adoption) does not wait: it returns nullptr,
// and that one call goes unnumbered. Whoever caches an entry (t_call_cache)
// checks its `ready` and then its `handle`: an entry freed and taken by
// another communicator is not the one a stale cache names.

#ifndef NCCLWATCH_SHIM_CORE_COMM_REGISTRY_H_
#define NCCLWATCH_SHIM_CORE_COMM_REGISTRY_H_

#include <stddef.h>
#include <stdint.h>

namespace ncclwatch::shim {

struct CommState {
  uintptr_t handle;  // the ncclComm_t; 0 = never used, kRemoved = freed
  uint32_t ready;    // 1 once the fields below are set
  uint64_t id;
  int32_t rank;
  int32_t nranks;
  uint64_t next_seq;     // atomic
  uint32_t split_count;  // atomic: ncclCommSplit/Shrink calls made on this comm
  uint64_t* p2p_seq;     // [nranks] sends, [nranks] receives, [nranks] signals sent, [nranks]
                         // signals awaited; nullptr if unknown size
  uint64_t last_async;   // the last (result, async error) recorded for it
  void* completion;      // atomic: its CompletionTrack (core/completion.h), nullptr if untracked
};

class CommRegistry {
 public:
  static constexpr size_t kEntries = 4096;  // per table
  static constexpr size_t kTables = 64;     // so at most 262,144 communicators alive at once
  static constexpr uintptr_t kRemoved = 1;  // the handle of a freed entry

  // The entry of `handle`, or nullptr.
  CommState* Find(const void* handle);

  // Find, or, for a communicator the shim did not see created (made through
  // a path it does not intercept), an entry with an identity local to this
  // process and no point-to-point numbering. nullptr when every table there
  // is is full (no memory is mapped here).
  CommState* FindOrAdopt(const void* handle);

  // How many handles FindOrAdopt adopted: the heartbeat grows a small trace
  // ring for them (core/tracer.h, GrowTraceRingForAdopted), as an init call
  // grows it for a communicator the shim saw made.
  uint32_t Adopted() const { return __atomic_load_n(&adopted_, __ATOMIC_ACQUIRE); }

  // Records a new communicator (or a new one at a reused address). nullptr
  // only when kTables tables are full of live communicators or no memory
  // can be mapped.
  CommState* Register(const void* handle, uint64_t id, int rank, int nranks);

  // Frees `handle`'s entry (its communicator was destroyed or aborted) and
  // its point-to-point counters. The caller has detached its completion.
  void Remove(const void* handle);

  // Entries in use (live, or being completed), for tests.
  size_t LiveEntries() const;

 private:
  CommState* TableAt(size_t t) const;
  CommState* Claim(uintptr_t key, bool* fresh, bool may_map);
  CommState first_[kEntries];
  CommState* more_[kTables];  // [0] unused: first_ is table 0
  uint32_t adopted_;          // atomic (zero: static storage, or value-initialized)
};

extern CommRegistry g_comms;

// FNV-1a over bytes, chained from `h`: how identities are derived.
inline uint64_t HashBytes(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_COMM_REGISTRY_H_

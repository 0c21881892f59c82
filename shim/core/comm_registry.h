// CommRegistry: what the shim knows about each ncclComm_t of the process.
//
// HOT PATH: Find() and FindOrAdopt() allocate nothing, take no lock, make no
// system call and are async-signal-safe. Register() runs when a communicator
// is created (after the init call returned) and may map memory.
//
// A fixed table of 4096 entries in .bss, open addressing by handle. Entries
// are never freed: a new communicator that NCCL happens to allocate at a
// destroyed one's address takes its entry over. Per entry:
//
//   id         the communicator's identity, the same on all its ranks
//   next_seq   the number the next collective gets (as NCCL matches them)
//   p2p_seq    per peer, the number the next send / receive gets
//   completion how its GPU completion is followed (core/completion.h)
//
// Thread-safety: any thread may Find while another Registers; an entry is
// visible only once complete (its `ready` flag is set with release ordering).

#ifndef NCCLWATCH_SHIM_CORE_COMM_REGISTRY_H_
#define NCCLWATCH_SHIM_CORE_COMM_REGISTRY_H_

#include <stddef.h>
#include <stdint.h>

namespace ncclwatch::shim {

struct CommState {
  uintptr_t handle;  // the ncclComm_t; 0 = free entry
  uint32_t ready;    // 1 once the fields below are set
  uint64_t id;
  int32_t rank;
  int32_t nranks;
  uint64_t next_seq;     // atomic
  uint32_t split_count;  // atomic: ncclCommSplit/Shrink calls made on this comm
  uint64_t* p2p_seq;     // [nranks] sends, then [nranks] receives; nullptr if unknown size
  uint64_t last_async;   // the last (result, async error) recorded for it
  void* completion;      // atomic: its CompletionTrack (core/completion.h), nullptr if untracked
};

class CommRegistry {
 public:
  static constexpr size_t kEntries = 4096;

  // The entry of `handle`, or nullptr.
  CommState* Find(const void* handle);

  // Find, or, for a communicator the shim did not see created (made through
  // a path it does not intercept), an entry with an identity local to this
  // process and no point-to-point numbering.
  CommState* FindOrAdopt(const void* handle);

  // Records a new communicator (or a new one at a reused address).
  CommState* Register(const void* handle, uint64_t id, int rank, int nranks);

 private:
  CommState* Claim(uintptr_t key, bool* fresh);
  CommState entries_[kEntries];
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

// TableAllocator: memory for the model's large tables in 2 MiB pages.
//
// A trace of 100,000 collectives fills a 9.6 MB table, and the reference
// signatures of a communicator's collectives take as much again. In 4 KiB
// pages each such table costs ~2,400 page faults the first time it is
// written (the loader reuses a table from one trace to the next, so that is
// once per loader thread), and in a virtual machine a fault costs a few
// microseconds: on an 8-rank job, a fifth of diagnose's time went to them.
// Blocks of 2 MiB or more are therefore mapped on their own, aligned to
// 2 MiB and offered to the kernel's transparent huge pages
// (madvise(MADV_HUGEPAGE); with THP off, or no huge page free, they are
// ordinary pages and nothing is lost). Smaller blocks come from operator new
// as with std::allocator.
//
//   template <typename T> using Table = std::vector<T, TableAllocator<T>>;
//
// Thread-safety: stateless; any thread may allocate and free.

#ifndef NCCLWATCH_DECODER_MODEL_TABLE_ALLOCATOR_H_
#define NCCLWATCH_DECODER_MODEL_TABLE_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <vector>

namespace ncclwatch::decoder {

namespace table_internal {

constexpr size_t kHugePage = size_t{2} << 20;

// `bytes` rounded up to whole huge pages, or 0 below the threshold.
inline size_t MappedBytes(size_t bytes) {
  if (bytes < kHugePage) return 0;
  return (bytes + kHugePage - 1) & ~(kHugePage - 1);
}

inline void* MapHuge(size_t mapped) {
  // Over-map by a page's worth and trim, so the block starts on a 2 MiB
  // boundary (only whole aligned pages can become huge pages).
  void* raw = mmap(nullptr, mapped + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t tail = aligned + mapped;
  const uintptr_t raw_end = start + mapped + kHugePage;
  if (raw_end > tail) munmap(reinterpret_cast<void*>(tail), raw_end - tail);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, mapped, MADV_HUGEPAGE);  // advice: refused is the same as 4 KiB pages
  return p;
}

}  // namespace table_internal

template <typename T>
struct TableAllocator {
  using value_type = T;

  TableAllocator() noexcept = default;
  template <typename U>
  TableAllocator(const TableAllocator<U>&) noexcept {}  // NOLINT: rebinding, as std::allocator

  T* allocate(size_t n) {
    if (n > std::numeric_limits<size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    const size_t mapped = table_internal::MappedBytes(n * sizeof(T));
    if (mapped == 0) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(table_internal::MapHuge(mapped));
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t mapped = table_internal::MappedBytes(n * sizeof(T));
    if (mapped == 0) {
      ::operator delete(p);
      return;
    }
    munmap(p, mapped);
  }

  template <typename U>
  bool operator==(const TableAllocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const TableAllocator<U>&) const noexcept {
    return false;
  }
};

// A table of the model: a vector whose large blocks are huge pages.
template <typename T>
using Table = std::vector<T, TableAllocator<T>>;

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_MODEL_TABLE_ALLOCATOR_H_

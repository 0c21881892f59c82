// MappedFile: a file mapped read-only, whose pages stay readable when the
// file shrinks under the reader.
//
// The decoder reads trace files where they lie in the page cache instead of
// copying them out with pread (the copy was a third of diagnose's time). A
// mapping has one hazard a read does not: when the file shrinks (a copy
// over it, a hostile writer), a page past its new end raises SIGBUS. A
// trace is hostile input, and a crash is never the answer to it, so every
// MappedFile is registered in a fixed table, and the process's SIGBUS
// handler (installed with the first mapping, chained to whatever handler was
// there before) answers a fault inside a registered mapping by mapping
// zeros over the rest of it and returning: the faulting read, and every
// read after it, sees zero bytes, which no check of the reader takes for a
// record (a slot's stamp of 0 is never a written slot's), and shrank()
// says it happened. A SIGBUS anywhere else goes to the handler that was
// there before, or kills the process as it would have without us.
//
//   auto m = MappedFile::Map(fd, bytes);   // nullptr: read with pread instead
//   ... m->data()[i] ...                  // never faults
//   if (m->shrank()) ...                  // some of it read as zeros
//
// Thread-safety: any thread may map, read and unmap its own MappedFiles at
// once with others; the handler reads the table without locks (an entry is
// published with release ordering and retired before the mapping goes).
// At most kMaxMappings are mapped at a time; Map returns nullptr beyond.

#ifndef NCCLWATCH_DECODER_TRACE_MAPPED_FILE_H_
#define NCCLWATCH_DECODER_TRACE_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ncclwatch::decoder {

class MappedFile {
 public:
  static constexpr size_t kMaxMappings = 256;

  // The first `bytes` bytes of `fd` (open for reading), mapped shared and
  // read-only; nullptr when they cannot be (no room in the table, mmap
  // refused, bytes 0).
  static std::unique_ptr<MappedFile> Map(int fd, uint64_t bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Whether a read found the file shorter than the mapping: from that
  // page on, the mapping reads as zeros.
  bool shrank() const;

  // Paging for a reader that goes through the file once: Populate maps the
  // pages of [offset, offset + len) in one call (MADV_POPULATE_READ, where
  // the kernel has it), not one fault each; Release unmaps those wholly
  // inside it (MADV_DONTNEED: the page cache keeps them, and a later read
  // maps them again), so that what is resident is what is being read, not
  // the file. Neither changes what a read sees; a failure (a file shorter
  // than the range: no SIGBUS, an error) is ignored. A mapping of at most
  // kReleaseAbove bytes keeps its pages until it is unmapped: each release
  // flushes the TLB of every core the process's threads run on (an
  // interrupt to each), which for a small file costs more than its pages
  // are worth (a 1,024-rank job of default 16 MiB rings read with twice the
  // system time).
  static constexpr uint64_t kReleaseAbove = uint64_t{64} << 20;
  void Populate(uint64_t offset, uint64_t len) const;
  void Release(uint64_t offset, uint64_t len) const;

 private:
  MappedFile(const uint8_t* data, uint64_t size, size_t entry)
      : data_(data), size_(size), entry_(entry) {}

  const uint8_t* data_;
  uint64_t size_;
  size_t entry_;  // its place in the handler's table
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_TRACE_MAPPED_FILE_H_

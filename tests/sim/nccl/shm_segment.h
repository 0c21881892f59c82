// Shared-memory segments in /dev/shm, made the way NCCL makes them: the
// creator picks a name with mkstemp("/dev/shm/nccl-XXXXXX"), extends the file
// with fallocate(2) to the size asked plus a 4-byte reference count, and maps
// it; each attacher maps it and decrements the count, and the last one unlinks
// the file. A /dev/shm too small for the job therefore fails at fallocate with
// ENOSPC, and the WARN lines name the file, the size and the errno:
//
//   NCCL WARN Error: failed to extend /dev/shm/nccl-a1B2c3 to 9637892 bytes, error: No space left
//   on device (28) NCCL WARN Error while creating shared memory segment /dev/shm/nccl-a1B2c3 (size
//   9637888), error: No space left on device (28)
//
// (NCCL 2.28 calls fallocate(2); releases before 2.19 called posix_fallocate(3).
// Both reach the same system call on tmpfs.)
//
// Thread-safety: a segment is created, attached and closed by one thread.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_SHM_SEGMENT_H_
#define NCCLWATCH_TESTS_SIM_NCCL_SHM_SEGMENT_H_

#include <nccl.h>

#include <cstddef>
#include <string>

namespace ncclsim::nccl {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment() { Close(); }
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates a segment of `size` usable bytes for `attachers` other processes.
  ncclResult_t Create(size_t size, int attachers);
  // Maps a segment another rank created.
  ncclResult_t Attach(const std::string& path, size_t size);
  void Close();

  char* data() const { return data_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  char* data_ = nullptr;
  size_t mapped_ = 0;
  int fd_ = -1;
  bool unlink_on_close_ = false;
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_SHM_SEGMENT_H_

#include "nccl/shm_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "nccl/debug.h"

namespace ncclsim::nccl {

ncclResult_t ShmSegment::Create(size_t size, int attachers) {
  Close();
  const size_t real = size + sizeof(int);  // the reference count lives after the data
  char path[] = "/dev/shm/nccl-XXXXXX";
  int fd = -1;
  int err = 0;
  for (;;) {
    fd = mkstemp(path);
    if (fd >= 0 || errno != EINTR) break;
    INFO(kAll, "mkstemp: Failed to create %s, error: %s (%d) - retrying", path, strerror(errno),
         errno);
  }
  if (fd < 0) {
    err = errno;
    WARN("Error: failed to create shared memory file %s, error %s (%d)", path, strerror(err), err);
  } else {
    for (;;) {
      if (fallocate(fd, 0, 0, static_cast<off_t>(real)) == 0) break;
      if (errno == EINTR) {
        INFO(kAll, "fallocate: Failed to extend %s to %zu bytes, error: %s (%d) - retrying", path,
             real, strerror(errno), errno);
        continue;
      }
      err = errno;
      WARN("Error: failed to extend %s to %zu bytes, error: %s (%d)", path, real, strerror(err),
           err);
      break;
    }
  }
  void* p = MAP_FAILED;
  if (fd >= 0 && err == 0) {
    INFO(kAlloc, "Allocated %zu bytes of shared memory in %s", real, path);
    p = mmap(nullptr, real, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      err = errno;
      WARN("Error: Could not map %s size %zu, error: %s (%d)", path, real, strerror(err), err);
    }
  }
  if (err != 0) {
    WARN("Error while creating shared memory segment %s (size %zu), error: %s (%d)", path, size,
         strerror(err), err);
    if (fd >= 0) {
      close(fd);
      unlink(path);
    }
    return ncclSystemError;
  }
  path_ = path;
  fd_ = fd;
  data_ = static_cast<char*>(p);
  mapped_ = real;
  std::memset(data_, 0, size);
  reinterpret_cast<std::atomic<int>*>(data_ + size)->store(attachers);
  unlink_on_close_ = true;
  return ncclSuccess;
}

ncclResult_t ShmSegment::Attach(const std::string& path, size_t size) {
  Close();
  const size_t real = size + sizeof(int);
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    WARN("Call to open failed: %s", strerror(err));
    WARN("Error while attaching to shared memory segment %s (size %zu), error: %s (%d)",
         path.c_str(), size, strerror(err), err);
    return ncclSystemError;
  }
  void* p = mmap(nullptr, real, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    close(fd);
    WARN("Error: Could not map %s size %zu, error: %s (%d)", path.c_str(), real, strerror(err),
         err);
    WARN("Error while attaching to shared memory segment %s (size %zu), error: %s (%d)",
         path.c_str(), size, strerror(err), err);
    return ncclSystemError;
  }
  path_ = path;
  fd_ = fd;
  data_ = static_cast<char*>(p);
  mapped_ = real;
  if (reinterpret_cast<std::atomic<int>*>(data_ + size)->fetch_sub(1) == 1) {
    // The last attacher removes the name; the mappings stay valid.
    if (unlink(path_.c_str()) != 0) {
      INFO(kAlloc, "unlink shared memory %s failed, error: %s (%d)", path_.c_str(), strerror(errno),
           errno);
    }
  }
  return ncclSuccess;
}

void ShmSegment::Close() {
  if (fd_ >= 0) {
    close(fd_);
    // A creator whose attachers never came (init failed) removes the file.
    if (unlink_on_close_ && mapped_ >= sizeof(int) &&
        reinterpret_cast<std::atomic<int>*>(data_ + mapped_ - sizeof(int))->load() > 0) {
      unlink(path_.c_str());
    }
  }
  if (data_ != nullptr) munmap(data_, mapped_);
  fd_ = -1;
  data_ = nullptr;
  mapped_ = 0;
  unlink_on_close_ = false;
}

}  // namespace ncclsim::nccl

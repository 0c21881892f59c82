// One simulated NCCL connection: a single-producer, single-consumer FIFO of
// NCCL_STEPS (8) slots in memory both ranks map: a /dev/shm segment (the SHM
// transport) or a CUDA IPC buffer (the P2P transport, NCCL_SHM_DISABLE=1).
// The receiver owns the memory, sized like NCCL's shm connection:
//
//   0        4096            +LL (512 KiB)   +LL128 (4.7 MiB)  +Simple (NCCL_BUFFSIZE)
//   +--------+---------------+----------------+-----------------------------+
//   | control| LL buffer     | LL128 buffer   | 8 steps of Simple/8 bytes   |
//   +--------+---------------+----------------+-----------------------------+
//
// so a job needs the /dev/shm space real NCCL needs (9637892 bytes a
// connection by default). Only the Simple steps carry data here; LL and LL128
// are reserved and untouched.
//
// The sender fills slot tail%8 and then publishes it by advancing `tail`
// (release); the receiver reads slots while head < tail (acquire) and frees
// them by advancing `head`. Each slot's metadata names the operation the
// sender is running (OpSignature); a receiver that expects another operation
// leaves the slot alone forever. That is how mismatched collectives hang in
// the simulator, as they do on GPUs.

#ifndef NCCLWATCH_TESTS_SIM_NCCL_FIFO_H_
#define NCCLWATCH_TESTS_SIM_NCCL_FIFO_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ncclsim::nccl {

constexpr int kFifoSteps = 8;                    // NCCL_STEPS
constexpr size_t kConnectionHeaderBytes = 4096;  // sizeof(struct ncclRecvMem) in NCCL 2.28
constexpr size_t kLlBufferBytes = 8 * 512 * kFifoSteps * 16;      // DEFAULT_LL_BUFFSIZE
constexpr size_t kLl128BufferBytes = 120 * 640 * kFifoSteps * 8;  // DEFAULT_LL128_BUFFSIZE

// What a message belongs to; sender and receiver must agree on all of it.
struct OpSignature {
  uint32_t func = 0;  // ncclFunc_t numbering (see ops.h)
  uint32_t datatype = 0;
  uint32_t redop = 0;  // ncclRedOp_t for built-ins, ncclNumOps for PreMulSum ops
  int32_t root = 0;    // root for rooted collectives, 0 otherwise
  uint64_t count = 0;
  bool operator==(const OpSignature& o) const {
    return func == o.func && datatype == o.datatype && redop == o.redop && root == o.root &&
           count == o.count;
  }
  bool operator!=(const OpSignature& o) const { return !(*this == o); }
};

struct StepMeta {
  uint64_t offset;  // of this chunk within the message
  uint64_t bytes;
  OpSignature sig;
  uint64_t message_bytes;  // the whole message's (one-sided: the last chunk carries the signal)
};

struct FifoControl {
  alignas(64) std::atomic<uint64_t> tail;  // written by the sender
  alignas(64) std::atomic<uint64_t> head;  // written by the receiver
  alignas(64) uint64_t step_bytes;         // set by the receiver at creation
  StepMeta steps[kFifoSteps];
};
static_assert(sizeof(FifoControl) <= kConnectionHeaderBytes,
              "control must fit the connection header");
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "cross-process atomics must be lock-free");

inline size_t ConnectionBytes(size_t simple_bytes) {
  return kConnectionHeaderBytes + kLlBufferBytes + kLl128BufferBytes + simple_bytes;
}

// A view of one connection's memory, from either end.
class Fifo {
 public:
  Fifo() = default;
  Fifo(char* base) : ctl_(reinterpret_cast<FifoControl*>(base)), data_(base + ConnectionBytes(0)) {}

  // Receiver, once, on memory it just created.
  void Initialize(size_t simple_bytes) {
    ctl_->tail.store(0);
    ctl_->head.store(0);
    ctl_->step_bytes = simple_bytes / kFifoSteps;
  }

  bool valid() const { return ctl_ != nullptr; }
  size_t step_bytes() const { return ctl_->step_bytes; }

  // Sender side.
  bool CanPost() const {
    return ctl_->tail.load(std::memory_order_relaxed) - ctl_->head.load(std::memory_order_acquire) <
           kFifoSteps;
  }
  char* PostSlot() const {
    return data_ + (ctl_->tail.load(std::memory_order_relaxed) % kFifoSteps) * step_bytes();
  }
  void Post(const StepMeta& meta) {
    const uint64_t t = ctl_->tail.load(std::memory_order_relaxed);
    ctl_->steps[t % kFifoSteps] = meta;
    ctl_->tail.store(t + 1, std::memory_order_release);
  }

  // Receiver side.
  bool Peek(const StepMeta** meta, const char** data) const {
    const uint64_t h = ctl_->head.load(std::memory_order_relaxed);
    if (ctl_->tail.load(std::memory_order_acquire) <= h) return false;
    *meta = &ctl_->steps[h % kFifoSteps];
    *data = data_ + (h % kFifoSteps) * step_bytes();
    return true;
  }
  void Pop() {
    ctl_->head.store(ctl_->head.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

 private:
  FifoControl* ctl_ = nullptr;
  char* data_ = nullptr;
};

}  // namespace ncclsim::nccl

#endif  // NCCLWATCH_TESTS_SIM_NCCL_FIFO_H_

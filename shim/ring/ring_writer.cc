// HOT PATH (Append, AppendKind, AppendAt, Refill, ForkChild; ClaimSlot, Publish, Discard
// are inline in the header): no allocation, no lock, no system call, errno
// untouched, async-signal-safe. Open() is start-up only.

#include "ring/ring_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace ncclwatch::shim {

__thread ClaimBlock t_claim_block __attribute__((tls_model("initial-exec")));

namespace {

// Claims in a row, each soon after the last, that another claim came
// between before a thread takes blocks: threads that call at once interleave
// at nearly every claim; a process's one NCCL thread and its watcher, whose
// records also come from the cursor, hardly ever four times running.
constexpr uint8_t kContendedClaims = 4;

// The last generation a writer took (Open, ForkChild).
uint64_t g_generations = 0;

constexpr uint64_t kPage = 4096;
constexpr unsigned kNameAttempts = 1000;
constexpr uint64_t kPrefaultMax = uint64_t{4} << 30;

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint64_t FloorPowerOfTwo(uint64_t v) {
  uint64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// The most slots a claim block may have on a ring of `slots` (ring_writer.h:
// none on small rings).
uint32_t MaxBlock(const RingConfig& c, uint64_t slots) {
  uint64_t max_block = c.claim_block_slots != 0 ? c.claim_block_slots : kClaimBlockSlots;
  if (c.claim_block_slots == 0 && max_block > slots / kSlotsPerBlockSlot)
    max_block = slots / kSlotsPerBlockSlot;
  if (max_block > slots / 4) max_block = slots / 4;  // never most of the ring
  if (max_block < 1) max_block = 1;
  return static_cast<uint32_t>(max_block);
}

bool Fail(char* error, size_t n, const char* fmt, const char* a, const char* b = "") {
  snprintf(error, n, fmt, a, b);
  return false;
}

// mkdir -p, each new component 0700 whatever the umask (under umask 0777
// mkdir's own mode would leave a folder nobody but root can write in).
bool MakeDirs(const char* dir, char* error, size_t n) {
  char path[512];
  if (snprintf(path, sizeof(path), "%s", dir) >= static_cast<int>(sizeof(path))) {
    return Fail(error, n, "the path %s is too long%s", dir);
  }
  for (char* p = path + 1;; ++p) {
    const bool end = *p == '\0';
    if (*p == '/' || end) {
      *p = '\0';
      if (mkdir(path, 0700) == 0) {
        (void)chmod(path, 0700);
      } else if (errno != EEXIST) {
        return Fail(error, n, "cannot create %s: %s", path, strerror(errno));
      }
      if (end) break;
      *p = '/';
    }
  }
  return true;
}

}  // namespace

// Faults every page of the new mapping in, writable, now: otherwise the
// first lap of the ring takes a page fault every 32 slots (a 1 GiB ring:
// ~500 ns a call until it has wrapped once). The file is new and all zeros,
// so writing a zero to each page changes nothing in it.
void RingWriter::Prefault(void* m, uint64_t bytes) {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif
  const int saved_errno = errno;
  if (madvise(m, bytes, MADV_POPULATE_WRITE) != 0) {
    // An older kernel (EINVAL): touch each page. A volatile store, so the
    // compiler keeps every one.
    volatile uint8_t* p = static_cast<uint8_t*>(m);
    for (uint64_t at = 0; at < bytes; at += kPage) p[at] = 0;
  }
  errno = saved_errno;
}

SizeParse ParseByteSize(const char* s, uint64_t* bytes) {
  if (s == nullptr || *s == '\0') return SizeParse::kMalformed;
  if (*s == '-') return SizeParse::kNegative;
  uint64_t v = 0;
  bool overflow = false;
  const char* p = s;
  for (; *p >= '0' && *p <= '9'; ++p) {
    const uint64_t digit = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - digit) / 10) overflow = true;
    v = v * 10 + digit;
  }
  if (p == s) return SizeParse::kMalformed;
  int shift = 0;
  switch (*p) {
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    case 't':
    case 'T':
      shift = 40;
      break;
    default:
      break;
  }
  if (shift != 0) {
    ++p;
    if (*p == 'i' || *p == 'I') ++p;
  }
  if (*p == 'b' || *p == 'B') ++p;
  if (*p != '\0') return SizeParse::kMalformed;
  if (overflow || (shift != 0 && v > (UINT64_MAX >> shift))) return SizeParse::kOverflow;
  *bytes = v << shift;
  return SizeParse::kOk;
}

bool RingWriter::Open(const RingConfig& c, char* error, size_t error_len) {
  if (c.dir == nullptr || c.dir[0] == '\0')
    return Fail(error, error_len, "no trace directory given%s%s", "");
  const uint64_t slot = NCCLWATCH_SLOT_BYTES;
  const uint64_t pinned_slots =
      FloorPowerOfTwo(c.pinned_bytes / slot < 64 ? 64 : c.pinned_bytes / slot);
  const uint64_t pinned_offset = NCCLWATCH_HEADER_REGION_BYTES;
  const uint64_t ring_offset = RoundUp(pinned_offset + pinned_slots * slot, kPage);
  uint64_t ring_slots = FloorPowerOfTwo(c.ring_bytes / slot < 64 ? 64 : c.ring_bytes / slot);
  notice_[0] = '\0';
  // A file-size limit (ulimit -f) below the file would make the kernel send
  // SIGXFSZ, which kills a program that never writes a big file itself. The
  // ring shrinks to fit the limit instead, or the process runs untraced.
  rlimit fsize;
  if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
      ring_offset + ring_slots * slot > fsize.rlim_cur) {
    const uint64_t limit = fsize.rlim_cur;
    const uint64_t fit = limit > ring_offset ? (limit - ring_offset) / slot : 0;
    char limit_text[32];
    snprintf(limit_text, sizeof(limit_text), "%llu", static_cast<unsigned long long>(limit));
    if (fit < 64) {
      return Fail(error, error_len,
                  "the file-size limit (ulimit -f) of %s bytes is below the smallest trace "
                  "file%s",
                  limit_text);
    }
    ring_slots = FloorPowerOfTwo(fit);
    snprintf(notice_, sizeof(notice_),
             "the file-size limit (ulimit -f) of %s bytes is below the trace file: its ring is cut "
             "to %llu bytes",
             limit_text, static_cast<unsigned long long>(ring_slots * slot));
  }
  const uint64_t full_total = ring_offset + ring_slots * slot;
  // The ring the file starts with: all of it, or a small one that
  // GrowRing() brings to ring_slots later (the address space for all of it
  // is reserved now, so the ring never moves).
  uint64_t start_slots = ring_slots;
  if (c.initial_ring_bytes != 0) {
    const uint64_t want =
        FloorPowerOfTwo(c.initial_ring_bytes / slot < 64 ? 64 : c.initial_ring_bytes / slot);
    if (want < start_slots) start_slots = want;
  }
  const uint64_t total = ring_offset + start_slots * slot;

  if (!MakeDirs(c.dir, error, error_len)) return false;
  // The folder must be the caller's own, reached without a symbolic link in
  // its last step: anyone else's folder (another user may have made the
  // default /tmp/ncclwatch-<uid> first) could be read, swapped or filled by
  // them. The checks are made on the folder as opened, and the file is made
  // relative to it, so nothing can be swapped in between.
  char dir[512];
  snprintf(dir, sizeof(dir), "%s", c.dir);  // MakeDirs refused longer names
  for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; --n) dir[n - 1] = '\0';
  struct stat st;
  if (lstat(dir, &st) != 0)
    return Fail(error, error_len, "cannot use %s: %s", c.dir, strerror(errno));
  if (S_ISLNK(st.st_mode))
    return Fail(error, error_len, "%s is a symbolic link, not a folder of yours%s", c.dir);
  if (!S_ISDIR(st.st_mode)) return Fail(error, error_len, "%s is not a directory%s", c.dir);
  const int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) return Fail(error, error_len, "cannot use %s: %s", c.dir, strerror(errno));
  if (fstat(dir_fd, &st) != 0) {
    const int stat_errno = errno;
    close(dir_fd);
    return Fail(error, error_len, "cannot use %s: %s", c.dir, strerror(stat_errno));
  }
  if (st.st_uid != geteuid()) {
    close(dir_fd);
    char owner[64];
    snprintf(owner, sizeof(owner), "uid %u, not to you (uid %u)", static_cast<unsigned>(st.st_uid),
             static_cast<unsigned>(geteuid()));
    return Fail(error, error_len, "%s belongs to %s", c.dir, owner);
  }
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    close(dir_fd);
    return Fail(error, error_len,
                "%s is writable by everyone and not a sticky directory of yours%s", c.dir);
  }

  char host[64];
  snprintf(host, sizeof(host), "%s", c.host);
  for (char* h = host; *h; ++h)
    if (*h == '/' || *h == ' ') *h = '_';
  // The name says whose trace it is. Two processes may share host, pid and
  // start millisecond (ranks in host-network containers are each pid 1):
  // the second takes the name with "-1" after the millisecond, and so on.
  int fd = -1;
  const char* name = nullptr;
  for (unsigned k = 0; k < kNameAttempts; ++k) {
    char again[16] = "";
    if (k > 0) snprintf(again, sizeof(again), "-%u", k);
    if (snprintf(path_, sizeof(path_), "%s/ncclwatch.%s.%u.%llu%s.trace", c.dir, host, c.pid,
                 static_cast<unsigned long long>(c.start_ms),
                 again) >= static_cast<int>(sizeof(path_))) {
      close(dir_fd);
      return Fail(error, error_len, "the path under %s is too long%s", c.dir);
    }
    name = strrchr(path_, '/') + 1;
    fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, c.file_mode);
    if (fd >= 0 || errno != EEXIST) break;
  }
  if (fd < 0) {
    const int open_errno = errno;
    close(dir_fd);
    return Fail(error, error_len, "cannot create %s: %s", path_, strerror(open_errno));
  }
  (void)fchmod(fd, c.file_mode);  // exactly what was asked, whatever the umask
  // Every block is allocated now: a full disk must fail here, not as SIGBUS
  // in the middle of the program.
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(total));
  if (rc != 0) {
    close(fd);
    unlinkat(dir_fd, name, 0);
    close(dir_fd);
    char size[32];
    snprintf(size, sizeof(size), "%llu", static_cast<unsigned long long>(total));
    return Fail(error, error_len, "cannot allocate %s bytes for the trace: %s", size, strerror(rc));
  }
  // The whole ring's address space, reserved (no memory, no access), with
  // the file mapped over its start.
  void* m =
      mmap(nullptr, full_total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m != MAP_FAILED) {
    void* f = mmap(m, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (f == MAP_FAILED) {
      const int e = errno;
      munmap(m, full_total);
      m = MAP_FAILED;
      errno = e;
    }
  }
  const int map_errno = errno;
  struct stat file_stat;
  if (fstat(fd, &file_stat) != 0) memset(&file_stat, 0, sizeof(file_stat));
  close(fd);
  if (m == MAP_FAILED) {
    unlinkat(dir_fd, name, 0);
    close(dir_fd);
    return Fail(error, error_len, "cannot map %s: %s", path_, strerror(map_errno));
  }

  close(dir_fd);
  // Rings above 4 GiB (which NCCLWATCH_RING_SIZE warns about) are faulted
  // in up to there: the rest would hold gigabytes of memory, and seconds of
  // start-up, for a lap many minutes away.
  Prefault(m, total < kPrefaultMax ? total : kPrefaultMax);

  auto* h = static_cast<ncclwatch_ring_header*>(m);
  h->format_version = NCCLWATCH_RING_FORMAT_VERSION;
  h->schema_version = NCCLWATCH_SCHEMA_VERSION;
  h->header_bytes = sizeof(ncclwatch_ring_header);
  h->endian_check = NCCLWATCH_ENDIAN_CHECK;
  h->pointer_bytes = sizeof(void*);
  h->slot_bytes = NCCLWATCH_SLOT_BYTES;
  h->clock = c.clock;
  h->file_bytes = total;
  h->pinned_offset = pinned_offset;
  h->pinned_slots = pinned_slots;
  h->ring_offset = ring_offset;
  h->ring_slots = start_slots;
  h->pid = c.pid;
  h->claim_block_slots = MaxBlock(c, start_slots);
  h->claim_block_ticks = c.claim_block_ticks != 0 ? c.claim_block_ticks : kClaimBlockTicks;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  h->created_realtime_ns =
      static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  snprintf(h->host, sizeof(h->host), "%s", c.host);
  // The magic goes last: a reader never sees a valid magic on a half-made header.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  memcpy(h->magic, NCCLWATCH_RING_MAGIC, 8);

  map_ = static_cast<uint8_t*>(m);
  map_bytes_ = total;
  reserved_bytes_ = full_total;
  full_ring_slots_ = ring_slots;
  block_config_ = c;
  block_config_.dir = block_config_.host = nullptr;
  file_dev_ = file_stat.st_dev;
  file_ino_ = file_stat.st_ino;
  grow_state_ = start_slots == ring_slots ? kGrown : kSmall;
  pinned_ = static_cast<uint8_t*>(m) + pinned_offset;
  ring_ = static_cast<uint8_t*>(m) + ring_offset;
  pinned_slots_ = pinned_slots;
  ring_mask_ = start_slots - 1;
  generation_ = __atomic_add_fetch(&g_generations, 1, __ATOMIC_RELAXED);
  block_ticks_ = h->claim_block_ticks;
  grow_ticks_ = block_ticks_ / 16;
  max_block_ = h->claim_block_slots;
  block_fixed_ = c.claim_block_fixed;
  clock_ = c.clock;
  __atomic_store_n(&header_, h, __ATOMIC_RELEASE);
  return true;
}

uint64_t RingWriter::Refill(ncclwatch_ring_header* h, ClaimBlock* b, uint64_t now,
                            bool* anchor_due) {
  // The new block's size, from how the last one went (ring_writer.h).
  const bool same_ring = b->generation == generation_;
  uint32_t size = 1;
  uint8_t contended = 0;
  if (block_fixed_) {
    size = MaxClaimBlock();
  } else if (same_ring && b->size != 0 && b->next == b->end) {
    // Used up: twice the size if other threads' claims came between this
    // one's, fast, kContendedClaims times running; half if none did.
    // Doubling, not a jump to the largest, bounds what a burst that ends
    // leaves unwritten by what the burst used (ring_writer.h).
    const bool fast = now - b->claimed < grow_ticks_;
    contended = fast ? b->contended : 0;
    size = b->size;
    if (contended >= kContendedClaims)
      size = size * 2 < MaxClaimBlock() ? size * 2 : MaxClaimBlock();
    else if (contended == 0 && size > 1)
      size /= 2;
  }  // else: none yet, another ring's, or it expired unfinished: 1.
  if (size > 1 && __atomic_load_n(&h->claim_blocks_used, __ATOMIC_RELAXED) == 0) {
    // Before the add: a reader that sees a block's slots under the cursor
    // sees this too.
    __atomic_store_n(&h->claim_blocks_used, 1u, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
  }
  const uint64_t idx = __atomic_fetch_add(&h->ring_next, size, __ATOMIC_RELAXED);
  // Did another thread claim since this one's last claim, soon after it?
  if (same_ring && idx != b->last && now - b->claimed < grow_ticks_)
    contended = contended < 255 ? contended + 1 : contended;
  else
    contended = 0;
  b->generation = generation_;
  b->next = idx + 1;
  b->end = idx + size;
  b->last = idx + size;
  b->claimed = now;
  b->size = size;
  b->contended = contended;
  // Blocks of one that need not grow take the inline path from here on.
  const bool grow = block_fixed_ || size != 1 || contended >= kContendedClaims;
  b->single = MaxClaimBlock() <= 1 || !grow ? generation_ : 0;
  // A time anchor is due when the block holds a slot 65536 * k.
  *anchor_due = idx == 0 || ((idx - 1) >> 16) != ((idx + size - 1) >> 16);
  return idx;
}

void RingWriter::NoteOtherClaims(ClaimBlock* b, uint64_t now) const {
  // As in Refill: another thread claimed since this one's last claim.
  // kContendedClaims times, each within grow_ticks_ of the last: the next
  // claim goes through Refill, which grows.
  const uint8_t c = b->contended;
  b->contended = now - b->claimed < grow_ticks_ ? static_cast<uint8_t>(c < 255 ? c + 1 : c) : 1;
  b->claimed = now;
  if (b->contended >= kContendedClaims && MaxClaimBlock() > 1) b->single = 0;
}

uint64_t RingWriter::ClaimFromCursor(ncclwatch_ring_header* h, uint64_t* now) const {
  *now = Now();
  return __atomic_fetch_add(&h->ring_next, 1, __ATOMIC_RELAXED);
}

bool RingWriter::RescueFault(const void* addr) {
  uint8_t* const base = __atomic_load_n(&map_, __ATOMIC_ACQUIRE);
  const uint64_t bytes = __atomic_load_n(&map_bytes_, __ATOMIC_ACQUIRE);
  const auto a = reinterpret_cast<uintptr_t>(addr);
  const auto lo = reinterpret_cast<uintptr_t>(base);
  if (base == nullptr || a < lo || a - lo >= bytes) return false;
  const uintptr_t from = a & ~uintptr_t{kPage - 1};
  // Another thread may have replaced this page already (the same fault at
  // once on two threads): mapping it again only zeroes what it wrote since.
  void* m = mmap(reinterpret_cast<void*>(from), lo + bytes - from, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  return m != MAP_FAILED;
}

bool RingWriter::GrowRing(char* error, size_t error_len) {
  int expected = kSmall;
  if (!__atomic_compare_exchange_n(&grow_state_, &expected, kGrowing, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return true;  // grown already, growing on another thread, or failed before
  ncclwatch_ring_header* h = __atomic_load_n(&header_, __ATOMIC_ACQUIRE);
  const uint64_t slot = NCCLWATCH_SLOT_BYTES;
  const uint64_t old_slots = RingMask() + 1;
  const uint64_t new_slots = full_ring_slots_;
  const uint64_t ring_offset = static_cast<uint64_t>(ring_ - map_);
  const uint64_t old_total = ring_offset + old_slots * slot;
  const uint64_t new_total = ring_offset + new_slots * slot;
  auto give_up = [&](const char* what, int err) {
    snprintf(error, error_len, "the trace's ring stays at %llu bytes: %s: %s",
             static_cast<unsigned long long>(old_slots * slot), what, strerror(err));
    __atomic_store_n(&grow_state_, kGrowFailed, __ATOMIC_RELEASE);
    return false;
  };
  // The file as made, by its path: never a descriptor the program may have
  // closed and reused meanwhile, never another file put in its place.
  const int fd = open(path_, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return give_up("cannot open it again", errno);
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_dev != file_dev_ || st.st_ino != file_ino_ ||
      static_cast<uint64_t>(st.st_size) < old_total) {
    close(fd);
    return give_up("the file was replaced or cut", ESTALE);
  }
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(new_total));
  if (rc != 0) {
    close(fd);
    return give_up("cannot allocate the rest", rc);
  }
  void* m = mmap(map_ + old_total, new_total - old_total, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(old_total));
  const int map_errno = errno;
  close(fd);
  if (m == MAP_FAILED) return give_up("cannot map the rest", map_errno);
  const uint64_t prefault = new_total < kPrefaultMax   ? new_total - old_total
                            : old_total < kPrefaultMax ? kPrefaultMax - old_total
                                                       : 0;
  Prefault(m, prefault);
  __atomic_store_n(&map_bytes_, new_total, __ATOMIC_RELEASE);

  // A record of logical slot i lies at i & mask. Below old_slots claims the
  // two masks agree; a small ring that wrapped has its last old_slots
  // records where the big one does not look for them: each is moved to its
  // place in the big ring (through a copy, as places may overlap), and what
  // it left behind is cleared, so a reader finds only records where their
  // stamps say. (A record another thread writes meanwhile with the small
  // ring's mask may be lost: a wrap before the first communicator is rare.)
  const uint64_t cursor = __atomic_load_n(&h->ring_next, __ATOMIC_ACQUIRE);
  if (cursor > old_slots) {
    const size_t bytes = old_slots * slot;
    void* copy = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy != MAP_FAILED) {
      auto* saved = static_cast<uint8_t*>(copy);
      memcpy(saved, ring_, bytes);
      const uint64_t new_mask = new_slots - 1;
      for (uint64_t p = 0; p < old_slots; ++p) {
        auto* sh = reinterpret_cast<ncclwatch_slot_header*>(ring_ + p * slot);
        uint64_t seen = __atomic_load_n(&sh->stamp, __ATOMIC_ACQUIRE);
        if (seen != 0 && (((seen & ~NCCLWATCH_STAMP_WRITING) - 1) & new_mask) != p)
          __atomic_compare_exchange_n(&sh->stamp, &seen, uint64_t{0}, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE);
      }
      for (uint64_t p = 0; p < old_slots; ++p) {
        const uint8_t* from = saved + p * slot;
        uint64_t stamp;
        memcpy(&stamp, from, sizeof(stamp));
        if (stamp == 0 || (stamp & NCCLWATCH_STAMP_WRITING) != 0 || stamp - 1 + old_slots < cursor)
          continue;  // empty, torn, or an older lap's
        const uint64_t to = (stamp - 1) & new_mask;
        if (to == p) continue;
        uint8_t* dst = ring_ + to * slot;
        auto* dh = reinterpret_cast<ncclwatch_slot_header*>(dst);
        __atomic_store_n(&dh->stamp, stamp | NCCLWATCH_STAMP_WRITING, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        memcpy(dst + sizeof(uint64_t), from + sizeof(uint64_t), slot - sizeof(uint64_t));
        __atomic_store_n(&dh->stamp, stamp, __ATOMIC_RELEASE);
      }
      munmap(copy, bytes);
    }
  }
  // The header first (a reader sizes the ring by it), then the writers.
  h->file_bytes = new_total;
  h->claim_block_slots = MaxBlock(block_config_, new_slots);
  __atomic_store_n(&h->ring_slots, new_slots, __ATOMIC_RELEASE);
  __atomic_store_n(&max_block_, h->claim_block_slots, __ATOMIC_RELAXED);
  __atomic_store_n(&ring_mask_, new_slots - 1, __ATOMIC_RELEASE);
  __atomic_store_n(&grow_state_, kGrown, __ATOMIC_RELEASE);
  return true;
}

void RingWriter::DropInChild() {
  __atomic_store_n(&header_, static_cast<ncclwatch_ring_header*>(nullptr), __ATOMIC_RELEASE);
  uint8_t* const m = __atomic_exchange_n(&map_, static_cast<uint8_t*>(nullptr), __ATOMIC_ACQ_REL);
  if (m != nullptr) munmap(m, reserved_bytes_);
  map_bytes_ = reserved_bytes_ = 0;
  pinned_ = ring_ = nullptr;
  pinned_slots_ = ring_mask_ = full_ring_slots_ = 0;
  grow_state_ = kGrown;
  path_[0] = '\0';
  notice_[0] = '\0';
  ForkChild();
}

void RingWriter::ForkChild() {
  generation_ = __atomic_add_fetch(&g_generations, 1, __ATOMIC_RELAXED);
  t_claim_block = ClaimBlock{};
}

bool RingWriter::AppendAt(uint8_t* slots, uint64_t slot_count, uint64_t mask, uint64_t first,
                          uint32_t nslots, const uint8_t* record, size_t len, uint8_t single_kind) {
  (void)slot_count;
  size_t done = 0;
  for (uint32_t j = 0; j < nslots; ++j) {
    const uint64_t idx = first + j;
    uint8_t* slot = slots + (idx & mask) * NCCLWATCH_SLOT_BYTES;
    auto* sh = reinterpret_cast<ncclwatch_slot_header*>(slot);
    // Invalidate, then fill, then publish: a live reader that copies the slot
    // between the two stamp stores sees it being written and discards it.
    __atomic_store_n(&sh->stamp, (idx + 1) | NCCLWATCH_STAMP_WRITING, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    const size_t piece =
        len - done < NCCLWATCH_SLOT_PAYLOAD_BYTES ? len - done : NCCLWATCH_SLOT_PAYLOAD_BYTES;
    sh->length = static_cast<uint16_t>(piece);
    sh->kind = nslots == 1       ? single_kind
               : j == 0          ? uint8_t{NCCLWATCH_SLOT_FIRST}
               : j + 1 == nslots ? uint8_t{NCCLWATCH_SLOT_LAST}
                                 : uint8_t{NCCLWATCH_SLOT_MIDDLE};
    sh->flags = NCCLWATCH_SLOT_CLAIMED;  // from the cursor, as it is written
    sh->record_bytes = static_cast<uint32_t>(len);
    memcpy(slot + NCCLWATCH_SLOT_HEADER_BYTES, record + done, piece);
    done += piece;
    __atomic_store_n(&sh->stamp, idx + 1, __ATOMIC_RELEASE);
  }
  return true;
}

bool RingWriter::AppendKind(Region region, const uint8_t* record, size_t len, uint8_t single_kind,
                            RecordLocation* where) {
  ncclwatch_ring_header* h = __atomic_load_n(&header_, __ATOMIC_ACQUIRE);
  if (h == nullptr || len > NCCLWATCH_MAX_RECORD_BYTES) return false;
  const uint32_t nslots = len <= NCCLWATCH_SLOT_PAYLOAD_BYTES
                              ? 1
                              : static_cast<uint32_t>((len + NCCLWATCH_SLOT_PAYLOAD_BYTES - 1) /
                                                      NCCLWATCH_SLOT_PAYLOAD_BYTES);
  if (region == Region::kPinned) {
    const uint64_t first = __atomic_fetch_add(&h->pinned_next, nslots, __ATOMIC_RELAXED);
    if (first + nslots <= pinned_slots_) {
      AppendAt(pinned_, pinned_slots_, pinned_slots_ - 1, first, nslots, record, len, single_kind);
      if (where) *where = RecordLocation{pinned_, pinned_slots_, first};
      return true;
    }
    __atomic_fetch_add(&h->pinned_overflow, 1, __ATOMIC_RELAXED);
  }
  const uint64_t first = __atomic_fetch_add(&h->ring_next, nslots, __ATOMIC_RELAXED);
  // This thread's own claim, for its claim block's count of other threads'
  // claims between its own (ClaimSlot): a thread that writes records and
  // calls by turns is one writer, not two that contend. (A signal handler
  // that claims between the thread's claim and its store to `last` leaves
  // it behind: counted as another thread's claim, harmless.)
  ClaimBlock& b = t_claim_block;
  if (b.generation == generation_ && b.last == first) b.last = first + nslots;
  const uint64_t mask = RingMask();
  AppendAt(ring_, mask + 1, mask, first, nslots, record, len, single_kind);
  if (where) *where = RecordLocation{ring_, mask + 1, first};
  return true;
}

}  // namespace ncclwatch::shim

// HOT PATH: no allocation, no lock, no system call, async-signal-safe,
// errno untouched (see rendezvous_sockets.h). Where two threads would write
// one slot at once, the second gives up (a lost note), never waits.

#include "core/rendezvous_sockets.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "core/nccl_code.h"
#include "core/record_builder.h"
#include "ncclwatch/trace_fields.h"
#include "ring/trace_clock.h"

namespace ncclwatch::shim {
namespace {

namespace f = fields::socket_activity;

// An AF_INET or AF_INET6 address, with what does not name the endpoint
// (sin_zero, the flow label) zeroed, so that equal endpoints compare equal.
struct Address {
  uint8_t len = 0;  // 0: none
  uint8_t bytes[sizeof(sockaddr_in6)];
};

bool Canonical(const struct sockaddr* sa, socklen_t len, Address* out) {
  out->len = 0;
  if (sa == nullptr || len < sizeof(sa_family_t)) return false;
  if (sa->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    sockaddr_in a;
    memcpy(&a, sa, sizeof(a));
    memset(&a.sin_zero, 0, sizeof(a.sin_zero));
    memcpy(out->bytes, &a, sizeof(a));
    out->len = sizeof(a);
    return true;
  }
  if (sa->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    sockaddr_in6 a;
    memcpy(&a, sa, sizeof(a));
    a.sin6_flowinfo = 0;
    memcpy(out->bytes, &a, sizeof(a));
    out->len = sizeof(a);
    return true;
  }
  return false;
}

// ------------------------------------------------------------ descriptors

// What the shim knows of a descriptor: whether socket() made it a datagram
// socket, the address it was bound to, the address a connect is under way
// to. A try-lock seqlock per slot: odd while a writer has it; a writer that
// finds it taken, and a reader that finds it changing, give up.
constexpr int kFdSlots = 256;
struct FdSlot {
  int fd;        // the descriptor this slot describes, -1 none
  uint32_t seq;  // odd while written
  uint8_t datagram;
  Address bound;
  Address pending;
};
FdSlot g_fds[kFdSlots];
int g_fds_ready = 0;

void InitFds() {
  if (__atomic_load_n(&g_fds_ready, __ATOMIC_ACQUIRE)) return;
  for (FdSlot& s : g_fds) __atomic_store_n(&s.fd, -1, __ATOMIC_RELAXED);
  __atomic_store_n(&g_fds_ready, 1, __ATOMIC_RELEASE);
}

FdSlot& SlotOf(int fd) { return g_fds[static_cast<unsigned>(fd) % kFdSlots]; }

// Takes the slot for writing `fd`; false when another writer has it. A slot
// that described another descriptor is made to describe `fd`, blank.
bool BeginWrite(int fd, FdSlot** out) {
  InitFds();
  FdSlot& s = SlotOf(fd);
  uint32_t seq = __atomic_load_n(&s.seq, __ATOMIC_RELAXED);
  if ((seq & 1) != 0 || !__atomic_compare_exchange_n(&s.seq, &seq, seq + 1, false, __ATOMIC_ACQUIRE,
                                                     __ATOMIC_RELAXED))
    return false;
  __atomic_thread_fence(__ATOMIC_RELEASE);
  if (__atomic_load_n(&s.fd, __ATOMIC_RELAXED) != fd) {
    s.datagram = 0;
    s.bound.len = 0;
    s.pending.len = 0;
    __atomic_store_n(&s.fd, fd, __ATOMIC_RELAXED);
  }
  *out = &s;
  return true;
}

void EndWrite(FdSlot* s) { __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE); }

// A consistent copy of fd's slot; false when the slot describes another
// descriptor or is being written.
bool ReadSlot(int fd, FdSlot* copy) {
  if (fd < 0 || !__atomic_load_n(&g_fds_ready, __ATOMIC_ACQUIRE)) return false;
  const FdSlot& s = SlotOf(fd);
  const uint32_t before = __atomic_load_n(&s.seq, __ATOMIC_ACQUIRE);
  if ((before & 1) != 0) return false;
  memcpy(copy, &s, sizeof(*copy));
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return __atomic_load_n(&s.seq, __ATOMIC_RELAXED) == before && copy->fd == fd;
}

bool IsDatagram(int fd) {
  FdSlot s;
  return ReadSlot(fd, &s) && s.datagram != 0;
}

// ------------------------------------------------------------ counts

constexpr int kEntries = 64;
struct Entry {
  uint64_t key;     // 0 free; taken with a compare-and-swap
  uint32_t ready;   // the fields below the key are written
  uint32_t pinned;  // its first record went to the pinned region
  uint32_t kind;
  int32_t err;
  uint32_t deferred;
  Address addr;
  uint64_t first_t;
  uint64_t caller;
  uint64_t count;
  uint64_t last_t;
  uint64_t written;  // the count the latest record held
};
Entry g_entries[kEntries];
// The process whose trace the counts are for (g_pid when the first was
// taken): a forked child has its parent's table, and must not write it.
uint32_t g_entries_pid = 0;

uint64_t KeyOf(uint32_t kind, int err, bool deferred, const Address& a) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint8_t b) {
    h ^= b;
    h *= 1099511628211ull;
  };
  for (int i = 0; i < 4; ++i) mix(static_cast<uint8_t>(kind >> (8 * i)));
  for (int i = 0; i < 4; ++i) mix(static_cast<uint8_t>(static_cast<uint32_t>(err) >> (8 * i)));
  mix(deferred ? 1 : 0);
  mix(a.len);
  for (int i = 0; i < a.len; ++i) mix(a.bytes[i]);
  return h != 0 ? h : 1;
}

void Write(Entry* e) {
  const uint64_t count = __atomic_load_n(&e->count, __ATOMIC_ACQUIRE);
  RecordBuilder<160> r(fields::record::kSocketActivity);
  r.w().Varint(f::kKind, e->kind);
  if (e->addr.len != 0) r.w().Bytes(f::kAddr, e->addr.bytes, e->addr.len);
  if (e->err != 0) r.w().Sint(f::kErr, e->err);
  if (e->deferred) r.w().Varint(f::kDeferred, 1);
  r.w().Varint(f::kCount, count);
  r.w().Varint(f::kFirstT, e->first_t);
  r.w().Varint(f::kLastT, __atomic_load_n(&e->last_t, __ATOMIC_RELAXED));
  r.w().Fixed64(f::kCaller, e->caller);
  const bool first = __atomic_exchange_n(&e->pinned, 1u, __ATOMIC_ACQ_REL) == 0;
  r.Append(first ? Region::kPinned : Region::kRing);
  __atomic_store_n(&e->written, count, __ATOMIC_RELEASE);
}

// Counts one call; writes a record for the first and at each power of two.
void Count(uint32_t kind, int err, bool deferred, const Address& addr, const void* caller) {
  const uint64_t key = KeyOf(kind, err, deferred, addr);
  const uint64_t now = TraceNow();
  for (int i = 0; i < kEntries; ++i) {
    Entry& e = g_entries[(key + static_cast<uint64_t>(i)) % kEntries];
    uint64_t k = __atomic_load_n(&e.key, __ATOMIC_ACQUIRE);
    if (k == 0) {
      if (__atomic_compare_exchange_n(&e.key, &k, key, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        e.kind = kind;
        e.err = err;
        e.deferred = deferred ? 1 : 0;
        e.addr = addr;
        e.first_t = now;
        e.caller = reinterpret_cast<uint64_t>(caller);
        __atomic_store_n(&g_entries_pid, g_pid, __ATOMIC_RELAXED);
        __atomic_store_n(&e.ready, 1u, __ATOMIC_RELEASE);
        k = key;
      }
    }
    if (k != key) continue;
    __atomic_store_n(&e.last_t, now, __ATOMIC_RELAXED);
    const uint64_t n = __atomic_add_fetch(&e.count, 1, __ATOMIC_ACQ_REL);
    if ((n & (n - 1)) == 0 && __atomic_load_n(&e.ready, __ATOMIC_ACQUIRE)) Write(&e);
    return;
  }
  // The table is full: not counted (see the header).
}

// A call this file counts: inside the window, from code that is not NCCL's
// (whose calls are SysCall records).
bool Counted(const void* caller) { return RendezvousWindow() && !FromNccl(caller); }

void SetPending(int fd, const Address& a) {
  FdSlot* s = nullptr;
  if (!BeginWrite(fd, &s)) return;
  s->pending = a;
  EndWrite(s);
}

// The connect under way on fd, taken (cleared); false when there is none.
bool TakePending(int fd, Address* out) {
  FdSlot copy;
  if (!ReadSlot(fd, &copy) || copy.pending.len == 0) return false;
  FdSlot* s = nullptr;
  if (!BeginWrite(fd, &s)) return false;
  const bool had = s->pending.len != 0;
  *out = s->pending;
  s->pending.len = 0;
  EndWrite(s);
  return had;
}

}  // namespace

void NoteSocket(int fd, int domain, int type) {
  if (fd < 0 || !RendezvousWindow()) return;
  if (domain != AF_INET && domain != AF_INET6) return;
  const int saved = errno;
  FdSlot* s = nullptr;
  if (BeginWrite(fd, &s)) {
    s->datagram = (type & 0xf) == SOCK_DGRAM ? 1 : 0;
    s->bound.len = 0;
    s->pending.len = 0;
    EndWrite(s);
  }
  errno = saved;
}

void NoteBind(int fd, const struct sockaddr* addr, socklen_t len, int r, int err,
              const void* caller) {
  if (!Counted(caller)) return;
  const int saved = errno;
  Address a;
  if (Canonical(addr, len, &a) && !IsDatagram(fd)) {
    Count(f::kBind, r == 0 ? 0 : err, false, a, caller);
    FdSlot* s = nullptr;
    if (r == 0 && BeginWrite(fd, &s)) {
      s->bound = a;
      EndWrite(s);
    }
  }
  errno = saved;
}

void NoteListen(int fd, int r, int err, const void* caller) {
  if (!Counted(caller)) return;
  const int saved = errno;
  FdSlot s;
  const bool known = ReadSlot(fd, &s) && s.bound.len != 0;
  // A socket the shim did not see bound may be of any family: only its
  // failures are worth a count.
  if (known || r != 0) {
    Address a;
    if (known) a = s.bound;
    Count(f::kListen, r == 0 ? 0 : err, false, a, caller);
  }
  errno = saved;
}

void NoteConnect(int fd, const struct sockaddr* addr, socklen_t len, int r, int err,
                 const void* caller) {
  if (!Counted(caller)) return;
  const int saved = errno;
  Address a;
  if (Canonical(addr, len, &a) && !IsDatagram(fd)) {
    if (r == 0) {
      Count(f::kConnect, 0, false, a, caller);
    } else if (err == EINPROGRESS || err == EINTR) {
      // Started; its outcome comes later (SO_ERROR, or connect again).
      Count(f::kConnect, EINPROGRESS, false, a, caller);
      SetPending(fd, a);
    } else if (err == EALREADY) {
      // Still under way: nothing new.
    } else {
      Address started;
      if (TakePending(fd, &started)) {
        // Connect asked again for the outcome of the one under way.
        Count(f::kConnect, err == EISCONN ? 0 : err, true, started, caller);
      } else {
        Count(f::kConnect, err, false, a, caller);
      }
    }
  }
  errno = saved;
}

void NoteAccept(int listen_fd, int r, int err, const void* caller) {
  if (!Counted(caller)) return;
  // Nobody waiting on a non-blocking socket, or a signal: not an outcome.
  if (r < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) return;
  const int saved = errno;
  FdSlot s;
  if (ReadSlot(listen_fd, &s) && s.bound.len != 0)
    Count(f::kAccept, r >= 0 ? 0 : err, false, s.bound, caller);
  errno = saved;
}

void NoteSocketError(int fd, int so_error, const void* caller) {
  if (!Counted(caller)) return;
  const int saved = errno;
  Address started;
  if (TakePending(fd, &started)) Count(f::kConnect, so_error, true, started, caller);
  errno = saved;
}

void FlushRendezvousSockets() {
  if (!TracingNow() || __atomic_load_n(&g_entries_pid, __ATOMIC_RELAXED) != g_pid) return;
  const int saved = errno;
  for (Entry& e : g_entries) {
    if (!__atomic_load_n(&e.ready, __ATOMIC_ACQUIRE)) continue;
    if (__atomic_load_n(&e.count, __ATOMIC_ACQUIRE) !=
        __atomic_load_n(&e.written, __ATOMIC_ACQUIRE))
      Write(&e);
  }
  errno = saved;
}

}  // namespace ncclwatch::shim

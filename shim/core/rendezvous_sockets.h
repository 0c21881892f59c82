// The rendezvous, as the sockets show it: before a process's first NCCL
// call, the TCP socket calls of any of its code, counted.
//
// A job's ranks find each other before NCCL runs: PyTorch's TCPStore
// (MASTER_ADDR:MASTER_PORT), torchrun's rendezvous, an MPI launcher's own
// wire-up. When that fails (a port differs between ranks, the master's port
// is held by another process, a rank never starts), NCCL is never called,
// and the trace is all there is to say why. So from the moment the shim finds
// NCCL loaded (core/tracer.h, kLoaded) until the process's first NCCL call,
// the libc hooks hand every bind, listen, connect, accept and the outcome
// of a non-blocking connect (getsockopt SO_ERROR, or a second connect) to
// this file, whatever code made them (NCCL's own calls are SysCall records,
// as before). Only TCP-like sockets of AF_INET and AF_INET6: a socket known
// to be a datagram one (from socket()) is left out, and so is every other
// family.
//
// Counted, not logged: a client retrying a port nothing listens on makes a
// call every few hundred milliseconds for minutes. Calls are counted per
// (kind, address, outcome) in a fixed table of kEntries; the first of each
// is written to the pinned region at once (SocketActivity, which survives
// SIGKILL and a long run), the count again when it reaches a power of two,
// and every changed count by FlushRendezvousSockets (each heartbeat, and at
// the process's end), so a SIGKILL loses at most one heartbeat's counting.
// Calls of a kind, address and outcome the full table has no room for are
// not counted.
//
// Listen and accept name no address: the one the socket was bound to is
// remembered per descriptor (a direct-mapped table of kFdSlots; a slot
// another descriptor took since is simply not found), and so is the
// address a non-blocking connect is under way to, until its outcome is read.
//
// HOT PATH: every function here allocates nothing, takes no lock, makes no
// system call, is async-signal-safe and leaves errno as it found it; a call
// outside the window (no trace file, or NCCL called already) costs a load
// and a compare. FlushRendezvousSockets too (atomics and ring appends), so
// it may run in a signal handler.

#ifndef NCCLWATCH_SHIM_CORE_RENDEZVOUS_SOCKETS_H_
#define NCCLWATCH_SHIM_CORE_RENDEZVOUS_SOCKETS_H_

#include <stdint.h>
#include <sys/socket.h>

#include "core/tracer.h"

namespace ncclwatch::shim {

// Whether socket calls are counted now: the file exists because NCCL is
// loaded, and no NCCL call has been made.
inline bool RendezvousWindow() {
  return __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) == kLoaded;
}

// socket() returned `fd` (>= 0) for (domain, type).
void NoteSocket(int fd, int domain, int type);

// bind/listen/connect/accept returned `r` with errno `err` (0 when r is not
// a failure). `caller`: the return address in the code that called.
void NoteBind(int fd, const struct sockaddr* addr, socklen_t len, int r, int err,
              const void* caller);
void NoteListen(int fd, int r, int err, const void* caller);
void NoteConnect(int fd, const struct sockaddr* addr, socklen_t len, int r, int err,
                 const void* caller);
void NoteAccept(int listen_fd, int r, int err, const void* caller);

// getsockopt(fd, SOL_SOCKET, SO_ERROR) read `so_error` (0: connected): the
// outcome of a connect under way on `fd`, if the shim saw it start.
void NoteSocketError(int fd, int so_error, const void* caller);

// Writes a record for every count that changed since it was last written.
// (In a forked child, whose window never opens (core/tracer.h), the parent's
// counts are not written to the child's trace.)
void FlushRendezvousSockets();

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_RENDEZVOUS_SOCKETS_H_

#include "nccl/bootstrap.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/sim_env.h"
#include "nccl/debug.h"

namespace ncclsim::nccl {
namespace {

// NCCL's magic for ids made from NCCL_COMM_ID, where nothing random is shared.
constexpr uint64_t kCommIdMagic = 0x0280028002800280ull;

struct NetState {
  std::mutex mu;
  bool done = false;
  NetInterface iface;
};

NetState& Net() {
  static auto* s = new NetState();
  return *s;
}

// What a rank tells its root.
struct ExtInfo {
  int32_t rank;
  int32_t nranks;
  int32_t nroots;
  int32_t iroot;
  SocketAddress listen_root;  // where the root sends this rank its successor
  SocketAddress ring_listen;  // where this rank's predecessor connects
};

// Rank block of root i: [i*n/nroots, (i+1)*n/nroots).
int BlockStart(int root, int nranks, int nroots) {
  return static_cast<int>(static_cast<int64_t>(root) * nranks / nroots);
}
int RootOf(int rank, int nranks, int nroots) {
  int r = 0;
  while (r + 1 < nroots && BlockStart(r + 1, nranks, nroots) <= rank) ++r;
  return r;
}

void RootThread(Socket* listen, uint64_t magic) {
  int nranks = 0, nroots = 0, iroot = 0, expected = -1, received = 0;
  std::map<int, ExtInfo> infos;
  while (expected < 0 || received < expected) {
    Socket conn;
    ExtInfo info;
    if (listen->Accept(&conn) != ncclSuccess) goto out;
    if (conn.Recv(&info, sizeof(info)) != ncclSuccess) goto out;
    conn.Close();
    if (expected < 0) {
      nranks = info.nranks;
      nroots = info.nroots;
      iroot = info.iroot;
      const int lo = BlockStart(iroot, nranks, nroots);
      const int hi = BlockStart(iroot + 1, nranks, nroots);
      expected = (hi - lo) + (nroots > 1 ? 1 : 0);
    } else if (info.nranks != nranks || info.nroots != nroots || info.iroot != iroot) {
      WARN(
          "Bootstrap Root : mismatch in info from procs, nranks %d vs %d, nroots %d vs %d, iroot "
          "%d vs %d",
          nranks, info.nranks, nroots, info.nroots, iroot, info.iroot);
      goto out;
    }
    if (infos.count(info.rank)) {
      WARN("Bootstrap Root : rank %d of %d ranks has already checked in", info.rank, nranks);
      goto out;
    }
    infos[info.rank] = info;
    ++received;
  }
  {
    const int lo = BlockStart(iroot, nranks, nroots);
    const int hi = BlockStart(iroot + 1, nranks, nroots);
    for (int r = lo; r < hi; ++r) {
      const int next = (r + 1) % nranks;
      Socket to_rank;
      if (Socket::Connect(infos[r].listen_root, magic, kSocketBootstrap, nullptr, &to_rank) !=
          ncclSuccess)
        break;
      if (to_rank.Send(&infos[next].ring_listen, sizeof(SocketAddress)) != ncclSuccess) break;
    }
  }
out:
  listen->Close();
  delete listen;
}

ncclResult_t ListenOnBootstrapIf(uint64_t magic, volatile uint32_t* abort_flag, Socket* out) {
  SocketAddress local = Net().iface.addr;
  if (local.sa.sa_family == AF_INET) local.sin.sin_port = 0;
  if (local.sa.sa_family == AF_INET6) local.sin6.sin6_port = 0;
  return Socket::Listen(local, magic, abort_flag, out);
}

ncclResult_t SendTo(const SocketAddress& addr, uint64_t magic, volatile uint32_t* abort_flag,
                    const void* data, size_t size) {
  Socket s;
  NCCLCHECK(Socket::Connect(addr, magic, kSocketBootstrap, abort_flag, &s));
  NCCLCHECK(s.Send(data, size));
  return ncclSuccess;
}

struct P2pHeader {
  int32_t rank;
  int32_t tag;
  uint64_t size;
};

}  // namespace

ncclResult_t BootstrapNetInit() {
  NetState& st = Net();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.done) return ncclSuccess;
  std::vector<NetInterface> ifs;
  const char* comm_id = EnvRaw("NCCL_COMM_ID");
  if (comm_id != nullptr) {
    SocketAddress remote;
    if (SocketAddressFromString(comm_id, &remote) != ncclSuccess) {
      WARN(
          "Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or "
          "<hostname>:<port>");
      return ncclInvalidArgument;
    }
    NCCLCHECK(FindInterfaceMatchSubnet(remote, &ifs));
    if (ifs.empty()) {
      WARN("NET/Socket : No usable listening interface found");
      return ncclSystemError;
    }
  } else {
    NCCLCHECK(FindInterfaces(1, &ifs));
    if (ifs.empty()) {
      WARN("Bootstrap : no socket interface found");
      return ncclInvalidUsage;
    }
  }
  st.iface = ifs[0];
  INFO(kBootstrap, "Bootstrap: Using %s:%s", st.iface.name.c_str(),
       SocketAddressToString(st.iface.addr).c_str());
  st.done = true;
  return ncclSuccess;
}

ncclResult_t BootstrapCreateRoot(const BootstrapHandle& handle) {
  auto* listen = new Socket();
  ncclResult_t rc = Socket::Listen(handle.addr, handle.magic, nullptr, listen);
  if (rc != ncclSuccess) {
    delete listen;
    NCCLCHECK(rc);
  }
  std::thread(RootThread, listen, handle.magic).detach();
  return ncclSuccess;
}

ncclResult_t BootstrapGetUniqueId(BootstrapHandle* handle) {
  std::memset(handle, 0, sizeof(*handle));
  const char* env = EnvRaw("NCCL_COMM_ID");
  if (env != nullptr) {
    INFO(kEnv, "NCCL_COMM_ID set by environment to %s", env);
    if (SocketAddressFromString(env, &handle->addr) != ncclSuccess) {
      WARN(
          "Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or "
          "<hostname>:<port>");
      return ncclInvalidArgument;
    }
    handle->magic = kCommIdMagic;
    return ncclSuccess;
  }
  if (getrandom(&handle->magic, sizeof(handle->magic), 0) != sizeof(handle->magic)) {
    WARN("Call to getrandom failed: %s", strerror(errno));
    return ncclSystemError;
  }
  handle->addr = Net().iface.addr;
  if (handle->addr.sa.sa_family == AF_INET) handle->addr.sin.sin_port = 0;
  if (handle->addr.sa.sa_family == AF_INET6) handle->addr.sin6.sin6_port = 0;
  auto* listen = new Socket();
  ncclResult_t rc = Socket::Listen(handle->addr, handle->magic, nullptr, listen);
  if (rc != ncclSuccess) {
    delete listen;
    NCCLCHECK(rc);
  }
  handle->addr = listen->address();
  std::thread(RootThread, listen, handle->magic).detach();
  return ncclSuccess;
}

ncclResult_t Bootstrap::Init(const std::vector<BootstrapHandle>& handles, int rank, int nranks,
                             volatile uint32_t* abort_flag, std::unique_ptr<Bootstrap>* out) {
  const int nroots = static_cast<int>(handles.size());
  if (nroots < 1 || nroots > nranks) {
    WARN("Invalid number of unique ids %d for %d ranks", nroots, nranks);
    return ncclInvalidArgument;
  }
  auto b = std::make_unique<Bootstrap>();
  b->rank_ = rank;
  b->nranks_ = nranks;
  b->magic_ = handles[0].magic;
  b->abort_flag_ = abort_flag;
  const int iroot = RootOf(rank, nranks, nroots);
  Socket listen_root;
  NCCLCHECK(ListenOnBootstrapIf(b->magic_, abort_flag, &b->ring_listen_));
  NCCLCHECK(ListenOnBootstrapIf(handles[iroot].magic, abort_flag, &listen_root));
  NCCLCHECK(ListenOnBootstrapIf(b->magic_, abort_flag, &b->p2p_listen_));

  ExtInfo info{};
  info.rank = rank;
  info.nranks = nranks;
  info.nroots = nroots;
  info.iroot = iroot;
  info.listen_root = listen_root.address();
  info.ring_listen = b->ring_listen_.address();
  NCCLCHECK(SendTo(handles[iroot].addr, handles[iroot].magic, abort_flag, &info, sizeof(info)));
  if (nroots > 1 && rank == BlockStart(iroot, nranks, nroots)) {
    const int prev = (iroot + nroots - 1) % nroots;
    info.iroot = prev;
    NCCLCHECK(SendTo(handles[prev].addr, handles[prev].magic, abort_flag, &info, sizeof(info)));
  }

  SocketAddress next{};
  Socket from_root;
  NCCLCHECK(listen_root.Accept(&from_root));
  NCCLCHECK(from_root.Recv(&next, sizeof(next)));
  from_root.Close();
  listen_root.Close();

  NCCLCHECK(b->ConnectRing(next));
  NCCLCHECK(b->FinishInit());
  *out = std::move(b);
  return ncclSuccess;
}

ncclResult_t Bootstrap::FromParent(Bootstrap& parent, const std::vector<int>& members, int new_rank,
                                   int tag, uint64_t magic, volatile uint32_t* abort_flag,
                                   std::unique_ptr<Bootstrap>* out) {
  auto b = std::make_unique<Bootstrap>();
  const int n = static_cast<int>(members.size());
  b->rank_ = new_rank;
  b->nranks_ = n;
  b->magic_ = magic;
  b->abort_flag_ = abort_flag;
  NCCLCHECK(ListenOnBootstrapIf(magic, abort_flag, &b->ring_listen_));
  NCCLCHECK(ListenOnBootstrapIf(magic, abort_flag, &b->p2p_listen_));
  const int prev = members[(new_rank + n - 1) % n];
  const int next = members[(new_rank + 1) % n];
  SocketAddress mine = b->ring_listen_.address();
  SocketAddress next_addr{};
  NCCLCHECK(parent.Send(prev, tag, &mine, sizeof(mine)));
  NCCLCHECK(parent.Recv(next, tag, &next_addr, sizeof(next_addr)));
  NCCLCHECK(b->ConnectRing(next_addr));
  NCCLCHECK(b->FinishInit());
  *out = std::move(b);
  return ncclSuccess;
}

ncclResult_t Bootstrap::ConnectRing(const SocketAddress& next) {
  NCCLCHECK(Socket::Connect(next, magic_, kSocketBootstrap, abort_flag_, &ring_send_));
  NCCLCHECK(ring_listen_.Accept(&ring_recv_));
  return ncclSuccess;
}

ncclResult_t Bootstrap::FinishInit() {
  p2p_addrs_.assign(nranks_, SocketAddress{});
  p2p_addrs_[rank_] = p2p_listen_.address();
  return AllGather(p2p_addrs_.data(), sizeof(SocketAddress));
}

ncclResult_t Bootstrap::AllGather(void* data, size_t block) {
  char* d = static_cast<char*>(data);
  for (int i = 0; i < nranks_ - 1; ++i) {
    const int send_idx = (rank_ - i + nranks_) % nranks_;
    const int recv_idx = (rank_ - i - 1 + nranks_) % nranks_;
    NCCLCHECK(ring_send_.Send(d + send_idx * block, block));
    NCCLCHECK(ring_recv_.Recv(d + recv_idx * block, block));
  }
  return ncclSuccess;
}

ncclResult_t Bootstrap::Barrier() {
  std::vector<int32_t> v(nranks_, 0);
  v[rank_] = rank_;
  return AllGather(v.data(), sizeof(int32_t));
}

ncclResult_t Bootstrap::Send(int peer, int tag, const void* data, size_t size) {
  if (peer < 0 || peer >= nranks_ || p2p_addrs_.empty()) return ncclInternalError;
  Socket s;
  NCCLCHECK(Socket::Connect(p2p_addrs_[peer], magic_, kSocketBootstrap, abort_flag_, &s));
  P2pHeader h{rank_, tag, size};
  NCCLCHECK(s.Send(&h, sizeof(h)));
  if (size > 0) NCCLCHECK(s.Send(data, size));
  return ncclSuccess;
}

ncclResult_t Bootstrap::Recv(int peer, int tag, void* data, size_t size) {
  auto deliver = [&](const std::vector<char>& got) -> ncclResult_t {
    if (got.size() != size) {
      WARN("Message truncated : received %zu bytes instead of %zu", got.size(), size);
      return ncclInternalError;
    }
    if (size > 0) std::memcpy(data, got.data(), size);
    return ncclSuccess;
  };
  for (size_t i = 0; i < unexpected_.size(); ++i) {
    if (unexpected_[i].peer == peer && unexpected_[i].tag == tag) {
      std::vector<char> got = std::move(unexpected_[i].data);
      unexpected_.erase(unexpected_.begin() + static_cast<long>(i));
      return deliver(got);
    }
  }
  for (;;) {
    Socket s;
    NCCLCHECK(p2p_listen_.Accept(&s));
    P2pHeader h;
    NCCLCHECK(s.Recv(&h, sizeof(h)));
    std::vector<char> got(h.size);
    if (h.size > 0) NCCLCHECK(s.Recv(got.data(), h.size));
    if (h.rank == peer && h.tag == tag) return deliver(got);
    unexpected_.push_back(Unexpected{h.rank, h.tag, std::move(got)});
  }
}

void Bootstrap::Close() {
  ring_send_.Close();
  ring_recv_.Close();
  ring_listen_.Close();
  p2p_listen_.Close();
}

}  // namespace ncclsim::nccl

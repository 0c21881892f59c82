#include "nccl/ops.h"

#include <algorithm>
#include <cstring>

#include "nccl/params.h"
#include "nccl/transport.h"

namespace ncclsim::nccl {
namespace {

bool Overlaps(const char* a, size_t an, const char* b, size_t bn) {
  return an > 0 && bn > 0 && a < b + bn && b < a + an;
}

}  // namespace

const char* FuncName(Func f) {
  switch (f) {
    case Func::kBroadcast:
      return "Broadcast";
    case Func::kReduce:
      return "Reduce";
    case Func::kAllGather:
      return "AllGather";
    case Func::kReduceScatter:
      return "ReduceScatter";
    case Func::kAllReduce:
      return "AllReduce";
    case Func::kSendRecv:
      return "SendRecv";
    case Func::kSend:
      return "Send";
    case Func::kRecv:
      return "Recv";
    case Func::kAlltoAll:
      return "AlltoAll";
    case Func::kScatter:
      return "Scatter";
    case Func::kGather:
      return "Gather";
    case Func::kPutSignal:
      return "PutSignal";
    case Func::kSignal:
      return "Signal";
    case Func::kWaitSignal:
      return "WaitSignal";
  }
  return "Unknown";
}

bool IsOneSided(Func f) {
  return f == Func::kPutSignal || f == Func::kSignal || f == Func::kWaitSignal;
}

void OneSidedState::Reset(int n) {
  nranks = n;
  received.reset(new std::atomic<uint64_t>[static_cast<size_t>(n)]);
  for (int i = 0; i < n; ++i) received[i].store(0);
  std::lock_guard<std::mutex> lock(mu);
  windows.clear();
}

void OneSidedState::Place(int index, uint64_t offset, const char* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu);
  if (index < 0 || static_cast<size_t>(index) >= windows.size()) return;
  const Window& w = windows[index];
  if (w.base == nullptr || offset > w.size || bytes > w.size - offset) return;
  std::memcpy(w.base + offset, data, bytes);
}

uint64_t OneSidedState::Received(int peer) const {
  return peer >= 0 && peer < nranks ? received[peer].load(std::memory_order_acquire) : 0;
}

void OneSidedState::Count(int peer) {
  if (peer >= 0 && peer < nranks) received[peer].fetch_add(1, std::memory_order_acq_rel);
}

bool IsRooted(Func f) {
  return f == Func::kBroadcast || f == Func::kReduce || f == Func::kGather || f == Func::kScatter;
}

bool IsReduction(Func f) {
  return f == Func::kAllReduce || f == Func::kReduce || f == Func::kReduceScatter;
}

Op::Op(const OpArgs& args, int rank, int nranks, const Reduction& reduction)
    : args_(args), rank_(rank), nranks_(nranks), reduction_(reduction) {
  const size_t elem = DataTypeSize(args.datatype);
  const size_t bytes = args.count * elem;
  const bool p2p = args.func == Func::kSend || args.func == Func::kRecv;
  sig_.func = static_cast<uint32_t>(p2p ? Func::kSendRecv : args.func);
  sig_.datatype = static_cast<uint32_t>(args.datatype);
  sig_.redop =
      IsReduction(args.func) ? static_cast<uint32_t>(std::min<int>(args.redop, ncclNumOps)) : 0;
  sig_.root = IsRooted(args.func) ? args.peer : 0;
  sig_.count = args.count;
  if (args.func == Func::kPutSignal || args.func == Func::kSignal) {
    // The chunks name the target: the window and the offset into it.
    sig_.root = args.window;
    sig_.count = args.window_offset;
    sig_.redop = 0;
    char* src = static_cast<char*>(const_cast<void*>(args.sendbuff));
    if (args.peer == rank)
      one_sided_to_self_ = true;
    else
      sends_.push_back({args.peer, src, args.func == Func::kSignal ? 0 : bytes});
    return;
  }
  if (args.func == Func::kWaitSignal) return;
  if (bytes == 0) return;

  char* send = static_cast<char*>(const_cast<void*>(args.sendbuff));
  char* recv = static_cast<char*>(args.recvbuff);
  const int me = rank;
  const int root = args.peer;
  std::vector<int> others;
  for (int p = 0; p < nranks; ++p)
    if (p != me) others.push_back(p);
  auto local = [&](const char* src, char* dst) {
    local_src_ = src;
    local_dst_ = dst;
    local_bytes_ = bytes;
  };
  auto fold = [&](const char* mine, char* dst) {
    if (others.empty()) {
      local(mine, dst);
      return;
    }
    fold_ = Fold{others, mine, dst, bytes, 0, false};
  };

  switch (args.func) {
    case Func::kAllReduce:
      for (int p : others) sends_.push_back({p, send, bytes});
      fold(send, recv);
      break;
    case Func::kBroadcast:
      if (me == root) {
        for (int p : others) sends_.push_back({p, send, bytes});
        local(send, recv);
      } else {
        recvs_.push_back({root, recv, bytes});
      }
      break;
    case Func::kReduce:
      if (me == root) {
        fold(send, recv);
      } else {
        sends_.push_back({root, send, bytes});
      }
      break;
    case Func::kAllGather:
      for (int p : others) {
        sends_.push_back({p, send, bytes});
        recvs_.push_back({p, recv + p * bytes, bytes});
      }
      local(send, recv + me * bytes);
      break;
    case Func::kReduceScatter:
      for (int p : others) sends_.push_back({p, send + p * bytes, bytes});
      fold(send + me * bytes, recv);
      break;
    case Func::kAlltoAll:
      for (int p : others) {
        sends_.push_back({p, send + p * bytes, bytes});
        recvs_.push_back({p, recv + p * bytes, bytes});
      }
      local(send + me * bytes, recv + me * bytes);
      break;
    case Func::kGather:
      if (me == root) {
        for (int p : others) recvs_.push_back({p, recv + p * bytes, bytes});
        local(send, recv + root * bytes);
      } else {
        sends_.push_back({root, send, bytes});
      }
      break;
    case Func::kScatter:
      if (me == root) {
        for (int p : others) sends_.push_back({p, send + p * bytes, bytes});
        local(send + root * bytes, recv);
      } else {
        recvs_.push_back({root, recv, bytes});
      }
      break;
    case Func::kSend:
      if (root == me)
        self_unpaired_ = true;
      else
        sends_.push_back({root, send, bytes});
      break;
    case Func::kRecv:
      if (root == me)
        self_unpaired_ = true;
      else
        recvs_.push_back({root, recv, bytes});
      break;
    case Func::kSendRecv:
    case Func::kPutSignal:
    case Func::kSignal:
    case Func::kWaitSignal:
      break;
  }

  // Sends must read the caller's data as it was when the op started, even
  // where this op's receives or local copy overwrite it (in-place AlltoAll).
  for (const Transfer& s : sends_) {
    for (const Transfer& r : recvs_) needs_snapshot_ |= Overlaps(s.buf, s.bytes, r.buf, r.bytes);
    needs_snapshot_ |=
        local_src_ != local_dst_ && Overlaps(s.buf, s.bytes, local_dst_, local_bytes_);
    if (fold_) fold_->wait_for_sends |= Overlaps(s.buf, s.bytes, fold_->dst, fold_->bytes);
  }
}

void Op::PairWithSelfSend(Op& send) {
  send.self_unpaired_ = false;
  local_src_ = static_cast<const char*>(send.args_.sendbuff);
  local_dst_ = static_cast<char*>(args_.recvbuff);
  local_bytes_ = args_.count * DataTypeSize(args_.datatype);
  self_unpaired_ = false;
}

bool Op::UsesPeers() const {
  auto other = [this](const Transfer& t) { return t.peer != rank_; };
  return fold_.has_value() || std::any_of(sends_.begin(), sends_.end(), other) ||
         std::any_of(recvs_.begin(), recvs_.end(), other);
}

bool Op::SendsTo(int peer) const {
  return std::any_of(sends_.begin(), sends_.end(),
                     [peer](const Transfer& s) { return s.peer == peer; });
}

bool Op::ReceivesFrom(int peer) const {
  if (std::any_of(recvs_.begin(), recvs_.end(),
                  [peer](const Transfer& r) { return r.peer == peer; }))
    return true;
  return fold_ && std::find(fold_->peers.begin(), fold_->peers.end(), peer) != fold_->peers.end();
}

void Op::Start() {
  if (needs_snapshot_) {
    const char* lo = sends_.front().buf;
    const char* hi = lo;
    for (const Transfer& s : sends_) {
      lo = std::min<const char*>(lo, s.buf);
      hi = std::max<const char*>(hi, s.buf + s.bytes);
    }
    snapshot_.assign(lo, hi);
    for (Transfer& s : sends_) s.buf = snapshot_.data() + (s.buf - lo);
  }
  if (local_bytes_ > 0 && local_src_ != local_dst_)
    std::memmove(local_dst_, local_src_, local_bytes_);
  if (one_sided_to_self_ && one_sided_ != nullptr) {
    if (args_.func == Func::kPutSignal)
      one_sided_->Place(args_.window, args_.window_offset, static_cast<const char*>(args_.sendbuff),
                        args_.count * DataTypeSize(args_.datatype));
    one_sided_->Count(rank_);
    one_sided_to_self_ = false;
  }
}

bool Op::ProgressSend(Transfer& s, Fifo& f) {
  bool moved = false;
  const size_t step = f.step_bytes();
  while (!s.Finished() && f.CanPost()) {
    const size_t n = std::min(step, s.bytes - s.done);
    if (n > 0) std::memcpy(f.PostSlot(), s.buf + s.done, n);
    f.Post(StepMeta{s.done, n, sig_, s.bytes});
    s.done += n;
    if (s.bytes == 0) s.empty_posted = true;
    moved = true;
  }
  return moved;
}

bool Op::ProgressRecv(Transfer& r, Fifo& f) {
  bool moved = false;
  const StepMeta* meta = nullptr;
  const char* data = nullptr;
  while (r.done < r.bytes && f.Peek(&meta, &data)) {
    // Another operation's data, or a gap: leave it, as a GPU kernel would spin.
    if (meta->sig != sig_ || meta->offset != r.done || meta->bytes > r.bytes - r.done) break;
    std::memcpy(r.buf + r.done, data, meta->bytes);
    r.done += meta->bytes;
    f.Pop();
    moved = true;
  }
  return moved;
}

bool Op::ProgressFold(Transport& t) {
  Fold& fd = *fold_;
  const size_t elem = DataTypeSize(args_.datatype);
  std::vector<const void*> inputs(static_cast<size_t>(nranks_));
  bool moved = false;
  while (fd.done < fd.bytes) {
    const size_t step = t.RecvFrom(fd.peers.front()).step_bytes();
    const size_t n = std::min(step, fd.bytes - fd.done);
    for (int p : fd.peers) {
      const StepMeta* meta = nullptr;
      const char* data = nullptr;
      if (!t.RecvFrom(p).Peek(&meta, &data)) return moved;
      if (meta->sig != sig_ || meta->offset != fd.done || meta->bytes != n) return moved;
      inputs[p] = data;
    }
    if (fd.wait_for_sends) {
      for (const Transfer& s : sends_)
        if (s.done < fd.done + n) return moved;
    }
    inputs[rank_] = fd.mine + fd.done;
    ReduceInto(reduction_, fd.dst + fd.done, inputs.data(), nranks_, n / elem);
    for (int p : fd.peers) t.RecvFrom(p).Pop();
    fd.done += n;
    moved = true;
  }
  return moved;
}

bool Op::Progress(Transport& t, const LineUp& line) {
  bool moved = false;
  for (Transfer& s : sends_) {
    if (!s.Finished() && line.send[s.peer].front() == this)
      moved |= ProgressSend(s, t.SendTo(s.peer));
  }
  if (NetReceiveDead()) return moved;  // NCCLSIM_NET_STALL: nothing comes in
  for (Transfer& r : recvs_) {
    if (r.done < r.bytes && line.recv[r.peer].front() == this)
      moved |= ProgressRecv(r, t.RecvFrom(r.peer));
  }
  if (fold_ && fold_->done < fold_->bytes) {
    bool first_everywhere = true;
    for (int p : fold_->peers) first_everywhere &= line.recv[p].front() == this;
    if (first_everywhere) moved |= ProgressFold(t);
  }
  return moved;
}

bool Op::SendDone(int peer) const {
  for (const Transfer& s : sends_)
    if (s.peer == peer && !s.Finished()) return false;
  return true;
}

bool Op::RecvDone(int peer) const {
  for (const Transfer& r : recvs_)
    if (r.peer == peer && r.done < r.bytes) return false;
  if (fold_ && fold_->done < fold_->bytes &&
      std::find(fold_->peers.begin(), fold_->peers.end(), peer) != fold_->peers.end()) {
    return false;
  }
  return true;
}

bool Op::Done() const {
  if (self_unpaired_ || one_sided_to_self_) return false;
  if (args_.func == Func::kWaitSignal) {
    if (one_sided_ == nullptr) return false;
    for (const auto& w : args_.wait_until)
      if (one_sided_->Received(w.first) < w.second) return false;
    return true;
  }
  for (const Transfer& s : sends_)
    if (!s.Finished()) return false;
  for (const Transfer& r : recvs_)
    if (r.done < r.bytes) return false;
  return !fold_ || fold_->done >= fold_->bytes;
}

}  // namespace ncclsim::nccl

// HOT PATH: no allocation, no lock, no system call, async-signal-safe,
// errno untouched.

#include "core/cuda_records.h"

#include <errno.h>

#include "core/nccl_code.h"
#include "core/record_builder.h"
#include "core/tracer.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::shim {

void RecordCudaCall(const CudaCallEvent& e) {
  const int saved = errno;
  namespace k = fields::cuda_call;
  const ThreadState& t = ThisThread();
  const bool from_nccl = FromNccl(e.caller);
  auto fill = [&](wire::WireWriter& w) {
    w.Varint(k::kFunction, e.function);
    w.Sint(k::kResult, e.result);
    if (e.via != 0) w.Varint(k::kVia, e.via);
    if (e.handle != 0) w.Fixed64(k::kHandle, e.handle);
    if (e.handle_type != 0) w.Varint(k::kHandleType, e.handle_type);
    if (e.can_access >= 0) w.Sint(k::kCanAccess, e.can_access);
    if (t.in_call != 0) w.Varint(k::kInCall, t.in_call);
    if (from_nccl) w.Varint(k::kFromNccl, 1);
    if (e.device >= 0) w.Sint(k::kDevice, e.device);
    if (e.peer >= 0) w.Sint(k::kPeer, e.peer);
    if (e.size != 0) w.Varint(k::kSize, e.size);
    if (e.ptr != 0) w.Fixed64(k::kPtr, e.ptr);
    if (e.flags != 0) w.Varint(k::kFlags, e.flags);
    if (e.has_fd) w.Sint(k::kFd, e.fd);
    if (e.err != 0) w.Sint(k::kErr, e.err);
    if (e.num_devices != 0) w.Varint(k::kNumDevices, e.num_devices);
    if (e.access_flags != 0) w.Varint(k::kAccessFlags, e.access_flags);
    w.Fixed64(k::kCaller, reinterpret_cast<uint64_t>(e.caller));
  };
  if (e.result != 0) {
    RecordBuilder<256> r(fields::record::kCudaCall);
    fill(r.w());
    r.Append(Region::kPinned);
  } else {
    AppendRingRecord(fields::record::kCudaCall, 0, [&](wire::WireWriter& w) { fill(w); });
  }
  errno = saved;
}

}  // namespace ncclwatch::shim

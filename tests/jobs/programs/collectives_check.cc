// collectives_check: runs every NCCL collective and point-to-point pattern
// across the job and checks every element of every result.
//
// Values are chosen so that every exact result is representable in every
// datatype, so results are compared exactly (ncclAvg over a rank count that is
// not a power of two is compared with a tolerance). The expected values are
// computed here, independently of the library under test; narrow floats are
// converted with the CUDA headers' own host conversions.
//
// Prints "ok <check>" or "FAIL <check>: ..." per check and exits 1 if any
// check failed. Written only against the public NCCL and CUDA API.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/job_env.h"

namespace {

int g_failures = 0;
int g_checks = 0;
int g_rank = 0;
int g_world = 1;

size_t SizeOf(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

const char* TypeName(ncclDataType_t t) {
  static const char* names[] = {"int8", "uint8", "int32",  "uint32", "int64",   "uint64",
                                "half", "float", "double", "bf16",   "fp8e4m3", "fp8e5m2"};
  return names[t];
}

const char* OpName(ncclRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return op < ncclNumOps ? names[op] : "premulsum";
}

bool IsFloat(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 ||
         t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}

// Host-side element access, in the type's own representation.
void Store(ncclDataType_t t, void* base, size_t i, double v) {
  char* p = static_cast<char*>(base) + i * SizeOf(t);
  switch (t) {
    case ncclInt8: {
      int8_t x = static_cast<int8_t>(static_cast<int64_t>(v));
      std::memcpy(p, &x, 1);
      break;
    }
    case ncclUint8: {
      uint8_t x = static_cast<uint8_t>(static_cast<int64_t>(v));
      std::memcpy(p, &x, 1);
      break;
    }
    case ncclInt32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case ncclUint32: {
      uint32_t x = static_cast<uint32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case ncclInt64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case ncclUint64: {
      uint64_t x = static_cast<uint64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case ncclFloat16: {
      __half x = __float2half_rn(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case ncclFloat32: {
      float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case ncclFloat64: {
      std::memcpy(p, &v, 8);
      break;
    }
    case ncclBfloat16: {
      __nv_bfloat16 x = __float2bfloat16_rn(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case ncclFloat8e4m3: {
      __nv_fp8_e4m3 x(static_cast<float>(v));
      std::memcpy(p, &x, 1);
      break;
    }
    case ncclFloat8e5m2: {
      __nv_fp8_e5m2 x(static_cast<float>(v));
      std::memcpy(p, &x, 1);
      break;
    }
    default:
      break;
  }
}

double Load(ncclDataType_t t, const void* base, size_t i) {
  const char* p = static_cast<const char*>(base) + i * SizeOf(t);
  switch (t) {
    case ncclInt8: {
      int8_t x;
      std::memcpy(&x, p, 1);
      return x;
    }
    case ncclUint8: {
      uint8_t x;
      std::memcpy(&x, p, 1);
      return x;
    }
    case ncclInt32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case ncclUint32: {
      uint32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case ncclInt64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    case ncclUint64: {
      uint64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    case ncclFloat16: {
      __half x;
      std::memcpy(&x, p, 2);
      return __half2float(x);
    }
    case ncclFloat32: {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case ncclFloat64: {
      double x;
      std::memcpy(&x, p, 8);
      return x;
    }
    case ncclBfloat16: {
      __nv_bfloat16 x;
      std::memcpy(&x, p, 2);
      return __bfloat162float(x);
    }
    case ncclFloat8e4m3: {
      __nv_fp8_e4m3 x;
      std::memcpy(&x, p, 1);
      return static_cast<float>(x);
    }
    case ncclFloat8e5m2: {
      __nv_fp8_e5m2 x;
      std::memcpy(&x, p, 1);
      return static_cast<float>(x);
    }
    default:
      return 0;
  }
}

// Wraps an exact integer result into the type, as two's complement hardware does.
double Wrap(ncclDataType_t t, double v) {
  const int64_t x = static_cast<int64_t>(v);
  switch (t) {
    case ncclInt8:
      return static_cast<int8_t>(x);
    case ncclUint8:
      return static_cast<uint8_t>(x);
    case ncclInt32:
      return static_cast<int32_t>(x);
    case ncclUint32:
      return static_cast<uint32_t>(x);
    default:
      return v;
  }
}

// A device buffer with a host mirror.
struct Buffer {
  ncclDataType_t type;
  size_t count;
  void* dev = nullptr;
  std::vector<char> host;
  Buffer(ncclDataType_t t, size_t n) : type(t), count(n), host(n * SizeOf(t) + 1) {
    CUDA_OK(cudaMalloc(&dev, n * SizeOf(t) + 1));
  }
  ~Buffer() { cudaFree(dev); }
  void Fill(const std::function<double(size_t)>& f) {
    for (size_t i = 0; i < count; ++i) Store(type, host.data(), i, f(i));
    CUDA_OK(cudaMemcpy(dev, host.data(), count * SizeOf(type), cudaMemcpyHostToDevice));
  }
  void Poison() { CUDA_OK(cudaMemset(dev, 0x5a, count * SizeOf(type))); }
  void Fetch() {
    CUDA_OK(cudaMemcpy(host.data(), dev, count * SizeOf(type), cudaMemcpyDeviceToHost));
  }
  double At(size_t i) const { return Load(type, host.data(), i); }
  char* DevAt(size_t i) const { return static_cast<char*>(dev) + i * SizeOf(type); }
};

// Compares `count` elements of `buf` from `offset` with expect(i).
void Expect(const std::string& name, Buffer& buf, size_t offset, size_t count,
            const std::function<double(size_t)>& expect, double tolerance = 0) {
  ++g_checks;
  buf.Fetch();
  for (size_t i = 0; i < count; ++i) {
    const double want = expect(i);
    const double got = buf.At(offset + i);
    const bool ok = tolerance == 0
                        ? got == want
                        : std::fabs(got - want) <= tolerance * std::max(1.0, std::fabs(want));
    if (!ok) {
      std::printf("FAIL %s: element %zu: expected %.9g, got %.9g\n", name.c_str(), i, want, got);
      ++g_failures;
      return;
    }
  }
  std::printf("ok %s\n", name.c_str());
}

bool PowerOfTwo(int n) { return (n & (n - 1)) == 0; }

void CheckAllReduceEveryTypeAndOp(ncclComm_t comm, cudaStream_t s) {
  const size_t n = 1031;
  for (int t = 0; t < ncclNumTypes; ++t) {
    const auto type = static_cast<ncclDataType_t>(t);
    for (int o = 0; o < ncclNumOps; ++o) {
      const auto op = static_cast<ncclRedOp_t>(o);
      std::function<double(int, size_t)> v;
      if (op == ncclProd)
        v = [](int r, size_t i) { return 1.0 + (r + i) % 2; };
      else if (op == ncclMax || op == ncclMin)
        v = [](int r, size_t i) { return static_cast<double>((r * 7 + i) % 5); };
      else
        v = [](int r, size_t i) { return static_cast<double>((r + i) % 2); };
      Buffer in(type, n), out(type, n);
      in.Fill([&](size_t i) { return v(g_rank, i); });
      out.Poison();
      NCCL_OK(ncclAllReduce(in.dev, out.dev, n, type, op, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      auto expect = [&](size_t i) {
        double acc = v(0, i);
        for (int r = 1; r < g_world; ++r) {
          const double x = v(r, i);
          if (op == ncclProd)
            acc *= x;
          else if (op == ncclMax)
            acc = std::max(acc, x);
          else if (op == ncclMin)
            acc = std::min(acc, x);
          else
            acc += x;
        }
        if (op == ncclAvg) acc = IsFloat(type) ? acc / g_world : std::floor(acc / g_world);
        return Wrap(type, acc);
      };
      double tol = 0;
      if (op == ncclAvg && !PowerOfTwo(g_world))
        tol = (type == ncclFloat8e4m3 || type == ncclFloat8e5m2) ? 0.25 : 0.02;
      Expect(std::string("AllReduce ") + TypeName(type) + " " + OpName(op), out, 0, n, expect, tol);
    }
  }
}

double Pattern(int r, size_t i) { return r * 1000.0 + static_cast<double>(i % 1000); }

void CheckRootedAndGathers(ncclComm_t comm, cudaStream_t s) {
  const size_t n = 4099;
  const int root = g_world - 1;
  for (ncclDataType_t type : {ncclFloat32, ncclInt64}) {
    const std::string tn = TypeName(type);
    {
      Buffer in(type, n), out(type, n);
      in.Fill([](size_t i) { return Pattern(g_rank, i); });
      out.Poison();
      NCCL_OK(ncclBroadcast(in.dev, out.dev, n, type, root, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      Expect("Broadcast " + tn, out, 0, n, [&](size_t i) { return Pattern(root, i); });
    }
    {
      const int rroot = 1 % g_world;
      Buffer in(type, n), out(type, n);
      in.Fill([](size_t i) { return Pattern(g_rank, i); });
      out.Poison();
      NCCL_OK(ncclReduce(in.dev, out.dev, n, type, ncclSum, rroot, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      if (g_rank == rroot) {
        Expect("Reduce " + tn, out, 0, n, [&](size_t i) {
          double acc = 0;
          for (int r = 0; r < g_world; ++r) acc += Pattern(r, i);
          return acc;
        });
      }
    }
    {
      Buffer in(type, n), out(type, n * g_world);
      in.Fill([](size_t i) { return Pattern(g_rank, i); });
      out.Poison();
      NCCL_OK(ncclAllGather(in.dev, out.dev, n, type, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      Expect("AllGather " + tn, out, 0, n * g_world,
             [&](size_t i) { return Pattern(static_cast<int>(i / n), i % n); });
    }
    {
      Buffer in(type, n * g_world), out(type, n);
      in.Fill([](size_t i) { return Pattern(g_rank, i); });
      out.Poison();
      NCCL_OK(ncclReduceScatter(in.dev, out.dev, n, type, ncclSum, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      Expect("ReduceScatter " + tn, out, 0, n, [&](size_t i) {
        double acc = 0;
        for (int r = 0; r < g_world; ++r) acc += Pattern(r, g_rank * n + i);
        return acc;
      });
    }
    {
      auto cell = [](int from, int to, size_t i) {
        return from * 10000.0 + to * 100.0 + static_cast<double>(i % 100);
      };
      Buffer in(type, n * g_world), out(type, n * g_world);
      in.Fill([&](size_t i) { return cell(g_rank, static_cast<int>(i / n), i % n); });
      out.Poison();
      NCCL_OK(ncclAlltoAll(in.dev, out.dev, n, type, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      Expect("AlltoAll " + tn, out, 0, n * g_world,
             [&](size_t i) { return cell(static_cast<int>(i / n), g_rank, i % n); });
    }
    {
      Buffer in(type, n), out(type, n * g_world);
      in.Fill([](size_t i) { return Pattern(g_rank, i); });
      out.Poison();
      NCCL_OK(ncclGather(in.dev, out.dev, n, type, 0, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      if (g_rank == 0) {
        Expect("Gather " + tn, out, 0, n * g_world,
               [&](size_t i) { return Pattern(static_cast<int>(i / n), i % n); });
      }
    }
    {
      Buffer in(type, n * g_world), out(type, n);
      in.Fill([](size_t i) { return Pattern(g_rank, i); });
      out.Poison();
      NCCL_OK(ncclScatter(in.dev, out.dev, n, type, 0, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      Expect("Scatter " + tn, out, 0, n, [&](size_t i) { return Pattern(0, g_rank * n + i); });
    }
  }
}

void CheckPointToPoint(ncclComm_t comm, cudaStream_t s) {
  const size_t n = 70001;
  const int next = (g_rank + 1) % g_world;
  const int prev = (g_rank + g_world - 1) % g_world;
  {
    Buffer in(ncclFloat32, n), out(ncclFloat32, n);
    in.Fill([](size_t i) { return Pattern(g_rank, i); });
    out.Poison();
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(in.dev, n, ncclFloat32, next, comm, s));
    NCCL_OK(ncclRecv(out.dev, n, ncclFloat32, prev, comm, s));
    NCCL_OK(ncclGroupEnd());
    CUDA_OK(cudaStreamSynchronize(s));
    Expect("Send/Recv ring", out, 0, n, [&](size_t i) { return Pattern(prev, i); });
  }
  {
    // All-to-all written as grouped sends and receives, self included.
    const size_t m = 257;
    Buffer in(ncclInt32, m * g_world), out(ncclInt32, m * g_world);
    in.Fill([&](size_t i) { return g_rank * 100000.0 + static_cast<double>(i); });
    out.Poison();
    NCCL_OK(ncclGroupStart());
    for (int p = 0; p < g_world; ++p) {
      NCCL_OK(ncclSend(in.DevAt(p * m), m, ncclInt32, p, comm, s));
      NCCL_OK(ncclRecv(out.DevAt(p * m), m, ncclInt32, p, comm, s));
    }
    NCCL_OK(ncclGroupEnd());
    CUDA_OK(cudaStreamSynchronize(s));
    Expect("Send/Recv all-to-all with self", out, 0, m * g_world,
           [&](size_t i) { return (i / m) * 100000.0 + static_cast<double>(g_rank * m + i % m); });
  }
}

void CheckGroupsInPlaceAndLarge(ncclComm_t comm, cudaStream_t s) {
  const size_t n = 999;
  {
    Buffer a(ncclFloat32, n), b(ncclInt32, n), c(ncclFloat64, n);
    a.Fill([](size_t i) { return static_cast<double>(g_rank + i % 7); });
    b.Fill([](size_t i) { return static_cast<double>(g_rank * 2 + i % 3); });
    c.Fill([](size_t i) { return g_rank == 0 ? static_cast<double>(i) : -1.0; });
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllReduce(a.dev, a.dev, n, ncclFloat32, ncclSum, comm, s));
    NCCL_OK(ncclAllReduce(b.dev, b.dev, n, ncclInt32, ncclMax, comm, s));
    NCCL_OK(ncclBcast(c.dev, n, ncclFloat64, 0, comm, s));
    NCCL_OK(ncclGroupEnd());
    CUDA_OK(cudaStreamSynchronize(s));
    Expect("group: in-place AllReduce sum", a, 0, n, [&](size_t i) {
      double acc = 0;
      for (int r = 0; r < g_world; ++r) acc += r + i % 7;
      return acc;
    });
    Expect("group: in-place AllReduce max", b, 0, n,
           [&](size_t i) { return (g_world - 1) * 2.0 + i % 3; });
    Expect("group: ncclBcast in place", c, 0, n, [](size_t i) { return static_cast<double>(i); });
  }
  {
    Buffer buf(ncclFloat32, n * g_world);
    buf.Fill([&](size_t i) {
      return i / n == static_cast<size_t>(g_rank) ? Pattern(g_rank, i % n) : -7.0;
    });
    NCCL_OK(ncclAllGather(buf.DevAt(g_rank * n), buf.dev, n, ncclFloat32, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    Expect("AllGather in place", buf, 0, n * g_world,
           [&](size_t i) { return Pattern(static_cast<int>(i / n), i % n); });
  }
  {
    Buffer buf(ncclFloat32, n * g_world);
    buf.Fill([](size_t i) { return Pattern(g_rank, i); });
    NCCL_OK(ncclReduceScatter(buf.dev, buf.DevAt(g_rank * n), n, ncclFloat32, ncclSum, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    Expect("ReduceScatter in place", buf, g_rank * n, n, [&](size_t i) {
      double acc = 0;
      for (int r = 0; r < g_world; ++r) acc += Pattern(r, g_rank * n + i);
      return acc;
    });
  }
  {
    // Larger than many 512 KiB steps: exercises chunking and flow control.
    const size_t big = 3000017;
    Buffer in(ncclFloat32, big), out(ncclFloat32, big);
    in.Fill([](size_t i) { return static_cast<double>((i * 31 + g_rank) % 1024); });
    NCCL_OK(ncclAllReduce(in.dev, out.dev, big, ncclFloat32, ncclSum, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    Expect("AllReduce 12 MB", out, 0, big, [&](size_t i) {
      double acc = 0;
      for (int r = 0; r < g_world; ++r) acc += static_cast<double>((i * 31 + r) % 1024);
      return acc;
    });
  }
}

void CheckOperatorsAndEdges(ncclComm_t comm, cudaStream_t s) {
  const size_t n = 513;
  {
    float scalar = 2.0f;
    ncclRedOp_t op;
    NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
    Buffer in(ncclFloat32, n), out(ncclFloat32, n);
    in.Fill([](size_t i) { return static_cast<double>(g_rank + i % 5); });
    NCCL_OK(ncclAllReduce(in.dev, out.dev, n, ncclFloat32, op, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    NCCL_OK(ncclRedOpDestroy(op, comm));
    Expect("AllReduce PreMulSum x2", out, 0, n, [&](size_t i) {
      double acc = 0;
      for (int r = 0; r < g_world; ++r) acc += 2.0 * (r + i % 5);
      return acc;
    });
  }
  {
    Buffer buf(ncclFloat32, 4);
    buf.Fill([](size_t) { return 42.0; });
    NCCL_OK(ncclAllReduce(buf.dev, buf.dev, 0, ncclFloat32, ncclSum, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    Expect("AllReduce of zero elements leaves memory alone", buf, 0, 4,
           [](size_t) { return 42.0; });
  }
  {
    ++g_checks;
    Buffer buf(ncclFloat32, 4);
    ncclResult_t r = ncclAllReduce(buf.dev, buf.dev, 4, ncclFloat32, ncclSum, nullptr, s);
    if (r == ncclInvalidArgument) {
      std::printf("ok AllReduce on a NULL communicator is ncclInvalidArgument\n");
    } else {
      std::printf("FAIL AllReduce on a NULL communicator returned %d\n", r);
      ++g_failures;
    }
  }
}

void CheckSplit(ncclComm_t comm, cudaStream_t s) {
  ncclComm_t sub = nullptr;
  const int color = g_rank % 2;
  NCCL_OK(ncclCommSplit(comm, color, g_rank, &sub, nullptr));
  int sub_size = 0, sub_rank = 0;
  NCCL_OK(ncclCommCount(sub, &sub_size));
  NCCL_OK(ncclCommUserRank(sub, &sub_rank));
  ++g_checks;
  const int want_size = (g_world + 1 - color) / 2;
  if (sub_size == want_size && sub_rank == g_rank / 2) {
    std::printf("ok CommSplit: size %d, rank %d\n", sub_size, sub_rank);
  } else {
    std::printf("FAIL CommSplit: size %d rank %d, expected %d and %d\n", sub_size, sub_rank,
                want_size, g_rank / 2);
    ++g_failures;
  }
  const size_t n = 300;
  Buffer in(ncclInt32, n), out(ncclInt32, n);
  in.Fill([](size_t i) { return static_cast<double>(g_rank * 10 + i % 10); });
  NCCL_OK(ncclAllReduce(in.dev, out.dev, n, ncclInt32, ncclSum, sub, s));
  CUDA_OK(cudaStreamSynchronize(s));
  Expect("AllReduce on a split communicator", out, 0, n, [&](size_t i) {
    double acc = 0;
    for (int r = color; r < g_world; r += 2) acc += r * 10 + i % 10;
    return acc;
  });
  NCCL_OK(ncclCommDestroy(sub));

  ncclComm_t none = reinterpret_cast<ncclComm_t>(0x1);
  NCCL_OK(ncclCommSplit(comm, g_rank == 0 ? 0 : NCCL_SPLIT_NOCOLOR, 0, &none, nullptr));
  ++g_checks;
  if ((g_rank == 0) == (none != nullptr)) {
    std::printf("ok CommSplit with NCCL_SPLIT_NOCOLOR gives no communicator\n");
  } else {
    std::printf("FAIL CommSplit with NCCL_SPLIT_NOCOLOR: got %p\n", static_cast<void*>(none));
    ++g_failures;
  }
  if (none != nullptr) NCCL_OK(ncclCommDestroy(none));
}

void CheckNonBlockingInit(cudaStream_t s) {
  ncclUniqueId id = jobenv::ShareUniqueId("nccl_id_nonblocking");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, g_world, id, g_rank, &config);
  ncclResult_t state = r;
  while (state == ncclInProgress) NCCL_OK(ncclCommGetAsyncError(comm, &state));
  ++g_checks;
  if ((r == ncclInProgress || r == ncclSuccess) && state == ncclSuccess) {
    std::printf("ok non-blocking init (returned %d, then ready)\n", r);
  } else {
    std::printf("FAIL non-blocking init: returned %d, final state %d\n", r, state);
    ++g_failures;
    return;
  }
  Buffer buf(ncclUint8, 100);
  buf.Fill([](size_t i) { return static_cast<double>(i % 2); });
  NCCL_OK(ncclAllReduce(buf.dev, buf.dev, 100, ncclUint8, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  Expect("AllReduce on a non-blocking communicator", buf, 0, 100,
         [](size_t i) { return (i % 2) * g_world * 1.0; });
  // A non-blocking communicator finalizes in the background.
  ncclResult_t fin = ncclCommFinalize(comm);
  if (fin != ncclSuccess && fin != ncclInProgress) NCCL_OK(fin);
  while (fin == ncclInProgress) NCCL_OK(ncclCommGetAsyncError(comm, &fin));
  NCCL_OK(fin);
  NCCL_OK(ncclCommDestroy(comm));
}

}  // namespace

int main() {
  g_rank = jobenv::Rank();
  g_world = jobenv::WorldSize();
  CUDA_OK(cudaSetDevice(jobenv::Device()));
  ncclUniqueId id = jobenv::ShareUniqueId();
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, g_world, id, g_rank));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  CheckAllReduceEveryTypeAndOp(comm, s);
  CheckRootedAndGathers(comm, s);
  CheckPointToPoint(comm, s);
  CheckGroupsInPlaceAndLarge(comm, s);
  CheckOperatorsAndEdges(comm, s);
  CheckSplit(comm, s);
  CheckNonBlockingInit(s);

  NCCL_OK(ncclCommFinalize(comm));
  NCCL_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaStreamDestroy(s));
  std::printf("collectives_check: rank %d: %d checks, %d failed\n", g_rank, g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}

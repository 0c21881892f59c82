// The shim's added cost per intercepted call, measured side by side in one
// run: an AllReduce (and a Send) called directly on a do-nothing NCCL, and
// the same call through libncclwatch.so on top of it, and through another
// build of the shim (NCCLWATCH_SHIM_BASELINE, e.g. main's) loaded beside it.
// Also the floors: a TSC read alone, a bare 64-byte ring append, a call-slot
// append, and the same stores without the locked add that claims the slot;
// and call slots claimed from claim blocks of 1 to 64 slots, on one thread
// and on two (BM_CallSlotClaimBlock: the block size's measurement).
//
//   NCCLWATCH_SHIM_BASELINE=/path/to/main/libncclwatch.so shim_overhead_bench
//       --benchmark_repetitions=9 --benchmark_report_aggregates_only=true
//
// Completion tracking: the shim is also loaded a second time (a copy of the
// file, so a separate instance) with a do-nothing CUDA driver (CUDA_NOOP,
// events that complete at once) and NCCLWATCH_COMPLETION on, and the same
// calls are timed through both in batches of 1024 (one marker pool) with the
// watcher given time to drain the pool between batches, as a GPU that keeps
// up would. The first instance runs with NCCLWATCH_COMPLETION=0.
//
// Needs NCCLWATCH_SHIM, NCCL_NOOP and CUDA_NOOP (paths), set by CMake as defaults.

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdlib.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <string>

#include "ring/ring_writer.h"

namespace {

// Where both the shim's trace and the bare ring go; removed at exit.
std::string& ScratchDir() {
  static std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ncclwatch-bench-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::exit(2);
    }
    return tmpl;
  }();
  return dir;
}

using AllReduceFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);
using SendFn = ncclResult_t (*)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
using InitFn = ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int);

struct Targets {
  AllReduceFn direct_allreduce = nullptr;
  AllReduceFn shim_allreduce = nullptr;
  SendFn direct_send = nullptr;
  SendFn shim_send = nullptr;
  ncclComm_t comm = nullptr;
  // NCCLWATCH_SHIM_BASELINE: another build of the shim (e.g. main's), loaded
  // beside this one, so the two are measured side by side in one run.
  AllReduceFn baseline_allreduce = nullptr;
  SendFn baseline_send = nullptr;
  // The shim instance that tracks completion (on the do-nothing driver).
  AllReduceFn completion_allreduce = nullptr;
  ncclComm_t completion_comm = nullptr;
  // ... and the baseline's, tracking completion too (NCCLWATCH_SHIM_BASELINE).
  AllReduceFn baseline_completion_allreduce = nullptr;
  ncclComm_t baseline_completion_comm = nullptr;
};

Targets& Get() {
  static Targets t = [] {
    Targets x;
    const char* noop = getenv("NCCL_NOOP");
    const char* shim = getenv("NCCLWATCH_SHIM");
#ifdef NCCL_NOOP_DEFAULT
    if (!noop) noop = NCCL_NOOP_DEFAULT;
#endif
#ifdef NCCLWATCH_SHIM_DEFAULT
    if (!shim) shim = NCCLWATCH_SHIM_DEFAULT;
#endif
    // The shim finds this NCCL the way it finds one loaded by a framework:
    // already loaded, by soname.
    void* n = dlopen(noop, RTLD_NOW | RTLD_GLOBAL);
    if (!n) {
      std::fprintf(stderr, "cannot load %s: %s\n", noop, dlerror());
      std::exit(2);
    }
    setenv("NCCLWATCH_DIR", ScratchDir().c_str(), 1);
    const char* cuda = getenv("CUDA_NOOP");
#ifdef CUDA_NOOP_DEFAULT
    if (!cuda) cuda = CUDA_NOOP_DEFAULT;
#endif
    if (dlopen(cuda, RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      std::fprintf(stderr, "cannot load %s: %s\n", cuda, dlerror());
      std::exit(2);
    }
    setenv("NCCLWATCH_COMPLETION", "0", 1);
    void* s = dlopen(shim, RTLD_NOW | RTLD_LOCAL);
    if (!s) {
      std::fprintf(stderr, "cannot load %s: %s\n", shim, dlerror());
      std::exit(2);
    }
    x.direct_allreduce = reinterpret_cast<AllReduceFn>(dlsym(n, "ncclAllReduce"));
    x.shim_allreduce = reinterpret_cast<AllReduceFn>(dlsym(s, "ncclAllReduce"));
    x.direct_send = reinterpret_cast<SendFn>(dlsym(n, "ncclSend"));
    x.shim_send = reinterpret_cast<SendFn>(dlsym(s, "ncclSend"));
    auto init = reinterpret_cast<InitFn>(dlsym(s, "ncclCommInitRank"));
    ncclUniqueId id;
    std::memset(&id, 7, sizeof(id));
    init(&x.comm, 8, id, 3);  // through the shim: the communicator becomes known to it
    {
      const std::string copy = ScratchDir() + "/libncclwatch-completion.so";
      std::filesystem::copy_file(shim, copy, std::filesystem::copy_options::overwrite_existing);
      setenv("NCCLWATCH_COMPLETION", "1", 1);
      void* c = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!c) {
        std::fprintf(stderr, "cannot load %s: %s\n", copy.c_str(), dlerror());
        std::exit(2);
      }
      x.completion_allreduce = reinterpret_cast<AllReduceFn>(dlsym(c, "ncclAllReduce"));
      // Another handle, so the two instances do not share a registry entry's address.
      ncclUniqueId other;
      std::memset(&other, 9, sizeof(other));
      reinterpret_cast<InitFn>(dlsym(c, "ncclCommInitRank"))(&x.completion_comm, 8, other, 3);
    }
    if (const char* base = getenv("NCCLWATCH_SHIM_BASELINE")) {
      void* b = dlopen(base, RTLD_NOW | RTLD_LOCAL);
      if (!b) {
        std::fprintf(stderr, "cannot load %s: %s\n", base, dlerror());
        std::exit(2);
      }
      x.baseline_allreduce = reinterpret_cast<AllReduceFn>(dlsym(b, "ncclAllReduce"));
      x.baseline_send = reinterpret_cast<SendFn>(dlsym(b, "ncclSend"));
      ncclComm_t same = nullptr;
      reinterpret_cast<InitFn>(dlsym(b, "ncclCommInitRank"))(&same, 8, id, 3);
      // A copy of it tracking completion, as above.
      const std::string copy = ScratchDir() + "/libncclwatch-baseline-completion.so";
      std::filesystem::copy_file(base, copy, std::filesystem::copy_options::overwrite_existing);
      setenv("NCCLWATCH_COMPLETION", "1", 1);
      void* bc = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!bc) {
        std::fprintf(stderr, "cannot load %s: %s\n", copy.c_str(), dlerror());
        std::exit(2);
      }
      x.baseline_completion_allreduce = reinterpret_cast<AllReduceFn>(dlsym(bc, "ncclAllReduce"));
      ncclUniqueId third;
      std::memset(&third, 11, sizeof(third));
      reinterpret_cast<InitFn>(dlsym(bc, "ncclCommInitRank"))(&x.baseline_completion_comm, 8, third,
                                                              3);
    }
    return x;
  }();
  return t;
}

void BM_AllReduce_Direct(benchmark::State& state) {
  Targets& t = Get();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        t.direct_allreduce(&state, &t, 1024, ncclFloat32, ncclSum, t.comm, nullptr));
  }
}

void BM_AllReduce_ThroughShim(benchmark::State& state) {
  Targets& t = Get();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        t.shim_allreduce(&state, &t, 1024, ncclFloat32, ncclSum, t.comm, nullptr));
  }
}

// Batches of 1024 calls (one marker pool), the watcher given 30 ms between
// batches (it polls every 20 ms); the time is per batch, the counter per call.
// kTracked 2: the baseline shim's completion-tracking instance.
template <int kTracked>
void BatchedAllReduce(benchmark::State& state) {
  Targets& t = Get();
  const AllReduceFn fn = kTracked == 2   ? t.baseline_completion_allreduce
                         : kTracked == 1 ? t.completion_allreduce
                                         : t.shim_allreduce;
  const ncclComm_t comm = kTracked == 2   ? t.baseline_completion_comm
                          : kTracked == 1 ? t.completion_comm
                                          : t.comm;
  if (fn == nullptr) {
    state.SkipWithError("NCCLWATCH_SHIM_BASELINE not set");
    return;
  }
  constexpr int kBatch = 1024;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i)
      benchmark::DoNotOptimize(fn(&state, &t, 1024, ncclFloat32, ncclSum, comm, nullptr));
    state.PauseTiming();
    usleep(30000);
    state.ResumeTiming();
  }
  state.counters["ns_per_call"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kBatch,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_AllReduce_ThroughShim_Batched(benchmark::State& state) { BatchedAllReduce<0>(state); }
// Tracked: this build's markers (a timed begin event before the call and
// one after: issue 23's GPU times) against the baseline's (one untimed
// event after), on the same do-nothing driver.
void BM_AllReduce_ThroughShimCompletion_Batched(benchmark::State& state) {
  BatchedAllReduce<1>(state);
}
void BM_AllReduce_ThroughBaselineShimCompletion_Batched(benchmark::State& state) {
  BatchedAllReduce<2>(state);
}
void BM_AllReduce_Direct_Batched(benchmark::State& state) {
  Targets& t = Get();
  constexpr int kBatch = 1024;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i)
      benchmark::DoNotOptimize(
          t.direct_allreduce(&state, &t, 1024, ncclFloat32, ncclSum, t.comm, nullptr));
    state.PauseTiming();
    usleep(30000);
    state.ResumeTiming();
  }
  state.counters["ns_per_call"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kBatch,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Send_Direct(benchmark::State& state) {
  Targets& t = Get();
  for (auto _ : state)
    benchmark::DoNotOptimize(t.direct_send(&state, 1024, ncclFloat32, 5, t.comm, nullptr));
}

void BM_Send_ThroughShim(benchmark::State& state) {
  Targets& t = Get();
  for (auto _ : state)
    benchmark::DoNotOptimize(t.shim_send(&state, 1024, ncclFloat32, 5, t.comm, nullptr));
}

void BM_AllReduce_ThroughBaselineShim(benchmark::State& state) {
  Targets& t = Get();
  if (t.baseline_allreduce == nullptr) {
    state.SkipWithError("NCCLWATCH_SHIM_BASELINE not set");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        t.baseline_allreduce(&state, &t, 1024, ncclFloat32, ncclSum, t.comm, nullptr));
  }
}

void BM_Send_ThroughBaselineShim(benchmark::State& state) {
  Targets& t = Get();
  if (t.baseline_send == nullptr) {
    state.SkipWithError("NCCLWATCH_SHIM_BASELINE not set");
    return;
  }
  for (auto _ : state)
    benchmark::DoNotOptimize(t.baseline_send(&state, 1024, ncclFloat32, 5, t.comm, nullptr));
}

void BM_RingAppend64(benchmark::State& state) {
  static ncclwatch::shim::RingWriter* w = [] {
    auto* r = new ncclwatch::shim::RingWriter();
    ncclwatch::shim::RingConfig c;
    static std::string dir = ScratchDir() + "/ring";
    c.dir = dir.c_str();
    c.host = "bench";
    c.pid = static_cast<uint32_t>(getpid());
    c.start_ms = static_cast<uint64_t>(time(nullptr)) * 1000;
    char err[256];
    if (!r->Open(c, err, sizeof(err))) {
      std::fprintf(stderr, "ring: %s\n", err);
      std::exit(2);
    }
    return r;
  }();
  uint8_t record[64];
  std::memset(record, 0x2a, sizeof(record));
  for (auto _ : state)
    benchmark::DoNotOptimize(w->Append(ncclwatch::shim::Region::kRing, record, sizeof(record)));
}

ncclwatch::shim::RingWriter* BenchRing() {
  static ncclwatch::shim::RingWriter* w = [] {
    auto* r = new ncclwatch::shim::RingWriter();
    ncclwatch::shim::RingConfig c;
    static std::string dir = ScratchDir() + "/ring2";
    c.dir = dir.c_str();
    c.host = "bench";
    c.clock = ncclwatch::shim::ChooseTraceClock();  // the shim's (core/tracer.cc)
    c.pid = static_cast<uint32_t>(getpid());
    c.start_ms = static_cast<uint64_t>(time(nullptr)) * 1000 + 1;
    char err[256];
    if (!r->Open(c, err, sizeof(err))) {
      std::fprintf(stderr, "ring: %s\n", err);
      std::exit(2);
    }
    return r;
  }();
  return w;
}

void BM_Rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}

void BM_CallSlotAppend(benchmark::State& state) {
  ncclwatch::shim::RingWriter* w = BenchRing();
  ncclwatch_call_slot s{};
  for (auto _ : state) {
    // The claim reads the TSC (its block's expiry check), as the shim's does.
    benchmark::DoNotOptimize(w->AppendCallSlot(NCCLWATCH_SLOT_COLLECTIVE, s));
  }
}

// The same stores without the locked add: what a claim that shares no cache
// line (a thread's own block of slots) would cost.
void BM_CallSlotStoreNoLock(benchmark::State& state) {
  ncclwatch::shim::RingWriter* w = BenchRing();
  uint8_t* ring = reinterpret_cast<uint8_t*>(w->header()) + w->header()->ring_offset;
  const uint64_t mask = w->header()->ring_slots - 1;
  uint64_t idx = 0;
  ncclwatch_call_slot s{};
  for (auto _ : state) {
    s.t = __rdtsc();
    uint8_t* slot = ring + (idx & mask) * NCCLWATCH_SLOT_BYTES;
    __atomic_store_n(reinterpret_cast<uint64_t*>(slot), 0, __ATOMIC_RELAXED);
    std::memcpy(slot + NCCLWATCH_SLOT_HEADER_BYTES, &s, sizeof(s));
    __atomic_store_n(reinterpret_cast<uint64_t*>(slot), idx + 1, __ATOMIC_RELEASE);
    ++idx;
    benchmark::ClobberMemory();
  }
}

// Call slots claimed from claim blocks of a fixed size (the argument; 1:
// every slot from the shared cursor, as before blocks), on one thread or
// two: what a block size buys threads that write at once (each thread its
// own blocks, in one ring per size). The shim's own blocks adapt
// (ring_writer.h) and reach claim_block_slots when threads contend.
ncclwatch::shim::RingWriter* BlockRing(int64_t slots) {
  static std::map<int64_t, ncclwatch::shim::RingWriter*> rings;
  static const bool made = [] {
    for (int64_t s : {1, 4, 8, 16, 32, 64, 128, 256, 512}) {
      auto* r = new ncclwatch::shim::RingWriter();
      ncclwatch::shim::RingConfig c;
      static std::string dir = ScratchDir() + "/blocks";
      c.dir = dir.c_str();
      c.host = "bench";
      c.pid = static_cast<uint32_t>(getpid());
      c.start_ms = static_cast<uint64_t>(time(nullptr)) * 1000 + 10 + static_cast<uint64_t>(s);
      c.clock = ncclwatch::shim::ChooseTraceClock();
      c.claim_block_slots = static_cast<uint32_t>(s);
      c.claim_block_fixed = true;
      char err[256];
      if (!r->Open(c, err, sizeof(err))) {
        std::fprintf(stderr, "ring: %s\n", err);
        std::exit(2);
      }
      rings[s] = r;
    }
    return true;
  }();
  (void)made;
  return rings[slots];
}

void BM_CallSlotClaimBlock(benchmark::State& state) {
  ncclwatch::shim::RingWriter* w = BlockRing(state.range(0));
  ncclwatch_call_slot s{};
  for (auto _ : state) {
    ncclwatch::shim::SlotClaim claim;
    w->ClaimSlot(&claim);
    s.t = claim.t;
    std::memcpy(claim.payload, &s, sizeof(s));
    w->PublishCallSlot(claim, NCCLWATCH_SLOT_COLLECTIVE);
  }
}

}  // namespace

BENCHMARK(BM_CallSlotClaimBlock)
    ->ArgName("block")
    ->Arg(1)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->Arg(32)
    ->Arg(64)
    ->Arg(128)
    ->Arg(256)
    ->Arg(512)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK(BM_Rdtsc);
BENCHMARK(BM_CallSlotAppend);
BENCHMARK(BM_CallSlotStoreNoLock);
BENCHMARK(BM_AllReduce_Direct);
BENCHMARK(BM_AllReduce_ThroughShim);
BENCHMARK(BM_Send_Direct);
BENCHMARK(BM_Send_ThroughShim);
BENCHMARK(BM_AllReduce_ThroughBaselineShim);
BENCHMARK(BM_Send_ThroughBaselineShim);
BENCHMARK(BM_RingAppend64);
BENCHMARK(BM_AllReduce_Direct_Batched)->Iterations(100);
BENCHMARK(BM_AllReduce_ThroughShim_Batched)->Iterations(100);
BENCHMARK(BM_AllReduce_ThroughShimCompletion_Batched)->Iterations(100);
BENCHMARK(BM_AllReduce_ThroughBaselineShimCompletion_Batched)->Iterations(100);
int main(int argc, char** argv) {
  // The shim's thread-locals are initial-exec (a TLS access never
  // allocates), and this program dlopens it two or three times: more than
  // the static TLS glibc keeps for dlopen by default (512 bytes). The
  // tunable is read when the program starts, so set it and start again.
  const char* tunables = getenv("GLIBC_TUNABLES");
  if (tunables == nullptr || std::strstr(tunables, "glibc.rtld.optional_static_tls") == nullptr) {
    std::string t = "glibc.rtld.optional_static_tls=16384";
    if (tunables != nullptr && *tunables != '\0') t = std::string(tunables) + ":" + t;
    setenv("GLIBC_TUNABLES", t.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::perror("execv /proc/self/exe");
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  std::filesystem::remove_all(ScratchDir(), ec);
  return 0;
}

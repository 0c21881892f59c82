// Start-up and per-thread state. ThisThread(), NextGroupId() and
// WriteTimeAnchor() are on the HOT PATH (no allocation, lock or system call;
// async-signal-safe); making the file (InitTracer, NoteNcclLoaded) and
// RecordNewModules() are not.

#include "core/tracer.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/comm_registry.h"
#include "core/env_filter.h"
#include "core/nccl_code.h"
#include "core/record_builder.h"
#include "core/startup_stack.h"
#include "ncclwatch/trace_fields.h"
#include "resolve/loaded_module.h"
#include "ring/trace_clock.h"

namespace ncclwatch::shim {

int g_tracer_state = kUninitialized;
uint32_t g_trace_generation = 1;
RingWriter g_ring;
uint32_t g_pid = 0;

namespace {

constexpr uint32_t kShimVersion = 1;
constexpr uint64_t kInitialRingBytes = 64ull << 10;

__thread ThreadState t_thread __attribute__((tls_model("initial-exec")));
// Set while this thread creates the trace file (CreateTraceFile), from
// before it claims the work (the state kInitializing) to after it is done:
// a signal handler on this thread then never finds kInitializing without
// knowing its own thread may hold it.
__thread int t_creating_file __attribute__((tls_model("initial-exec")));

void CreateTraceFile();  // InitTracer's work, on the start-up stack
void InitTracer(int final_state, TracedFrom why);
// What the file being made is for: kTracing (an NCCL call) or kLoaded.
int g_want_state = kTracing;
TracedFrom g_traced_from = TracedFrom::kFirstCall;
// A forked child of a process that had NCCL loaded: traced from its own
// first NCCL call only.
int g_nccl_inherited = 0;
int g_nccl_loaded = 0;  // NoteNcclLoaded was called in this process
uint32_t g_next_thread = 0;
uint64_t g_next_group = 0;

// Modules already recorded, by load bias (RecordNewModules runs rarely and
// under the loader lock, so a plain array is enough: that lock is recursive,
// and a signal handler on the thread that records, whose NCCL call records
// modules too, is kept out by t_recording_modules).
constexpr int kMaxModules = 1024;
uintptr_t g_module_bases[kMaxModules];
int g_module_count = 0;
__thread int t_recording_modules __attribute__((tls_model("initial-exec")));

void Warn(const char* msg) {
  char line[768];
  const int n = snprintf(line, sizeof(line), "ncclwatch: %s\n", msg);
  if (n > 0)
    (void)!write(2, line,
                 static_cast<size_t>(n) < sizeof(line) ? static_cast<size_t>(n) : sizeof(line) - 1);
}

struct RankSource {
  const char* var;
  const char* size_var;
  const char* local_var;
};
constexpr RankSource kRankSources[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
};

int EnvInt(const char* name) {
  const char* v = name ? getenv(name) : nullptr;
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  return (*end == '\0' && x >= 0 && x < (1L << 30)) ? static_cast<int>(x) : -1;
}

void WriteProcessStart() {
  LargeRecordBuilder r(fields::record::kProcessStart);
  namespace f = fields::process_start;
  r.w().Varint(f::kPid, g_pid);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  r.w().String(f::kHost, host);
  int rank = -1, size = -1, local = -1;
  const char* source = "";
  for (const RankSource& s : kRankSources) {
    if ((rank = EnvInt(s.var)) >= 0) {
      source = s.var;
      size = EnvInt(s.size_var);
      local = EnvInt(s.local_var);
      break;
    }
  }
  r.w().Sint(f::kGlobalRank, rank);
  r.w().String(f::kRankSource, source);
  r.w().Sint(f::kWorldSize, size);
  r.w().Sint(f::kLocalRank, local);
  char exe[1024] = {0};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) exe[n] = '\0';
  r.w().String(f::kExe, exe);
  static const char* const kJobVars[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PBS_JOBID",
                                         "LSB_JOBID", "JOB_ID"};
  for (const char* var : kJobVars) {
    const char* v = getenv(var);
    if (v != nullptr && *v != '\0') {
      char id[256];  // a job id may hold a credential (TORCHELASTIC_RUN_ID=token=...)
      r.w().Bytes(f::kJobId, id, RedactValue(v, strlen(v), id, sizeof(id)));
      break;
    }
  }
  r.w().Varint(f::kShimVersion, kShimVersion);
  struct stat ns;  // which pid namespace g_pid is a number in
  if (stat("/proc/self/ns/pid", &ns) == 0) r.w().Varint(f::kPidNamespace, ns.st_ino);
  if (g_traced_from != TracedFrom::kFirstCall)
    r.w().Varint(f::kTracedFrom, static_cast<uint32_t>(g_traced_from));
  r.Append(Region::kPinned);
}

int ModuleCallback(dl_phdr_info* info, size_t, void*) {
  for (int i = 0; i < g_module_count; ++i)
    if (g_module_bases[i] == info->dlpi_addr) return 0;
  if (g_module_count >= kMaxModules) return 1;
  uintptr_t lo = 0, hi = 0;  // absolute
  if (!LoadSpan(info, &lo, &hi)) return 0;
  const uint8_t* build_id = nullptr;
  size_t build_id_len = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_NOTE) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
      const uint8_t* end = p + ph.p_memsz;
      while (p + sizeof(ElfW(Nhdr)) <= end) {
        auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
        const uint8_t* name = p + sizeof(ElfW(Nhdr));
        const uint8_t* desc = name + ((nh->n_namesz + 3) & ~3u);
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
            desc + nh->n_descsz <= end) {
          build_id = desc;
          build_id_len = nh->n_descsz;
        }
        p = desc + ((nh->n_descsz + 3) & ~3u);
      }
    }
  }
  g_module_bases[g_module_count++] = info->dlpi_addr;
  if (IsNcclModule(info->dlpi_name)) {
    AddNcclCode(lo, hi);
  } else if (IsNcclDrivenModule(info->dlpi_name) || ThisThread().in_call != 0) {
    // A library NCCL works through, or one first seen loaded during an NCCL
    // call (what NCCL loaded): core/nccl_code.h.
    AddNcclDrivenCode(lo, hi);
  }
  const char* path = info->dlpi_name;
  char exe[1024] = {0};
  if (path == nullptr || path[0] == '\0') {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) exe[n] = '\0';
    path = exe;
  }
  LargeRecordBuilder r(fields::record::kModule);
  namespace f = fields::module;
  r.w().String(f::kPath, path);
  r.w().Fixed64(f::kBase, info->dlpi_addr);
  r.w().Fixed64(f::kStart, lo);
  r.w().Fixed64(f::kEnd, hi);
  if (build_id != nullptr) r.w().Bytes(f::kBuildId, build_id, build_id_len);
  r.Append(Region::kPinned);
  return 0;
}

}  // namespace

ThreadState& ThisThread() {
  if (__builtin_expect(t_thread.index == 0, 0))
    t_thread.index = __atomic_add_fetch(&g_next_thread, 1, __ATOMIC_RELAXED);
  return t_thread;
}

void SetThisThreadIndex(uint32_t index) { t_thread.index = index; }

uint64_t NextGroupId() { return __atomic_add_fetch(&g_next_group, 1, __ATOMIC_RELAXED); }

void WriteTimeAnchor(Region region) {
  RecordBuilder<> r(fields::record::kTimeAnchor);
  namespace f = fields::time_anchor;
  r.w().Varint(f::kT, TraceNow());
  r.w().Varint(f::kMonotonicNs, MonotonicNs());
  r.w().Varint(f::kRealtimeNs, RealtimeNs());
  r.Append(region);
}

void GrowTraceRing() {
  if (!g_ring.CanGrow()) return;
  RunOnStartupStack([] {
    char error[320];
    if (!g_ring.GrowRing(error, sizeof(error))) Warn(error);
  });
}

void GrowTraceRingForAdopted() {
  if (g_comms.Adopted() != 0) GrowTraceRing();
}

bool TraceRingIsSmall() { return g_ring.is_open() && g_ring.CanGrow(); }

void RecordNewModules() {
  // On a thread that is recording already (a signal handler's NCCL call):
  // the frame it interrupted records what is new when it resumes.
  if (!g_ring.is_open() || t_recording_modules) return;
  t_recording_modules = 1;
  // ModuleCallback keeps a whole record on the stack.
  RunOnStartupStack([] { dl_iterate_phdr(ModuleCallback, nullptr); });
  t_recording_modules = 0;
}

void TracerForkChild() {
  // kOff stays off (NCCLWATCH=0, or a folder the parent could not use);
  // kArmed has nothing to drop. kTracing, or kInitializing (another thread
  // was making the file, and is not in the child): the parent's file goes.
  if (__atomic_load_n(&g_nccl_loaded, __ATOMIC_ACQUIRE)) g_nccl_inherited = 1;
  const int s = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
  // A fork from a signal handler that interrupted this thread's making of
  // the file or recording of modules: the child's own work starts unmarked.
  t_creating_file = 0;
  t_recording_modules = 0;
  if (s != kTracing && s != kLoaded && s != kInitializing) return;
  __atomic_store_n(&g_tracer_state, kArmed, __ATOMIC_RELEASE);
  g_ring.DropInChild();
  g_module_count = 0;  // the child's file lists them again
  __atomic_add_fetch(&g_trace_generation, 1u, __ATOMIC_ACQ_REL);
}

void ArmTracer() {
  const char* on = getenv("NCCLWATCH");
  const int next = (on != nullptr && strcmp(on, "0") == 0) ? kOff : kArmed;
  int expected = kUninitialized;
  __atomic_compare_exchange_n(&g_tracer_state, &expected, next, false, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
}

bool EnsureTracing() {
  for (;;) {
    int s = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
    if (s == kTracing) return true;
    if (s == kOff) return false;
    // The file exists (NCCL was loaded): this is the process's first NCCL
    // call. The rendezvous window closes.
    if (s == kLoaded) {
      if (__atomic_compare_exchange_n(&g_tracer_state, &s, kTracing, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return true;
      continue;
    }
    // A signal handler that calls NCCL while this thread makes the file
    // (InitTracer): the call goes to NCCL untraced. Waiting for the file here
    // would wait for the very code the handler interrupted.
    if (s == kInitializing && t_creating_file) return false;
    InitTracer(kTracing, TracedFrom::kFirstCall);
    if (__atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) == kOff) return false;
  }
}

bool EnsureTraceFile(TracedFrom why) {
  const int s = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
  if (s == kTracing || s == kLoaded) return true;
  if (s == kOff || (s == kInitializing && t_creating_file)) return false;
  InitTracer(kLoaded, why);
  return TracingNow();
}

void InitTracer() { InitTracer(kTracing, TracedFrom::kFirstCall); }

bool NoteNcclLoaded() {
  __atomic_store_n(&g_nccl_loaded, 1, __ATOMIC_RELEASE);
  if (g_nccl_inherited) return false;
  const int s = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
  if (s != kArmed && s != kUninitialized) return false;  // a file already, or off
  return EnsureTraceFile(TracedFrom::kNcclLoaded);
}

namespace {

void InitTracer(int final_state, TracedFrom why) {
  // Marked before the claim, not after it: a handler that ran between the
  // state's kInitializing and a later mark found the file being made, not
  // by its own thread as far as it knew, and waited for the code it had
  // interrupted, forever. Marked first, a handler that interrupts anywhere
  // from here on goes untraced (EnsureTracing); one that interrupts before
  // the claim may make the file itself, and the claim below then fails.
  const int was_creating = t_creating_file;
  t_creating_file = 1;
  for (;;) {
    int expected = __atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE);
    if (expected == kInitializing) {
      // Re-entered from a signal handler on the thread that makes the file:
      // untraced (EnsureTracing). Another thread's first call waits for it,
      // unmarked again while it waits: a handler that interrupts the wait
      // waits too, and is traced.
      t_creating_file = was_creating;
      if (!was_creating)
        while (__atomic_load_n(&g_tracer_state, __ATOMIC_ACQUIRE) == kInitializing) sched_yield();
      return;
    }
    if (expected != kUninitialized && expected != kArmed) {
      t_creating_file = was_creating;
      return;
    }
    if (__atomic_compare_exchange_n(&g_tracer_state, &expected, kInitializing, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      break;
  }
  g_want_state = final_state;
  g_traced_from = why;
  // Its buffers (paths, whole records) on the shim's stack: the first NCCL
  // call may come from a thread with a small one.
  RunOnStartupStack([] { CreateTraceFile(); });
  t_creating_file = was_creating;
}

void CreateTraceFile() {
  const int saved_errno = errno;
  int final_state = kOff;
  const char* on = getenv("NCCLWATCH");
  if (on != nullptr && strcmp(on, "0") == 0) {
    __atomic_store_n(&g_tracer_state, kOff, __ATOMIC_RELEASE);
    errno = saved_errno;
    return;
  }
  g_pid = static_cast<uint32_t>(getpid());
  g_trace_clock = ChooseTraceClock();

  RingConfig config;
  char default_dir[256];
  const char* dir = getenv("NCCLWATCH_DIR");
  if (dir == nullptr || *dir == '\0') {
    const char* tmp = getenv("TMPDIR");
    snprintf(default_dir, sizeof(default_dir), "%s/ncclwatch-%u", (tmp && *tmp) ? tmp : "/tmp",
             static_cast<unsigned>(geteuid()));
    dir = default_dir;
  }
  config.dir = dir;
  // A process that never makes a communicator (it only asks NCCL's version,
  // or makes ids for others) keeps a small file; its ring grows to the
  // whole size with its first communicator (GrowTraceRing).
  config.initial_ring_bytes = kInitialRingBytes;
  char msg[640];
  if (const char* s = getenv("NCCLWATCH_RING_SIZE")) {
    uint64_t v = 0;
    const SizeParse parsed = ParseByteSize(s, &v);
    const char* problem = nullptr;
    if (parsed == SizeParse::kNegative) {
      problem = "is negative";
    } else if (parsed == SizeParse::kOverflow) {
      problem = "is too large to be a size";
    } else if (parsed != SizeParse::kOk) {
      problem = "is not a size (16M, 512K, 1G or bytes)";
    } else if (v < (64ull << 10) || v > (64ull << 30)) {
      problem = "is not a size from 64K to 64G";
    }
    if (problem != nullptr) {
      snprintf(msg, sizeof(msg), "NCCLWATCH_RING_SIZE='%.200s' %s; using 16M", s, problem);
      Warn(msg);
    } else {
      config.ring_bytes = v;
      if (v > (4ull << 30)) {
        snprintf(msg, sizeof(msg),
                 "NCCLWATCH_RING_SIZE='%.200s' is over 4G: every traced process preallocates "
                 "that much disk for its trace",
                 s);
        Warn(msg);
      }
    }
  }
  if (const char* s = getenv("NCCLWATCH_FILE_MODE")) {
    char* end = nullptr;
    unsigned long m = strtoul(s, &end, 8);
    if (*s != '\0' && *end == '\0' && m <= 0777 && (m & 0600) == 0600 && !(m & 0002)) {
      config.file_mode = static_cast<unsigned>(m);
    } else {
      snprintf(msg, sizeof(msg),
               "NCCLWATCH_FILE_MODE='%s' is not an octal mode with owner read/write and no world "
               "write; using 0600",
               s);
      Warn(msg);
    }
  }
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  config.host = host;
  config.pid = g_pid;
  config.start_ms = RealtimeNs() / 1000000ull;
  config.clock = g_trace_clock;
  char error[512];
  if (g_ring.Open(config, error, sizeof(error))) {
    final_state = g_want_state;
    if (g_ring.notice()[0] != '\0') Warn(g_ring.notice());
  } else {
    snprintf(msg, sizeof(msg), "not tracing this process: %s", error);
    Warn(msg);
  }
  if (final_state != kOff) {
    WriteProcessStart();
    WriteTimeAnchor(Region::kPinned);
    RecordNewModules();
  }
  __atomic_store_n(&g_tracer_state, final_state, __ATOMIC_RELEASE);
  errno = saved_errno;
}

}  // namespace

}  // namespace ncclwatch::shim

// preload_probe: what a program sees of NCCL, with or without libncclwatch.so
// preloaded. Each mode prints what it observed; tests compare the two runs.
//
//   preload_probe api            calls that fail and calls that succeed, with
//                                their results, outputs and errno
//   preload_probe handler        installs its own SIGTERM handler, raises SIGTERM
//   preload_probe chain          installs handlers twice, checks what sigaction reports,
//                                then calls ncclGetVersion
//   preload_probe ignore         ignores SIGTERM, raises it, goes on
//   preload_probe segv           dereferences a null pointer
//   preload_probe fork           the child of a traced process makes NCCL calls
//   preload_probe threads        4 threads, one communicator each, 100 AllReduces each
//   preload_probe sigkill        some collectives, then SIGKILL
//   preload_probe libc           the C library calls the shim interposes (sockets,
//                                /dev/shm files), failing and succeeding, then
//                                an ncclGetUniqueId that makes some of its own
//   preload_probe dlvsym         dlvsym and dlsym with RTLD_DEFAULT, RTLD_NEXT and a
//                                handle, then ncclGetVersion
//   preload_probe vfork          installs SIGINT and SIGTERM handlers, makes an NCCL
//                                call, then a vfork child resets every handler
//                                before exec (as CPython's subprocess does); the
//                                parent then raises both signals
//   preload_probe fork_ranks     makes an NCCL id, then forks two children that form a
//                                communicator of two ranks with it and run AllReduces
//   preload_probe init_timer     1-rank communicators made and destroyed while a 100 us
//                                timer's handler fails to open a /dev/shm file
//   preload_probe comms N live|destroy
//                                N 1-rank communicators, two AllReduces on each: all
//                                alive at once, or each destroyed before the next
//   preload_probe splits N       N splits of a 1-rank communicator, all alive, two
//                                AllReduces on each (prints the last split's rank)
//   preload_probe vfork_fail     a vfork child whose exec fails (_exit 127), then exit 0
//   preload_probe exec PATH      a communicator used and destroyed, then an exec of PATH
//                                (if that fails: exit 0, or with "kill" after PATH, SIGKILL)
//   preload_probe quick_exit     a communicator used and destroyed, then quick_exit(0)
//   preload_probe timer          a 100 us timer whose handler calls ncclGetVersion, running
//                                during the process's first NCCL call
//   preload_probe truncate       collectives, then its own trace file truncated to 0
//                                bytes (when there is one), then more collectives and
//                                heartbeats into the mapping
//   preload_probe altstack       a 16 KiB guarded sigaltstack; a SIGTERM handler that
//                                needs 64 KiB and did not ask for it, a SIGINT handler
//                                that did
//   preload_probe small_stack    the first NCCL calls from a thread with a 16 KiB stack
//   preload_probe rendezvous     no NCCL call: a listening socket on 127.0.0.1 (prints
//                                "held PORT"), a bind to that port (EADDRINUSE), 5
//                                connects to a free port (prints "free PORT"), one
//                                non-blocking (its outcome read with SO_ERROR), one
//                                connect and accept on the held port, then 200 ms idle
//
// Written against the public NCCL and CUDA API only.

#include <arpa/inet.h>
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <nccl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// errno before and after: the shim must leave it as NCCL leaves it.
#define SHOW(expr)                                      \
  do {                                                  \
    errno = 4242;                                       \
    const int r = static_cast<int>(expr);               \
    const int e = errno;                                \
    std::printf("%-60s -> %d errno=%d\n", #expr, r, e); \
  } while (0)

ncclComm_t OneRankComm() {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclComm_t comm = nullptr;
  ncclCommInitRank(&comm, 1, id, 0);
  return comm;
}

int Api() {
  cudaSetDevice(0);
  ncclUniqueId zero;
  std::memset(&zero, 0, sizeof(zero));
  ncclComm_t comm = nullptr;
  int v = 0;
  SHOW(ncclGetVersion(nullptr));
  SHOW(ncclGetVersion(&v));
  std::printf("version %d\n", v);
  SHOW(ncclCommInitRank(&comm, 0, zero, 0));
  std::printf("comm after a failed init: %s\n", comm ? "set" : "null");
  SHOW(ncclAllReduce(nullptr, nullptr, 4, ncclFloat32, ncclSum, nullptr, nullptr));
  SHOW(ncclGroupEnd());
  std::printf("last error: %s\n", ncclGetLastError(nullptr));
  std::printf("error string: %s\n", ncclGetErrorString(ncclSystemError));
  ncclUniqueId id;
  SHOW(ncclGetUniqueId(&id));
  SHOW(ncclCommInitRank(&comm, 1, id, 0));
  int count = -1, rank = -1, dev = -1;
  SHOW(ncclCommCount(comm, &count));
  SHOW(ncclCommUserRank(comm, &rank));
  SHOW(ncclCommCuDevice(comm, &dev));
  std::printf("count %d rank %d device %d\n", count, rank, dev);
  float* buf = nullptr;
  cudaMalloc(&buf, 64 * sizeof(float));
  cudaStream_t s;
  cudaStreamCreate(&s);
  SHOW(ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, s));
  SHOW(ncclBroadcast(buf, buf, 64, ncclFloat32, 3, comm, s));
  SHOW(ncclGroupStart());
  SHOW(ncclSend(buf, 16, ncclFloat32, 0, comm, s));
  SHOW(ncclRecv(buf + 32, 16, ncclFloat32, 0, comm, s));
  SHOW(ncclGroupEnd());
  SHOW(cudaStreamSynchronize(s));
  ncclComm_t half = nullptr;
  SHOW(ncclCommSplit(comm, 0, 0, &half, nullptr));
  ncclResult_t async = ncclInternalError;
  SHOW(ncclCommGetAsyncError(comm, &async));
  std::printf("async %d\n", async);
  void* mem = nullptr;
  SHOW(ncclMemAlloc(&mem, 1 << 16));
  SHOW(ncclMemFree(mem));
  SHOW(ncclCommDestroy(half));
  SHOW(ncclCommFinalize(comm));
  SHOW(ncclCommDestroy(comm));
  SHOW(ncclCommDestroy(nullptr));
  return 0;
}

volatile sig_atomic_t g_handled = 0;
void OnTerm(int) {
  const char msg[] = "the program's own handler ran\n";
  (void)!write(1, msg, sizeof(msg) - 1);
  _exit(7);
}
void HandlerA(int) {}
void HandlerB(int) {}

int Handler() {
  ncclComm_t comm = OneRankComm();
  (void)comm;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnTerm;
  sigaction(SIGTERM, &sa, nullptr);
  std::printf("raising SIGTERM\n");
  std::fflush(stdout);
  raise(SIGTERM);
  std::printf("still here\n");
  return 0;
}

int Chain() {
  struct sigaction a, b, old;
  std::memset(&a, 0, sizeof(a));
  std::memset(&b, 0, sizeof(b));
  a.sa_handler = HandlerA;
  b.sa_handler = HandlerB;
  b.sa_flags = SA_RESTART;
  sigaction(SIGTERM, nullptr, &old);
  std::printf("initial: %s\n", old.sa_handler == SIG_DFL ? "default" : "other");
  sigaction(SIGTERM, &a, nullptr);
  sigaction(SIGTERM, &b, &old);
  std::printf("after installing B, the previous one was %s\n",
              old.sa_handler == HandlerA ? "A" : "something else");
  sigaction(SIGTERM, nullptr, &old);
  std::printf("now: %s, SA_RESTART %s\n", old.sa_handler == HandlerB ? "B" : "something else",
              (old.sa_flags & SA_RESTART) ? "kept" : "lost");
  sighandler_t prev = signal(SIGINT, HandlerA);
  std::printf("signal(SIGINT) returned %s\n", prev == SIG_DFL ? "the default" : "something else");
  prev = signal(SIGINT, SIG_DFL);
  std::printf("then %s\n", prev == HandlerA ? "A" : "something else");
  // Then NCCL, which makes the trace file: the shim's handlers were in
  // front from the start, before there was a file.
  int version = 0;
  ncclGetVersion(&version);
  return 0;
}

int Ignore() {
  ncclComm_t comm = OneRankComm();
  (void)comm;
  signal(SIGTERM, SIG_IGN);
  raise(SIGTERM);
  std::printf("survived an ignored SIGTERM\n");
  return 0;
}

int Segv() {
  ncclComm_t comm = OneRankComm();
  (void)comm;
  std::fflush(stdout);
  volatile int* p = nullptr;
  return *p;
}

int Fork() {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  const pid_t child = fork();
  if (child == 0) {
    for (int i = 0; i < 5; ++i) ncclGetUniqueId(&id);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ncclGetUniqueId(&id);
  std::printf("child exited %d\n", WEXITSTATUS(status));
  return 0;
}

int Threads() {
  constexpr int kDevices = 4, kCalls = 100;
  ncclComm_t comms[kDevices];
  if (ncclCommInitAll(comms, kDevices, nullptr) != ncclSuccess) return 3;
  std::vector<std::thread> threads;
  int failures = 0;
  for (int d = 0; d < kDevices; ++d) {
    threads.emplace_back([&, d] {
      cudaSetDevice(d);
      cudaStream_t s;
      cudaStreamCreate(&s);
      float* buf = nullptr;
      cudaMalloc(&buf, 256 * sizeof(float));
      for (int i = 0; i < kCalls; ++i) {
        // One thread per rank, each rank's calls from its own thread: the
        // AllReduces meet across threads as they would across processes.
        if (ncclAllReduce(buf, buf, 256, ncclFloat32, ncclSum, comms[d], s) != ncclSuccess)
          ++failures;
      }
      cudaStreamSynchronize(s);
    });
  }
  for (auto& t : threads) t.join();
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  std::printf("threads done, %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}

int Sigkill() {
  cudaSetDevice(0);
  ncclComm_t comm = OneRankComm();
  float* buf = nullptr;
  cudaMalloc(&buf, 64 * sizeof(float));
  for (int i = 0; i < 10; ++i) ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, nullptr);
  cudaDeviceSynchronize();
  std::printf("10 collectives done\n");
  std::fflush(stdout);
  raise(SIGKILL);
  return 0;
}

// Descriptors are shown as "is one" only: the shim's own trace file takes a
// number, so the values differ with and without it.
int Libc() {
  SHOW(socket(AF_INET, SOCK_STREAM, 0) >= 0);
  SHOW(socket(12345, SOCK_STREAM, 0));
  const int c = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in nowhere{};
  nowhere.sin_family = AF_INET;
  nowhere.sin_port = htons(1);
  nowhere.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SHOW(connect(c, reinterpret_cast<sockaddr*>(&nowhere), sizeof(nowhere)));
  close(c);
  const int l = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SHOW(bind(l, reinterpret_cast<sockaddr*>(&any), sizeof(any)));
  SHOW(bind(l, reinterpret_cast<sockaddr*>(&any), sizeof(any)));
  SHOW(listen(l, 4));
  int one = 1;
  SHOW(setsockopt(l, SOL_SOCKET, 99999, &one, sizeof(one)));
  SHOW(fcntl(l, F_SETFL, O_NONBLOCK));
  SHOW(accept(l, nullptr, nullptr));
  SHOW(accept4(l, nullptr, nullptr, SOCK_CLOEXEC));
  close(l);
  struct ifaddrs* ifs = nullptr;
  SHOW(getifaddrs(&ifs));
  freeifaddrs(ifs);
  char name[] = "/dev/shm/ncclwatch-probe-XXXXXX";
  const int fd = mkstemp(name);
  SHOW(fd >= 0);
  SHOW(ftruncate(fd, 1 << 20));
  SHOW(fallocate(fd, 0, 0, 1 << 20));
  SHOW(posix_fallocate(fd, 0, 1 << 20));
  SHOW(posix_fallocate(fd, 0, -1));
  void* m = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  SHOW(m != MAP_FAILED);
  SHOW(mmap(nullptr, 0, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED);
  munmap(m, 1 << 20);
  SHOW(ftruncate64(fd, 2 << 20));
  SHOW(fallocate64(fd, 0, 0, 2 << 20));
  SHOW(posix_fallocate64(fd, 0, 2 << 20));
  void* m64 = mmap64(nullptr, 2 << 20, PROT_READ, MAP_SHARED, fd, 0);
  SHOW(m64 != MAP_FAILED);
  munmap(m64, 2 << 20);
  close(fd);
  SHOW(open64(name, O_RDONLY) >= 0);
  SHOW(open64("/dev/shm/ncclwatch-probe-none", O_RDONLY));
  SHOW(open(name, O_RDWR) >= 0);
  SHOW(open("/dev/shm/ncclwatch-probe-none", O_RDONLY));
  SHOW(open("/dev/shm/ncclwatch-probe-none", O_RDONLY | O_CREAT | O_EXCL, 0600) >= 0);
  SHOW(unlink("/dev/shm/ncclwatch-probe-none"));
  SHOW(unlink(name));
  SHOW(unlink(name));
  SHOW(shm_open("/ncclwatch-probe-shm", O_CREAT | O_RDWR, 0600) >= 0);
  SHOW(shm_open("/ncclwatch-probe-shm", O_CREAT | O_EXCL | O_RDWR, 0600));
  SHOW(shm_unlink("/ncclwatch-probe-shm"));
  // Then NCCL's own calls (its bootstrap's sockets), which the shim records.
  ncclUniqueId id;
  SHOW(ncclGetUniqueId(&id));
  return 0;
}

// dlvsym's answers depend on who asks (RTLD_NEXT is "after the caller"):
// the same with and without the shim in front of it.
int Dlvsym() {
  void* self = dlvsym(RTLD_DEFAULT, "getpid", "GLIBC_2.2.5");
  std::printf("RTLD_DEFAULT getpid is getpid: %d\n", self == reinterpret_cast<void*>(&getpid));
  std::printf("RTLD_NEXT getpid found: %d\n",
              dlvsym(RTLD_NEXT, "getpid", "GLIBC_2.2.5") != nullptr);
  std::printf("RTLD_NEXT nosuch found: %d\n",
              dlvsym(RTLD_NEXT, "ncclwatch_nosuch", "GLIBC_2.2.5") != nullptr);
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  std::printf("handle getpid is getpid: %d\n",
              dlvsym(libc, "getpid", "GLIBC_2.2.5") == reinterpret_cast<void*>(&getpid));
  std::printf("handle wrong version found: %d\n", dlvsym(libc, "getpid", "NOSUCH_1.0") != nullptr);
  // The same through dlsym.
  std::printf("dlsym RTLD_DEFAULT getpid is getpid: %d\n",
              dlsym(RTLD_DEFAULT, "getpid") == reinterpret_cast<void*>(&getpid));
  std::printf("dlsym RTLD_NEXT getpid found: %d\n", dlsym(RTLD_NEXT, "getpid") != nullptr);
  std::printf("dlsym handle getpid is getpid: %d\n",
              dlsym(libc, "getpid") == reinterpret_cast<void*>(&getpid));
  std::printf("dlsym handle nosuch found: %d\n", dlsym(libc, "ncclwatch_nosuch") != nullptr);
  // An NCCL call, so that the process is traced (the file comes with the first).
  int version = 0;
  std::printf("ncclGetVersion -> %d\n", static_cast<int>(ncclGetVersion(&version)));
  return 0;
}

volatile sig_atomic_t g_vfork_seen = 0;
void OnVforkTest(int signo) { g_vfork_seen |= signo == SIGINT ? 1 : 2; }

int Vfork() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnVforkTest;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  int version = 0;
  ncclGetVersion(&version);  // traced from here
  const pid_t child = vfork();
  if (child == 0) {
    // What CPython's _posixsubprocess does in its vfork child: every handler
    // that is neither default nor ignored goes back to the default.
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s) {
      struct sigaction now;
      if (s == SIGKILL || s == SIGSTOP || sigaction(s, nullptr, &now) != 0) continue;
      if (!(now.sa_flags & SA_SIGINFO) && (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN))
        continue;
      sigaction(s, &dfl, nullptr);
    }
    execl("/bin/true", "true", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child exited %d\n", WEXITSTATUS(status));
  struct sigaction now;
  sigaction(SIGINT, nullptr, &now);
  std::printf("SIGINT handler reported: %s\n", now.sa_handler == OnVforkTest ? "ours" : "other");
  raise(SIGINT);
  raise(SIGTERM);
  std::printf("handlers ran: SIGINT %s, SIGTERM %s\n", (g_vfork_seen & 1) ? "yes" : "no",
              (g_vfork_seen & 2) ? "yes" : "no");
  return 0;
}

// The parent's first NCCL call makes the id; the ranks are its children
// (a launcher that forks its workers after touching NCCL).
int ForkRanks() {
  unsetenv("RANK");  // the parent is not a rank; each child says which it is
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 3;
  pid_t children[2];
  for (int r = 0; r < 2; ++r) {
    children[r] = fork();
    if (children[r] == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", "2", 1);
      cudaSetDevice(r);
      ncclComm_t comm = nullptr;
      if (ncclCommInitRank(&comm, 2, id, r) != ncclSuccess) _exit(4);
      float* buf = nullptr;
      cudaMalloc(&buf, 64 * sizeof(float));
      int failures = 0;
      for (int i = 0; i < 10; ++i)
        failures += ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess;
      cudaDeviceSynchronize();
      failures += ncclCommDestroy(comm) != ncclSuccess;
      exit(failures == 0 ? 0 : 5);
    }
  }
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    waitpid(children[r], &status, 0);
    std::printf("rank %d exited %d\n", r, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return 0;
}

// VmRSS and VmSize of this process, in KiB.
void Memory(long* rss, long* size) {
  *rss = *size = 0;
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return;
  char line[256];
  while (std::fgets(line, sizeof(line), f)) {
    std::sscanf(line, "VmRSS: %ld", rss);
    std::sscanf(line, "VmSize: %ld", size);
  }
  std::fclose(f);
}

int Comms(int n, bool live) {
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreate(&s);
  float* buf = nullptr;
  cudaMalloc(&buf, 64 * sizeof(float));
  std::vector<ncclComm_t> comms;
  int failures = 0;
  long rss0 = 0, size0 = 0;
  for (int i = 0; i < n; ++i) {
    if (i == n / 5) {
      cudaStreamSynchronize(s);
      Memory(&rss0, &size0);
    }
    ncclUniqueId id;
    failures += ncclGetUniqueId(&id) != ncclSuccess;
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
      ++failures;
      continue;
    }
    for (int k = 0; k < 2; ++k)
      failures += ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, s) != ncclSuccess;
    if (live) {
      comms.push_back(comm);
    } else {
      cudaStreamSynchronize(s);
      failures += ncclCommDestroy(comm) != ncclSuccess;
    }
  }
  cudaStreamSynchronize(s);
  long rss1 = 0, size1 = 0;
  Memory(&rss1, &size1);
  for (ncclComm_t c : comms) failures += ncclCommDestroy(c) != ncclSuccess;
  std::printf("%d communicators, %d failures\n", n, failures);
  std::fprintf(stderr, "growth after the first fifth: rss %ld KiB, size %ld KiB\n", rss1 - rss0,
               size1 - size0);
  return 0;
}

int Splits(int n) {
  // Each simulated communicator holds a few descriptors.
  rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreate(&s);
  float* buf = nullptr;
  cudaMalloc(&buf, 64 * sizeof(float));
  ncclComm_t parent = OneRankComm();
  std::vector<ncclComm_t> comms;
  int failures = parent == nullptr;
  for (int i = 0; i < n && parent != nullptr; ++i) {
    ncclComm_t comm = nullptr;
    if (ncclCommSplit(parent, 0, 0, &comm, nullptr) != ncclSuccess) {
      ++failures;
      continue;
    }
    for (int k = 0; k < 2; ++k)
      failures += ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, s) != ncclSuccess;
    comms.push_back(comm);
  }
  cudaStreamSynchronize(s);
  for (ncclComm_t c : comms) failures += ncclCommDestroy(c) != ncclSuccess;
  if (parent != nullptr) failures += ncclCommDestroy(parent) != ncclSuccess;
  std::printf("%d splits alive at once, %d failures\n", n, failures);
  return 0;
}

// One communicator used and destroyed: a job's clean work.
int CleanWork() {
  cudaSetDevice(0);
  ncclComm_t comm = OneRankComm();
  float* buf = nullptr;
  cudaMalloc(&buf, 64 * sizeof(float));
  int failures = comm == nullptr;
  for (int i = 0; i < 4; ++i)
    failures += ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess;
  cudaDeviceSynchronize();
  failures += ncclCommDestroy(comm) != ncclSuccess;
  return failures;
}

// A subprocess of a program that is not there, as CPython's subprocess runs
// it: vfork, exec fails, the child _exits.
int VforkFail() {
  const int failures = CleanWork();
  const pid_t child = vfork();
  if (child == 0) {
    execl("/nonexistent/ncclwatch-tool", "ncclwatch-tool", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("work done, %d failures; the tool's child exited %d\n", failures,
              WEXITSTATUS(status));
  return 0;
}

int Exec(const char* path, bool kill_after) {
  const int failures = CleanWork();
  std::printf("work done, %d failures; exec %s\n", failures, path);
  std::fflush(stdout);
  execl(path, path, static_cast<char*>(nullptr));
  std::printf("exec failed: %s\n", std::strerror(errno));
  std::fflush(stdout);
  if (kill_after) raise(SIGKILL);
  return 0;
}

int QuickExit() {
  const int failures = CleanWork();
  std::printf("work done, %d failures; quick_exit(0)\n", failures);
  std::fflush(stdout);
  quick_exit(0);
}

volatile sig_atomic_t g_in_init = 0;
volatile sig_atomic_t g_init_overlaps = 0;
void OnInitTimer(int) {
  const int saved = errno;
  const int fd = open("/dev/shm/ncclwatch-probe-missing", O_RDONLY);  // ENOENT
  if (fd >= 0) close(fd);
  if (g_in_init) ++g_init_overlaps;
  errno = saved;
}

// A program's timer whose handler's own /dev/shm open fails while NCCL
// initialises (successfully) on the interrupted thread.
int InitTimer() {
  cudaSetDevice(0);
  (void)open("/dev/shm/ncclwatch-probe-missing", O_RDONLY);  // resolved before any handler
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnInitTimer;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, nullptr);
  itimerval every{{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &every, nullptr);
  int made = 0, failures = 0;
  for (int i = 0; i < 200 && g_init_overlaps < 3; ++i) {
    ncclUniqueId id;
    failures += ncclGetUniqueId(&id) != ncclSuccess;
    ncclComm_t comm = nullptr;
    g_in_init = 1;
    const ncclResult_t r = ncclCommInitRank(&comm, 1, id, 0);
    g_in_init = 0;
    if (r != ncclSuccess) {
      ++failures;
      continue;
    }
    ++made;
    failures += ncclCommDestroy(comm) != ncclSuccess;
  }
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  std::printf("communicators made and destroyed, %d failures\n", failures);
  std::fprintf(stderr, "handler runs during an init: %d in %d inits\n",
               static_cast<int>(g_init_overlaps), made);
  return 0;
}

volatile sig_atomic_t g_in_first_call = 0;
volatile sig_atomic_t g_timer_calls = 0;
volatile sig_atomic_t g_timer_overlaps = 0;
void OnTimer(int) {
  const int saved = errno;
  int v = 0;
  ncclGetVersion(&v);
  ++g_timer_calls;
  if (g_in_first_call) ++g_timer_overlaps;
  // A bound on the storm: on a loaded machine a handler that outlasts the
  // 100 us period gets the next signal as it returns, and the program would
  // never run again (with or without the shim). A call that waits on
  // itself still never returns once the timer stops.
  if (g_timer_calls >= 20000) {
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
  }
  errno = saved;
}

// The process's first NCCL call with a timer's handler calling NCCL meanwhile.
int Timer() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnTimer;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, nullptr);
  itimerval every{{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &every, nullptr);
  g_in_first_call = 1;
  int version = 0;
  const ncclResult_t r = ncclGetVersion(&version);
  g_in_first_call = 0;
  while (g_timer_calls < 3) usleep(100);
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  std::printf("first call -> %d, version %d; the timer's handler called NCCL\n",
              static_cast<int>(r), version);
  std::fprintf(stderr, "handler calls during the first call: %d\n",
               static_cast<int>(g_timer_overlaps));
  return 0;
}

// Truncates this process's trace file (NCCLWATCH_DIR/ncclwatch.*.<pid>.*.trace).
int TruncateOwnTrace() {
  const char* dir = getenv("NCCLWATCH_DIR");
  if (dir == nullptr) return 0;
  DIR* d = opendir(dir);
  if (d == nullptr) return 0;
  const std::string pid = "." + std::to_string(getpid()) + ".";
  int cut = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.find(pid) == std::string::npos) continue;
    if (truncate((std::string(dir) + "/" + name).c_str(), 0) == 0) ++cut;
  }
  closedir(d);
  return cut;
}

int Truncate() {
  cudaSetDevice(0);
  ncclComm_t comm = OneRankComm();
  float* buf = nullptr;
  cudaMalloc(&buf, 64 * sizeof(float));
  int failures = 0;
  for (int i = 0; i < 10; ++i)
    failures += ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess;
  cudaDeviceSynchronize();
  std::fprintf(stderr, "trace files truncated: %d\n", TruncateOwnTrace());
  // Calls into the cut file, from this thread and from the watcher's
  // (heartbeats every 10 ms, completion queries).
  for (int i = 0; i < 3000; ++i)
    failures += ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess;
  cudaDeviceSynchronize();
  usleep(100 * 1000);
  failures += ncclCommDestroy(comm) != ncclSuccess;
  std::printf("after the trace was cut: %d failures\n", failures);
  return 0;
}

// A handler that needs 64 KiB of stack.
void OnTermBigStack(int) {
  volatile char big[64 << 10];
  for (size_t i = 0; i < sizeof(big); i += 512) big[i] = static_cast<char>(i);
  const char msg[] = "the SIGTERM handler used 64 KiB of stack\n";
  (void)!write(1, msg, sizeof(msg) - 1);
}

char* g_alt_lo = nullptr;
char* g_alt_hi = nullptr;
volatile sig_atomic_t g_int_on_alt = -1;
void OnIntAltStack(int) {
  char here = 0;
  g_int_on_alt = (&here >= g_alt_lo && &here < g_alt_hi) ? 1 : 0;
}

int AltStack() {
  int version = 0;
  ncclGetVersion(&version);  // traced from here
  // 16 KiB with a guard page below it.
  constexpr size_t kPage = 4096, kAlt = 16 << 10;
  char* m = static_cast<char*>(
      mmap(nullptr, kPage + kAlt, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  mprotect(m, kPage, PROT_NONE);
  g_alt_lo = m + kPage;
  g_alt_hi = g_alt_lo + kAlt;
  stack_t ss{};
  ss.ss_sp = g_alt_lo;
  ss.ss_size = kAlt;
  sigaltstack(&ss, nullptr);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnTermBigStack;
  sigaction(SIGTERM, &sa, nullptr);  // no SA_ONSTACK: the thread's stack
  sa.sa_handler = OnIntAltStack;
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGINT, &sa, nullptr);
  std::fflush(stdout);
  raise(SIGTERM);
  raise(SIGINT);
  std::printf("the SIGINT handler ran on the alternate stack: %s\n", g_int_on_alt == 1 ? "yes"
                                                                     : g_int_on_alt == 0
                                                                         ? "no"
                                                                         : "it did not run");
  return 0;
}

void* SmallStackCalls(void*) {
  int version = 0;
  const int r1 = ncclGetVersion(&version);
  ncclUniqueId id;
  const int r2 = ncclGetUniqueId(&id);
  std::printf("from a 16 KiB stack: ncclGetVersion -> %d (%d), ncclGetUniqueId -> %d\n", r1,
              version, r2);
  std::fflush(stdout);
  return nullptr;
}

int SmallStack() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 16 << 10);
  pthread_t t;
  if (pthread_create(&t, &attr, SmallStackCalls, nullptr) != 0) {
    std::printf("no thread\n");
    return 1;
  }
  pthread_join(t, nullptr);
  return 0;
}

// A TCP socket's errno after `what` as a name, "ok" when it succeeded.
const char* Outcome(int r, int err) {
  if (r >= 0) return "ok";
  switch (err) {
    case EADDRINUSE:
      return "EADDRINUSE";
    case ECONNREFUSED:
      return "ECONNREFUSED";
    case EINPROGRESS:
      return "EINPROGRESS";
    default:
      return "other";
  }
}

sockaddr_in Loopback(int port) {
  sockaddr_in a;
  std::memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int BoundPort(int fd) {
  sockaddr_in a;
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// A rendezvous as a store's server and clients make it, before any NCCL call.
int Rendezvous() {
  const int server = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in any = Loopback(0);
  if (bind(server, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0 || listen(server, 4) != 0)
    return 1;
  const int held = BoundPort(server);
  std::printf("held %d\n", held);
  // A second server on the held port.
  const int second = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to_held = Loopback(held);
  int r = bind(second, reinterpret_cast<sockaddr*>(&to_held), sizeof(to_held));
  std::printf("bind held: %s\n", Outcome(r, errno));
  close(second);
  // A port nothing listens on: bound, then let go.
  const int probe = socket(AF_INET, SOCK_STREAM, 0);
  bind(probe, reinterpret_cast<sockaddr*>(&any), sizeof(any));
  const int free_port = BoundPort(probe);
  close(probe);
  std::printf("free %d\n", free_port);
  sockaddr_in to_free = Loopback(free_port);
  for (int i = 0; i < 5; ++i) {
    const int c = socket(AF_INET, SOCK_STREAM, 0);
    r = connect(c, reinterpret_cast<sockaddr*>(&to_free), sizeof(to_free));
    std::printf("connect free: %s\n", Outcome(r, errno));
    close(c);
  }
  const int nb = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  r = connect(nb, reinterpret_cast<sockaddr*>(&to_free), sizeof(to_free));
  std::printf("non-blocking connect free: %s\n", Outcome(r, errno));
  if (r != 0 && errno == EINPROGRESS) {
    pollfd p{nb, POLLOUT, 0};
    poll(&p, 1, 5000);
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    getsockopt(nb, SOL_SOCKET, SO_ERROR, &so_error, &len);
    std::printf("its outcome: %s\n", Outcome(so_error == 0 ? 0 : -1, so_error));
  }
  close(nb);
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  r = connect(client, reinterpret_cast<sockaddr*>(&to_held), sizeof(to_held));
  std::printf("connect held: %s\n", Outcome(r, errno));
  const int peer = accept(server, nullptr, nullptr);
  std::printf("accept: %s\n", Outcome(peer, errno));
  close(peer);
  close(client);
  close(server);
  usleep(200000);  // time for heartbeats
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "api") return Api();
  if (mode == "handler") return Handler();
  if (mode == "chain") return Chain();
  if (mode == "ignore") return Ignore();
  if (mode == "segv") return Segv();
  if (mode == "fork") return Fork();
  if (mode == "threads") return Threads();
  if (mode == "sigkill") return Sigkill();
  if (mode == "libc") return Libc();
  if (mode == "dlvsym") return Dlvsym();
  if (mode == "vfork") return Vfork();
  if (mode == "fork_ranks") return ForkRanks();
  if (mode == "timer") return Timer();
  if (mode == "splits" && argc > 2) return Splits(std::atoi(argv[2]));
  if (mode == "vfork_fail") return VforkFail();
  if (mode == "exec" && argc > 2) return Exec(argv[2], argc > 3 && std::string(argv[3]) == "kill");
  if (mode == "quick_exit") return QuickExit();
  if (mode == "comms" && argc > 3) return Comms(std::atoi(argv[2]), std::string(argv[3]) == "live");
  if (mode == "init_timer") return InitTimer();
  if (mode == "truncate") return Truncate();
  if (mode == "altstack") return AltStack();
  if (mode == "small_stack") return SmallStack();
  if (mode == "rendezvous") return Rendezvous();
  std::printf(
      "usage: preload_probe api|handler|chain|ignore|segv|fork|threads|sigkill|libc|dlvsym\n");
  return 2;
}

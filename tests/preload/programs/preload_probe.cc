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
//
// Written against the public NCCL and CUDA API only.

#include <arpa/inet.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <nccl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
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
  std::printf(
      "usage: preload_probe api|handler|chain|ignore|segv|fork|threads|sigkill|libc|dlvsym\n");
  return 2;
}
